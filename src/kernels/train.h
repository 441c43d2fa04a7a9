/* rdmaps kernels: single-process trainer, `rdmaps train ...`. */
#ifndef RDMAPS_KERNELS_TRAIN_H
#define RDMAPS_KERNELS_TRAIN_H

/* argv[0] = "train".  Flags: --model=mlp|lstm --data_dir=DIR --epochs=N
 * --batch_size=B --learning_rate=LR --threads=T --hidden_units=H --seed=S
 * --optimizer=adam|sgd|momentum --loss=sum|mean.  Returns the process exit code
 * (0 ok, 1 runtime failure, 2 usage error). */
int rdm_train_main(int argc, char **argv);

#include <stdint.h>
#include "kernels/model.h"
#include "kernels/optim.h"

/* The trainer as a library call (used by rdm_train_main and the accuracy
 * tests).  Fields <= 0 / NULL take the defaults listed in rdm_train_main. */
struct rdm_train_opts {
	enum rdm_model_kind model;
	const char *data_dir;  /* default "data/mnist" */
	int epochs;            /* default 5 (mlp) / 10 (lstm) */
	int batch_size;        /* default 100 (mlp) / 128 (lstm) */
	float learning_rate;   /* default 0.01 (mlp) / 0.001 (lstm) */
	int threads;           /* OpenBLAS threads, default 1 */
	int hidden_units;      /* default 100 (mlp) / 128 (lstm) */
	uint64_t seed;
	enum rdm_opt_kind optimizer; /* default Adam */
	int loss_mean;         /* -1: default (mlp sum, lstm mean) */
	int verbose;           /* per-epoch lines (and live line on a tty) */
};

struct rdm_train_result {
	double validation_ce;  /* summed over the validation set */
	double validation_acc; /* % */
	double test_acc;       /* % */
	double seconds;        /* training time, evaluation excluded */
	double steps_per_s;
	long steps;
};

void rdm_train_opts_defaults(struct rdm_train_opts *o, enum rdm_model_kind k);
/* Returns 0, or an RDMAPS_E_* code (message already logged). */
int rdm_train_run(const struct rdm_train_opts *o, struct rdm_train_result *r);

#endif
