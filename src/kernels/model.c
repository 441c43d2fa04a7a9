/* Model object: construction, tensor table, grad/eval driver. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "kernels/data.h"
#include "kernels/model_internal.h"

int rdm_model_parse_kind(const char *s, enum rdm_model_kind *k)
{
	if (!s || !k)
		return RDMAPS_E_INVAL;
	if (!strcmp(s, "mlp"))
		*k = RDM_MODEL_MLP;
	else if (!strcmp(s, "lstm"))
		*k = RDM_MODEL_LSTM;
	else
		return RDMAPS_E_INVAL;
	return 0;
}

size_t rdm_model_add_tensor(struct rdm_model *m, const char *name, int ndim,
			    int d0, int d1)
{
	struct rdm_tensor *t = &m->t[m->ntensors++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->ndim = ndim;
	t->shape[0] = d0;
	t->shape[1] = ndim > 1 ? d1 : 0;
	t->count = (size_t)d0 * (ndim > 1 ? (size_t)d1 : 1);
	t->offset = m->nparams;
	m->nparams += t->count;
	return t->offset;
}

int rdm_model_new(const struct rdm_model_cfg *cfg, struct rdm_model **out)
{
	if (!cfg || !out || cfg->max_batch <= 0 ||
	    (cfg->kind != RDM_MODEL_MLP && cfg->kind != RDM_MODEL_LSTM))
		return RDMAPS_E_INVAL;
	struct rdm_model *m = calloc(1, sizeof(*m));
	if (!m)
		return RDMAPS_E_NOMEM;
	m->cfg = *cfg;
	if (m->cfg.hidden_units <= 0)
		m->cfg.hidden_units = cfg->kind == RDM_MODEL_MLP ? 100 : 128;
	if (m->cfg.threads <= 0)
		m->cfg.threads = 1;
	openblas_set_num_threads(m->cfg.threads);
	size_t nl = (size_t)cfg->max_batch * RDM_MNIST_CLASSES;
	m->logits = calloc(nl, sizeof(float));
	m->dlogits = calloc(nl, sizeof(float));
	m->xin = malloc((size_t)cfg->max_batch * RDM_MNIST_PIXELS * sizeof(float));
	int rc = (m->logits && m->dlogits && m->xin) ? 0 : RDMAPS_E_NOMEM;
	if (!rc)
		rc = cfg->kind == RDM_MODEL_MLP ? rdm_mlp_setup(m) : rdm_lstm_setup(m);
	if (rc) {
		RDMAPS_ERR("rdm_model_new: %s", rdmaps_strerror(rc));
		rdm_model_delete(&m);
		return rc;
	}
	*out = m;
	return 0;
}

void rdm_model_delete(struct rdm_model **pm)
{
	if (!pm || !*pm)
		return;
	struct rdm_model *m = *pm;
	for (int i = 0; i < RDM_MAX_BUFS; i++)
		free(m->buf[i]);
	free(m->logits);
	free(m->dlogits);
	free(m->xin);
	free(m);
	*pm = NULL;
}

size_t rdm_model_nparams(const struct rdm_model *m) { return m ? m->nparams : 0; }
int rdm_model_ntensors(const struct rdm_model *m) { return m ? m->ntensors : 0; }

const struct rdm_tensor *rdm_model_tensor(const struct rdm_model *m, int i)
{
	if (!m || i < 0 || i >= m->ntensors)
		return NULL;
	return &m->t[i];
}

void rdm_model_init(const struct rdm_model *m, float *params, uint64_t seed)
{
	struct rdm_rng r;
	rdm_rng_seed(&r, seed);
	memset(params, 0, sizeof(float) * m->nparams);
	m->ops->init(m, params, &r);
}

static int labels_ok(const uint8_t *y, int n)
{
	for (int i = 0; i < n; i++)
		if (y[i] >= RDM_MNIST_CLASSES)
			return 0;
	return 1;
}

int rdm_model_grad(struct rdm_model *m, const float *params, const float *x,
		   const uint8_t *y, int n, float *grad, double *loss)
{
	if (!m || !params || !x || !y || !grad || n <= 0 || n > m->cfg.max_batch ||
	    !labels_ok(y, n))
		return RDMAPS_E_INVAL;
	double l = 0.0;
	m->ops->fwd(m, params, x, n);
	rdm_softmax_ce(m->logits, n, RDM_MNIST_CLASSES, y, m->cfg.loss_mean,
		       m->dlogits, &l, NULL);
	m->ops->bwd(m, params, x, n, grad);
	if (loss)
		*loss = l;
	return 0;
}

/* rdm_model_eval over x (floats) or, when x is NULL, over px (pixel bytes,
 * converted one max_batch chunk at a time into m->xin): the same chunks and
 * sums either way. */
static int eval(struct rdm_model *m, const float *params, const float *x, const uint8_t *px,
		const uint8_t *y, int n, double *loss_sum, int *correct)
{
	if (!m || !params || n < 0 || (n > 0 && ((!x && !px) || !y)) || !labels_ok(y, n))
		return RDMAPS_E_INVAL;
	double total = 0.0;
	int hits = 0;
	for (int i = 0; i < n; i += m->cfg.max_batch) {
		int b = n - i < m->cfg.max_batch ? n - i : m->cfg.max_batch;
		const float *xb = m->xin;
		if (x)
			xb = x + (size_t)i * RDM_MNIST_PIXELS;
		else
			rdm_pixels_to_float(px + (size_t)i * RDM_MNIST_PIXELS, (size_t)b * RDM_MNIST_PIXELS, m->xin);
		double l = 0.0;
		m->ops->fwd(m, params, xb, b);
		rdm_softmax_ce(m->logits, b, RDM_MNIST_CLASSES, y + i, 0, NULL, &l, &hits);
		total += l;
	}
	if (loss_sum)
		*loss_sum = total;
	if (correct)
		*correct = hits;
	return 0;
}

int rdm_model_eval(struct rdm_model *m, const float *params, const float *x,
		   const uint8_t *y, int n, double *loss_sum, int *correct)
{
	return eval(m, params, x, NULL, y, n, loss_sum, correct);
}

int rdm_model_eval_pixels(struct rdm_model *m, const float *params, const uint8_t *px,
			  const uint8_t *y, int n, double *loss_sum, int *correct)
{
	return eval(m, params, NULL, px, y, n, loss_sum, correct);
}
