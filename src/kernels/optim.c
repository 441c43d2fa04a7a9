/* TF1 optimizers as one fused pass.  Built with -O3 -fno-math-errno (see
 * CMakeLists.txt) so the loops, sqrtf included, vectorize; docs/kernels.md
 * records the -fopt-info-vec evidence. */
#include <math.h>
#include <string.h>

#include "common/status.h"
#include "kernels/clones.h"
#include "kernels/optim.h"

void rdm_opt_defaults(struct rdm_opt_cfg *c, enum rdm_opt_kind k, float lr)
{
	c->kind = k;
	c->lr = lr;
	c->momentum = 0.9f;
	c->beta1 = 0.9f;
	c->beta2 = 0.999f;
	c->eps = 1e-8f;
}

int rdm_opt_parse_kind(const char *s, enum rdm_opt_kind *k)
{
	if (!s || !k)
		return RDMAPS_E_INVAL;
	if (!strcmp(s, "sgd"))
		*k = RDM_OPT_SGD;
	else if (!strcmp(s, "momentum"))
		*k = RDM_OPT_MOMENTUM;
	else if (!strcmp(s, "adam"))
		*k = RDM_OPT_ADAM;
	else
		return RDMAPS_E_INVAL;
	return 0;
}

int rdm_opt_state_init(struct rdm_opt_state *s, const struct rdm_opt_cfg *c,
		       float *m, float *v, size_t n)
{
	if (!s || !c)
		return RDMAPS_E_INVAL;
	if ((c->kind == RDM_OPT_MOMENTUM && !m) || (c->kind == RDM_OPT_ADAM && (!m || !v)))
		return RDMAPS_E_INVAL;
	s->m = m;
	s->v = v;
	s->n = n;
	if (m)
		memset(m, 0, sizeof(float) * n);
	if (v)
		memset(v, 0, sizeof(float) * n);
	s->beta1_power = c->beta1;
	s->beta2_power = c->beta2;
	return 0;
}

/* The kernels.  Each body is written once (always inlined) and instantiated
 * four ways: with/without g2 (no branch in the inner loop) and in place
 * (w_out == w_in, one restrict pointer) or out of place (two restrict
 * pointers), so the compiler needs no alias versioning. */
#define INL static inline __attribute__((always_inline))

INL void sgd_k(float *wo, const float *wi, const float *restrict g1,
	       const float *restrict g2, float scale, float lr, size_t n)
{
	if (g2)
		for (size_t i = 0; i < n; i++)
			wo[i] = wi[i] - lr * (scale * (g1[i] + g2[i]));
	else
		for (size_t i = 0; i < n; i++)
			wo[i] = wi[i] - lr * (scale * g1[i]);
}

INL void mom_k(float *wo, const float *wi, const float *restrict g1,
	       const float *restrict g2, float scale, float lr, float mu,
	       float *restrict a, size_t n)
{
	if (g2)
		for (size_t i = 0; i < n; i++) {
			float ai = mu * a[i] + scale * (g1[i] + g2[i]);
			a[i] = ai;
			wo[i] = wi[i] - lr * ai;
		}
	else
		for (size_t i = 0; i < n; i++) {
			float ai = mu * a[i] + scale * g1[i];
			a[i] = ai;
			wo[i] = wi[i] - lr * ai;
		}
}

#define ADAM_BODY(G)                                                   \
	for (size_t i = 0; i < n; i++) {                               \
		float g = (G);                                         \
		float mi = b1 * m[i] + c1 * g;                         \
		float vi = b2 * v[i] + c2 * g * g;                     \
		m[i] = mi;                                             \
		v[i] = vi;                                             \
		wo[i] = wi[i] - lr_t * mi / (sqrtf(vi) + eps);         \
	}

INL void adam_k(float *wo, const float *wi, const float *restrict g1,
		const float *restrict g2, float scale, float lr_t, float b1,
		float b2, float eps, float *restrict m, float *restrict v, size_t n)
{
	const float c1 = 1.0f - b1, c2 = 1.0f - b2;
	if (g2)
		ADAM_BODY(scale * (g1[i] + g2[i]))
	else
		ADAM_BODY(scale * g1[i])
}

static void sgd_ip(float *restrict w, const float *restrict g1, const float *g2, float scale,
		   float lr, size_t n)
{
	sgd_k(w, w, g1, g2, scale, lr, n);
}
static void sgd_op(float *restrict wo, const float *restrict wi, const float *restrict g1,
		   const float *g2, float scale, float lr, size_t n)
{
	sgd_k(wo, wi, g1, g2, scale, lr, n);
}
static void mom_ip(float *restrict w, const float *restrict g1, const float *g2, float scale,
		   float lr, float mu, float *a, size_t n)
{
	mom_k(w, w, g1, g2, scale, lr, mu, a, n);
}
static void mom_op(float *restrict wo, const float *restrict wi, const float *restrict g1,
		   const float *g2, float scale, float lr, float mu, float *a, size_t n)
{
	mom_k(wo, wi, g1, g2, scale, lr, mu, a, n);
}
/* Adam gets a second, AVX-512 build picked at run time by the CPU (GCC
 * function multi-versioning through an ifunc): lanes are independent, so
 * both builds give the same floats.  Measured on the 2-core EPYC of CI:
 * about 15% faster on a 79,510-float shard.  With it the loop is bound by
 * memory traffic, not by the sqrt and divide (ps_apply_bench's adam_nosqrt
 * diagnostic runs within 1-3%; docs/benchmarks.md "ps apply").  Off with
 * -DRDMAPS_NO_CLONES (kernels/clones.h). */

RDM_CLONES
static void adam_ip(float *restrict w, const float *restrict g1, const float *g2, float scale,
		    float lr_t, float b1, float b2, float eps, float *m, float *v,
		    size_t n)
{
	adam_k(w, w, g1, g2, scale, lr_t, b1, b2, eps, m, v, n);
}

RDM_CLONES
static void adam_op(float *restrict wo, const float *restrict wi, const float *restrict g1,
		    const float *g2, float scale, float lr_t, float b1, float b2,
		    float eps, float *m, float *v, size_t n)
{
	adam_k(wo, wi, g1, g2, scale, lr_t, b1, b2, eps, m, v, n);
}

void rdm_opt_apply(const struct rdm_opt_cfg *c, struct rdm_opt_state *s,
		   float *w_out, const float *w_in, const float *g1,
		   const float *g2, float scale, size_t n)
{
	switch (c->kind) {
	case RDM_OPT_SGD:
		if (w_out == w_in)
			sgd_ip(w_out, g1, g2, scale, c->lr, n);
		else
			sgd_op(w_out, w_in, g1, g2, scale, c->lr, n);
		break;
	case RDM_OPT_MOMENTUM:
		if (w_out == w_in)
			mom_ip(w_out, g1, g2, scale, c->lr, c->momentum, s->m, n);
		else
			mom_op(w_out, w_in, g1, g2, scale, c->lr, c->momentum, s->m, n);
		break;
	case RDM_OPT_ADAM: {
		double lr_t = c->lr * sqrt(1.0 - s->beta2_power) / (1.0 - s->beta1_power);
		if (w_out == w_in)
			adam_ip(w_out, g1, g2, scale, (float)lr_t, c->beta1, c->beta2,
				c->eps, s->m, s->v, n);
		else
			adam_op(w_out, w_in, g1, g2, scale, (float)lr_t, c->beta1,
				c->beta2, c->eps, s->m, s->v, n);
		s->beta1_power *= c->beta1;
		s->beta2_power *= c->beta2;
		break;
	}
	}
}

void rdm_vec_add(float *restrict acc, const float *restrict g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		acc[i] += g[i];
}

void rdm_vec_sum2(float *restrict out, const float *restrict a, const float *restrict b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

const float *rdm_sum_head(float *out, const float *const *g, int R, size_t n)
{
	if (R <= 2)
		return g[0];
	rdm_vec_sum2(out, g[0], g[1], n);
	for (int k = 2; k < R - 1; k++)
		rdm_vec_add(out, g[k], n);
	return out;
}
