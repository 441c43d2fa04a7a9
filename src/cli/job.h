/* rdmaps: one training task's configuration, shared by ps, worker and launch. */
#ifndef RDMAPS_JOB_H
#define RDMAPS_JOB_H

#include <stdint.h>

#include "kernels/model.h"
#include "rdma/rt.h"

struct rdmaps_job {
	char job_name[16];
	int task_index;           /* -1 = not given */
	char **ps_hosts, **worker_hosts;
	int nps, nworkers;
	int worker_nice;          /* launch --worker_nice: workers' niceness above launch's own (0..19) */
	int sync;                 /* --sync_replicas */
	int replicas;             /* --replicas_to_aggregate, 0 = number of workers */
	long train_steps;
	int batch_size;
	float learning_rate;
	int hidden_units;
	enum rdm_model_kind model;
	int model_set;
	char data_dir[512];
	enum rt_kind transport;
	uint64_t seed;
	long log_every;
	char metrics[512];
	int timeout_s;            /* every wait is bounded by this */
	char token[RT_TOKEN_MAX + 1];
	char dump_params[512];    /* hidden: write final params (raw floats) */
	char logdir[512];         /* --logdir: ps checkpoints ("" = none) */
	int save_model_secs;      /* --save_model_secs: 600; 0 = only at the end */
	int barrier_timeout_s;    /* --barrier_timeout: name missing workers after this */
	int recovery_timeout_s;   /* --recovery_timeout: a worker's reconnect window */
	int tcp_spin_us;          /* --tcp_spin_us: TCP initiator busy-poll before blocking (0 = none) */
	int ps_spin_us;           /* --ps_spin_us: ps progress thread polls this long for released workers' READs (0 = none) */
	int ps_progress;          /* --ps_progress: enum rt_progress of the ps's context (tcp): who serves the workers' ops */
	int worker_progress;      /* --worker_progress: enum rt_progress of a worker's context (tcp): who serves the ps's writes */
	/* benchmarks (bench/step): slow one worker down, snapshot the chief's params */
	int straggler_task;       /* default 0 */
	int straggler_delay_ms;   /* 0 = none; else task straggler_task sleeps this per step (compute phase) */
	char snapshot_file[512];  /* chief: append (global step, time, params) records */
	long snapshot_every;      /* every N local steps, 0 = never */
};

void rdmaps_job_defaults(struct rdmaps_job *j);
int rdmaps_ps_main(const struct rdmaps_job *j);
int rdmaps_worker_main(const struct rdmaps_job *j);
int rdmaps_launch(const struct rdmaps_job *j, int argc, char **argv);

#endif
