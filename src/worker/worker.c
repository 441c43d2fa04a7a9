/* rdmaps: a worker task.  Per step: wait for the token in my mailbox of
 * every ps shard; READ every shard's released parameter pieces straight into
 * the flat model vector (then a fenced READ of each buffer's version word: a
 * read is never torn), all shards posted before any is waited for; compute
 * the gradient into the flat gradient vector; WRITE its pieces straight into
 * my slot of every shard, then bump my ready counter with FETCH_ADD: right
 * behind the WRITEs where the transport orders placement
 * (RT_CAP_ORDERED_PLACEMENT), else after the WRITEs completed.  No copy
 * between the model vectors and registered buffers: they are registered.
 * Same loop for sync and async; the ps policy differs. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/cluster.h"
#include "common/stall.h"
#include "kernels/data.h"
#include "ps/layout.h"
#include "worker/progress.h"

/* One piece of a shard as the worker moves it: floats [flat, flat+count)
 * of the model vector are floats [shard_off, shard_off+count) of the shard. */
struct wpiece {
	size_t flat, shard_off, count;
};

struct wshard {
	struct rt_conn *c;
	size_t n;
	uint64_t *mbox;        /* WRITE for the ps: a 16-byte message (layout.h) */
	uint64_t mv;           /* the last whole mailbox message wait_token saw */
	struct rdmaps_slot_hdr *shdr; /* local: the slot header of my pushes */
	uint64_t *atom;        /* local: fetch-add result */
	uint64_t *scratch;     /* local: version check */
	uint64_t held;         /* version held, UINT64_MAX = none */
	uint64_t seq;          /* pushes made to this shard */
	struct wpiece *pc;     /* this shard's pieces (set up once) */
	int npc;
	int ordered;           /* the connection has RT_CAP_ORDERED_PLACEMENT */
	int fresh;             /* the chief initialized this shard (it had no checkpoint) */
	/* per-step state of the overlapped pull / push */
	int posted;            /* ops of this step awaiting their one signaled completion */
	int unreaped;          /* ordered pushes whose FETCH_ADD completion is not polled yet */
	uint64_t want;         /* pull: the version asked for */
	int err;               /* first error of this step on this shard */
};

/* Floats one READ or WRITE of a piece moves at most: RT_MAX_OP_LEN, or
 * less when RDMAPS_MAX_OP_BYTES says so (a test hook: small ops exercise
 * the split with a small model). */
static size_t max_op_floats(void)
{
	size_t b = RT_MAX_OP_LEN;
	const char *e = getenv("RDMAPS_MAX_OP_BYTES");
	if (e && *e) {
		char *end;
		unsigned long long v = strtoull(e, &end, 10);
		if (!*end && v >= sizeof(float) && v < b)
			b = (size_t)v;
	}
	return b / sizeof(float);
}

/* Split the shard's pieces so that none is longer than maxf floats (a
 * shard piece of 2^30 bytes or more would be one op too long for any
 * transport).  Returns 0, or -1 out of memory (sh unchanged). */
static int split_pieces(struct wshard *sh, size_t maxf)
{
	size_t n = 0;
	for (int k = 0; k < sh->npc; k++)
		n += (sh->pc[k].count + maxf - 1) / maxf;
	if (n == (size_t)sh->npc)
		return 0;
	if (n > INT_MAX)
		return -1;
	struct wpiece *out = calloc(n, sizeof(*out));
	if (!out)
		return -1;
	size_t m = 0;
	for (int k = 0; k < sh->npc; k++)
		for (size_t o = 0; o < sh->pc[k].count; o += maxf)
			out[m++] = (struct wpiece){ .flat = sh->pc[k].flat + o, .shard_off = sh->pc[k].shard_off + o,
						    .count = sh->pc[k].count - o < maxf ? sh->pc[k].count - o : maxf };
	free(sh->pc);
	sh->pc = out;
	sh->npc = (int)n;
	return 0;
}

struct worker {
	const struct rdmaps_job *j;
	struct rdmaps_layout L;
	struct rt_ctx *ctx;
	struct wshard *s;
	int P, me;
	float *params, *grad;  /* flat model vectors, registered (rt_alloc) */
	size_t vec_bytes;      /* their allocation size */
	long tmo_ms;
};

/* "Worker N", for the lines of helpers that do not hold the worker */
static char me_name[24] = "Worker";

static int wait_comp(struct wshard *sh, int n, long tmo_ms, const char *what, int shard)
{
	struct rt_completion c[4];
	double end = rdmaps_now() + tmo_ms / 1000.0, last_pass = rdmaps_now();
	while (n > 0) {
		int got = rt_poll(sh->c, c, 4, 100);
		if (got < 0) {
			fprintf(stderr, "%s: %s on ps %d: %s (%s)\n", me_name, what, shard, rdmaps_strerror(got),
				rt_conn_errmsg(sh->c));
			return got;
		}
		for (int k = 0; k < got; k++)
			if (c[k].status) {
				fprintf(stderr, "%s: %s on ps %d failed: %s (%s)\n", me_name, what, shard,
					rdmaps_strerror(c[k].status), rt_conn_errmsg(sh->c));
				return c[k].status;
			}
		n -= got;
		double now = rdmaps_now();
		if (rdmaps_stalled(&last_pass, now)) /* stopped and continued: common/stall.h */
			end = now + tmo_ms / 1000.0;
		if (n > 0 && now > end) {
			fprintf(stderr, "%s: %s on ps %d timed out\n", me_name, what, shard);
			return RDMAPS_E_TIMEOUT;
		}
	}
	return 0;
}

/* A post of a pull or a push (many pieces: more than a connection holds
 * at once) that found no room within the ctx timeout (--timeout) says
 * RDMAPS_E_AGAIN: the ps did not answer for that long, which a completion
 * wait reports as RDMAPS_E_TIMEOUT, and it is treated as one (reconnect,
 * or the ps did not come back).  Until stop 33 (2026-12-07) it ended the
 * worker as a refused operation. */
static int post_status(int rc)
{
	return rc == RDMAPS_E_AGAIN ? RDMAPS_E_TIMEOUT : rc;
}

/* Post the READs of shard p's pieces of buffer `version` straight into the
 * flat parameter vector, then a fenced, signaled 8-byte READ of that
 * buffer's version word (executed after the pieces were read). */
static int pull_post(struct worker *w, int p, uint64_t version)
{
	struct wshard *sh = &w->s[p];
	size_t off = buf_off(sh->n, version);
	int rc = 0;
	for (int k = 0; k < sh->npc && !rc; k++)
		rc = rt_read(sh->c, G_W_PARAMS_DST, sh->pc[k].flat * sizeof(float), G_PS_PARAMS,
			     off + 64 + sh->pc[k].shard_off * sizeof(float), sh->pc[k].count * sizeof(float), 1, 0);
	if (!rc)
		rc = rt_read(sh->c, G_W_SCRATCH, 0, G_PS_PARAMS, off, 8, 2, RT_F_SIGNALED | RT_F_FENCE);
	sh->want = version;
	sh->posted = rc ? 0 : 1;
	return post_status(rc);
}

/* Pull every shard whose released version changed, all shards posted
 * before any is waited for.  A copy whose version word no longer matches
 * (lapped by a newer update: the pieces may be torn) is read again at
 * current_version, up to 1000 times.  On an error in shard q every other
 * shard's posted ops are still waited for (no completion is left behind),
 * then the first failing shard is returned in *bad. */
static int pull_all(struct worker *w, int *bad)
{
	int first = 0;
	*bad = -1;
	for (int p = 0; p < w->P; p++) {
		struct wshard *sh = &w->s[p];
		uint64_t v = MBOX_VERSION(sh->mv); /* the message wait_token saw whole */
		sh->err = 0;
		sh->posted = 0;
		if (sh->held != UINT64_MAX && v == sh->held)
			continue;
		sh->err = pull_post(w, p, v);
	}
	for (int p = 0; p < w->P; p++) {
		struct wshard *sh = &w->s[p];
		int tries = 0;
		while (!sh->err && sh->posted) {
			sh->posted = 0;
			if ((sh->err = wait_comp(sh, 1, w->tmo_ms, "parameter read", p)))
				break;
			if (*sh->scratch == sh->want) {
				sh->held = sh->want;
				break;
			}
			if (++tries >= 1000) {
				fprintf(stderr, "%s: ps %d: parameters kept changing under 1000 reads\n", me_name, p);
				sh->err = RDMAPS_E_AGAIN;
				break;
			}
			/* torn or lapped: read the newest published version and retry */
			sh->err = rt_read(sh->c, G_W_SCRATCH, 0, G_PS_PARAMS,
					  offsetof(struct rdmaps_params_hdr, current_version), 8, 3, RT_F_SIGNALED);
			if (!sh->err)
				sh->err = wait_comp(sh, 1, w->tmo_ms, "version read", p);
			if (!sh->err)
				sh->err = pull_post(w, p, *sh->scratch);
		}
		if (sh->err && *bad < 0) {
			*bad = p;
			first = sh->err;
		}
	}
	return first;
}

/* Post my push to shard p: the pieces of the flat vector of grant `lid`
 * (gradient, or parameters for INIT) into my slot, then the slot header.
 * With ordered placement the FETCH_ADD of ready_seq[me] follows at once
 * and only it is signaled; else the header WRITE is signaled and
 * push_counter posts the FETCH_ADD once it completed. */
static int push_post(struct worker *w, int p, uint32_t lid, uint32_t kind, uint64_t step, double loss)
{
	struct wshard *sh = &w->s[p];
	struct rdmaps_slot_hdr *h = sh->shdr;
	int rc = 0;
	h->step = step;
	h->seq = sh->seq + 1;
	h->kind = kind;
	h->worker = (uint32_t)w->me;
	h->loss = loss;
	sh->posted = 0;
	for (int k = 0; k < sh->npc && !rc; k++)
		rc = rt_write(sh->c, lid, sh->pc[k].flat * sizeof(float), G_PS_SLOT,
			      64 + sh->pc[k].shard_off * sizeof(float), sh->pc[k].count * sizeof(float), 4, 0);
	if (!rc)
		rc = rt_write(sh->c, G_W_SLOT_HDR, 0, G_PS_SLOT, 0, 64, 4, sh->ordered ? 0 : RT_F_SIGNALED);
	if (!rc && sh->ordered)
		rc = rt_fetch_add(sh->c, G_W_ATOMIC, 0, G_PS_COUNTERS, (uint64_t)w->me * 8, 1, 5, RT_F_SIGNALED);
	sh->posted = rc ? 0 : 1;
	return post_status(rc);
}

/* Unordered transport: wait for the slot WRITEs, then post the FETCH_ADD. */
static int push_counter(struct worker *w, int p)
{
	struct wshard *sh = &w->s[p];
	int rc = wait_comp(sh, 1, w->tmo_ms, "gradient write", p);
	sh->posted = 0;
	if (!rc)
		rc = rt_fetch_add(sh->c, G_W_ATOMIC, 0, G_PS_COUNTERS, (uint64_t)w->me * 8, 1, 5, RT_F_SIGNALED);
	sh->posted = rc ? 0 : 1;
	return rc;
}

/* Push to every shard: post all shards' WRITEs (and, ordered, their
 * FETCH_ADDs) before waiting for any.  Unordered: a shard's push count
 * moves when its FETCH_ADD completed.  Ordered: it moves once the FETCH_ADD
 * is posted, and its completion is reaped later (reap()): the token this
 * worker waits for next implies that the FETCH_ADD executed, so waiting
 * for its reply here would only add a wake-up to the step.  A broken
 * connection still shows (the token wait probes it).  On an error every
 * other shard is still waited for, then the first failing shard is
 * returned in *bad. */
static int push_all(struct worker *w, uint32_t lid, uint32_t kind, double loss, int *bad)
{
	int first = 0;
	*bad = -1;
	for (int p = 0; p < w->P; p++) {
		struct wshard *sh = &w->s[p];
		sh->err = push_post(w, p, lid, kind, kind == SLOT_INIT ? 0 : sh->held, loss);
		if (!sh->err && sh->ordered) {
			sh->posted = 0;
			sh->unreaped++;
			sh->seq++;
		}
	}
	for (int p = 0; p < w->P; p++)
		if (!w->s[p].err && !w->s[p].ordered)
			w->s[p].err = push_counter(w, p);
	for (int p = 0; p < w->P; p++) {
		struct wshard *sh = &w->s[p];
		if (!sh->err && sh->posted) {
			sh->posted = 0;
			if (!(sh->err = wait_comp(sh, 1, w->tmo_ms, "counter fetch-add", p)))
				sh->seq++;
		}
		if (sh->err && *bad < 0) {
			*bad = p;
			first = sh->err;
		}
	}
	return first;
}

/* Poll the completions of ordered pushes (FETCH_ADDs) not reaped yet: after
 * the token they have executed, so this rarely waits.  Done right after the
 * token wait, before any other op is posted (wait_comp counts completions,
 * so none may be left over), hence also before the gradient vector (their
 * WRITEs' source) is written again and before the end of training. */
static int reap(struct worker *w, int *bad)
{
	for (int p = 0; p < w->P; p++) {
		struct wshard *sh = &w->s[p];
		if (sh->unreaped) {
			int rc = wait_comp(sh, sh->unreaped, w->tmo_ms, "counter fetch-add", p);
			sh->unreaped = 0;
			if (rc) {
				*bad = p;
				return rc;
			}
		}
	}
	return 0;
}

/* One shard's push (the chief's INIT, during start-up and recovery). */
static int push_one(struct worker *w, int p, uint32_t lid, uint32_t kind)
{
	struct wshard *sh = &w->s[p];
	int rc = push_post(w, p, lid, kind, 0, 0);
	if (!rc && !sh->ordered)
		rc = push_counter(w, p);
	if (!rc) {
		sh->posted = 0;
		if (!(rc = wait_comp(sh, 1, w->tmo_ms, "counter fetch-add", p)))
			sh->seq++;
	}
	return rc;
}

static int read_state(struct worker *w, int p, uint64_t *state)
{
	struct wshard *sh = &w->s[p];
	int rc = rt_read(sh->c, G_W_SCRATCH, 0, G_PS_PARAMS, offsetof(struct rdmaps_params_hdr, state), 8, 6,
			 RT_F_SIGNALED);
	if (rc || (rc = wait_comp(sh, 1, w->tmo_ms, "state read", p)))
		return rc;
	*state = *sh->scratch;
	return 0;
}

/* Connect to ps p, retrying until `secs` have passed, then learn my push
 * count there: FETCH_ADD 0 on ready_seq[me].  Push numbering continues from
 * it, so a restarted worker (or a restarted ps, whose counters start at 0)
 * needs no other agreement (docs/protocol.md Q8).  The mailbox is zeroed
 * first: only the new connection's releases count. */
static int connect_one(struct worker *w, int p, int secs, int retry_in_use)
{
	const struct rdmaps_job *j = w->j;
	struct wshard *sh = &w->s[p];
	struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER, .index = (uint32_t)w->me, .layout_hash = rdmaps_hello_hash(&w->L, p) };
	char host[256];
	uint16_t port;
	if (rdmaps_split_hostport(j->ps_hosts[p], host, sizeof(host), &port))
		return RDMAPS_E_INVAL;
	struct rt_grant g[6] = {
		{ G_W_MAILBOX, sh->mbox, 64, RT_RIGHT_WRITE },
		{ G_W_PARAMS_DST, w->params, w->vec_bytes, RT_RIGHT_NONE },
		{ G_W_GRAD_SRC, w->grad, w->vec_bytes, RT_RIGHT_NONE },
		{ G_W_ATOMIC, sh->atom, 64, RT_RIGHT_NONE },
		{ G_W_SCRATCH, sh->scratch, 64, RT_RIGHT_NONE },
		{ G_W_SLOT_HDR, sh->shdr, 64, RT_RIGHT_NONE },
	};
	mbox_pack(sh->mbox, 0); /* a whole message: version 0, token 0 */
	sh->mv = 0;
	/* the ps may not be up (yet, or again): retry until the deadline,
	 * saying so after 1 s (a ps that starts a moment after its workers
	 * is normal) and then every 10 s (as TF's "CreateSession still
	 * waiting"), not once per attempt */
	double start = rdmaps_now(), end = start + secs, next_say = start + (retry_in_use ? 10 : 1);
	int said = 0;
	useconds_t pause_us = 10000; /* doubles up to 1 s between attempts */
	int rc;
	for (;;) {
		/* an attempt lasts at most 5 s, and not past the deadline (a ps
		 * that accepts and then hangs made --recovery_timeout=1 last 5 s) */
		double left_s = end - rdmaps_now();
		int att_ms = left_s > 5 ? 5000 : left_s > 0.2 ? (int)(left_s * 1000) : 200;
		rc = rt_connect(w->ctx, host, port, &hello, g, 6, att_ms, &sh->c);
		if (!rc)
			break;
		double now = rdmaps_now();
		if ((!rt_connect_retriable(rc) && !(rc == RDMAPS_E_IN_USE && retry_in_use)) || now > end) {
			if (!retry_in_use) /* else recover() says it */
				fprintf(stderr, "Worker %d: cannot connect to ps %d at %s: %s%s\n", w->me, p,
					j->ps_hosts[p], rdmaps_strerror(rc),
					rc == RDMAPS_E_IN_USE ? " (another live worker runs with this --task_index)"
					: rc == RDMAPS_E_MISMATCH ? " (this worker and the ps differ in --model, "
					  "--hidden_units, the number of ps or workers, the order of --ps_hosts, "
					  "--sync_replicas, --replicas_to_aggregate or --learning_rate)"
					: now > end ? " (gave up after --timeout)" : "");
			return rc;
		}
		if (now >= next_say) {
			if (!said++ && !retry_in_use) /* recover() said it already */
				fprintf(stderr, "Worker %d: ps %d at %s: %s; retrying for up to %d s (--timeout)\n",
					w->me, p, j->ps_hosts[p], rdmaps_strerror(rc), secs);
			else
				fprintf(stderr, "Worker %d: still waiting for ps %d at %s (%s, %.0f s of %d)\n", w->me,
					p, j->ps_hosts[p], rdmaps_strerror(rc), now - start, secs);
			next_say = now + 10;
		}
		usleep(pause_us);
		pause_us = pause_us < 500000 ? pause_us * 2 : 1000000;
	}
	rc = rt_fetch_add(sh->c, G_W_ATOMIC, 0, G_PS_COUNTERS, (uint64_t)w->me * 8, 0, 8, RT_F_SIGNALED);
	if (rc || (rc = wait_comp(sh, 1, w->tmo_ms, "push count read", p))) {
		rt_conn_delete(&sh->c); /* connected but unusable: not leaked, not reused */
		return rc;
	}
	sh->seq = *sh->atom;
	sh->held = UINT64_MAX;
	sh->unreaped = 0;
	sh->ordered = (rt_conn_caps(sh->c) & RT_CAP_ORDERED_PLACEMENT) != 0;
	return 0;
}

static int connect_all(struct worker *w)
{
	for (int p = 0; p < w->P; p++) {
		int rc = connect_one(w, p, w->j->timeout_s, 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* Errors after which reconnecting may help: the ps died or hangs. */
static int recoverable(int rc)
{
	return rc == RDMAPS_E_PEER_GONE || rc == RDMAPS_E_TIMEOUT || rc == RDMAPS_E_IO || rc == RDMAPS_E_PROTO;
}

/* A failure with ps p that no reconnect cures (an operation the transport
 * refused to start: bad arguments, no memory, completions not collected;
 * a remote access error): said once, as the worker's last word, then exit 1.
 * Until 2026-12-07 an operation refused at its post ended the worker
 * without a word (a review). */
static int give_up(int me, int p, int rc)
{
	if (rc == RDMAPS_E_STATE) /* its own --timeout, said where it happened */
		return rc;
	fprintf(stderr, "Worker %d: stopping: an operation with ps %d failed: %s (not a lost connection: "
		"not retried)\n", me, p, rdmaps_strerror(rc));
	return rc;
}

static int recover(struct worker *w, int p, int rc);

/* rc (non-zero) from an operation with ps p: reconnect when a reconnect may
 * cure it, else stop saying why.  0 when reconnected, else the status. */
static int recover_or_stop(struct worker *w, int p, int rc)
{
	return recoverable(rc) ? recover(w, p, rc) : give_up(w->me, p, rc);
}

/* Wait until shard p is initialized (bounded by secs).  The chief (init
 * 1 or 2) initializes a shard that is not: at start (1) with its seeded
 * parameters, after a reconnect (2: ps restarted without a checkpoint) with
 * the parameters it holds, and says so. */
static int wait_ready(struct worker *w, int p, int secs, int init)
{
	uint64_t st;
	int rc;
	if ((rc = read_state(w, p, &st)))
		return rc;
	if (st != PARAMS_STATE_READY && w->me == 0 && init) {
		if (init == 2) {
			printf("Worker %d: ps %d has no parameters (restarted without a checkpoint): initializing it with mine\n",
			       w->me, p);
			fflush(stdout);
		}
		if ((rc = push_one(w, p, G_W_PARAMS_DST, SLOT_INIT)))
			return rc;
		w->s[p].fresh = 1;
	}
	/* Poll at 1 ms, doubling up to 100 ms: a worker joins within a few ms of
	 * the chief's INIT.  (A fixed 100 ms let a fast chief take all of a
	 * short async run alone; TF's 1 s recovery_wait_secs does the same to
	 * mnist_replica: docs/protocol.md Q5.) */
	double end = rdmaps_now() + secs;
	useconds_t nap = 1000;
	while (st != PARAMS_STATE_READY) {
		if (rdmaps_now() > end) {
			fprintf(stderr, "Worker %d: ps %d not initialized by the chief within %d s\n", w->me, p, secs);
			return RDMAPS_E_STATE; /* the ps is there: reconnecting would not help */
		}
		double last_pass = rdmaps_now(), now;
		usleep(nap);
		if (rdmaps_stalled(&last_pass, now = rdmaps_now())) /* stopped and continued: common/stall.h */
			end = now + secs;
		nap = nap < 50000 ? nap * 2 : 100000;
		if ((rc = read_state(w, p, &st)))
			return rc;
	}
	return 0;
}

/* The version of shard q to compare: now_v for the shard p that just came
 * back, else what this worker last pulled there (UINT64_MAX = none). */
static uint64_t shard_step(const struct worker *w, int p, uint64_t now_v, int q)
{
	return q == p ? now_v : w->s[q].held;
}

/* Are the ps shards further apart in global step than the protocol allows
 * (sync: 1, a shard may be one update ahead; async: one update per worker
 * in flight)?  If so, say so on stderr.  Two callers:
 * - p >= 0: ps p came back at global step now_v (a restart restores its own
 *   last checkpoint); now_v is compared with the version held of every
 *   other shard (what this worker last pulled there: no operation on their
 *   connections, which may have ops in flight);
 * - p < 0: session start, after the first pull of every shard: the versions
 *   held are compared (a whole job restarted with --logdir, each ps having
 *   restored its own newest valid checkpoint).  Shards the chief has just
 *   initialized (no checkpoint) are marked.
 * Nothing is changed: each shard goes on from its own step
 * (docs/failure-modes.md).  Returns 1 when it reported a skew. */
static int check_shard_steps(struct worker *w, int p, uint64_t now_v)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int fresh = 0;
	for (int q = 0; q < w->P; q++) {
		uint64_t v = shard_step(w, p, now_v, q);
		if (v == UINT64_MAX)
			continue;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		fresh |= p < 0 && w->s[q].fresh;
	}
	if (lo == UINT64_MAX || hi - lo <= (uint64_t)(w->j->sync ? 1 : w->j->nworkers))
		return 0;
	fprintf(stderr, "Worker %d: the ps shards are at different global steps:", w->me);
	for (int q = 0; q < w->P; q++) {
		uint64_t v = shard_step(w, p, now_v, q);
		if (v != UINT64_MAX)
			fprintf(stderr, " ps %d at %llu%s%s", q, (unsigned long long)v,
				p < 0 && w->s[q].fresh ? " (no checkpoint: initialized now)" : "",
				q + 1 < w->P ? "," : "");
	}
	fprintf(stderr, " (%llu apart%s); each shard goes on from its own step, and training stops when ps 0 "
		"reaches --train_steps\n", (unsigned long long)(hi - lo),
		p >= 0  ? ": checkpoints of different steps restored"
		: fresh ? " at session start: some shards were restored from a checkpoint, others started clean"
			: " at session start: the shards were restored from checkpoints of different steps");
	return 1;
}

/* The connection to ps p failed with rc: report, reconnect within
 * --recovery_timeout, re-learn push count and state.  The version held is
 * forgotten: the next pull takes whatever the ps has now, which may be
 * older than before (a restored checkpoint). */
static int recover(struct worker *w, int p, int rc)
{
	const struct rdmaps_job *j = w->j;
	struct wshard *sh = &w->s[p];
	uint64_t was = sh->held;
	/* PEER_GONE: the connection closed, which is also how a ps drops a
	 * worker it found unresponsive (docs/failure-modes.md), not only a
	 * ps that died */
	fprintf(stderr, "Worker %d: lost ps %d: %s%s; reconnecting (up to %d s, --recovery_timeout)\n", w->me, p,
		rdmaps_strerror(rc),
		rc == RDMAPS_E_PEER_GONE ? " (the ps closed the connection: it stopped, or it dropped this worker)" : "",
		j->recovery_timeout_s);
	rt_conn_delete(&sh->c);
	double t0 = rdmaps_now();
	uint64_t now_v = 0;
	for (;;) {
		/* the time left of --recovery_timeout (all of it the first time) */
		int left = j->recovery_timeout_s - (int)(rdmaps_now() - t0);
		if (left < 1)
			left = 1;
		/* my own previous connection may still look alive to the ps for a
		 * moment (RDMAPS_E_IN_USE): retried like a ps that is not back yet */
		if ((rc = connect_one(w, p, left, 1)) || (rc = wait_ready(w, p, left, 2))) {
			fprintf(stderr, "Worker %d: ps %d did not come back within %d s (--recovery_timeout): %s\n",
				w->me, p, j->recovery_timeout_s, rdmaps_strerror(rc));
			return rc;
		}
		/* its global step; a failure here is a failed reconnect (it was
		 * ignored: the step read as 0, and a READ left in flight on a
		 * live connection would have been counted by a later wait) */
		rc = rt_read(sh->c, G_W_SCRATCH, 0, G_PS_PARAMS, offsetof(struct rdmaps_params_hdr, current_version), 8,
			     3, RT_F_SIGNALED);
		if (!rc)
			rc = wait_comp(sh, 1, w->tmo_ms, "version read", p);
		if (!rc) {
			now_v = *sh->scratch;
			break;
		}
		rt_conn_delete(&sh->c);
		if (!recoverable(rc) || rdmaps_now() - t0 > j->recovery_timeout_s) {
			fprintf(stderr, "Worker %d: ps %d: reading its global step after the reconnect failed: %s\n",
				w->me, p, rdmaps_strerror(rc));
			return rc;
		}
		fprintf(stderr, "Worker %d: ps %d: reading its global step after the reconnect failed: %s; "
			"reconnecting again\n", w->me, p, rdmaps_strerror(rc));
		usleep(200000);
	}
	printf("Worker %d: reconnected to ps %d after %.1f s: its global step is %llu (I held %lld)\n", w->me, p,
	       rdmaps_now() - t0, (unsigned long long)now_v, was == UINT64_MAX ? -1LL : (long long)was);
	fflush(stdout);
	check_shard_steps(w, p, now_v);
	return 0;
}

/* Waited --barrier_timeout for a release of ps p: READ its header and name
 * the workers its aggregation lacks (async: say that the ps answers; the
 * READ is then the wait's only check that the ps is there: over verbs a
 * ps that died between taking a push and releasing it left the worker
 * nothing outstanding to fail, and it waited out --timeout, then stopped
 * as if the ps were alive; until stop 37 only sync workers read).  The
 * READ's completion comes after those of the pushes not reaped yet (an
 * ordered transport): all are waited for (wait_comp counts; counting only the READ's took a push's completion, and
 * the next reap then waited for one that never came: a ps paused for more
 * than --barrier_timeout failed the job), and no longer than the token
 * wait's own deadline (a hung ps: it waited a whole --timeout more).
 * Returns 0, RDMAPS_E_TIMEOUT at the deadline, or the connection's error. */
static int barrier_report(struct worker *w, int p, double start, double end)
{
	struct wshard *sh = &w->s[p];
	const struct rdmaps_params_hdr *h = (const struct rdmaps_params_hdr *)sh->scratch;
	long left_ms = (long)((end - rdmaps_now()) * 1000);
	int rc = rt_read(sh->c, G_W_SCRATCH, 0, G_PS_PARAMS, 0, 64, 9, RT_F_SIGNALED);
	if (rc || (rc = wait_comp(sh, sh->unreaped + 1, left_ms > 0 ? left_ms : 0, "header read", p)))
		return rc;
	sh->unreaped = 0;
	if (!w->j->sync) {
		/* async: no barrier, no one missing; the READ asked whether the
		 * ps is there at all (a dead one fails it: the caller recovers) */
		fprintf(stderr, "Worker %d: waited %.0f s for ps %d to take my gradient; it answers a read: "
			"waiting on (up to --timeout)\n", w->me, rdmaps_now() - start, p);
		return 0;
	}
	fprintf(stderr, "Worker %d: barrier timeout: waited %.0f s for ps %d to release global step %llu; missing:",
		w->me, rdmaps_now() - start, p, (unsigned long long)(sh->held == UINT64_MAX ? 0 : sh->held));
	int any = 0;
	for (int i = 0; i < w->j->nworkers && i < RDMAPS_MISSING_MAX; i++)
		if (h->missing[i / 64] >> (i % 64) & 1) {
			fprintf(stderr, " worker %d", i);
			any = 1;
		}
	fprintf(stderr, "%s\n", any ? "" : " (not named by the ps yet)");
	return 0;
}

/* Wait for my token on shard p (all my pushes there consumed).  Bounded by
 * --timeout; names missing workers every --barrier_timeout; a broken
 * connection returns its error (the caller recovers). */
static int wait_token(struct worker *w, int p)
{
	const struct rdmaps_job *j = w->j;
	struct wshard *sh = &w->s[p];
	unsigned spins = 0;
	double start = rdmaps_now(), end = start + j->timeout_s, next_check = start + 0.2;
	double next_msg = start + j->barrier_timeout_s, last_pass = start;
	/* Sleep until the ps's release WRITE lands where the transport can wake
	 * us (RT_CAP_TARGET_WAKE), else spin with backoff on the mailbox. */
	int wake = (rt_ctx_caps(w->ctx) & RT_CAP_TARGET_WAKE) != 0;
	for (;;) {
		uint32_t ev = wake ? rt_ctx_target_events(w->ctx) : 0; /* before the check: no lost wake-up */
		uint64_t mv;
		if (mbox_read(sh->mbox, &mv) && MBOX_TOKEN(mv) >= (sh->seq & 0xffffffffull)) {
			sh->mv = mv;
			break;
		}
		if (wake) {
			rt_ctx_wait_target(w->ctx, ev, 20000);
		} else {
			rdmaps_backoff(&spins);
			if ((spins & 255) != 0)
				continue;
		}
		double now = rdmaps_now();
		if (rdmaps_stalled(&last_pass, now)) { /* stopped and continued: common/stall.h */
			start = now;
			end = now + j->timeout_s;
			next_msg = now + j->barrier_timeout_s;
		}
		if (now < next_check)
			continue;
		next_check = now + 0.2;
		struct rt_completion c[4];
		int got = rt_poll(sh->c, c, 4, 1); /* liveness: a dead ps shows here */
		if (got < 0)
			return got;
		for (int k = 0; k < got; k++) /* unreaped push completions (ordered transport) */
			if (c[k].status)
				return c[k].status;
		sh->unreaped = sh->unreaped > got ? sh->unreaped - got : 0;
		if (now >= next_msg && now <= end) {
			int rc = barrier_report(w, p, start, end);
			if (rc && rc != RDMAPS_E_TIMEOUT)
				return rc; /* a broken connection: the caller recovers */
			/* its READ outstanding at the deadline: this wait ends */
			now = rc ? end + 1 : rdmaps_now();
			last_pass = now; /* (the report's own wait is no stall) */
			next_msg = now + j->barrier_timeout_s; /* (the READ may have waited) */
		}
		if (now > end) {
			fprintf(stderr, "Worker %d: no release from ps %d within %d s (--timeout)\n", w->me, p,
				j->timeout_s);
			return RDMAPS_E_STATE; /* not recoverable: the ps is alive */
		}
	}
	return 0;
}

/* --snapshot_file record (bench/step/eval_snapshots reads it): u64 global
 * step, f64 time (rdmaps_wall: Unix time, as --metrics "t"), u64 nfloats, then
 * the parameters. */
/* --dump_params: the final parameters, raw floats, into PATH.tmp.PID, then
 * fsync and rename over PATH, so that a failed write (full disk) leaves the
 * previous dump as it was (a PATH that is not a regular file is written
 * directly).  Returns 0, or -1 after saying why. */
static int dump_params(const struct worker *w, const char *path)
{
	char tmp[sizeof(((struct rdmaps_job *)0)->dump_params) + 32];
	FILE *f;
	int ok;

	struct stat st;
	/* a device or FIFO (/dev/stdout, a pipe) is written as it is: renaming
	 * a file over it would replace the node */
	int direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	if (direct)
		snprintf(tmp, sizeof(tmp), "%s", path);
	f = fopen(tmp, "wb");
	if (!f) {
		fprintf(stderr, "Worker %d: cannot write --dump_params=%s: %s: %s\n", w->me, path, tmp, strerror(errno));
		return -1;
	}
	int err = 0;
	ok = fwrite(w->params, sizeof(float), w->L.nparams, f) == w->L.nparams && fflush(f) == 0 &&
	     (direct || fsync(fileno(f)) == 0);
	if (!ok)
		err = errno;
	if (fclose(f) && ok) {
		ok = 0;
		err = errno;
	}
	if (ok && !direct && rename(tmp, path)) {
		ok = 0;
		err = errno;
	}
	if (!ok) {
		fprintf(stderr, "Worker %d: cannot write --dump_params=%s: %s%s\n", w->me, path,
			strerror(err ? err : EIO), direct ? "" : " (an earlier file there is kept)");
		if (!direct)
			unlink(tmp);
		return -1;
	}
	return 0;
}

static int snapshot(struct worker *w, FILE *f, uint64_t gstep, double t)
{
	uint64_t hd[3] = { gstep, 0, w->L.nparams };
	memcpy(&hd[1], &t, sizeof(double));
	if (fwrite(hd, sizeof(hd), 1, f) != 1 || fwrite(w->params, sizeof(float), w->L.nparams, f) != w->L.nparams) {
		fprintf(stderr, "Worker %d: cannot write %s\n", w->me, w->j->snapshot_file);
		return RDMAPS_E_IO;
	}
	return 0;
}

int rdmaps_worker_main(const struct rdmaps_job *j)
{
	struct worker w;
	struct rdm_images train = { 0 }, val = { 0 };
	struct rdm_batcher *bat = NULL;
	char err[512], tag[32];
	int rc, ret = 1;
	FILE *mf = NULL, *snap = NULL;
	int mf_errno = 0; /* the first failed --metrics write's */

	memset(&w, 0, sizeof(w));
	w.j = j;
	w.P = j->nps;
	w.me = j->task_index;
	w.tmo_ms = (long)j->timeout_s * 1000;
	snprintf(tag, sizeof(tag), "worker%d", w.me);
	rdmaps_log_set_tag(tag);
	snprintf(me_name, sizeof(me_name), "Worker %d", w.me);
	if (rdm_mnist_load(j->data_dir, &train, &val, NULL, err, sizeof(err))) {
		fprintf(stderr, "Worker %d: %s\n", w.me, err);
		return 1;
	}
	if (rdm_images_check_28x28(&train, j->data_dir, err, sizeof(err))) {
		fprintf(stderr, "Worker %d: %s\n", w.me, err);
		goto out_data; /* ret is 1 */
	}
	if ((rc = rdmaps_layout_new(j, j->batch_size > 1000 ? j->batch_size : 1000, &w.L))) {
		fprintf(stderr, "Worker %d: model set-up failed: %s\n", w.me, rdmaps_strerror(rc));
		goto out_data;
	}
	/* "a": nothing is cut before this worker knows whether it rejoins a
	 * job (then its records go on after its predecessor's) or starts one
	 * (then the file is emptied, below) */
	if (j->metrics[0] && !(mf = fopen(j->metrics, "a"))) {
		perror(j->metrics);
		goto out_layout;
	}
	/* one write(2) per record: a worker stopped by a signal (`rdmaps
	 * launch` on Ctrl-C, a scheduler's SIGTERM, SIGKILL) leaves whole
	 * lines, every step it finished (fully buffered, it lost up to 4 KiB
	 * of records and tore the last one).  One syscall per step. */
	if (mf)
		setvbuf(mf, NULL, _IOLBF, 4096);
	if (j->snapshot_file[0] && j->snapshot_every > 0 && w.me == 0 && !(snap = fopen(j->snapshot_file, "wb"))) {
		perror(j->snapshot_file);
		goto out_metrics;
	}
	rdm_batcher_new(&train, rdm_shuffle_seed(j->seed, (uint64_t)w.me), &bat);
	w.s = calloc(w.P, sizeof(*w.s));
	float *bx = malloc((size_t)j->batch_size * 784 * sizeof(float));
	uint8_t *by = malloc((size_t)j->batch_size);
	struct rt_ctx_cfg cc = { .kind = j->transport, .timeout_ms = (int)w.tmo_ms, .auth_token = j->token,
				 .numa_node = -1, .tcp_spin_us = j->tcp_spin_us,
				 /* --worker_progress (tcp): by default the thread that waits
				  * for the release serves the ps's mailbox WRITE itself (one
				  * wake-up less per step; the transport's watchdog answers
				  * while it computes) */
				 .progress = j->worker_progress };
	char wname[256], host0[256], why[320];
	uint16_t port0;
	rdmaps_split_hostport(j->worker_hosts[w.me], wname, sizeof(wname), &port0);
	/* a worker listens nowhere: its own address only tells --transport=auto
	 * and the locality code which RDMA port is its own.  Its name mapped
	 * to 127.0.1.1 (Debian's /etc/hosts) would find none, and the worker
	 * would take tcp where its ps took rdma. */
	if (rdmaps_local_bind_host(wname, host0, sizeof(host0), why, sizeof(why)) && j->transport != RT_TCP)
		printf("Worker %d: %s: its RDMA port is looked for on every address (%s)\n", w.me, why,
		       host0);
	cc.bind_host = host0;
	if (!w.s || !bx || !by || !bat) {
		fprintf(stderr, "Worker %d: out of memory\n", w.me);
		goto out_mem;
	}
	if ((rc = rt_ctx_new(&cc, &w.ctx))) {
		char who[32];

		snprintf(who, sizeof(who), "Worker %d", w.me);
		rdmaps_report_transport_error(who, host0, rc);
		goto out_mem;
	}
	/* the flat model vectors are registered: pulls land in params, pushes
	 * leave from grad, with no copy in between */
	w.vec_bytes = w.L.nparams * sizeof(float);
	w.params = rt_alloc(w.ctx, w.vec_bytes);
	w.grad = rt_alloc(w.ctx, w.vec_bytes);
	if (!w.params || !w.grad) {
		fprintf(stderr, "Worker %d: out of registered memory\n", w.me);
		goto out_ctx;
	}
	const size_t maxf = max_op_floats(); /* (reads RDMAPS_MAX_OP_BYTES once) */
	for (int p = 0; p < w.P; p++) {
		struct wshard *sh = &w.s[p];
		const struct rdmaps_placement *pl = &w.L.place;
		sh->n = pl->shard_count[p];
		sh->mbox = rt_alloc(w.ctx, 64);
		sh->shdr = rt_alloc(w.ctx, 64);
		sh->atom = rt_alloc(w.ctx, 64);
		sh->scratch = rt_alloc(w.ctx, 64);
		sh->pc = calloc(pl->npieces > 0 ? pl->npieces : 1, sizeof(*sh->pc));
		sh->held = UINT64_MAX;
		if (!sh->mbox || !sh->shdr || !sh->atom || !sh->scratch || !sh->pc) {
			fprintf(stderr, "Worker %d: out of registered memory\n", w.me);
			goto out_ctx;
		}
		for (int k = 0; k < pl->npieces; k++) {
			const struct rdmaps_piece *pc = &pl->pieces[k];
			if (pc->ps != p)
				continue;
			size_t flat = rdm_model_tensor(w.L.model, pc->tensor)->offset + pc->tensor_off;
			struct wpiece *last = sh->npc ? &sh->pc[sh->npc - 1] : NULL;
			if (last && last->flat + last->count == flat && last->shard_off + last->count == pc->shard_off)
				last->count += pc->count; /* contiguous on both sides: one op */
			else
				sh->pc[sh->npc++] = (struct wpiece){ .flat = flat, .shard_off = pc->shard_off,
								     .count = pc->count };
		}
		if (split_pieces(sh, maxf)) {
			fprintf(stderr, "Worker %d: out of memory\n", w.me);
			goto out_ctx;
		}
		if (maxf < RT_MAX_OP_LEN / sizeof(float))
			printf("Worker %d: RDMAPS_MAX_OP_BYTES: ps %d's %zu floats in %d READs / WRITEs of at most %zu floats\n",
			       w.me, p, sh->n, sh->npc, maxf);
	}
	if (w.me == 0)
		printf("Worker %d: Initializing session...\n", w.me);
	else
		printf("Worker %d: Waiting for session to be initialized...\n", w.me);
	fflush(stdout);
	if ((rc = connect_all(&w)))
		goto out_conn; /* the shards connected before the failing one */
	/* A ps that took gradients from a worker with my index before this
	 * process started (the push count learnt on connecting, before the
	 * chief's INIT below counts as one): this worker rejoins the job that
	 * ps holds (a restarted task does; the chief does not initialize it
	 * again).  Said, because a new job started on the ports of an earlier
	 * one whose ps still waits for its workers would otherwise go on with
	 * that job's parameters and global step without a word (its own ps
	 * could not bind the port). */
	int rejoin_ps = -1; /* the first such ps */
	for (int p = 0; p < w.P && rejoin_ps < 0; p++)
		if (w.s[p].seq != 0)
			rejoin_ps = p;
	/* --metrics: a new job's file starts empty (as "w" did); a rejoining
	 * worker appends, so a restart keeps the records of the steps before it
	 * (a regular file only: /dev/stdout, a FIFO are written as they are) */
	struct stat mst;
	if (mf && rejoin_ps < 0 && fstat(fileno(mf), &mst) == 0 && S_ISREG(mst.st_mode) && ftruncate(fileno(mf), 0)) {
		fprintf(stderr, "Worker %d: cannot empty --metrics=%s: %s\n", w.me, j->metrics, strerror(errno));
		goto out_conn;
	}
	if (rejoin_ps >= 0) {
		int p = rejoin_ps;
		fprintf(stderr, "Worker %d: ps %d at %s already took %llu gradient(s) from a worker %d before this "
			"one: rejoining the job it holds%s. If this is a new job, a ps of an earlier job still "
			"serves that address: stop it, or give this job other ports or its own --auth_token_file\n",
			w.me, p, j->ps_hosts[p], (unsigned long long)w.s[p].seq, w.me,
			w.me == 0 ? " (its parameters are not initialized again)" : "");
		if (mf)
			fprintf(stderr, "Worker %d: appending to --metrics=%s (its local steps start again at 1)\n",
				w.me, j->metrics);
	}
	/* The chief initializes (seeded) every shard that is not ready yet by
	 * writing the initial values into its own slot (kind INIT).  A shard
	 * restored from a checkpoint is ready: it is not initialized again. */
	if (w.me == 0)
		rdm_model_init(w.L.model, w.params, j->seed);
	for (int p = 0; p < w.P; p++) {
		/* the chief pushes INIT where needed; a ps lost meanwhile is
		 * reconnected to (and initialized again by the chief) as in training */
		if ((rc = wait_ready(&w, p, j->timeout_s, 1)) && (rc = recover_or_stop(&w, p, rc)))
			goto out_conn;
	}
	printf("Worker %d: Session initialization complete.\n", w.me);
	double t_begin = rdmaps_now();
	printf("Training begins @ %f\n", rdmaps_wall());
	fflush(stdout);

	/* The token I wait for on shard p is my push count there (s[p].seq),
	 * updated by each push as it lands, so that a step interrupted between
	 * shards never writes a slot the ps may still be reading. */
	long local_step = 0;
	int p = 0;
	int start_checked = w.me != 0; /* the session-start shard step check: the chief's */
	/* On a terminal, per-step lines fold into a live progress line. */
	struct rdmaps_progress prog;
	const char *pe = getenv(RDMAPS_PROGRESS_ENV);
	int prog_lines = pe && *pe == '1';
	int prog_tty = !prog_lines && isatty(STDOUT_FILENO);
	rdmaps_progress_init(&prog, stdout, j->train_steps);
	double last_loss = 0;
	for (;;) {
		double t0 = rdmaps_now();
		/* (1) wait for my token on every shard I pushed to */
		for (p = 0; p < w.P; p++) {
			/* its own --timeout is RDMAPS_E_STATE (the ps is alive:
			 * not recoverable); a connection that broke with
			 * RDMAPS_E_TIMEOUT (tcp: a send stalled) is recovered like
			 * any broken one (until 2026-12-06 it ended the worker) */
			if ((rc = wait_token(&w, p)))
				goto lost;
		}
		double t1 = rdmaps_now();
		/* (2) pull what changed, straight into w.params, all shards at once */
		if ((rc = reap(&w, &p)) || (rc = pull_all(&w, &p)))
			goto lost;
		if (!start_checked) {
			/* every shard pulled once: the chief says if a whole job
			 * restarted on checkpoints of different steps (the other
			 * workers would only repeat its line) */
			start_checked = 1;
			check_shard_steps(&w, -1, 0);
		}
		uint64_t gstep = w.s[0].held;
		if ((long)gstep >= j->train_steps) {
			if (prog_lines)
				printf(RDMAPS_PROGRESS_TAG "%llu %.6g\n", (unsigned long long)gstep, last_loss);
			else if (prog_tty)
				rdmaps_progress_update(&prog, (long)gstep, last_loss, rdmaps_now());
			break;
		}
		double t2 = rdmaps_now();
		/* (3) compute */
		double loss = 0;
		rdm_batcher_next(bat, j->batch_size, bx, by);
		rdm_model_grad(w.L.model, w.params, bx, by, j->batch_size, w.grad, &loss);
		last_loss = loss;
		if (j->straggler_delay_ms > 0 && w.me == j->straggler_task)
			usleep((useconds_t)j->straggler_delay_ms * 1000);
		double t3 = rdmaps_now();
		/* (4) push, straight from w.grad, all shards at once */
		if ((rc = push_all(&w, G_W_GRAD_SRC, SLOT_GRAD, loss, &p)))
			goto lost;
		double t4 = rdmaps_now();
		local_step++;
		/* the times printed, in --metrics and in snapshots are the wall
		 * clock's, for other processes to compare; t0..t4 (monotonic) measure */
		double w4 = rdmaps_wall();
		if (prog_lines) { /* under `rdmaps launch` on a terminal */
			printf(RDMAPS_PROGRESS_TAG "%llu %.6g\n", (unsigned long long)gstep, loss);
			fflush(stdout);
		} else if (prog_tty) {
			rdmaps_progress_update(&prog, (long)gstep, loss, t4);
		} else if (local_step % j->log_every == 0) {
			printf("%f: Worker %d: training step %ld done (global step: %llu)\n", w4, w.me, local_step,
			       (unsigned long long)gstep);
			fflush(stdout);
		}
		if (mf) {
			/* JSON has no nan / inf: a diverged step's loss is null */
			char ls[32] = "null";
			if (isfinite(loss))
				snprintf(ls, sizeof(ls), "%.6g", loss);
			fprintf(mf,
				"{\"task\":%d,\"local_step\":%ld,\"global_step\":%llu,\"loss\":%s,\"wait_us\":%.1f,"
				"\"pull_us\":%.1f,\"compute_us\":%.1f,\"push_us\":%.1f,\"t\":%.6f}\n",
				w.me, local_step, (unsigned long long)gstep, ls, (t1 - t0) * 1e6, (t2 - t1) * 1e6,
				(t3 - t2) * 1e6, (t4 - t3) * 1e6, w4);
		}
		if (mf && !mf_errno && ferror(mf))
			mf_errno = errno ? errno : EIO; /* said at the end */
		if (snap && local_step % j->snapshot_every == 0) {
			/* the parameters this step computed on (version gstep, pulled at t2) */
			if (snapshot(&w, snap, gstep, w4 - (t4 - t2)))
				goto out_conn;
		}
		continue;
lost:
		/* the connection to ps p failed: reconnect, then start the step over */
		if (prog_tty)
			rdmaps_progress_clear(&prog); /* the report goes on its own line */
		if ((rc = recover_or_stop(&w, p, rc)))
			goto out_conn;
	}
	double t_end = rdmaps_now(), w_end = rdmaps_wall();
	if (prog_tty)
		rdmaps_progress_end(&prog);
	if (snap && snapshot(&w, snap, w.s[0].held, w_end)) /* the final parameters */
		goto out_conn;
	printf("Training ends @ %f\n", w_end);
	printf("Training elapsed time: %f s\n", t_end - t_begin);
	fflush(stdout);
	/* done: one FETCH_ADD on done[me] of every shard.  A ps that already
	 * saw every worker done may close before its answer arrives: a failure
	 * here is reported, not fatal (training is over). */
	for (p = 0; p < w.P; p++) {
		struct wshard *sh = &w.s[p];
		rc = rt_fetch_add(sh->c, G_W_ATOMIC, 0, G_PS_COUNTERS,
				  (uint64_t)counters_done_idx(j->nworkers, w.me) * 8, 1, 7, RT_F_SIGNALED);
		if (rc || (rc = wait_comp(sh, 1, w.tmo_ms, "done fetch-add", p)))
			fprintf(stderr, "Worker %d: could not confirm the end of training to ps %d: %s\n", w.me, p,
				rdmaps_strerror(rc));
	}
	/* hang up at once: a ps that saw every worker done waits for that
	 * (bounded) before it closes, so that no answer above is cut off */
	for (p = 0; p < w.P; p++)
		rt_conn_delete(&w.s[p].c);
	double vloss = 0;
	int correct = 0;
	rdm_model_eval_pixels(w.L.model, w.params, val.px, val.y, val.n, &vloss, &correct);
	printf("After %ld training step(s), validation cross entropy = %g\n", j->train_steps, vloss);
	fflush(stdout);
	if (j->dump_params[0] && dump_params(&w, j->dump_params))
		goto out_conn;
	ret = 0;
out_conn:
	for (int p = 0; p < w.P; p++)
		rt_conn_delete(&w.s[p].c);
out_ctx:
	for (int p = 0; p < w.P; p++) {
		struct wshard *sh = &w.s[p];
		if (sh->mbox) rt_free(w.ctx, sh->mbox, 64);
		if (sh->shdr) rt_free(w.ctx, sh->shdr, 64);
		if (sh->atom) rt_free(w.ctx, sh->atom, 64);
		if (sh->scratch) rt_free(w.ctx, sh->scratch, 64);
		free(sh->pc);
	}
	if (w.params) rt_free(w.ctx, w.params, w.vec_bytes);
	if (w.grad) rt_free(w.ctx, w.grad, w.vec_bytes);
	rt_ctx_delete(&w.ctx);
out_mem:
	free(w.s); free(bx); free(by);
	rdm_batcher_delete(&bat);
	if (snap && fclose(snap)) {
		fprintf(stderr, "Worker %d: cannot write %s\n", w.me, j->snapshot_file);
		ret = 1;
	}
out_metrics:
	/* a full disk: said here, with the first failed write's errno */
	if (mf && (ferror(mf) | fclose(mf))) {
		fprintf(stderr, "Worker %d: cannot write --metrics=%s: %s\n", w.me, j->metrics,
			strerror(mf_errno ? mf_errno : errno));
		ret = 1;
	}
out_layout:
	rdmaps_layout_free(&w.L);
out_data:
	rdm_images_free(&train);
	rdm_images_free(&val);
	return ret;
}
