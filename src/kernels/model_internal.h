/* rdmaps kernels: the model object shared by model.c, mlp.c, lstm_model.c. */
#ifndef RDMAPS_KERNELS_MODEL_INTERNAL_H
#define RDMAPS_KERNELS_MODEL_INTERNAL_H

#include "kernels/kernels.h"
#include "kernels/model.h"

#define RDM_MAX_TENSORS 8
#define RDM_MAX_BUFS 8

struct rdm_model;

struct rdm_model_ops {
	/* forward on n <= max_batch: fills m->logits[n*10]; keeps activations
	 * needed by bwd in the workspace. */
	void (*fwd)(struct rdm_model *m, const float *p, const float *x, int n);
	/* backward from m->dlogits[n*10]: overwrites all of grad. */
	void (*bwd)(struct rdm_model *m, const float *p, const float *x, int n, float *grad);
	void (*init)(const struct rdm_model *m, float *p, struct rdm_rng *r);
};

struct rdm_model {
	struct rdm_model_cfg cfg; /* hidden_units, threads resolved */
	const struct rdm_model_ops *ops;
	size_t nparams;
	int ntensors;
	struct rdm_tensor t[RDM_MAX_TENSORS];
	float *logits, *dlogits;     /* max_batch * 10 */
	float *xin;                  /* max_batch * 784: rdm_model_eval_pixels' floats */
	float *buf[RDM_MAX_BUFS];    /* model-specific workspace */
};

/* Append a tensor at the current end of the flat vector; returns its offset. */
size_t rdm_model_add_tensor(struct rdm_model *m, const char *name, int ndim,
			    int d0, int d1);

/* Set up ops, tensors and buf[] (calloc'd; freed by rdm_model_delete).
 * Return 0 or RDMAPS_E_NOMEM. */
int rdm_mlp_setup(struct rdm_model *m);
int rdm_lstm_setup(struct rdm_model *m);

#endif
