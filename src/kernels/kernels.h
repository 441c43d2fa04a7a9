/* rdmaps kernels: internal layer primitives (row-major float, batch-major).
 * Not part of the public model API; used by mlp.c, lstm_model.c and tests. */
#ifndef RDMAPS_KERNELS_KERNELS_H
#define RDMAPS_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* y[n,out] = x[n,in] W[in,out] + b[out]  (cblas_sgemm).  b may be NULL. */
void rdm_dense_fwd(const float *x, int n, int in, const float *W, const float *b,
		   int out, float *y);

/* Given dy[n,out]: dW[in,out] (= or += per accumulate) x^T dy, db (=/+=) colsum(dy),
 * dx[n,in] = dy W^T.  db, dx may be NULL. */
void rdm_dense_bwd(const float *x, int n, int in, const float *W, int out,
		   const float *dy, float *dW, float *db, float *dx, int accumulate);

/* In place: y = max(y, 0). */
void rdm_relu_fwd(float *y, size_t n);
/* dy *= (y > 0), where y is the ReLU output. */
void rdm_relu_bwd(const float *y, float *dy, size_t n);

/* Numerically stable logistic and tanh used by the LSTM. */
float rdm_sigmoidf(float x);

/* Softmax + cross entropy exactly as mnist_replica:
 *   loss = -sum_{b,k} onehot(y)_bk log(clip(softmax(z)_bk, 1e-10, 1))
 * (mean != 0: divided by n).  dz (may be NULL) = d loss / d logits, zero for
 * examples whose true-class probability was clipped.  *loss in double.
 * correct (may be NULL) += number of argmax(z) == y.  k <= 64. */
void rdm_softmax_ce(const float *z, int n, int k, const uint8_t *y, int mean,
		    float *dz, double *loss, int *correct);

/* LSTM cell for one time step over n examples (lstm_cell.c, vectorized).
 * Rows: G, dG [n][4H]; cp, cn, tc, dh, dc [n][H]; hn row stride ldh.
 * fwd: G = gate pre-activations (i,g,f,o) without bias; adds bias[4H], turns
 *      them into activations in place; cn = f cp + i g, tc = tanh(cn),
 *      hn = o tc.
 * bwd: from activations G, previous cell cp, tc and dh, dc (in: from step
 *      t+1, out: to step t-1): dG = gradient wrt the gate pre-activations. */
void rdm_lstm_cell_fwd(int n, int H, float *G, const float *bias, const float *cp, float *cn,
		       float *tc, float *hn, size_t ldh);
void rdm_lstm_cell_bwd(int n, int H, const float *G, const float *cp, const float *tc,
		       const float *dh, float *dc, float *dG);

/* Random numbers for initializers (xoshiro256**, seeded by splitmix64). */
struct rdm_rng { uint64_t s[4]; };
void rdm_rng_seed(struct rdm_rng *r, uint64_t seed);
uint64_t rdm_rng_u64(struct rdm_rng *r);
double rdm_rng_uniform(struct rdm_rng *r);          /* [0,1) */
double rdm_rng_normal(struct rdm_rng *r);           /* N(0,1) */
/* TF truncated_normal: N(0, stddev) redrawn while |z| > 2 stddev. */
void rdm_init_truncnormal(struct rdm_rng *r, float *w, size_t n, float stddev);
void rdm_init_uniform(struct rdm_rng *r, float *w, size_t n, float lo, float hi);

#endif
