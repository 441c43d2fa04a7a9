/* rdmaps: a ps task serving one parameter shard.
 *
 * Regions (ps/layout.h): PARAMS (READ for every worker, double-buffered by
 * version parity), one SLOT per worker (WRITE for that worker only),
 * COUNTERS (ATOMIC: ready_seq[W], done[W]).  The ps CPU spins
 * on its own memory: a bump of ready_seq[i] means worker i's slot WRITE
 * completed.  Sync: SyncReplicasOptimizer rules (stale gradients dropped,
 * first R averaged, one update, then release).  Async: every gradient
 * applied.
 *
 * Reliability (docs/failure-modes.md): the listener stays open while the
 * ps serves, so a worker restarted with the same index replaces its dead
 * connection and rejoins; broken connections are noticed by a periodic
 * probe; a sync aggregation that waits longer than --barrier_timeout names
 * the missing workers; with --logdir the shard is checkpointed every
 * --save_model_secs and at the end, and restored at start. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cluster.h"
#include "common/lat.h"
#include "common/stall.h"
#include "kernels/optim.h"
#include "ps/checkpoint.h"
#include "ps/layout.h"

#define CKPT_KEEP 5          /* as TF's Saver max_to_keep */
#define ACCEPT_EVERY 0.02    /* s between polls of the listener */
#define PROBE_EVERY 0.5      /* s between liveness probes of idle connections */
#define LINGER_S 2.0         /* at the end, wait this long in all for finished workers to hang up (linger) */
#define LIVE_CHECK_S 3.0     /* a liveness WRITE unanswered this long (s) means dead (poll_dup, probe_conns) */
#define LIVE_WRID 0x4c495645ull /* wr_id of that check's WRITE ("LIVE") */

/* per-update barrier durations kept for the end-of-run percentiles (two
 * float rings of this many: 512 KiB) */
#define RDMAPS_PS_LAT_KEEP 65536

/* SIGTERM, SIGINT, SIGHUP: stop serving, save (--logdir), say so, exit 0.
 * SIGHUP too: a closed terminal or a dropped ssh session sends it to every
 * task of the session, and its default action lost the final checkpoint. */
static volatile sig_atomic_t ps_stop; /* the signal, 0: none */
static void on_term(int sig) { ps_stop = sig; }

struct shard {
	const struct rdmaps_job *j;
	const struct rdmaps_layout *L;
	struct rt_ctx *ctx;
	struct rt_listener *lst;
	struct rt_conn **conns;     /* by worker index; NULL = not connected */
	struct rt_conn **hs;        /* by worker index: a connection whose set-up is still completing
				     * (rt_accept_grant_start: the worker's part is awaited without
				     * holding the serve loop) */
	struct rt_request **dup;    /* by worker index: a new connection for an index whose connection
				     * has yet to answer a liveness WRITE (decided by poll_dup without
				     * holding the serve loop) */
	double *dup_since;          /* when dup[i] came */
	uint8_t *dup_probed;        /* a liveness WRITE for dup[i] is outstanding (probe_sent) */
	size_t n;                   /* floats in this shard */
	uint8_t *params;            /* PARAMS region */
	uint8_t **slots;            /* SLOT region per worker */
	uint64_t *counters;         /* COUNTERS region */
	uint64_t *mbox_src;         /* local: one 16-byte message per worker (layout.h) */
	float *acc;                 /* accumulator (not registered) */
	float *m, *v;
	struct rdm_opt_cfg ocfg;
	struct rdm_opt_state ost;
	uint64_t version;           /* G */
	uint64_t *consumed;         /* last seq seen per worker */
	int *pending;               /* workers whose gradient waits for the update in its slot (R <= W; R > W:
				     * only the R-th, for the instant between the update and its release) */
	const float **gsrc;         /* R <= W: the pending slots in worker order, for rdm_sum_head */
	uint8_t *ever;              /* worker has connected at least once */
	uint8_t *gone;              /* its connection broke and was not replaced */
	double *probe_sent;         /* time of the outstanding liveness WRITE, 0 = none */
	double *owed_since;         /* its last release found its send queue full at this time and is
				     * owed (retry_owed re-posts it); 0 = none */
	int npending, count, R, W;
	uint64_t accepted, dropped, updates;
	uint64_t unapplied;     /* accepted into an aggregation that training's end cut off */
	int accept_err;         /* the last rt_accept failure said (0: none) */
	double agg_since;           /* start of the current sync aggregation wait */
	double agg_first;           /* when the current sync aggregation's first gradient came */
	struct rdmaps_lat spread;   /* sync, per update: its first accepted gradient to its R-th, us */
	struct rdmaps_lat settle;   /* sync, per update: its R-th gradient to every release posted, us */
	double last_barrier_msg;
	int missing_set;            /* hdr->missing holds a report */
	double last_ckpt;
	uint64_t saved_version;     /* UINT64_MAX = nothing saved by this run */
	int ckpt_failed;
	int restored;               /* started from a checkpoint (a restart) */
};

static struct rdmaps_params_hdr *hdr(struct shard *s) { return (struct rdmaps_params_hdr *)s->params; }
static uint64_t *buf_version(struct shard *s, uint64_t v) { return (uint64_t *)(s->params + buf_off(s->n, v)); }
static float *buf_floats(struct shard *s, uint64_t v) { return (float *)(s->params + buf_off(s->n, v) + 64); }
static struct rdmaps_slot_hdr *slot_hdr(struct shard *s, int i) { return (struct rdmaps_slot_hdr *)s->slots[i]; }
static float *slot_floats(struct shard *s, int i) { return (float *)(s->slots[i] + 64); }
static uint64_t done_of(struct shard *s, int i)
{
	return __atomic_load_n(&s->counters[counters_done_idx(s->W, i)], __ATOMIC_ACQUIRE);
}

static int is_pending(const struct shard *s, int i)
{
	for (int k = 0; k < s->npending; k++)
		if (s->pending[k] == i)
			return 1;
	return 0;
}

/* Post worker i's current mailbox message (mbox_src) into its mailbox:
 * one 16-byte inline WRITE; releases, liveness probes and re-sends all go
 * through here.  Never waiting for room (RT_F_NOWAIT): a full send queue
 * is RDMAPS_E_AGAIN at once (the release is then owed: post_release), as
 * this thread serves every worker.  Until stop 28 a full verbs SQ waited
 * here for room up to the ctx timeout (--timeout). */
static int mbox_post(struct shard *s, int i, uint64_t wr_id, unsigned flags)
{
	return rt_write(s->conns[i], G_PS_MBOX_SRC, (size_t)i * MBOX_BYTES, G_W_MAILBOX, 0, MBOX_BYTES, wr_id,
			flags | RT_F_INLINE | RT_F_NOWAIT);
}

/* Take worker i's completions: unsignaled writes complete only when they
 * failed; a signaled one is a liveness WRITE's answer. */
static void reap(struct shard *s, int i)
{
	struct rt_completion c[8];
	int got;
	while ((got = rt_poll(s->conns[i], c, 8, 0)) > 0)
		for (int k = 0; k < got; k++) {
			if (c[k].status)
				RDMAPS_WARN("mailbox write to worker %d failed: %s", i,
					    rdmaps_strerror(c[k].status));
			else if (c[k].wr_id == LIVE_WRID)
				s->probe_sent[i] = 0; /* the idle probe's answer */
		}
}

/* Make sure a liveness WRITE is outstanding on worker i's connection
 * (probe_sent): 0 when one is (posted now or before), RDMAPS_E_AGAIN when
 * its send queue is full, else the post's error.  probe_conns, poll_dup. */
static int probe_post(struct shard *s, int i, double now)
{
	if (s->probe_sent[i])
		return 0;
	int rc = mbox_post(s, i, LIVE_WRID, RT_F_SIGNALED);
	if (!rc)
		s->probe_sent[i] = now;
	return rc;
}

/* One look at worker i's completions (waiting up to tmo_ms): a liveness
 * WRITE's answer clears probe_sent.  Returns the first failure (a failed
 * op, e.g. a release, or a broken connection: the connection is dead),
 * else 0.  probe_conns, poll_dup. */
static int poll_live(struct shard *s, int i, int tmo_ms)
{
	struct rt_completion c[8];
	int got = rt_poll(s->conns[i], c, 8, tmo_ms), err = got < 0 ? got : 0;
	for (int k = 0; k < got; k++) {
		if (c[k].status && !err)
			err = c[k].status;
		else if (!c[k].status && c[k].wr_id == LIVE_WRID)
			s->probe_sent[i] = 0;
	}
	return err;
}

/* Post worker i's packed release (mbox_src).  Unsignaled: an error still
 * completes.  Returns the post's status; RDMAPS_E_AGAIN leaves it owed. */
static int post_release(struct shard *s, int i)
{
	int rc = mbox_post(s, i, 0, 0);
	if (rc == RDMAPS_E_AGAIN) {
		/* Its send queue is full: every message posted to it is unanswered
		 * (an honest worker has at most a few in flight: one release per
		 * push, one probe).  This thread serves everyone: do not wait
		 * here.  The release is owed: retry_owed posts it (the newest
		 * message then) at the next listener polls, and drops a peer
		 * whose queue stays full for LIVE_CHECK_S, as a dead one (it may
		 * rejoin).  Until stop 27 this flushed for up to LIVE_CHECK_S. */
		if (!s->owed_since[i])
			s->owed_since[i] = rdmaps_now();
		return rc;
	}
	s->owed_since[i] = 0;
	if (rc)
		RDMAPS_WARN("release of worker %d failed: %s", i, rdmaps_strerror(rc));
	reap(s, i);
	return rc;
}

/* Tell worker i: released version G, token = its consumed seq.  One
 * 16-byte message (mbox_pack) posted by post_release.  A worker without a
 * connection (gone, or not yet back) gets nothing: it learns version and
 * token when it (re)connects. */
static void release(struct shard *s, int i)
{
	if (!s->conns[i])
		return;
	mbox_pack(&s->mbox_src[2 * i], (s->version << 32) | (s->consumed[i] & 0xffffffffull));
	if (!post_release(s, i) && s->j->ps_spin_us > 0)
		/* --ps_spin_us: its pull comes next; the first READ request is
		 * enough (the others are posted right behind it) */
		rt_ctx_expect_reads(s->ctx, 1, s->j->ps_spin_us);
}

static void drop_conn(struct shard *s, int i, const char *why);

/* The releases owed (release found a full send queue): post each again;
 * a queue full for LIVE_CHECK_S means a peer that reads nothing. */
static void retry_owed(struct shard *s)
{
	double now = rdmaps_now();
	for (int i = 0; i < s->W; i++) {
		if (!s->owed_since[i])
			continue;
		if (!s->conns[i]) {
			s->owed_since[i] = 0;
			continue;
		}
		/* the message packed then: a newer one may not be due yet (a
		 * gradient of this worker pending in the aggregation) */
		if (post_release(s, i) == RDMAPS_E_AGAIN && now - s->owed_since[i] > LIVE_CHECK_S) {
			char why[96];
			snprintf(why, sizeof(why), "its send queue stayed full for %.0f s: it reads nothing",
				 LIVE_CHECK_S);
			drop_conn(s, i, why);
		}
	}
}

static void clear_missing(struct shard *s)
{
	if (!s->missing_set)
		return;
	for (int k = 0; k < 4; k++)
		__atomic_store_n(&hdr(s)->missing[k], 0, __ATOMIC_RELEASE);
	s->missing_set = 0;
}

/* Publish version G+1 = optimizer step from buffer G%2 into (G+1)%2. */
static void apply_and_publish(struct shard *s, const float *g1, const float *g2, float scale)
{
	uint64_t nv = s->version + 1;
	uint64_t *vw = buf_version(s, nv);
	rdmaps_buf_begin(vw, nv);
	rdm_opt_apply(&s->ocfg, &s->ost, buf_floats(s, nv), buf_floats(s, s->version), g1, g2,
		      scale, s->n);
	rdmaps_buf_end(vw, &hdr(s)->current_version, nv);
	s->version = nv;
	s->updates++;
	clear_missing(s);
}

static void on_grad(struct shard *s, int i)
{
	struct rdmaps_slot_hdr *h = slot_hdr(s, i);
	if (!s->j->sync) {
		apply_and_publish(s, slot_floats(s, i), NULL, 1.0f);
		s->accepted++;
		release(s, i);
		return;
	}
	if (h->step < s->version) { /* stale: SyncReplicasOptimizer drops it */
		s->dropped++;
		release(s, i);
		return;
	}
	s->accepted++;
	double now = rdmaps_now(); /* one clock read per accepted sync gradient */
	if (s->count == 0)
		s->agg_first = now;
	if (s->R > s->W) {
		/* workers compute several batches per update: each is released
		 * after its push and writes its slot again before the update, so
		 * every gradient goes into acc on arrival (arrival order) */
		if (s->count + 1 < s->R) {
			if (s->count == 0)
				memcpy(s->acc, slot_floats(s, i), s->n * sizeof(float));
			else
				rdm_vec_add(s->acc, slot_floats(s, i), s->n);
			s->count++;
			release(s, i);
			return;
		}
		apply_and_publish(s, s->acc, slot_floats(s, i), 1.0f / (float)s->R);
		/* the R-th's worker alone waits for this update (the others
		 * were released at their push): pending holds at most W + 1 */
		s->pending[s->npending++] = i;
	} else {
		/* R <= W: a pending gradient stays in its slot until the update
		 * (its worker waits for the release to push again, a rejoined one
		 * too), so nothing is copied: at the R-th the slots are summed
		 * where they lie, in worker order (the result does not depend on
		 * the arrival order), the last one fused into the optimizer pass:
		 * R = 2 is one pass over both slots. */
		s->pending[s->npending++] = i;
		if (++s->count < s->R)
			return;
		int *pd = s->pending, np = s->npending;
		for (int x = 1; x < np; x++) /* insertion sort: np <= W */
			for (int y = x; y > 0 && pd[y - 1] > pd[y]; y--) {
				int t = pd[y];
				pd[y] = pd[y - 1];
				pd[y - 1] = t;
			}
		for (int k = 0; k < np; k++)
			s->gsrc[k] = slot_floats(s, pd[k]);
		apply_and_publish(s, rdm_sum_head(s->acc, s->gsrc, np, s->n), np > 1 ? s->gsrc[np - 1] : NULL,
				  1.0f / (float)s->R);
	}
	s->count = 0;
	for (int k = 0; k < s->npending; k++)
		release(s, s->pending[k]);
	s->npending = 0;
	s->agg_since = rdmaps_now();
	rdmaps_lat_add(&s->spread, (now - s->agg_first) * 1e6);
	rdmaps_lat_add(&s->settle, (s->agg_since - now) * 1e6);
}

/* Sync: where the ps's part of the barrier went, per update (the line
 * docs/protocol.md describes): how long after an update's first accepted
 * gradient its R-th came (the workers' spread, as the ps noticed the
 * gradients), and how long the ps then took to sum, apply the optimizer
 * and post every release. */
static void barrier_summary(const struct shard *s)
{
	static const double q[2] = { 0.5, 0.99 };
	double a[2], b[2];
	uint32_t n = rdmaps_lat_kept(&s->spread);
	char over[48] = "";

	if (!s->j->sync || n == 0 || rdmaps_lat_pct(&s->spread, q, a, 2) || rdmaps_lat_pct(&s->settle, q, b, 2))
		return;
	if (s->spread.total > n)
		snprintf(over, sizeof(over), " (percentiles over the last %u)", (unsigned)n);
	printf("ps %d: sync barrier over %llu update(s)%s: the last of R = %d gradients came %.0f us "
	       "after the first (p50; p99 %.0f, max %.0f); summing, the optimizer and the releases "
	       "took %.0f us (p50; p99 %.0f, max %.0f)\n",
	       s->j->task_index, (unsigned long long)s->spread.total,
	       over,
	       s->R, a[0], a[1], s->spread.max, b[0], b[1], s->settle.max);
}

static void on_init(struct shard *s, int i)
{
	if (hdr(s)->state != PARAMS_STATE_READY) {
		memcpy(buf_floats(s, 0), slot_floats(s, i), s->n * sizeof(float));
		__atomic_store_n(buf_version(s, 0), 0, __ATOMIC_RELEASE);
		__atomic_store_n(&hdr(s)->current_version, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&hdr(s)->state, PARAMS_STATE_READY, __ATOMIC_RELEASE);
		s->agg_since = rdmaps_now(); /* the first aggregation starts now */
		printf("ps %d: parameters initialized by worker %d (%zu floats)\n", s->j->task_index, i, s->n);
		fflush(stdout);
	}
	release(s, i);
}

/* ---- checkpoints ----------------------------------------------------- */

/* Save params of the current version, m, v, beta powers, global step.
 * Between two updates all of them belong to version G (one thread). */
static void save_ckpt(struct shard *s)
{
	const struct rdmaps_job *j = s->j;
	struct rdmaps_ckpt_meta meta = { .shard = (uint32_t)j->task_index, .nshards = (uint32_t)j->nps,
					 .layout_hash = s->L->hash, .state_hash = s->L->state_hash,
					 .global_step = s->version,
					 .beta1_power = s->ost.beta1_power, .beta2_power = s->ost.beta2_power,
					 .nfloats = s->n };
	s->last_ckpt = rdmaps_now();
	if (hdr(s)->state != PARAMS_STATE_READY || s->version == s->saved_version)
		return;
	int rc = rdmaps_ckpt_save(j->logdir, &meta, buf_floats(s, s->version), s->m, s->v, CKPT_KEEP);
	if (rc) {
		fprintf(stderr, "ps %d: saving checkpoint of global step %llu in %s failed: %s\n", j->task_index,
			(unsigned long long)s->version, j->logdir, rdmaps_strerror(rc));
		s->ckpt_failed = 1;
		return;
	}
	s->saved_version = s->version;
	printf("ps %d: saved checkpoint %s/shard-%d-step-%llu.ckpt (global step %llu)\n", j->task_index, j->logdir,
	       j->task_index, (unsigned long long)s->version, (unsigned long long)s->version);
	fflush(stdout);
}

/* Returns 0 (restored or clean start) or 1 (logdir unusable: exit). */
static int restore_ckpt(struct shard *s)
{
	const struct rdmaps_job *j = s->j;
	struct rdmaps_ckpt_meta meta;
	char path[1024] = "";
	if (rdmaps_ckpt_mkdir(j->logdir)) {
		fprintf(stderr, "ps %d: --logdir=%s: cannot create it: %s\n", j->task_index, j->logdir,
			strerror(errno));
		return 1;
	}
	/* one running ps per shard and logdir (two jobs given the same
	 * --logdir wrote, replaced and pruned each other's files: a review);
	 * held until this process ends */
	int lock_fd;
	long holder;
	int rc = rdmaps_ckpt_lock(j->logdir, (uint32_t)j->task_index, &lock_fd, &holder);
	if (rc == RDMAPS_E_IN_USE) {
		fprintf(stderr, "ps %d: --logdir=%s: shard %d's checkpoints there are in use by another running ps "
			"(pid %ld): two jobs must not share a --logdir; give this one another\n", j->task_index,
			j->logdir, j->task_index, holder);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "ps %d: --logdir=%s: cannot lock shard %d's checkpoints: %s\n", j->task_index,
			j->logdir, j->task_index, rdmaps_strerror(rc));
		return 1;
	}
	/* into the accumulator (scratch): the target buffer depends on the step */
	rc = rdmaps_ckpt_restore(j->logdir, (uint32_t)j->task_index, s->L->hash, s->L->state_hash, s->n, &meta,
				 s->acc, s->m, s->v, path, sizeof(path));
	if (rc == RDMAPS_CKPT_NONE) {
		printf("ps %d: no checkpoint of shard %d in %s: starting clean\n", j->task_index,
		       j->task_index, j->logdir);
		fflush(stdout);
		return 0;
	}
	/* Checkpoints that are not this job's to resume are not this job's to
	 * overwrite or prune either: starting clean over them lost them (a
	 * review: a restart with another --workers replaced the old job's
	 * newest checkpoint and pruned the rest, and both runs exited 0). */
	if (rc == RDMAPS_CKPT_FOREIGN) {
		fprintf(stderr, "ps %d: --logdir=%s: its newest checkpoint of shard %d, %s, is of another job "
			"configuration (--model, --hidden_units or the number of ps differ; for a checkpoint "
			"of format 1, written before 2026-12-07, also the number of workers, --sync_replicas or "
			"--replicas_to_aggregate): not resumed, and left untouched. Start this job with the "
			"flags that wrote it, or give it another --logdir (or move those files away to start "
			"clean)\n", j->task_index, j->logdir, j->task_index, path);
		return 1;
	}
	if (rc == RDMAPS_CKPT_NEWER) {
		fprintf(stderr, "ps %d: --logdir=%s: its newest checkpoint of shard %d, %s, is of a newer format "
			"(the reason is above): not resumed, nor resumed behind, and left untouched. Run the "
			"rdmaps that wrote it, or give this job another --logdir\n", j->task_index, j->logdir,
			j->task_index, path);
		return 1;
	}
	if (rc == RDMAPS_CKPT_UNUSABLE) {
		fprintf(stderr, "ps %d: --logdir=%s: no checkpoint of shard %d there is valid (the newest: %s; "
			"the reasons are above): not starting clean over them, they are left untouched. Give "
			"this job another --logdir, or move those files away to start clean\n", j->task_index,
			j->logdir, j->task_index, path);
		return 1;
	}
	if (rc == RDMAPS_E_IO && path[0]) {
		fprintf(stderr, "ps %d: --logdir=%s: cannot read %s (the reason is above): not resuming from an "
			"older checkpoint behind it, nor starting clean; it is left untouched. Make it readable "
			"(or move it away to resume from the one before it)\n", j->task_index, j->logdir, path);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "ps %d: cannot restore from --logdir=%s: %s\n", j->task_index, j->logdir,
			rdmaps_strerror(rc));
		return 1;
	}
	uint64_t g = meta.global_step;
	memcpy(buf_floats(s, g), s->acc, s->n * sizeof(float));
	/* the other buffer must never match a reader asking for an old
	 * version (e.g. 0 from a fresh mailbox): mark it busy */
	__atomic_store_n(buf_version(s, g + 1), RDMAPS_BUSY, __ATOMIC_RELEASE);
	__atomic_store_n(buf_version(s, g), g, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr(s)->current_version, g, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr(s)->state, PARAMS_STATE_READY, __ATOMIC_RELEASE);
	s->ost.beta1_power = meta.beta1_power;
	s->ost.beta2_power = meta.beta2_power;
	s->version = g;
	s->saved_version = g;
	s->restored = 1;
	printf("ps %d: restored checkpoint %s (global step %llu)\n", j->task_index, path, (unsigned long long)g);
	if (meta.layout_hash != s->L->hash)
		printf("ps %d: that checkpoint was written by a job with another number of workers, "
		       "--sync_replicas or --replicas_to_aggregate: resumed with this job's\n", j->task_index);
	fflush(stdout);
	return 0;
}

/* ---- connections ----------------------------------------------------- */

/* Worker i's connection closed and forgotten: the worker is gone (a rejoin
 * clears it), nothing is probed or owed on it any more. */
static void forget_conn(struct shard *s, int i)
{
	rt_conn_delete(&s->conns[i]);
	s->gone[i] = 1;
	s->probe_sent[i] = 0;
	s->owed_since[i] = 0;
}

static void drop_conn(struct shard *s, int i, const char *why)
{
	forget_conn(s, i);
	if (done_of(s, i))
		printf("ps %d: worker %d finished and disconnected\n", s->j->task_index, i);
	else
		printf("ps %d: lost worker %d (%s); it may rejoin with the same task index\n", s->j->task_index, i,
		       why);
	fflush(stdout);
}

static int poll_handshake(struct shard *s, int i);
static int poll_dup(struct shard *s, int i);
static int accept_start(struct shard *s, int i, struct rt_request **req);

/* Poll the listener once (no wait) and start the set-up of a worker's
 * connection.  Returns 1 when a worker connected (its set-up completed at
 * once: verbs, or a tcp worker that already answered). */
static int accept_some(struct shard *s, int tmo_ms)
{
	const struct rdmaps_job *j = s->j;
	struct rt_request *req = NULL;
	int rc = rt_accept(s->lst, tmo_ms, &req);
	if (rc == RDMAPS_E_TIMEOUT)
		return 0;
	if (rc) {
		/* said once per kind of failure: the listener is polled every
		 * ACCEPT_EVERY, and a lost device fails every poll */
		if (rc != s->accept_err)
			fprintf(stderr, "ps %d: accept: %s\n", j->task_index, rdmaps_strerror(rc));
		s->accept_err = rc;
		return 0;
	}
	s->accept_err = 0;
	const struct rt_hello *hi = rt_request_hello(req);
	uint64_t mine = rdmaps_hello_hash(s->L, j->task_index);
	if (hi->role != RDMAPS_ROLE_WORKER || hi->index >= (uint32_t)s->W || hi->layout_hash != mine) {
		int other = hi->layout_hash != mine;
		/* the same job, another shard: the worker's --ps_hosts lists the
		 * ps tasks in another order than this ps's (or names one twice) */
		int meant = -1;
		for (int q = 0; other && q < j->nps && meant < 0; q++)
			if (hi->layout_hash == rdmaps_hello_hash(s->L, q))
				meant = q;
		if (meant >= 0)
			fprintf(stderr, "ps %d: refused worker %u: its --ps_hosts names this ps (%s) as ps %d: the "
				"tasks' --ps_hosts must list the same hosts in the same order\n", j->task_index,
				hi->index, j->ps_hosts[j->task_index], meant);
		else
			fprintf(stderr, "ps %d: refused a connection (role %u, index %u%s)\n", j->task_index,
				hi->role, hi->index, other ? ", model/placement/flags mismatch" : "");
		/* told why: a worker with other flags stops at once instead of
		 * retrying until --timeout */
		rt_reject_status(&req, other ? RDMAPS_E_MISMATCH : RDMAPS_E_REFUSED);
		return 0;
	}
	int i = (int)hi->index;
	/* An index held by a live connection is refused (two workers started
	 * with the same --task_index); a dead one is replaced: a worker
	 * restarted after its predecessor died rejoins even before the idle
	 * probe noticed the death.  Which one it is, a liveness WRITE on the
	 * held connection tells within LIVE_CHECK_S: poll_dup decides at each
	 * listener poll, the serve loop does not wait for it. */
	if (s->conns[i]) {
		if (s->dup[i]) {
			fprintf(stderr, "ps %d: worker %d connected a third time while its second connection "
				"waited for the first's liveness check: refusing the second\n", j->task_index, i);
			rt_reject_status(&s->dup[i], RDMAPS_E_IN_USE);
		}
		s->dup[i] = req;
		s->dup_since[i] = rdmaps_now();
		s->dup_probed[i] = 0;
		printf("ps %d: worker %d connected again while its connection is held: asking that one "
		       "whether it is alive (up to %.0f s)\n", j->task_index, i, LIVE_CHECK_S);
		fflush(stdout);
		return poll_dup(s, i);
	}
	return accept_start(s, i, &req);
}

/* Start the set-up of worker i's connection (req), replacing a set-up of
 * the same index still in progress.  Returns 1 when it completed at once. */
static int accept_start(struct shard *s, int i, struct rt_request **req)
{
	const struct rdmaps_job *j = s->j;
	int rc;
	struct rt_grant g[4] = {
		{ G_PS_PARAMS, s->params, params_bytes(s->n), RT_RIGHT_READ },
		{ G_PS_SLOT, s->slots[i], slot_bytes(s->n), RT_RIGHT_WRITE },
		{ G_PS_COUNTERS, s->counters, counters_bytes(s->W), RT_RIGHT_ATOMIC },
		{ G_PS_MBOX_SRC, s->mbox_src, (size_t)s->W * MBOX_BYTES, RT_RIGHT_NONE },
	};
	if (s->hs[i]) {
		/* its previous attempt (a worker restarted, or a retry after a
		 * lost answer) never completed: this one replaces it */
		fprintf(stderr, "ps %d: worker %d connected again before its previous connection's set-up "
			"completed: replacing it\n", j->task_index, i);
		rt_conn_delete(&s->hs[i]);
	}
	if ((rc = rt_accept_grant_start(req, g, 4, &s->hs[i]))) {
		fprintf(stderr, "ps %d: connection of worker %d failed: %s\n", j->task_index, i, rdmaps_strerror(rc));
		return 0;
	}
	return poll_handshake(s, i);
}

/* Worker i's connection in s->hs[i]: complete it if its set-up arrived.
 * Returns 1 when it did (the worker is connected), else 0. */
static int poll_handshake(struct shard *s, int i)
{
	const struct rdmaps_job *j = s->j;
	int rc = rt_accept_poll(s->hs[i]);

	if (rc == RDMAPS_E_AGAIN)
		return 0;
	if (rc) {
		fprintf(stderr, "ps %d: connection of worker %d failed: %s\n", j->task_index, i, rdmaps_strerror(rc));
		rt_conn_delete(&s->hs[i]);
		return 0;
	}
	if (s->conns[i]) { /* not expected: accept_some replaced or refused it */
		rt_conn_delete(&s->conns[i]);
		s->probe_sent[i] = 0;
	}
	s->conns[i] = s->hs[i];
	s->hs[i] = NULL;
	s->owed_since[i] = 0;
	int rejoin = s->ever[i];
	s->ever[i] = 1;
	s->gone[i] = 0;
	if (rejoin) {
		printf("ps %d: worker %d rejoined (global step %llu, its push count %llu)\n", j->task_index, i,
		       (unsigned long long)s->version,
		       (unsigned long long)__atomic_load_n(&s->counters[i], __ATOMIC_ACQUIRE));
		fflush(stdout);
	}
	/* Welcome release: version and token, unless its last gradient waits
	 * in the accumulator (then it is released with that update). */
	if (!is_pending(s, i))
		release(s, i);
	return 1;
}

/* Worker i's held connection against a new one for the same index
 * (s->dup[i]): the held one answered a liveness WRITE -> the new one is
 * refused (IN_USE); it broke, or did not answer within LIVE_CHECK_S of
 * the new one's arrival -> it is replaced (a peer that died without a
 * disconnect: verbs retries run out in ~2.1 s).  The WRITE is a signaled
 * re-send of the last value released to it, idempotent: its mailbox holds
 * that value, or less right after its own reconnect, and the token in it
 * never exceeds its push count.  Never waits.  Returns 1 when the new
 * connection completed its set-up at once. */
static int poll_dup(struct shard *s, int i)
{
	const struct rdmaps_job *j = s->j;
	int err = 0;

	if (!s->dup[i])
		return 0;
	if (s->conns[i]) {
		if (!s->dup_probed[i]) {
			/* an outstanding probe serves (its answer is as recent); a
			 * full send queue: try again at the next poll */
			err = probe_post(s, i, rdmaps_now());
			if (!err)
				s->dup_probed[i] = 1;
			else if (err == RDMAPS_E_AGAIN)
				err = 0;
		}
		if (!err)
			err = poll_live(s, i, 0);
		if (!err && s->dup_probed[i] && !s->probe_sent[i]) {
			fprintf(stderr, "ps %d: refused a second worker %d: worker %d is connected and alive "
				"(two workers started with --task_index=%d?)\n", j->task_index, i, i, i);
			rt_reject_status(&s->dup[i], RDMAPS_E_IN_USE);
			return 0;
		}
		if (!err && rdmaps_now() - s->dup_since[i] <= LIVE_CHECK_S)
			return 0;
		printf("ps %d: worker %d connected again; its previous connection is dead (%s): replacing it\n",
		       j->task_index, i, err ? rdmaps_strerror(err) : "no answer to a liveness WRITE");
		fflush(stdout);
		/* if the new connection's set-up fails, the worker has left
		 * and is not waited for */
		forget_conn(s, i);
	}
	struct rt_request *req = s->dup[i];
	s->dup[i] = NULL;
	return accept_start(s, i, &req);
}

/* Every connection still in its set-up, and every new connection waiting
 * for its index's liveness check: returns 1 when one completed. */
static int poll_handshakes(struct shard *s)
{
	int any = 0;

	for (int i = 0; i < s->W; i++) {
		if (s->dup[i])
			any |= poll_dup(s, i);
		if (s->hs[i])
			any |= poll_handshake(s, i);
	}
	return any;
}

/* A broken connection shows as a negative rt_poll (RDMAPS_E_PEER_GONE).
 * Each probe also re-sends the last release as a signaled WRITE
 * (idempotent: see poll_dup) and wants its completion within
 * LIVE_CHECK_S: a peer that died without a disconnect the ps hears of (a
 * SIGKILLed worker over rxe: measured, the ps never learned it, not even
 * from failed unsignaled WRITEs) is dropped when it does not answer. */
static void probe_conns(struct shard *s)
{
	double now = rdmaps_now();
	for (int i = 0; i < s->W; i++) {
		if (!s->conns[i])
			continue;
		int err = probe_post(s, i, now); /* a full send queue: look again next time */
		if (err == RDMAPS_E_AGAIN)
			err = 0;
		if (!err)
			err = poll_live(s, i, 1);
		if (!err && s->probe_sent[i] && now - s->probe_sent[i] > LIVE_CHECK_S) {
			char why[64];
			snprintf(why, sizeof(why), "no answer to a liveness WRITE within %.0f s", LIVE_CHECK_S);
			drop_conn(s, i, why);
			continue;
		}
		if (err)
			drop_conn(s, i, rdmaps_strerror(err));
	}
}

/* Training is over for this shard when every worker finished or left, and
 * at least one finished (a worker that died is not waited for then). */
static int all_finished(struct shard *s)
{
	int ndone = 0;
	for (int i = 0; i < s->W; i++) {
		uint64_t d = done_of(s, i);
		/* gone but reconnecting (its new connection's set-up, or one
		 * waiting for the held one's liveness check): still waited for */
		if (!d && (!s->gone[i] || s->hs[i] || s->dup[i]))
			return 0;
		ndone += d != 0;
	}
	return ndone > 0;
}

static void print_missing(struct shard *s, FILE *f, int sync_view)
{
	for (int i = 0; i < s->W; i++) {
		if (done_of(s, i))
			continue;
		if (sync_view && is_pending(s, i))
			continue;
		if (!sync_view && __atomic_load_n(&s->counters[i], __ATOMIC_ACQUIRE) > s->consumed[i])
			continue;
		fprintf(f, " worker %d%s", i,
			s->conns[i] ? ""
			: s->ever[i] ? " (disconnected)"
			: s->restored ? " (not connected since this ps restarted: it may have finished before)"
			: " (never connected)");
	}
}

/* A sync aggregation waited --barrier_timeout: name the workers whose
 * gradient it lacks, on stderr and in hdr->missing for the workers. */
static void barrier_report(struct shard *s, double waited)
{
	uint64_t mask[4] = { 0 };
	fprintf(stderr, "ps %d: barrier timeout: the aggregation for global step %llu has waited %.0f s with %d of %d gradients; missing:",
		s->j->task_index, (unsigned long long)s->version, waited, s->count, s->R);
	print_missing(s, stderr, 1);
	fprintf(stderr, "\n");
	for (int i = 0; i < s->W && i < RDMAPS_MISSING_MAX; i++)
		if (!done_of(s, i) && !is_pending(s, i))
			mask[i / 64] |= 1ull << (i % 64);
	for (int k = 0; k < 4; k++)
		__atomic_store_n(&hdr(s)->missing[k], mask[k], __ATOMIC_RELEASE);
	s->missing_set = 1;
}

/* No progress for --timeout: say why and whom the ps waited for; returns 1. */
static int give_up(struct shard *s, int done, int pushing)
{
	const struct rdmaps_job *j = s->j;
	if (done) {
		fprintf(stderr, "ps %d: giving up: training ended (global step %llu, %d worker(s) finished) "
			"but for %d s (--timeout) the others neither finished nor left:", j->task_index,
			(unsigned long long)s->version, done, j->timeout_s);
		for (int i = 0; i < s->W; i++)
			if (!done_of(s, i) && !s->gone[i])
				fprintf(stderr, " worker %d%s", i, s->ever[i] ? "" : " (never connected)");
		fprintf(stderr, "%s\n", pushing ? " (still pushing gradients: a different --train_steps?)" : "");
		return 1;
	}
	fprintf(stderr, "ps %d: giving up: no gradient and no connection for %d s (--timeout); waiting for:",
		j->task_index, j->timeout_s);
	print_missing(s, stderr, j->sync && hdr(s)->state == PARAMS_STATE_READY);
	fprintf(stderr, "\n");
	return 1;
}

/* Training is over: let the finished workers hang up first, for up to
 * LINGER_S in all.  The last worker's done FETCH_ADD may have executed (so
 * serve() returned) before its answer was sent; closing now could cut that
 * answer off, and the worker would report that it could not confirm the
 * end of training (2 of 40 local sync runs before this wait).  A worker
 * closes its connections as soon as the answer arrived. */
static void linger(struct shard *s)
{
	struct rt_completion c[8];
	double end = rdmaps_now() + LINGER_S;
	for (int i = 0; i < s->W; i++) {
		while (s->conns[i] && done_of(s, i) && rdmaps_now() < end)
			if (rt_poll(s->conns[i], c, 8, 20) < 0) {
				rt_conn_delete(&s->conns[i]);
				break;
			}
		if (s->conns[i] && done_of(s, i))
			printf("ps %d: worker %d finished but did not hang up within %.0f s; closing\n", s->j->task_index,
			       i, LINGER_S);
	}
}

/* Returns 0 (finished or stopped) or 1 (gave up after --timeout without progress). */
/* A pass of serve() that took over a second (stopped and continued,
 * common/stall.h; a long save or accept): the workers' silence meanwhile is
 * not theirs, so the idle, barrier and liveness clocks start again. */
static void stall_check(struct shard *s, double *last_pass, double now, double *last_progress)
{
	double took = now - *last_pass;
	if (!rdmaps_stalled(last_pass, now))
		return;
	/* said, so that a gap in training can be placed: here or elsewhere */
	printf("ps %d: the serve loop did not come round for %.2f s (the process was stopped or got no CPU, "
	       "or a call blocked)\n", s->j->task_index, took);
	fflush(stdout);
	*last_progress = now;
	s->agg_since = s->last_barrier_msg = now;
	for (int i = 0; i < s->W; i++) {
		if (s->probe_sent[i])
			s->probe_sent[i] = now;
		if (s->owed_since[i])
			s->owed_since[i] = now;
		if (s->dup[i]) /* its held connection's answer may sit unread */
			s->dup_since[i] = now;
	}
}

static int serve(struct shard *s)
{
	const struct rdmaps_job *j = s->j;
	unsigned spins = 0;
	double now = rdmaps_now();
	double last_progress = now, last_accept = 0, last_probe = now;
	/* Idle: sleep until a worker's WRITE or FETCH_ADD lands where the
	 * transport can wake us (RT_CAP_TARGET_WAKE: no core spent spinning
	 * while the workers' transfers need it), else spin with backoff. */
	int wake = (rt_ctx_caps(s->ctx) & RT_CAP_TARGET_WAKE) != 0;

	s->agg_since = now;
	s->last_barrier_msg = now;
	s->last_ckpt = now;
	double last_pass = now;
	while (!ps_stop) {
		int any = 0;
		uint32_t ev = wake ? rt_ctx_target_events(s->ctx) : 0; /* before the scan: no lost wake-up */
		now = rdmaps_now();
		stall_check(s, &last_pass, now, &last_progress);
		int accepted = 0;
		if (now - last_accept >= ACCEPT_EVERY) {
			last_accept = now;
			retry_owed(s);
			if (poll_handshakes(s) | accept_some(s, 0))
				any = accepted = 1;
			/* accept_some no longer waits (a client's set-up:
			 * poll_handshakes; a duplicate index's liveness check:
			 * poll_dup), but a pass may still be slow (a stopped
			 * process): never count that time with a clock read before
			 * it (last_progress = a stale now made the next idle pass
			 * give up) */
			now = rdmaps_now();
			stall_check(s, &last_pass, now, &last_progress); /* (stopped in there) */
		}
		int done = 0;
		for (int i = 0; i < s->W; i++)
			done += done_of(s, i) != 0;
		if (done && all_finished(s))
			return 0;
		/* A worker finishes only once shard 0 reached --train_steps: training
		 * is over, and a partial aggregation here would never complete (with
		 * backups, shards can stop one version apart).  Release its workers. */
		if (done > 0 && s->npending) {
			s->unapplied += (uint64_t)s->count;
			for (int k = 0; k < s->npending; k++)
				release(s, s->pending[k]);
			s->npending = 0;
			s->count = 0;
		}
		for (int i = 0; i < s->W; i++) {
			uint64_t r = __atomic_load_n(&s->counters[i], __ATOMIC_ACQUIRE);
			if (r <= s->consumed[i])
				continue;
			struct rdmaps_slot_hdr *h = slot_hdr(s, i);
			if (__atomic_load_n(&h->seq, __ATOMIC_ACQUIRE) != r)
				continue; /* the header of a newer push: wait for its bump */
			s->consumed[i] = r;
			any = 1;
			if (h->kind == SLOT_INIT)
				on_init(s, i);
			else if (h->kind == SLOT_GRAD && hdr(s)->state == PARAMS_STATE_READY)
				on_grad(s, i);
			else {
				RDMAPS_WARN("worker %d: slot kind %u ignored", i, h->kind);
				release(s, i);
			}
		}
		if (j->logdir[0] && j->save_model_secs > 0 && now - s->last_ckpt >= j->save_model_secs)
			save_ckpt(s);
		if (any) {
			spins = 0;
			/* Once a worker finished, training is over: gradients that
			 * keep coming (a worker given a larger --train_steps, whose
			 * releases no longer move the step) are no progress, and
			 * --timeout bounds them too. */
			if (!done || accepted)
				last_progress = now;
			else if (now - last_progress > j->timeout_s)
				return give_up(s, done, 1);
			continue;
		}
		if (wake)
			rt_ctx_wait_target(s->ctx, ev, (int)(ACCEPT_EVERY * 1e6));
		else
			rdmaps_backoff(&spins);
		if (now - last_probe >= PROBE_EVERY) {
			last_probe = now;
			probe_conns(s);
		}
		if (j->sync && !done && hdr(s)->state == PARAMS_STATE_READY && now - s->agg_since >= j->barrier_timeout_s &&
		    now - s->last_barrier_msg >= j->barrier_timeout_s) {
			s->last_barrier_msg = now;
			barrier_report(s, now - s->agg_since);
		}
		if (now - last_progress > j->timeout_s)
			return give_up(s, done, 0);
	}
	return 0;
}

int rdmaps_ps_main(const struct rdmaps_job *j)
{
	struct rdmaps_layout L;
	struct shard s;
	char host[256], bind[256], why[320];
	uint16_t port;
	int rc, ret = 1;

	memset(&s, 0, sizeof(s));
	s.j = j;
	s.L = &L;
	s.W = j->nworkers;
	s.R = job_replicas(j);
	s.saved_version = UINT64_MAX;
	rdmaps_log_set_tag("ps");
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGHUP, on_term);
	/* an output pipe whose reader died (`rdmaps launch ... | head`) is no
	 * reason to die before the last checkpoint: writes fail, EPIPE */
	signal(SIGPIPE, SIG_IGN);
	if (rdmaps_split_hostport(j->ps_hosts[j->task_index], host, sizeof(host), &port)) {
		fprintf(stderr, "ps: bad host '%s'\n", j->ps_hosts[j->task_index]);
		return 2;
	}
	if ((rc = rdmaps_layout_new(j, 1, &L))) {
		fprintf(stderr, "ps: model set-up failed: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	s.n = L.place.shard_count[j->task_index];
	printf("ps %d: placement (%d ps, %zu parameters):\n", j->task_index, j->nps, L.nparams);
	{
		struct rdm_tensor t[16];
		for (int i = 0; i < rdm_model_ntensors(L.model) && i < 16; i++)
			t[i] = *rdm_model_tensor(L.model, i);
		rdmaps_placement_print(stdout, &L.place, t);
	}
	printf("ps %d: serving %zu floats, %s, %d workers%s\n", j->task_index, s.n,
	       j->sync ? "sync" : "async", s.W, j->sync ? "" : "");
	if (j->sync)
		printf("ps %d: replicas_to_aggregate = %d\n", j->task_index, s.R);
	/* its own name mapped to 127.0.1.1 (Debian's /etc/hosts): listening
	 * there, no worker on another host would reach it */
	if (rdmaps_local_bind_host(host, bind, sizeof(bind), why, sizeof(why)))
		printf("ps %d: %s: listening on every address (%s), as a TensorFlow ps does, so that "
		       "workers on other hosts reach it\n", j->task_index, why, bind);
	fflush(stdout);

	struct rt_ctx_cfg cc = { .kind = j->transport, .bind_host = bind, .timeout_ms = j->timeout_s * 1000,
				 .auth_token = j->token, .numa_node = -1,
				 /* the idle loop waits for FETCH_ADDs (ready_seq, done) only */
				 .target_events = RT_EV_ATOMIC,
				 /* locality (issue 2): the TCP progress thread and this
				  * thread (which polls, aggregates and applies) run on
				  * the CPUs near the RDMA device; with one NUMA node or
				  * no device known that is every allowed CPU. */
				 .pin_progress = 1, .tcp_spin_us = j->tcp_spin_us,
				 /* --ps_progress (tcp): by default this thread serves the
				  * workers' ops itself while it waits (rt_ctx_wait_target,
				  * rt_poll), so the thread that applies a gradient also
				  * executes its FETCH_ADD: one wake-up less per gradient
				  * (docs/benchmarks.md, "Who serves the ps's sockets",
				  * with what it costs the pull on one host) */
				 .progress = j->ps_progress };
	if ((rc = rt_ctx_new(&cc, &s.ctx))) {
		char who[32];

		snprintf(who, sizeof(who), "ps %d", j->task_index);
		rdmaps_report_transport_error(who, bind, rc);
		goto err_layout;
	}
	{
		char cpus[256];
		if (rt_pin_thread(s.ctx) == RDMAPS_OK && rt_ctx_cpulist(s.ctx, cpus, sizeof(cpus)) == RDMAPS_OK)
			printf("ps %d: locality: CPUs %s for polling and applying\n", j->task_index, cpus);
		else /* not fatal: the ps runs where the scheduler puts it */
			fprintf(stderr, "ps %d: warning: could not pin to the CPUs near the device\n", j->task_index);
		fflush(stdout); /* before any error on stderr below */
	}
	s.params = rt_alloc(s.ctx, params_bytes(s.n));
	s.counters = rt_alloc(s.ctx, counters_bytes(s.W));
	s.mbox_src = rt_alloc(s.ctx, (size_t)s.W * MBOX_BYTES);
	s.slots = calloc(s.W, sizeof(*s.slots));
	s.conns = calloc(s.W, sizeof(*s.conns));
	s.hs = calloc(s.W, sizeof(*s.hs));
	s.dup = calloc(s.W, sizeof(*s.dup));
	s.dup_since = calloc(s.W, sizeof(*s.dup_since));
	s.dup_probed = calloc(s.W, sizeof(*s.dup_probed));
	s.consumed = calloc(s.W, sizeof(*s.consumed));
	s.pending = calloc(s.W + 1, sizeof(*s.pending));
	s.gsrc = calloc(s.W + 1, sizeof(*s.gsrc));
	s.ever = calloc(s.W, 1);
	s.gone = calloc(s.W, 1);
	s.probe_sent = calloc(s.W, sizeof(*s.probe_sent));
	s.owed_since = calloc(s.W, sizeof(*s.owed_since));
	s.acc = aligned_alloc(64, shard_pad(s.n) * sizeof(float));
	s.m = aligned_alloc(64, shard_pad(s.n) * sizeof(float));
	s.v = aligned_alloc(64, shard_pad(s.n) * sizeof(float));
	if (j->sync && (rdmaps_lat_init(&s.spread, RDMAPS_PS_LAT_KEEP) || rdmaps_lat_init(&s.settle, RDMAPS_PS_LAT_KEEP))) {
		fprintf(stderr, "ps %d: out of memory\n", j->task_index);
		goto err_mem;
	}
	if (!s.params || !s.counters || !s.mbox_src || !s.slots || !s.conns || !s.hs || !s.dup || !s.dup_since || !s.dup_probed || !s.consumed || !s.pending || !s.gsrc ||
	    !s.ever || !s.gone || !s.probe_sent || !s.owed_since || !s.acc || !s.m || !s.v) {
		fprintf(stderr, "ps %d: out of memory\n", j->task_index);
		goto err_mem;
	}
	for (int i = 0; i < s.W; i++)
		if (!(s.slots[i] = rt_alloc(s.ctx, slot_bytes(s.n))))
			goto err_mem;
	hdr(&s)->magic = RDMAPS_MAGIC;
	hdr(&s)->nfloats = s.n;
	rdm_opt_defaults(&s.ocfg, RDM_OPT_ADAM, j->learning_rate);
	rdm_opt_state_init(&s.ost, &s.ocfg, s.m, s.v, s.n);
	if (j->logdir[0] && restore_ckpt(&s))
		goto err_mem;

	/* an IPv6 address in brackets, as --ps_hosts spells it */
	const char *lb = strchr(bind, ':') ? "[" : "", *rb = *lb ? "]" : "";
	if ((rc = rt_listen(s.ctx, bind, port, &s.lst))) {
		fprintf(stderr, "ps %d: cannot listen on %s%s%s:%u: %s\n", j->task_index, lb, bind, rb, port,
			rdmaps_strerror(rc));
		goto err_mem;
	}
	printf("ps %d: transport %s, listening on %s%s%s:%u", j->task_index, rt_kind_name(rt_ctx_kind(s.ctx)),
	       lb, bind, rb, port);
	if (j->transport == RT_AUTO && rt_ctx_kind(s.ctx) == RT_TCP) /* say why, once */
		printf(" (auto: no RDMA port serves %s; `rdmaps devices %s` lists them)", host, host);
	printf("\n");
	fflush(stdout);
	double t0 = rdmaps_now();
	int gave_up = serve(&s);
	if (!gave_up && !ps_stop)
		linger(&s);
	if (ps_stop) {
		printf("ps %d: stopped by %s%s\n", j->task_index, strsignal(ps_stop),
		       j->logdir[0] ? ": saving a last checkpoint" : "");
		fflush(stdout);
	}
	if (j->logdir[0])
		save_ckpt(&s);
	for (int i = 0; i < s.W; i++)
		if (s.ever[i] && !done_of(&s, i) && !gave_up && !ps_stop)
			printf("ps %d: worker %d left without finishing\n", j->task_index, i);
	/* with backups (or R > W) the last aggregation may be partial when
	 * training ends: its gradients were accepted, never applied (count
	 * is sync's alone: async applies each gradient as it comes) */
	s.unapplied += (uint64_t)s.count;
	printf("ps %d: done after %.3f s: global step %llu, %llu updates, %llu gradients accepted, %llu dropped (stale)",
	       j->task_index, rdmaps_now() - t0, (unsigned long long)s.version, (unsigned long long)s.updates,
	       (unsigned long long)s.accepted, (unsigned long long)s.dropped);
	if (s.unapplied)
		printf("; %llu accepted gradient(s) left unapplied: %s before their aggregation completed",
		       (unsigned long long)s.unapplied,
		       gave_up ? "the ps gave up" : ps_stop ? "the ps was stopped" : "training ended");
	printf("\n");
	barrier_summary(&s);
	fflush(stdout);
	ret = gave_up || s.ckpt_failed ? 1 : 0;
	for (int i = 0; i < s.W; i++) {
		rt_conn_delete(&s.conns[i]);
		rt_conn_delete(&s.hs[i]);
		if (s.dup[i])
			rt_reject_status(&s.dup[i], RDMAPS_E_REFUSED);
	}
	rt_listener_delete(&s.lst);
err_mem:
	if (s.slots)
		for (int i = 0; i < s.W; i++)
			if (s.slots[i])
				rt_free(s.ctx, s.slots[i], slot_bytes(s.n));
	if (s.params) rt_free(s.ctx, s.params, params_bytes(s.n));
	if (s.counters) rt_free(s.ctx, s.counters, counters_bytes(s.W));
	if (s.mbox_src) rt_free(s.ctx, s.mbox_src, (size_t)s.W * MBOX_BYTES);
	free(s.slots); free(s.conns); free(s.hs); free(s.dup); free(s.dup_since); free(s.dup_probed); free(s.consumed); free(s.pending); free(s.gsrc);
	free(s.ever); free(s.gone); free(s.probe_sent); free(s.owed_since);
	free(s.acc); free(s.m); free(s.v);
	rdmaps_lat_free(&s.spread);
	rdmaps_lat_free(&s.settle);
	rt_ctx_delete(&s.ctx);
err_layout:
	rdmaps_layout_free(&L);
	return ret;
}
