/* Optimizer steps against hand-computed values: SGD, Momentum, Adam (two
 * steps, bias correction), the g2 and scale paths, w_out != w_in, vec_add. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/status.h"
#include "kernels/optim.h"

enum { N = 37 }; /* odd: exercises the vector loop and its scalar tail */

static void test_sgd(void **st)
{
	(void)st;
	struct rdm_opt_cfg c;
	struct rdm_opt_state s;
	rdm_opt_defaults(&c, RDM_OPT_SGD, 0.1f);
	assert_int_equal(rdm_opt_state_init(&s, &c, NULL, NULL, N), 0);
	float w[N], g[N], g2[N], wo[N];
	for (int i = 0; i < N; i++) {
		w[i] = 1.0f;
		g[i] = 0.5f;
		g2[i] = 0.3f;
	}
	rdm_opt_apply(&c, &s, w, w, g, NULL, 1.0f, N);
	for (int i = 0; i < N; i++)
		assert_float_equal(w[i], 0.95f, 1e-7);
	/* g = 0.5*(0.5+0.3) = 0.4; out of place: w_in untouched */
	rdm_opt_apply(&c, &s, wo, w, g, g2, 0.5f, N);
	for (int i = 0; i < N; i++) {
		assert_float_equal(wo[i], 0.95f - 0.04f, 1e-7);
		assert_float_equal(w[i], 0.95f, 0.0);
	}
}

static void test_momentum(void **st)
{
	(void)st;
	struct rdm_opt_cfg c;
	struct rdm_opt_state s;
	float w[N], g[N], a[N], wo[N], g2[N];
	rdm_opt_defaults(&c, RDM_OPT_MOMENTUM, 0.1f);
	assert_float_equal(c.momentum, 0.9f, 0);
	assert_int_equal(rdm_opt_state_init(&s, &c, NULL, NULL, N), RDMAPS_E_INVAL);
	memset(a, 0x7f, sizeof(a));
	assert_int_equal(rdm_opt_state_init(&s, &c, a, NULL, N), 0);
	for (int i = 0; i < N; i++) {
		assert_true(a[i] == 0.0f);
		w[i] = 1.0f;
		g[i] = 0.5f;
		g2[i] = -0.25f;
	}
	rdm_opt_apply(&c, &s, w, w, g, NULL, 1.0f, N); /* a=.5, w=.95 */
	rdm_opt_apply(&c, &s, w, w, g, NULL, 1.0f, N); /* a=.95, w=.855 */
	for (int i = 0; i < N; i++) {
		assert_float_equal(a[i], 0.95f, 1e-6);
		assert_float_equal(w[i], 0.855f, 1e-6);
	}
	/* g = 2*(0.5-0.25) = 0.5: a = .855+.5 = 1.355, wo = .855-.1355 */
	rdm_opt_apply(&c, &s, wo, w, g, g2, 2.0f, N);
	for (int i = 0; i < N; i++) {
		assert_float_equal(a[i], 1.355f, 1e-6);
		assert_float_equal(wo[i], 0.7195f, 1e-6);
		assert_float_equal(w[i], 0.855f, 0);
	}
}

static void test_adam(void **st)
{
	(void)st;
	struct rdm_opt_cfg c;
	struct rdm_opt_state s;
	float w[N], g[N], m[N], v[N], wo[N], g2[N];
	rdm_opt_defaults(&c, RDM_OPT_ADAM, 0.1f);
	assert_float_equal(c.beta1, 0.9f, 0);
	assert_float_equal(c.beta2, 0.999f, 0);
	assert_float_equal(c.eps, 1e-8f, 0);
	assert_int_equal(rdm_opt_state_init(&s, &c, m, NULL, N), RDMAPS_E_INVAL);
	assert_int_equal(rdm_opt_state_init(&s, &c, m, v, N), 0);
	assert_float_equal(s.beta1_power, 0.9f, 0);
	assert_float_equal(s.beta2_power, 0.999f, 0);
	for (int i = 0; i < N; i++) {
		w[i] = 1.0f;
		g[i] = 0.5f;
	}
	/* step 1: lr_t = .1*sqrt(.001)/.1 = .0316228; m = .05; v = .00025;
	 * w = 1 - .0316228*.05/(.0158114+1e-8) = 0.9000001 (bias correction
	 * makes the first step exactly lr * sign(g)) */
	rdm_opt_apply(&c, &s, w, w, g, NULL, 1.0f, N);
	for (int i = 0; i < N; i++) {
		assert_float_equal(m[i], 0.05f, 1e-7);
		assert_float_equal(v[i], 0.00025f, 1e-8); /* (1-0.999f) in float */
		assert_float_equal(w[i], 0.9f, 1e-6);
	}
	assert_float_equal(s.beta1_power, 0.81, 1e-7);
	assert_float_equal(s.beta2_power, 0.998001, 1e-7);
	/* step 2, out of place, g = 0.5*(0.3+0.2) = 0.25:
	 * lr_t = .1*sqrt(1-.998001)/(1-.81) = .0235317; m = .045+.025 = .07;
	 * v = .999*.00025 + .001*.0625 = .00031225; sqrt v = .0176706;
	 * wo = .9 - .0235317*.07/.0176706 = .9 - .0932184 = .8067816 */
	for (int i = 0; i < N; i++) {
		g[i] = 0.3f;
		g2[i] = 0.2f;
	}
	rdm_opt_apply(&c, &s, wo, w, g, g2, 0.5f, N);
	for (int i = 0; i < N; i++) {
		assert_float_equal(m[i], 0.07f, 1e-7);
		assert_float_equal(v[i], 0.00031225f, 1e-8);
		assert_float_equal(wo[i], 0.8067816f, 2e-6);
		assert_float_equal(w[i], 0.9f, 1e-6);
	}
	assert_float_equal(s.beta1_power, 0.729, 1e-7);
}

static void test_vec_add(void **st)
{
	(void)st;
	float a[N], b[N];
	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 0.5f * i;
	}
	rdm_vec_add(a, b, N);
	for (int i = 0; i < N; i++)
		assert_float_equal(a[i], 1.5f * i, 0);
	enum rdm_opt_kind k;
	assert_int_equal(rdm_opt_parse_kind("momentum", &k), 0);
	assert_int_equal(k, RDM_OPT_MOMENTUM);
	assert_int_equal(rdm_opt_parse_kind("rmsprop", &k), RDMAPS_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_sgd),
		cmocka_unit_test(test_momentum),
		cmocka_unit_test(test_adam),
		cmocka_unit_test(test_vec_add),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
