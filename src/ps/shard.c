/* rdmaps: a ps task serving one parameter shard.
 *
 * Regions (ps/layout.h): PARAMS (READ for every worker, double-buffered by
 * version parity), one SLOT per worker (WRITE for that worker only),
 * COUNTERS (ATOMIC: ready_seq[W], done_count).  The ps CPU spins on its own
 * memory: a bump of ready_seq[i] means worker i's slot WRITE completed.
 * Sync: SyncReplicasOptimizer rules (stale gradients dropped, first R
 * averaged, one update, then release).  Async: every gradient applied. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cluster.h"
#include "kernels/optim.h"
#include "ps/layout.h"

static volatile sig_atomic_t ps_stop;
static void on_term(int sig) { (void)sig; ps_stop = 1; }

struct shard {
	const struct rdmaps_job *j;
	struct rt_ctx *ctx;
	struct rt_conn **conns;     /* by worker index */
	size_t n;                   /* floats in this shard */
	uint8_t *params;            /* PARAMS region */
	uint8_t **slots;            /* SLOT region per worker */
	uint64_t *counters;         /* COUNTERS region */
	uint64_t *mbox_src;         /* local: one word per worker */
	float *acc;                 /* accumulator (not registered) */
	float *m, *v;
	struct rdm_opt_cfg ocfg;
	struct rdm_opt_state ost;
	uint64_t version;           /* G */
	uint64_t *consumed;         /* last seq seen per worker */
	int *pending;               /* workers whose gradient is in acc */
	int npending, count, R, W;
	uint64_t accepted, dropped, updates;
};

static struct rdmaps_params_hdr *hdr(struct shard *s) { return (struct rdmaps_params_hdr *)s->params; }
static uint64_t *buf_version(struct shard *s, uint64_t v) { return (uint64_t *)(s->params + buf_off(s->n, v)); }
static float *buf_floats(struct shard *s, uint64_t v) { return (float *)(s->params + buf_off(s->n, v) + 64); }
static struct rdmaps_slot_hdr *slot_hdr(struct shard *s, int i) { return (struct rdmaps_slot_hdr *)s->slots[i]; }
static float *slot_floats(struct shard *s, int i) { return (float *)(s->slots[i] + 64); }

/* Tell worker i: released version G, token = its consumed seq.  One 8-byte
 * inline WRITE into its mailbox.  Unsignaled: an error still completes. */
static void release(struct shard *s, int i)
{
	struct rt_completion c[8];
	s->mbox_src[i] = (s->version << 32) | (s->consumed[i] & 0xffffffffull);
	int rc = rt_write(s->conns[i], G_PS_MBOX_SRC, (size_t)i * 8, G_W_MAILBOX, 0, 8, 0,
			  RT_F_INLINE);
	if (rc == RDMAPS_E_AGAIN) {
		rt_flush(s->conns[i], s->j->timeout_s * 1000);
		rc = rt_write(s->conns[i], G_PS_MBOX_SRC, (size_t)i * 8, G_W_MAILBOX, 0, 8, 0,
			      RT_F_INLINE);
	}
	if (rc)
		RDMAPS_WARN("release of worker %d failed: %s", i, rdmaps_strerror(rc));
	/* reap: unsignaled writes complete only when they failed */
	int got;
	while ((got = rt_poll(s->conns[i], c, 8, 0)) > 0)
		for (int k = 0; k < got; k++)
			if (c[k].status)
				RDMAPS_WARN("mailbox write to worker %d failed: %s", i,
					    rdmaps_strerror(c[k].status));
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
	if (s->count + 1 < s->R) {
		if (s->count == 0)
			memcpy(s->acc, slot_floats(s, i), s->n * sizeof(float));
		else
			rdm_vec_add(s->acc, slot_floats(s, i), s->n);
		s->count++;
		s->pending[s->npending++] = i;
		if (s->R > s->W) /* workers compute several batches per update */
			release(s, i);
		return;
	}
	/* the R-th: fuse its slot with the accumulator in the optimizer pass */
	s->pending[s->npending++] = i;
	apply_and_publish(s, s->count ? s->acc : slot_floats(s, i), s->count ? slot_floats(s, i) : NULL,
			  1.0f / (float)s->R);
	s->count = 0;
	for (int k = 0; k < s->npending; k++)
		release(s, s->pending[k]);
	s->npending = 0;
}

static void on_init(struct shard *s, int i)
{
	if (hdr(s)->state != PARAMS_STATE_READY) {
		memcpy(buf_floats(s, 0), slot_floats(s, i), s->n * sizeof(float));
		__atomic_store_n(buf_version(s, 0), 0, __ATOMIC_RELEASE);
		__atomic_store_n(&hdr(s)->current_version, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&hdr(s)->state, PARAMS_STATE_READY, __ATOMIC_RELEASE);
		printf("ps %d: parameters initialized by worker %d (%zu floats)\n", s->j->task_index, i, s->n);
		fflush(stdout);
	}
	release(s, i);
}

static int serve(struct shard *s)
{
	unsigned spins = 0;
	double last_progress = rdmaps_now();

	while (!ps_stop) {
		int any = 0;
		uint64_t done = __atomic_load_n(&s->counters[s->W], __ATOMIC_ACQUIRE);
		if (done >= (uint64_t)s->W)
			return 0;
		/* A worker finishes only once shard 0 reached --train_steps: training
		 * is over, and a partial aggregation here would never complete (with
		 * backups, shards can stop one version apart).  Release its workers. */
		if (done > 0 && s->npending) {
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
		if (any) {
			spins = 0;
			last_progress = rdmaps_now();
		} else {
			rdmaps_backoff(&spins);
			if (rdmaps_now() - last_progress > s->j->timeout_s) {
				fprintf(stderr, "ps %d: no gradient for %d s; still waiting for:", s->j->task_index,
					s->j->timeout_s);
				for (int i = 0; i < s->W; i++)
					if (s->counters[i] <= s->consumed[i])
						fprintf(stderr, " worker %d", i);
				fprintf(stderr, "\n");
				last_progress = rdmaps_now();
			}
		}
	}
	return 0;
}

int rdmaps_ps_main(const struct rdmaps_job *j)
{
	struct rdmaps_layout L;
	struct shard s;
	char host[256];
	uint16_t port;
	int rc, ret = 1;
	struct rt_listener *lst = NULL;

	memset(&s, 0, sizeof(s));
	s.j = j;
	s.W = j->nworkers;
	s.R = job_replicas(j);
	rdmaps_log_set_tag("ps");
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
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
	fflush(stdout);

	struct rt_ctx_cfg cc = { .kind = j->transport, .bind_host = host, .timeout_ms = j->timeout_s * 1000,
				 .auth_token = j->token, .numa_node = -1 };
	if ((rc = rt_ctx_new(&cc, &s.ctx))) {
		fprintf(stderr, "ps %d: transport: %s\n", j->task_index, rdmaps_strerror(rc));
		goto err_layout;
	}
	printf("ps %d: transport %s, listening on %s:%u\n", j->task_index, rt_kind_name(rt_ctx_kind(s.ctx)),
	       host, port);
	fflush(stdout);
	s.params = rt_alloc(s.ctx, params_bytes(s.n));
	s.counters = rt_alloc(s.ctx, counters_bytes(s.W));
	s.mbox_src = rt_alloc(s.ctx, (size_t)s.W * 8);
	s.slots = calloc(s.W, sizeof(*s.slots));
	s.conns = calloc(s.W, sizeof(*s.conns));
	s.consumed = calloc(s.W, sizeof(*s.consumed));
	s.pending = calloc(s.W + 1, sizeof(*s.pending));
	s.acc = aligned_alloc(64, shard_pad(s.n) * sizeof(float));
	s.m = aligned_alloc(64, shard_pad(s.n) * sizeof(float));
	s.v = aligned_alloc(64, shard_pad(s.n) * sizeof(float));
	if (!s.params || !s.counters || !s.mbox_src || !s.slots || !s.conns || !s.consumed || !s.pending ||
	    !s.acc || !s.m || !s.v) {
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

	if ((rc = rt_listen(s.ctx, host, port, &lst))) {
		fprintf(stderr, "ps %d: cannot listen on %s:%u: %s\n", j->task_index, host, port, rdmaps_strerror(rc));
		goto err_mem;
	}
	/* Accept one connection per worker, bounded by --timeout overall. */
	double deadline = rdmaps_now() + j->timeout_s;
	int nconn = 0;
	while (nconn < s.W && !ps_stop) {
		struct rt_request *req = NULL;
		int left = (int)((deadline - rdmaps_now()) * 1000);
		if (left <= 0) {
			fprintf(stderr, "ps %d: timed out after %d s waiting for workers; missing:", j->task_index,
				j->timeout_s);
			for (int i = 0; i < s.W; i++)
				if (!s.conns[i])
					fprintf(stderr, " worker %d", i);
			fprintf(stderr, "\n");
			goto err_conns;
		}
		rc = rt_accept(lst, left < 1000 ? left : 1000, &req);
		if (rc == RDMAPS_E_TIMEOUT)
			continue;
		if (rc) {
			fprintf(stderr, "ps %d: accept: %s\n", j->task_index, rdmaps_strerror(rc));
			continue;
		}
		const struct rt_hello *hi = rt_request_hello(req);
		if (hi->role != RDMAPS_ROLE_WORKER || hi->index >= (uint32_t)s.W || s.conns[hi->index] ||
		    hi->layout_hash != L.hash) {
			fprintf(stderr, "ps %d: refused a connection (role %u, index %u%s)\n", j->task_index, hi->role,
				hi->index, hi->layout_hash != L.hash ? ", model/placement/flags mismatch" : "");
			rt_reject(&req);
			continue;
		}
		int i = (int)hi->index;
		struct rt_grant g[4] = {
			{ G_PS_PARAMS, s.params, params_bytes(s.n), RT_RIGHT_READ },
			{ G_PS_SLOT, s.slots[i], slot_bytes(s.n), RT_RIGHT_WRITE },
			{ G_PS_COUNTERS, s.counters, counters_bytes(s.W), RT_RIGHT_ATOMIC },
			{ G_PS_MBOX_SRC, s.mbox_src, (size_t)s.W * 8, RT_RIGHT_NONE },
		};
		if ((rc = rt_accept_grant(&req, g, 4, &s.conns[i]))) {
			fprintf(stderr, "ps %d: connection of worker %d failed: %s\n", j->task_index, i,
				rdmaps_strerror(rc));
			continue;
		}
		nconn++;
	}
	double t0 = rdmaps_now();
	serve(&s);
	printf("ps %d: done after %.3f s: global step %llu, %llu updates, %llu gradients accepted, %llu dropped (stale)\n",
	       j->task_index, rdmaps_now() - t0, (unsigned long long)s.version, (unsigned long long)s.updates,
	       (unsigned long long)s.accepted, (unsigned long long)s.dropped);
	fflush(stdout);
	ret = 0;
err_conns:
	for (int i = 0; i < s.W; i++)
		rt_conn_delete(&s.conns[i]);
	rt_listener_delete(&lst);
err_mem:
	if (s.slots)
		for (int i = 0; i < s.W; i++)
			if (s.slots[i])
				rt_free(s.ctx, s.slots[i], slot_bytes(s.n));
	if (s.params) rt_free(s.ctx, s.params, params_bytes(s.n));
	if (s.counters) rt_free(s.ctx, s.counters, counters_bytes(s.W));
	if (s.mbox_src) rt_free(s.ctx, s.mbox_src, (size_t)s.W * 8);
	free(s.slots); free(s.conns); free(s.consumed); free(s.pending);
	free(s.acc); free(s.m); free(s.v);
	rt_ctx_delete(&s.ctx);
err_layout:
	rdmaps_layout_free(&L);
	return ret;
}
