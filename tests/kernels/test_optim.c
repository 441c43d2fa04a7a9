/* Optimizer steps against hand-computed values: SGD, Momentum, Adam (two
 * steps, bias correction), the g2 and scale paths, w_out != w_in, vec_add. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
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
	float c[N];
	rdm_vec_sum2(c, a, b, N); /* 1.5 i + 0.5 i, exact in float for i < N */
	for (int i = 0; i < N; i++)
		assert_float_equal(c[i], 2.0f * i, 0);
	/* rdm_sum_head: g[0] itself for R <= 2, else the sum of g[0..R-2] */
	const float *g[4] = { a, b, c, a };
	float out[N];
	assert_ptr_equal(rdm_sum_head(out, g, 1, N), a);
	assert_ptr_equal(rdm_sum_head(out, g, 2, N), a);
	assert_ptr_equal(rdm_sum_head(out, g, 3, N), out);
	for (int i = 0; i < N; i++)
		assert_float_equal(out[i], 2.0f * i, 0);   /* a + b */
	assert_ptr_equal(rdm_sum_head(out, g, 4, N), out);
	for (int i = 0; i < N; i++)
		assert_float_equal(out[i], 4.0f * i, 0);   /* a + b + c */
	enum rdm_opt_kind k;
	assert_int_equal(rdm_opt_parse_kind("momentum", &k), 0);
	assert_int_equal(k, RDM_OPT_MOMENTUM);
	assert_int_equal(rdm_opt_parse_kind("rmsprop", &k), RDMAPS_E_INVAL);
}

/* A shard of a million floats, not a multiple of any vector width: Adam out
 * of place (the ps writing its other parameter buffer) gives, bit for bit,
 * what the in-place pass gives, for w, m and v, with and without g2, with
 * w_out 16-byte aligned or not.  On a CPU with AVX-512 this runs the
 * x86-64-v4 clone of the kernels (optim.c). */
static void test_adam_large(void **st)
{
	(void)st;
	const size_t n = (4u << 20) / sizeof(float) + 1029;
	float *buf[9];
	for (int k = 0; k < 9; k++)
		assert_non_null(buf[k] = malloc((n + 4) * sizeof(float)));
	float *w_ip = buf[0], *w_in = buf[1], *w_out = buf[2], *g1 = buf[3], *g2 = buf[4];
	float *m_ip = buf[5], *v_ip = buf[6], *m_op = buf[7], *v_op = buf[8];
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		w_ip[i] = w_in[i] = (float)(x >> 8) / (float)(1u << 24) - 0.5f;
		g1[i] = (float)((x >> 4) & 0xffff) / 65536.0f - 0.5f;
		g2[i] = (float)((x >> 12) & 0xfff) / 4096.0f - 0.5f;
	}
	for (int shift = 0; shift < 2; shift++) {
		struct rdm_opt_cfg c;
		struct rdm_opt_state s_ip, s_op;
		rdm_opt_defaults(&c, RDM_OPT_ADAM, 0.01f);
		assert_int_equal(rdm_opt_state_init(&s_ip, &c, m_ip, v_ip, n), 0);
		assert_int_equal(rdm_opt_state_init(&s_op, &c, m_op, v_op, n), 0);
		memcpy(w_in, w_ip, n * sizeof(float)); /* the same start for both */
		float *wo = w_out + shift; /* shift 1: not 16-byte aligned */
		for (int step = 0; step < 3; step++) {
			const float *gg2 = step == 1 ? NULL : g2;
			rdm_opt_apply(&c, &s_ip, w_ip, w_ip, g1, gg2, 0.5f, n);
			if (step)
				memcpy(w_in, wo, n * sizeof(float)); /* always out of place */
			rdm_opt_apply(&c, &s_op, wo, w_in, g1, gg2, 0.5f, n);
			assert_memory_equal(wo, w_ip, n * sizeof(float));
			assert_memory_equal(m_op, m_ip, n * sizeof(float));
			assert_memory_equal(v_op, v_ip, n * sizeof(float));
		}
	}
	for (int k = 0; k < 9; k++)
		free(buf[k]);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_sgd),
		cmocka_unit_test(test_momentum),
		cmocka_unit_test(test_adam),
		cmocka_unit_test(test_vec_add),
		cmocka_unit_test(test_adam_large),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
