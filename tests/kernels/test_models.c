/* Finite-difference gradient checks of whole models (small sizes): the MLP
 * (dense+relu+dense+CE) and the LSTM (BPTT over 28 steps), sum and mean loss;
 * plus layout and API checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "kernels/data.h"
#include "kernels/kernels.h"
#include "kernels/model.h"
#include "fd.h"

struct mctx {
	struct rdm_model *m;
	float *p, *g, *scratch, *x;
	uint8_t y[8];
	int n;
};

static double model_loss(void *vc)
{
	struct mctx *c = vc;
	double l;
	assert_int_equal(rdm_model_grad(c->m, c->p, c->x, c->y, c->n, c->scratch, &l), 0);
	return l;
}

static void setup(struct mctx *c, enum rdm_model_kind k, int hidden, int mean, int n)
{
	struct rdm_model_cfg cfg = { .kind = k, .hidden_units = hidden, .max_batch = 8,
				     .threads = 1, .loss_mean = mean };
	assert_int_equal(rdm_model_new(&cfg, &c->m), 0);
	size_t np = rdm_model_nparams(c->m);
	c->p = malloc(np * sizeof(float));
	c->g = malloc(np * sizeof(float));
	c->scratch = malloc(np * sizeof(float));
	c->x = malloc((size_t)n * 784 * sizeof(float));
	c->n = n;
	rdm_model_init(c->m, c->p, 42);
	struct rdm_rng r;
	rdm_rng_seed(&r, 5);
	/* mild, non-degenerate params for the check: perturb the biases too */
	for (size_t i = 0; i < np; i++)
		c->p[i] += (float)(0.1 * (rdm_rng_uniform(&r) - 0.5));
	rdm_init_uniform(&r, c->x, (size_t)n * 784, 0, 1);
	for (int i = 0; i < n; i++)
		c->y[i] = (uint8_t)(i * 3 % 10);
}

static void teardown(struct mctx *c)
{
	free(c->p);
	free(c->g);
	free(c->scratch);
	free(c->x);
	rdm_model_delete(&c->m);
	assert_null(c->m);
}

static int check_model(struct mctx *c, size_t stride, double eps, double atol, double rtol)
{
	double l;
	assert_int_equal(rdm_model_grad(c->m, c->p, c->x, c->y, c->n, c->g, &l), 0);
	int bad = 0;
	for (int i = 0; i < rdm_model_ntensors(c->m); i++) {
		const struct rdm_tensor *t = rdm_model_tensor(c->m, i);
		size_t s = t->count > 2000 ? stride : 1;
		bad += fd_check(t->name, model_loss, c, c->p + t->offset, c->g + t->offset,
				t->count, s, eps, atol, rtol);
	}
	return bad;
}

/* ReLU is not differentiable at 0: move every hidden pre-activation at least
 * 0.05 away from it (raising hid_b[j] in 0.07 steps: monotone, so it ends)
 * so that the +-1e-2 probes of the check never cross a kink. */
static void away_from_kinks(struct mctx *c)
{
	const struct rdm_tensor *tw = rdm_model_tensor(c->m, 0), *tb = rdm_model_tensor(c->m, 1);
	int H = tw->shape[1];
	for (int it = 0; it < 1000; it++) {
		int moved = 0;
		for (int j = 0; j < H; j++)
			for (int b = 0; b < c->n; b++) {
				double a = c->p[tb->offset + j];
				for (int i = 0; i < 784; i++)
					a += (double)c->x[b * 784 + i] * c->p[tw->offset + i * H + j];
				if (fabs(a) < 0.05) {
					c->p[tb->offset + j] += 0.07f;
					moved = 1;
				}
			}
		if (!moved)
			return;
	}
	fail_msg("could not move pre-activations away from 0");
}

/* The gradient of a model (hidden units, loss a sum or a mean, batch n)
 * matches finite differences: every stride-th float of a large tensor,
 * probes of 1e-2, tolerance atol / 1e-2 relative.  The mlp's ReLU inputs
 * are first moved away from its kink; the lstm has none. */
static void grad_matches_fd(enum rdm_model_kind k, int hidden, int mean, int n, size_t stride,
			    double atol)
{
	struct mctx c;
	setup(&c, k, hidden, mean, n);
	if (k == RDM_MODEL_MLP)
		away_from_kinks(&c);
	assert_int_equal(check_model(&c, stride, 1e-2, atol, 1e-2), 0);
	teardown(&c);
}

static void test_mlp_grad_sum(void **st)
{
	(void)st;
	grad_matches_fd(RDM_MODEL_MLP, 8, 0, 4, 7, 2e-3);
}

static void test_mlp_grad_mean(void **st)
{
	(void)st;
	grad_matches_fd(RDM_MODEL_MLP, 8, 1, 4, 7, 1e-3);
}

static void test_lstm_grad_sum(void **st)
{
	(void)st;
	grad_matches_fd(RDM_MODEL_LSTM, 5, 0, 3, 1, 2e-3);
}

static void test_lstm_grad_mean(void **st)
{
	(void)st;
	grad_matches_fd(RDM_MODEL_LSTM, 6, 1, 4, 1, 1e-3);
}

static void test_layout(void **st)
{
	(void)st;
	struct rdm_model *m = NULL;
	struct rdm_model_cfg cfg = { .kind = RDM_MODEL_MLP, .max_batch = 100 };
	assert_int_equal(rdm_model_new(&cfg, &m), 0);
	assert_int_equal(rdm_model_nparams(m), 79510);
	assert_int_equal(rdm_model_ntensors(m), 4);
	const char *names[] = { "hid_w", "hid_b", "sm_w", "sm_b" };
	size_t off = 0;
	for (int i = 0; i < 4; i++) {
		const struct rdm_tensor *t = rdm_model_tensor(m, i);
		assert_string_equal(t->name, names[i]);
		assert_int_equal(t->offset, off);
		off += t->count;
	}
	assert_int_equal(rdm_model_tensor(m, 0)->shape[0], 784);
	assert_int_equal(rdm_model_tensor(m, 0)->shape[1], 100);
	assert_null(rdm_model_tensor(m, 4));
	/* init: zero biases, bounded truncated normal weights, deterministic */
	float *p = malloc(79510 * sizeof(float)), *q = malloc(79510 * sizeof(float));
	rdm_model_init(m, p, 1);
	rdm_model_init(m, q, 1);
	assert_memory_equal(p, q, 79510 * sizeof(float));
	for (int i = 0; i < 784 * 100; i++)
		assert_true(fabsf(p[i]) <= 2.0f / 28.0f + 1e-6f);
	for (int i = 784 * 100; i < 784 * 100 + 100; i++)
		assert_true(p[i] == 0.0f);
	for (int i = 78500; i < 79500; i++)
		assert_true(fabsf(p[i]) <= 0.2f + 1e-6f);
	rdm_model_init(m, q, 2);
	assert_true(memcmp(p, q, 79510 * sizeof(float)) != 0);
	/* bad args */
	uint8_t y[1] = { 10 };
	float x[784] = { 0 };
	double l;
	assert_int_equal(rdm_model_grad(m, p, x, y, 1, q, &l), RDMAPS_E_INVAL);
	y[0] = 1;
	assert_int_equal(rdm_model_grad(m, p, x, y, 101, q, &l), RDMAPS_E_INVAL);
	assert_int_equal(rdm_model_grad(m, p, x, y, 0, q, &l), RDMAPS_E_INVAL);
	free(p);
	free(q);
	rdm_model_delete(&m);
	rdm_model_delete(&m);
	enum rdm_model_kind k;
	assert_int_equal(rdm_model_parse_kind("lstm", &k), 0);
	assert_int_equal(k, RDM_MODEL_LSTM);
	assert_int_equal(rdm_model_parse_kind("cnn", &k), RDMAPS_E_INVAL);
	cfg.kind = RDM_MODEL_LSTM;
	assert_int_equal(rdm_model_new(&cfg, &m), 0);
	assert_int_equal(rdm_model_nparams(m), (28 + 128) * 512 + 512 + 1280 + 10);
	rdm_model_delete(&m);
	cfg.max_batch = 0;
	assert_int_equal(rdm_model_new(&cfg, &m), RDMAPS_E_INVAL);
	assert_null(m);
}

/* A NaN in any parameter tensor shows as a NaN loss, in grad and in eval,
 * as it does in TF: the MLP's ReLU once turned a NaN into 0, and the LSTM's
 * fast-math cell clamped a NaN gate into a finite one, so a diverged run
 * reported finite losses (found by a review, 2026-12-06) */
static void test_nan_param_nan_loss(void **st)
{
	(void)st;
	for (int k = 0; k < 2; k++) {
		struct mctx c;
		setup(&c, k ? RDM_MODEL_LSTM : RDM_MODEL_MLP, 6, 0, 8);
		for (int ti = 0; ti < rdm_model_ntensors(c.m); ti++) {
			const struct rdm_tensor *t = rdm_model_tensor(c.m, ti);
			for (int v = 0; v < 2; v++) {
				size_t at = t->offset + (v ? t->count - 1 : t->count / 2);
				float keep = c.p[at];
				double lg = 0, le = 0;
				int hits;
				c.p[at] = v ? INFINITY : NAN;
				assert_int_equal(rdm_model_grad(c.m, c.p, c.x, c.y, 8, c.g, &lg), 0);
				assert_int_equal(rdm_model_eval(c.m, c.p, c.x, c.y, 8, &le, &hits), 0);
				if (!isnan(lg) || !isnan(le))
					fail_msg("%s: %s in %s[%zu]: loss %g (grad), %g (eval), want NaN",
						 k ? "lstm" : "mlp", v ? "Inf" : "NaN", t->name,
						 at - t->offset, lg, le);
				c.p[at] = keep;
			}
		}
		teardown(&c);
	}
}

/* eval chunks by max_batch and sums; must match grad's summed loss */
static void test_eval_matches_grad(void **st)
{
	(void)st;
	for (int k = 0; k < 2; k++) {
		struct mctx c;
		setup(&c, k ? RDM_MODEL_LSTM : RDM_MODEL_MLP, 6, 0, 8);
		double lg, le, l1, l2;
		int hits, h1, h2;
		assert_int_equal(rdm_model_grad(c.m, c.p, c.x, c.y, 8, c.g, &lg), 0);
		assert_int_equal(rdm_model_eval(c.m, c.p, c.x, c.y, 8, &le, &hits), 0);
		assert_float_equal(lg, le, 1e-4 * fabs(lg));
		assert_int_equal(rdm_model_eval(c.m, c.p, c.x, c.y, 5, &l1, &h1), 0);
		assert_int_equal(rdm_model_eval(c.m, c.p, c.x + 5 * 784, c.y + 5, 3, &l2, &h2), 0);
		assert_float_equal(l1 + l2, le, 1e-4 * fabs(le));
		assert_int_equal(h1 + h2, hits);
		teardown(&c);
	}
}

/* eval over pixel bytes converts chunk by chunk into the model's buffer:
 * the same sums as eval over the converted floats, bit for bit, also for
 * a count that is not a multiple of max_batch */
static void test_eval_pixels(void **st)
{
	(void)st;
	enum { N = 37 };
	uint8_t *px = malloc((size_t)N * 784);
	float *x = malloc(sizeof(float) * N * 784);
	uint8_t y[N];
	for (size_t i = 0; i < (size_t)N * 784; i++)
		px[i] = (uint8_t)((i * 2654435761u) >> 13);
	for (int i = 0; i < N; i++)
		y[i] = (uint8_t)(i % 10);
	rdm_pixels_to_float(px, (size_t)N * 784, x);
	for (int k = 0; k < 2; k++) {
		struct rdm_model_cfg cfg = { .kind = k ? RDM_MODEL_LSTM : RDM_MODEL_MLP, .max_batch = 8 };
		struct rdm_model *m;
		assert_int_equal(rdm_model_new(&cfg, &m), 0);
		float *w = malloc(sizeof(float) * rdm_model_nparams(m));
		rdm_model_init(m, w, 3);
		double lf, lp;
		int hf, hp;
		assert_int_equal(rdm_model_eval(m, w, x, y, N, &lf, &hf), 0);
		assert_int_equal(rdm_model_eval_pixels(m, w, px, y, N, &lp, &hp), 0);
		assert_true(lf == lp);
		assert_int_equal(hf, hp);
		assert_int_equal(rdm_model_eval_pixels(m, w, NULL, y, N, &lp, &hp), RDMAPS_E_INVAL);
		free(w);
		rdm_model_delete(&m);
	}
	free(px);
	free(x);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_eval_matches_grad),
		cmocka_unit_test(test_nan_param_nan_loss),
		cmocka_unit_test(test_eval_pixels),
		cmocka_unit_test(test_mlp_grad_sum),
		cmocka_unit_test(test_mlp_grad_mean),
		cmocka_unit_test(test_lstm_grad_sum),
		cmocka_unit_test(test_lstm_grad_mean),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
