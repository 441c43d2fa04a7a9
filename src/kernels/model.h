/* rdmaps kernels: models (mlp, lstm) over one flat float parameter vector.
 *
 * All trainable parameters of a model live in ONE contiguous float vector of
 * rdm_model_nparams() floats; rdm_model_tensor(i) names each piece (name,
 * shape, offset, count).  That flat layout is what the parameter server
 * shards.  Layouts are row-major; see docs/kernels.md.
 *
 * Threading: an rdm_model owns a workspace sized for max_batch, so one model
 * object must be used by one thread at a time.  params/grad are caller-owned. */
#ifndef RDMAPS_KERNELS_MODEL_H
#define RDMAPS_KERNELS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define RDM_MNIST_PIXELS 784
#define RDM_MNIST_CLASSES 10

enum rdm_model_kind { RDM_MODEL_MLP, RDM_MODEL_LSTM };

struct rdm_model_cfg {
	enum rdm_model_kind kind;
	int hidden_units; /* <=0: mlp 100, lstm 128 */
	int max_batch;    /* largest n passed to rdm_model_grad (and eval chunk) */
	int threads;      /* OpenBLAS threads, <=0: 1 */
	int loss_mean;    /* 0: summed CE as mnist_replica (mlp default), 1: mean */
};

struct rdm_tensor {
	char name[32];
	int ndim;
	int shape[4];
	size_t offset; /* in floats, into the flat parameter vector */
	size_t count;  /* product of shape */
};

struct rdm_model;

/* "mlp" | "lstm" -> *k.  Returns 0 or RDMAPS_E_INVAL. */
int rdm_model_parse_kind(const char *s, enum rdm_model_kind *k);

/* Create a model and its workspace (no allocation happens after this).
 * Returns 0, RDMAPS_E_INVAL (bad cfg) or RDMAPS_E_NOMEM; *m set only on success. */
int rdm_model_new(const struct rdm_model_cfg *cfg, struct rdm_model **m);

/* Free the model; sets *m = NULL; accepts NULL and *m == NULL. */
void rdm_model_delete(struct rdm_model **m);

size_t rdm_model_nparams(const struct rdm_model *m);
int rdm_model_ntensors(const struct rdm_model *m);
/* i in [0, ntensors); NULL otherwise. */
const struct rdm_tensor *rdm_model_tensor(const struct rdm_model *m, int i);

/* Fill params (nparams floats) with the mnist_replica initializers
 * (mlp: truncated normal stddev 1/28 and 1/sqrt(hidden), zero biases;
 *  lstm: glorot uniform kernel, forget-gate bias 1, truncated normal output).
 * Deterministic in seed. */
void rdm_model_init(const struct rdm_model *m, float *params, uint64_t seed);

/* Forward + backward on n <= max_batch examples (x: n*784 in [0,1], y: labels
 * 0..9).  grad (nparams floats) is overwritten; *loss = batch loss (sum or
 * mean per cfg).  Returns 0 or RDMAPS_E_INVAL (n out of range, bad label). */
int rdm_model_grad(struct rdm_model *m, const float *params, const float *x,
		   const uint8_t *y, int n, float *grad, double *loss);

/* Evaluate any n >= 0 (internally batched by max_batch): *loss_sum = SUMMED
 * cross entropy over all n (mnist_replica's validation value), *correct =
 * number of argmax hits.  Either output may be NULL.  Returns 0 or RDMAPS_E_INVAL. */
int rdm_model_eval(struct rdm_model *m, const float *params, const float *x,
		   const uint8_t *y, int n, double *loss_sum, int *correct);

/* rdm_model_eval over images as the data set holds them: px = n*784 pixel
 * bytes, turned into floats (rdm_pixels_to_float, data.h) one max_batch
 * chunk at a time in a buffer of the model's own, so the sums are those
 * rdm_model_eval gives over the converted floats, bit for bit. */
int rdm_model_eval_pixels(struct rdm_model *m, const float *params, const uint8_t *px,
			  const uint8_t *y, int n, double *loss_sum, int *correct);

#endif
