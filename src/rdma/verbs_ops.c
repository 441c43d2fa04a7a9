/* verbs backend: post / poll / flush on an RC QP, and the ops table.
 *
 * Hot path: one pre-built ibv_send_wr + ibv_sge per connection, no malloc,
 * no lock, no syscall.  Work requests carry a sequence number as wr_id; the
 * slot ring remembers the user's wr_id and op.  Selective signaling: only
 * ops with RT_F_SIGNALED, plus one hidden signaled op every sq_depth/2
 * posts, produce a CQE; RC completes in order, so a CQE for sequence s
 * frees every slot up to s.  Failed WRs always produce a CQE. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "verbs_internal.h"

uint64_t verbs_spin_ms(const struct rt_ctx *ctx)
{
	int us = ctx->poll_spin_us;

	if (us < 0)
		return UINT64_MAX;
	if (us == 0)
		return VERBS_SPIN_MS;
	return ((uint64_t)us + 999) / 1000;
}

static const char *op_name(unsigned op)
{
	switch (op) {
	case RT_OP_READ: return "RDMA READ";
	case RT_OP_WRITE: return "RDMA WRITE";
	case RT_OP_FETCH_ADD: return "ATOMIC FETCH_AND_ADD";
	case RT_OP_CMP_SWAP: return "ATOMIC CMP_AND_SWP";
	default: return "internal op";
	}
}

static void stash_push(struct verbs_conn *vc, uint64_t wr_id, unsigned op, int st)
{
	struct rt_completion *cp = &vc->stash[(vc->stash_head + vc->stash_n) % VERBS_STASH];

	cp->wr_id = wr_id;
	cp->op = (enum rt_op)op;
	cp->status = st;
	vc->stash_n++;
}

static void mark_broken(struct rt_conn *c, int st, const char *what,
			enum ibv_wc_status ws)
{
	struct verbs_conn *vc = c->backend;

	if (vc->broken)
		return;
	vc->broken = st;
	if (st == RDMAPS_E_REMOTE_ACCESS)
		rt_conn_set_err(c, "verbs: %s refused by the target (%s); QP now in error "
				"state (verbs semantics): conn unusable, target still serves "
				"other peers", what, ibv_wc_status_str(ws));
	else
		rt_conn_set_err(c, "verbs: %s failed: %s (%s); connection unusable", what,
				rdmaps_strerror(st), ibv_wc_status_str(ws));
	RDMAPS_ERR("%s", c->errmsg);
}

static void handle_wc(struct rt_conn *c, const struct ibv_wc *wc)
{
	struct verbs_conn *vc = c->backend;
	int st = verbs_wc_status(wc->status);

	if (wc->wr_id == VERBS_WRID_CTRL_RECV || wc->wr_id == VERBS_WRID_CTRL_SEND) {
		if (wc->wr_id == VERBS_WRID_CTRL_RECV && wc->status == IBV_WC_LOC_LEN_ERR)
			st = RDMAPS_E_PROTO; /* the peer sent a table larger than any valid one */
		if (st) {
			mark_broken(c, st, "grants table exchange", wc->status);
			return;
		}
		if (wc->wr_id == VERBS_WRID_CTRL_RECV) {
			vc->ctrl_recvd = 1;
			vc->ctrl_recv_len = wc->byte_len;
		} else {
			vc->ctrl_sent = 1;
		}
		return;
	}
	{
		const struct verbs_slot *s = &vc->slot[wc->wr_id % VERBS_SQ_DEPTH];

		if (wc->wr_id >= vc->tail)
			vc->tail = wc->wr_id + 1;
		if (st) {
			if (!vc->first_err)
				vc->first_err = st;
			if (wc->status != IBV_WC_WR_FLUSH_ERR)
				mark_broken(c, st, op_name(s->op), wc->status);
			else if (!vc->broken)
				mark_broken(c, RDMAPS_E_PEER_GONE, op_name(s->op), wc->status);
		}
		if (!s->internal && (s->report || st))
			stash_push(vc, s->wr_id, s->op, st);
	}
}

int verbs_progress(struct rt_conn *c)
{
	struct verbs_conn *vc = c->backend;
	struct ibv_wc wc[16];
	int room = VERBS_STASH - (int)vc->stash_n, n;

	if (room <= 0)
		return 0;
	n = ibv_poll_cq(vc->cq, room < 16 ? room : 16, wc);
	if (n < 0) {
		RDMAPS_ERR("verbs: ibv_poll_cq failed (%d)", n);
		if (!vc->broken) {
			vc->broken = RDMAPS_E_IO;
			rt_conn_set_err(c, "verbs: ibv_poll_cq failed");
		}
		return RDMAPS_E_IO;
	}
	for (int i = 0; i < n; i++)
		handle_wc(c, &wc[i]);
	return n;
}

/* One idle pass of a bounded wait (every VERBS_SPIN_CHECK empty polls, with
 * the clock read): 1 once the deadline passed; else, past the spin budget
 * since start, sleep on the completion channel (100 ms at most) and read
 * the rdma_cm events (a DISCONNECTED marks the conn broken).  rt_poll,
 * rt_flush and make_room wait with it. */
static int idle_pass(struct rt_conn *c, uint64_t now, uint64_t start, uint64_t deadline)
{
	if (now >= deadline)
		return 1;
	if (now - start >= verbs_spin_ms(c->ctx)) {
		uint64_t left = deadline - now;

		verbs_cq_wait(c->backend, left > 100 ? 100 : (int)left);
		verbs_check_cm_events(c);
	}
	return 0;
}

/* Wait until the SQ has a free slot: busy-poll for the spin budget, then
 * sleep on the completion channel (and read rdma_cm events: a DISCONNECTED
 * ends the wait), as rt_poll does.  until_ms = 0: the ctx timeout, then
 * RDMAPS_E_AGAIN (a post: the conn stays usable); else that deadline (a
 * flush), then RDMAPS_E_TIMEOUT.  nowait (RT_F_NOWAIT): take what has
 * completed, once, and RDMAPS_E_AGAIN if that freed nothing. */
static int make_room(struct rt_conn *c, uint64_t until_ms, int nowait)
{
	struct verbs_conn *vc = c->backend;
	uint64_t start = 0, deadline = until_ms;
	unsigned spins = 0;

	while (vc->head - vc->tail >= vc->sq_depth) {
		int n = verbs_progress(c);

		if (n < 0)
			return n;
		if (vc->broken)
			return vc->broken;
		if (n == 0) {
			uint64_t now;

			if (nowait || vc->stash_n >= VERBS_STASH)
				return RDMAPS_E_AGAIN; /* nowait, or the caller must rt_poll first */
			if (++spins % VERBS_SPIN_CHECK != 0)
				continue;
			now = rt_now_ms();
			if (!start) {
				start = now;
				if (!deadline)
					deadline = now + (uint64_t)(c->ctx->timeout_ms > 0 ?
								    c->ctx->timeout_ms : 10000);
			}
			if (idle_pass(c, now, start, deadline))
				return until_ms ? RDMAPS_E_TIMEOUT : RDMAPS_E_AGAIN;
		}
	}
	return RDMAPS_OK;
}

static int post_wr(struct rt_conn *c, unsigned op, void *laddr, uint32_t lkey,
		   uint64_t raddr, uint32_t rkey, size_t len, uint64_t a, uint64_t b,
		   uint64_t wr_id, unsigned flags, int internal)
{
	struct verbs_conn *vc = c->backend;
	struct ibv_send_wr *wr = &vc->wr, *bad = NULL;
	struct verbs_slot *s;
	int signal, rc;

	if (vc->head - vc->tail >= vc->sq_depth) {
		rc = make_room(c, 0, (flags & RT_F_NOWAIT) != 0);
		if (rc)
			return rc;
	}
	signal = (flags & RT_F_SIGNALED) || internal ||
		 vc->since_signal + 1 >= vc->sq_depth / 2;
	wr->wr_id = vc->head;
	wr->next = NULL;
	vc->sge.addr = (uintptr_t)laddr;
	vc->sge.length = (uint32_t)len;
	vc->sge.lkey = lkey;
	wr->num_sge = len ? 1 : 0;
	wr->send_flags = (signal ? IBV_SEND_SIGNALED : 0) |
			 ((flags & RT_F_FENCE) ? IBV_SEND_FENCE : 0);
	switch (op) {
	case RT_OP_WRITE:
		wr->opcode = IBV_WR_RDMA_WRITE;
		if ((flags & RT_F_INLINE) && len <= vc->max_inline)
			wr->send_flags |= IBV_SEND_INLINE;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
		break;
	case RT_OP_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
		break;
	case RT_OP_FETCH_ADD:
		wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.compare_add = a;
		wr->wr.atomic.swap = 0;
		wr->wr.atomic.rkey = rkey;
		break;
	default:
		wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.compare_add = a;
		wr->wr.atomic.swap = b;
		wr->wr.atomic.rkey = rkey;
		break;
	}
	rc = ibv_post_send(vc->qp, wr, &bad);
	if (rc) {
		RDMAPS_ERR("verbs: ibv_post_send(%s) failed: %s", op_name(op), strerror(rc));
		rt_conn_set_err(c, "verbs: ibv_post_send(%s) failed: %s", op_name(op),
				strerror(rc));
		return rc == ENOMEM ? RDMAPS_E_AGAIN : RDMAPS_E_IO;
	}
	s = &vc->slot[vc->head % VERBS_SQ_DEPTH];
	s->wr_id = wr_id;
	s->op = (uint8_t)op;
	s->report = (flags & RT_F_SIGNALED) ? 1 : 0;
	s->internal = (uint8_t)internal;
	vc->head++;
	vc->since_signal = signal ? 0 : vc->since_signal + 1;
	return RDMAPS_OK;
}

int verbs_post(struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
	       uint32_t rid, uint64_t roff, size_t len, uint64_t a, uint64_t b,
	       uint64_t wr_id, unsigned flags)
{
	struct verbs_conn *vc = c->backend;
	const struct rt_local *l;
	const struct rt_remote *r;
	uint64_t raddr;

	if (vc->broken)
		return vc->broken; /* the status it broke with; errmsg says why */
	/* rt.c has run rt_check_op: ids valid, bounds, rights, alignment */
	l = &c->local[lid];
	r = &c->remote[rid];
	raddr = r->addr + roff;
	/* READ and atomics write into the local grant: it needs LOCAL_WRITE */
	if (op != RT_OP_WRITE && l->rights != RT_RIGHT_NONE &&
	    !(l->rights & (RT_RIGHT_WRITE | RT_RIGHT_ATOMIC))) {
		rt_conn_set_err(c, "verbs: local grant %u is registered read-only "
				"(rights READ); it cannot receive a %s", lid, op_name(op));
		return RDMAPS_E_INVAL;
	}
	return post_wr(c, op, (char *)l->addr + loff, l->lkey, raddr, r->rkey, len,
		       a, b, wr_id, flags, 0);
}

int verbs_poll(struct rt_conn *c, struct rt_completion *comps, int max, int timeout_ms)
{
	struct verbs_conn *vc = c->backend;
	uint64_t deadline = 0, start = 0;
	unsigned spins = 0;

	if (max < 0 || (max && !comps))
		return RDMAPS_E_INVAL;
	if (max == 0) {
		int n = verbs_progress(c);

		return n < 0 ? n : vc->broken && !vc->stash_n ? vc->broken : 0;
	}
	for (;;) {
		int n = verbs_progress(c);

		if (n < 0 && !vc->stash_n)
			return n;
		if (vc->stash_n) {
			int k = 0;

			while (k < max && vc->stash_n) {
				comps[k++] = vc->stash[vc->stash_head];
				vc->stash_head = (vc->stash_head + 1) % VERBS_STASH;
				vc->stash_n--;
			}
			return k;
		}
		if (vc->broken)
			return vc->broken;
		if (timeout_ms <= 0)
			return 0;
		if (++spins % VERBS_SPIN_CHECK == 0) {
			uint64_t now = rt_now_ms();

			if (!deadline) {
				start = now;
				deadline = now + (uint64_t)timeout_ms;
			} else if (idle_pass(c, now, start, deadline)) {
				/* a wait shorter than the spin budget never
				 * slept, so never read the rdma_cm events:
				 * read them once (non-blocking), as tcp's wait
				 * sees a hang-up.  A worker's token wait polls
				 * with 1 ms and nothing outstanding: a ps that
				 * disconnected showed only at --timeout */
				if (verbs_check_cm_events(c) && !vc->stash_n)
					return vc->broken;
				return 0;
			}
		}
	}
}

/* A signaled op of our own that completes after everything posted so far. */
static int post_fence_op(struct rt_conn *c)
{
	struct verbs_conn *vc = c->backend;

	for (uint32_t i = 0; i < RT_MAX_GRANTS; i++) {
		const struct rt_remote *r = &c->remote[i];

		if (!c->remote_valid[i])
			continue;
		if (r->rights & RT_RIGHT_WRITE)
			return post_wr(c, RT_OP_WRITE, NULL, 0, r->addr, r->rkey, 0, 0, 0,
				       0, 0, 1);
		if (r->rights & RT_RIGHT_READ)
			return post_wr(c, RT_OP_READ, NULL, 0, r->addr, r->rkey, 0, 0, 0,
				       0, 0, 1);
		if ((r->rights & RT_RIGHT_ATOMIC) && !(r->addr & 7) && r->len >= 8)
			return post_wr(c, RT_OP_FETCH_ADD, vc->ctrl, vc->ctrl_mr->lkey,
				       r->addr, r->rkey, 8, 0, 0, 0, 0, 1);
	}
	/* zero-byte ops need no valid key (IBA C9-88) */
	return post_wr(c, RT_OP_WRITE, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 1);
}

int verbs_flush(struct rt_conn *c, int timeout_ms)
{
	struct verbs_conn *vc = c->backend;
	uint64_t start = rt_now_ms();
	uint64_t deadline = start + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	uint64_t target;
	unsigned spins = 0;
	int rc;

	if (!vc->broken && vc->head != vc->tail && vc->since_signal) {
		/* room for the fence op within this flush's own timeout (post_wr
		 * would wait the ctx timeout for it) */
		if (vc->head - vc->tail >= vc->sq_depth && (rc = make_room(c, deadline, 0)))
			return rc;
		rc = post_fence_op(c);
		if (rc)
			return rc;
	}
	target = vc->head;
	/* busy-poll first (like rt_poll: VERBS_SPIN_CHECK polls between clock
	 * reads, cfg.poll_spin_us in all), then sleep on the completion channel */
	while (vc->tail < target && !vc->broken) {
		int n = verbs_progress(c);

		if (n < 0)
			break;
		if (n == 0) {
			uint64_t now;

			if (vc->stash_n >= VERBS_STASH) {
				rc = RDMAPS_E_AGAIN; /* completions not collected */
				return rc;
			}
			if (++spins % VERBS_SPIN_CHECK != 0)
				continue;
			now = rt_now_ms();
			if (idle_pass(c, now, start, deadline))
				break;
		}
	}
	rc = vc->first_err;
	vc->first_err = 0;
	if (!rc && vc->broken)
		rc = vc->broken;
	if (!rc && vc->tail < target)
		rc = RDMAPS_E_TIMEOUT;
	return rc;
}

const struct rt_ops rt_verbs_ops = {
	.name = "rdma",
	/* no RT_CAP_ORDERED_PLACEMENT: the IB ordering rules order an ATOMIC's
	 * execution after earlier WRITEs on the QP, but we found no rule that
	 * the WRITE's bytes are visible to the responder's CPU by then
	 * (docs/protocol.md Q1) */
	.caps = 0,
	.ctx_init = verbs_ctx_init,
	.ctx_fini = verbs_ctx_fini,
	.listen = verbs_listen,
	.listener_fini = verbs_listener_fini,
	.accept = verbs_accept,
	.accept_grant = verbs_accept_grant,
	.accept_start = verbs_accept_start,
	.accept_poll = verbs_accept_poll,
	.reject = verbs_reject,
	.connect = verbs_connect,
	.conn_fini = verbs_conn_fini,
	.post = verbs_post,
	.poll = verbs_poll,
	.flush = verbs_flush,
};
