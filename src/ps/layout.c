/* rdmaps: model + placement shared by every task, job defaults, backoff. */
#include "ps/layout.h"

#include <sched.h>
#include <string.h>
#include <time.h>

void rdmaps_job_defaults(struct rdmaps_job *j)
{
	memset(j, 0, sizeof(*j));
	j->task_index = -1;
	j->train_steps = 200;
	j->batch_size = 100;
	j->learning_rate = 0.01f;
	j->hidden_units = 100;
	j->model = RDM_MODEL_MLP;
	snprintf(j->data_dir, sizeof(j->data_dir), "/tmp/mnist-data");
	j->transport = RT_AUTO;
	j->seed = 1;
	j->log_every = 1;
	j->timeout_s = 120;
	j->save_model_secs = 600;
	j->barrier_timeout_s = 30;
	j->recovery_timeout_s = 60;
	j->ps_progress = RT_PROGRESS_CALLER;
	j->worker_progress = RT_PROGRESS_CALLER;
	j->worker_nice = 5;
}

int rdmaps_layout_new(const struct rdmaps_job *j, int max_batch, struct rdmaps_layout *l)
{
	struct rdm_model_cfg mc = { .kind = j->model,
				    .hidden_units = j->model == RDM_MODEL_MLP ? j->hidden_units : 0,
				    .max_batch = max_batch, .threads = 1,
				    .loss_mean = j->model == RDM_MODEL_LSTM };
	struct rdm_tensor t[16];
	int rc, nt;

	memset(l, 0, sizeof(*l));
	rc = rdm_model_new(&mc, &l->model);
	if (rc)
		return rc;
	nt = rdm_model_ntensors(l->model);
	if (nt > 16) {
		rdm_model_delete(&l->model);
		return RDMAPS_E_INVAL;
	}
	for (int i = 0; i < nt; i++)
		t[i] = *rdm_model_tensor(l->model, i);
	rc = rdmaps_place(t, nt, j->nps, &l->place);
	if (rc) {
		rdm_model_delete(&l->model);
		return rc;
	}
	l->nparams = rdm_model_nparams(l->model);
	uint64_t h = rdmaps_placement_hash(&l->place);
	/* the state (parameters, m, v, beta powers, step) depends on these
	 * alone: a job with another number of workers, sync or R resumes it */
	uint64_t sh = rdmaps_hash_mix(h, 0x5354415445ull); /* "STATE": never equal to hash */
	sh = rdmaps_hash_mix(sh, (uint64_t)j->model);
	l->state_hash = rdmaps_hash_mix(sh, l->nparams);
	/* R only where it counts: async ignores --replicas_to_aggregate (as
	 * TF does, and as the cli says), so an async worker without it must not
	 * be refused by an async ps with it.  Async hashes W, which is what R
	 * defaults to: checkpoints written before this keep their hash. */
	uint64_t parts[] = { (uint64_t)j->model, l->nparams, (uint64_t)j->nworkers, (uint64_t)j->sync,
			     (uint64_t)(j->sync ? job_replicas(j) : j->nworkers) };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		h = rdmaps_hash_mix(h, parts[i]);
	l->hash = h;
	/* The ps runs the optimizer with its own --learning_rate; a worker
	 * started with another must not train silently at the ps's rate.  Kept
	 * out of l->hash, so a restart may resume a checkpoint at a new rate. */
	uint32_t lr_bits;
	memcpy(&lr_bits, &j->learning_rate, sizeof(lr_bits));
	l->job_hash = rdmaps_hash_mix(h, lr_bits);
	return 0;
}

void rdmaps_layout_free(struct rdmaps_layout *l)
{
	rdmaps_placement_free(&l->place);
	rdm_model_delete(&l->model);
}

void rdmaps_backoff(unsigned *spins)
{
	unsigned s = (*spins)++;
	if (s < 2000) {
		__builtin_ia32_pause();
	} else if (s < 2200) {
		sched_yield();
	} else {
		struct timespec ts = { 0, s < 4000 ? 20000 : 200000 };
		nanosleep(&ts, NULL);
	}
}

double rdmaps_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double rdmaps_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
