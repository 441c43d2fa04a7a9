/* Short training runs on generated data (10 noisy prototypes): the loss must
 * fall, for the MLP with Adam and SGD and for a small LSTM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/model.h"
#include "kernels/optim.h"

enum { B = 32 };

static void make_batch(struct rdm_rng *r, const float *proto, float *x, uint8_t *y)
{
	for (int i = 0; i < B; i++) {
		int k = (int)(rdm_rng_u64(r) % 10);
		y[i] = (uint8_t)k;
		for (int j = 0; j < 784; j++) {
			float v = proto[k * 784 + j] + (float)(0.6 * (rdm_rng_uniform(r) - 0.5));
			x[i * 784 + j] = v < 0 ? 0 : (v > 1 ? 1 : v);
		}
	}
}

static void run(enum rdm_model_kind kind, int hidden, enum rdm_opt_kind ok, float lr,
		int steps)
{
	struct rdm_model_cfg cfg = { .kind = kind, .hidden_units = hidden, .max_batch = B,
				     .loss_mean = 1 };
	struct rdm_model *m;
	assert_int_equal(rdm_model_new(&cfg, &m), 0);
	size_t np = rdm_model_nparams(m);
	float *w = malloc(np * 4), *g = malloc(np * 4), *sm = malloc(np * 4), *sv = malloc(np * 4);
	static float proto[10 * 784], x[B * 784];
	uint8_t y[B];
	struct rdm_rng r;
	rdm_rng_seed(&r, 11);
	for (int i = 0; i < 10 * 784; i++)
		proto[i] = rdm_rng_uniform(&r) < 0.2 ? 1.0f : 0.0f;
	rdm_model_init(m, w, 3);
	struct rdm_opt_cfg oc;
	struct rdm_opt_state os;
	rdm_opt_defaults(&oc, ok, lr);
	assert_int_equal(rdm_opt_state_init(&os, &oc, sm, sv, np), 0);
	double first = 0, last = 0;
	for (int s = 0; s < steps; s++) {
		double l;
		make_batch(&r, proto, x, y);
		assert_int_equal(rdm_model_grad(m, w, x, y, B, g, &l), 0);
		rdm_opt_apply(&oc, &os, w, w, g, NULL, 1.0f, np);
		if (s < 5)
			first += l / 5;
		if (s >= steps - 5)
			last += l / 5;
	}
	make_batch(&r, proto, x, y);
	int hits;
	double el;
	assert_int_equal(rdm_model_eval(m, w, x, y, B, &el, &hits), 0);
	printf("  %s/%d: loss %.4f -> %.4f, held-out acc %d/%d\n",
	       kind == RDM_MODEL_MLP ? "mlp" : "lstm", ok, first, last, hits, B);
	assert_true(isfinite(last));
	assert_true(last < 0.5 * first);
	free(w);
	free(g);
	free(sm);
	free(sv);
	rdm_model_delete(&m);
}

static void test_mlp_adam(void **st) { (void)st; run(RDM_MODEL_MLP, 32, RDM_OPT_ADAM, 0.01f, 60); }
static void test_mlp_sgd(void **st) { (void)st; run(RDM_MODEL_MLP, 32, RDM_OPT_SGD, 0.1f, 60); }
static void test_mlp_momentum(void **st) { (void)st; run(RDM_MODEL_MLP, 32, RDM_OPT_MOMENTUM, 0.05f, 60); }
static void test_lstm_adam(void **st) { (void)st; run(RDM_MODEL_LSTM, 32, RDM_OPT_ADAM, 0.01f, 80); }

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_mlp_adam),
		cmocka_unit_test(test_mlp_sgd),
		cmocka_unit_test(test_mlp_momentum),
		cmocka_unit_test(test_lstm_adam),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
