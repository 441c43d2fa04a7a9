/* mnist_replica model: hidden = relu(x hid_w + hid_b); logits = hidden sm_w + sm_b.
 * Tensors (flat, in this order): hid_w[784,H] hid_b[H] sm_w[H,10] sm_b[10]. */
#include <math.h>
#include <stdlib.h>

#include "common/status.h"
#include "kernels/model_internal.h"

enum { T_HID_W, T_HID_B, T_SM_W, T_SM_B };
enum { B_H, B_DH };

static void mlp_fwd(struct rdm_model *m, const float *p, const float *x, int n)
{
	int H = m->cfg.hidden_units;
	float *h = m->buf[B_H];
	rdm_dense_fwd(x, n, RDM_MNIST_PIXELS, p + m->t[T_HID_W].offset,
		      p + m->t[T_HID_B].offset, H, h);
	rdm_relu_fwd(h, (size_t)n * H);
	rdm_dense_fwd(h, n, H, p + m->t[T_SM_W].offset, p + m->t[T_SM_B].offset,
		      RDM_MNIST_CLASSES, m->logits);
}

static void mlp_bwd(struct rdm_model *m, const float *p, const float *x, int n, float *g)
{
	int H = m->cfg.hidden_units;
	float *h = m->buf[B_H], *dh = m->buf[B_DH];
	rdm_dense_bwd(h, n, H, p + m->t[T_SM_W].offset, RDM_MNIST_CLASSES, m->dlogits,
		      g + m->t[T_SM_W].offset, g + m->t[T_SM_B].offset, dh, 0);
	rdm_relu_bwd(h, dh, (size_t)n * H);
	rdm_dense_bwd(x, n, RDM_MNIST_PIXELS, p + m->t[T_HID_W].offset, H, dh,
		      g + m->t[T_HID_W].offset, g + m->t[T_HID_B].offset, NULL, 0);
}

static void mlp_init(const struct rdm_model *m, float *p, struct rdm_rng *r)
{
	int H = m->cfg.hidden_units;
	rdm_init_truncnormal(r, p + m->t[T_HID_W].offset, m->t[T_HID_W].count,
			     1.0f / 28.0f);
	rdm_init_truncnormal(r, p + m->t[T_SM_W].offset, m->t[T_SM_W].count,
			     (float)(1.0 / sqrt((double)H)));
	/* biases stay zero */
}

static const struct rdm_model_ops mlp_ops = { mlp_fwd, mlp_bwd, mlp_init };

int rdm_mlp_setup(struct rdm_model *m)
{
	int H = m->cfg.hidden_units;
	m->ops = &mlp_ops;
	rdm_model_add_tensor(m, "hid_w", 2, RDM_MNIST_PIXELS, H);
	rdm_model_add_tensor(m, "hid_b", 1, H, 0);
	rdm_model_add_tensor(m, "sm_w", 2, H, RDM_MNIST_CLASSES);
	rdm_model_add_tensor(m, "sm_b", 1, RDM_MNIST_CLASSES, 0);
	size_t nh = (size_t)m->cfg.max_batch * H;
	m->buf[B_H] = calloc(nh, sizeof(float));
	m->buf[B_DH] = calloc(nh, sizeof(float));
	return (m->buf[B_H] && m->buf[B_DH]) ? 0 : RDMAPS_E_NOMEM;
}
