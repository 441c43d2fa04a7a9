/* rdmaps kernels: optimizers (TF1 GradientDescent, Momentum, Adam) as one
 * fused, vectorized pass over a flat float range.
 *
 * The ps applies these per shard: state (m, v, beta powers) is per range and
 * caller-owned, so a shard can keep its own slots. */
#ifndef RDMAPS_KERNELS_OPTIM_H
#define RDMAPS_KERNELS_OPTIM_H

#include <stddef.h>

enum rdm_opt_kind { RDM_OPT_SGD, RDM_OPT_MOMENTUM, RDM_OPT_ADAM };

struct rdm_opt_cfg {
	enum rdm_opt_kind kind;
	float lr, momentum, beta1, beta2, eps;
};

/* TF1 defaults: beta1 .9, beta2 .999, eps 1e-8, momentum .9. */
void rdm_opt_defaults(struct rdm_opt_cfg *c, enum rdm_opt_kind k, float lr);

/* "sgd" | "momentum" | "adam" -> *k.  Returns 0 or RDMAPS_E_INVAL. */
int rdm_opt_parse_kind(const char *s, enum rdm_opt_kind *k);

struct rdm_opt_state {
	double beta1_power, beta2_power;
	float *m; /* momentum accumulator / Adam m */
	float *v; /* Adam v */
	size_t n;
};

/* m, v: caller-owned n floats (v may be NULL unless Adam; m NULL for SGD);
 * zeroes them, beta powers = beta1, beta2.  Returns 0 or RDMAPS_E_INVAL. */
int rdm_opt_state_init(struct rdm_opt_state *s, const struct rdm_opt_cfg *c,
		       float *m, float *v, size_t n);

/* ONE fused pass over n floats (n <= s->n):
 *   g[i] = scale*(g1[i] + (g2 ? g2[i] : 0)); w_out[i] = step(w_in[i], g[i]).
 * w_out may == w_in (otherwise the ranges must not overlap).
 * SGD: w -= lr g.  Momentum (TF1, no nesterov): a = mom a + g; w -= lr a.
 * Adam (TF1): lr_t = lr sqrt(1-b2p)/(1-b1p); m = b1 m + (1-b1) g;
 *   v = b2 v + (1-b2) g^2; w -= lr_t m/(sqrt(v)+eps); then b1p *= b1, b2p *= b2. */
void rdm_opt_apply(const struct rdm_opt_cfg *c, struct rdm_opt_state *s,
		   float *w_out, const float *w_in, const float *g1,
		   const float *g2, float scale, size_t n);

/* acc[i] += g[i], vectorized. */
void rdm_vec_add(float *acc, const float *g, size_t n);

/* out[i] = a[i] + b[i], vectorized. */
void rdm_vec_sum2(float *out, const float *a, const float *b, size_t n);

/* The first R-1 of R gradients g[0..R-1] summed in index order, for
 * rdm_opt_apply(g1 = the result, g2 = g[R-1]): g[0] itself when R <= 2
 * (nothing copied), else out = g[0] + g[1] + ... + g[R-2].  What the ps
 * does with the slots of one sync update (src/ps/shard.c). */
const float *rdm_sum_head(float *out, const float *const *g, int R, size_t n);

#endif
