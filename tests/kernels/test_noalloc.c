/* Hot path: rdm_model_grad, rdm_model_eval(_pixels) and rdm_opt_apply allocate
 * nothing after rdm_model_new (malloc/calloc/realloc wrapped at link time
 * with -Wl,--wrap; covers our objects, not OpenBLAS's internals). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/model.h"
#include "kernels/optim.h"

static long n_alloc;
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { n_alloc++; return __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { n_alloc++; return __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { n_alloc++; return __real_realloc(p, n); }

static void check(enum rdm_model_kind k)
{
	struct rdm_model_cfg cfg = { .kind = k, .hidden_units = 16, .max_batch = 16 };
	struct rdm_model *m;
	long b0 = n_alloc;
	assert_int_equal(rdm_model_new(&cfg, &m), 0);
	assert_true(n_alloc > b0); /* the wrap does see the library's calls */
	size_t np = rdm_model_nparams(m);
	float *w = malloc(np * 4), *g = malloc(np * 4), *sm = malloc(np * 4), *sv = malloc(np * 4);
	float *x = calloc(40 * 784, 4);
	uint8_t *px = calloc(40 * 784, 1);
	uint8_t y[40] = { 0 };
	rdm_model_init(m, w, 1);
	struct rdm_opt_cfg oc;
	struct rdm_opt_state os;
	rdm_opt_defaults(&oc, RDM_OPT_ADAM, 0.01f);
	rdm_opt_state_init(&os, &oc, sm, sv, np);
	long before = n_alloc;
	for (int s = 0; s < 3; s++) {
		double l;
		int c;
		assert_int_equal(rdm_model_grad(m, w, x, y, 16, g, &l), 0);
		rdm_opt_apply(&oc, &os, w, w, g, NULL, 1.0f, np);
		rdm_vec_add(g, g, np);
		assert_int_equal(rdm_model_eval(m, w, x, y, 40, &l, &c), 0);
		assert_int_equal(rdm_model_eval_pixels(m, w, px, y, 40, &l, &c), 0);
	}
	assert_int_equal(n_alloc, before);
	free(w);
	free(g);
	free(sm);
	free(sv);
	free(x);
	free(px);
	rdm_model_delete(&m);
}

static void test_mlp(void **st) { (void)st; check(RDM_MODEL_MLP); }
static void test_lstm(void **st) { (void)st; check(RDM_MODEL_LSTM); }

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_mlp),
		cmocka_unit_test(test_lstm),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
