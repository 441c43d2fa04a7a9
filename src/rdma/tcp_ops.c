/* TCP backend, initiator side: post / poll / flush.  One thread drives a
 * conn (no lock).  Each op takes a ring slot (TCP_DEPTH); the target answers
 * in order, so a reply for seq S also completes every earlier slot that did
 * not ask for a reply (they succeeded: failures are always answered).  A
 * pre-built header plus sendmsg() per op; no allocation. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "tcp_internal.h"

static inline struct tcp_slot *slot_of(struct tcp_conn *t, uint32_t seq)
{
	return &t->slot[seq % TCP_DEPTH];
}

static void slot_done(struct tcp_conn *t, struct tcp_slot *s, int32_t status)
{
	s->status = status;
	if (status && !s->internal && !t->first_err)
		t->first_err = status;
	t->acked++;
}

/* Fail everything pending; the connection is unusable from now on. */
void tcp_conn_break(struct rt_conn *c, int status)
{
	struct tcp_conn *t = c->backend;

	if (t->broken)
		return;
	t->broken = status;
	if (!c->errmsg[0])
		rt_conn_set_err(c, "tcp: connection broken: %s", rdmaps_strerror(status));
	while (t->acked != t->head)
		slot_done(t, slot_of(t, t->acked), status);
	if (!t->first_err)
		t->first_err = status;
	shutdown(t->ofd, SHUT_RDWR);
}

/* A reply header arrived: complete the slots it covers. */
static int on_reply(struct rt_conn *c, const struct tcp_frame *f)
{
	struct tcp_conn *t = c->backend;
	struct tcp_slot *s;

	if (!(f->op & TCP_OP_REPLY) || f->seq - t->acked >= t->head - t->acked)
		return RDMAPS_E_PROTO;
	while (t->acked != f->seq) {
		s = slot_of(t, t->acked);
		if (s->want_reply)
			return RDMAPS_E_PROTO; /* its reply was skipped */
		slot_done(t, s, 0);
	}
	s = slot_of(t, f->seq);
	if ((f->op & ~TCP_OP_REPLY) != s->op)
		return RDMAPS_E_PROTO;
	if (f->status) {
		if (f->len)
			return RDMAPS_E_PROTO;
		rt_conn_set_err(c, "tcp: peer refused op %u on remote id %u: %s", s->op,
				f->rid, rdmaps_strerror(tcp_status_from_wire(f->status)));
		slot_done(t, s, tcp_status_from_wire(f->status));
		return RDMAPS_OK;
	}
	if (s->op == RT_OP_READ) {
		if (f->len != s->len)
			return RDMAPS_E_PROTO;
		t->rx_dst = s->dst;
		t->rx_left = s->len;   /* completes when the bytes are in */
		return RDMAPS_OK;
	}
	if (f->len)
		return RDMAPS_E_PROTO;
	if (s->op == RT_OP_FETCH_ADD || s->op == RT_OP_CMP_SWAP)
		memcpy(s->dst, &f->a, 8);
	slot_done(t, s, 0);
	return RDMAPS_OK;
}

/* The ops socket failed with errno err (a recv or a send): break the
 * connection with RDMAPS_E_IO where tcp_errno_status calls it an I/O error
 * (EFAULT, EINVAL, ...), else RDMAPS_E_PEER_GONE (a reset, a closed peer,
 * no buffers: the worker reconnects on both).  Returns the status. */
static int break_on_errno(struct rt_conn *c, int err)
{
	struct tcp_conn *t = c->backend;

	tcp_conn_break(c, tcp_errno_status(err) == RDMAPS_E_IO ? RDMAPS_E_IO : RDMAPS_E_PEER_GONE);
	return t->broken;
}

/* A poll of the ops socket failed (not EINTR): say so and break the
 * connection with RDMAPS_E_IO (a poll that keeps failing would otherwise
 * be retried until some deadline, or for ever). */
static int break_on_poll_error(struct rt_conn *c)
{
	RDMAPS_ERR("tcp: poll failed: %s", strerror(errno));
	tcp_conn_break(c, RDMAPS_E_IO);
	return RDMAPS_E_IO;
}

/* Consume whatever replies are readable now; stops early once every posted
 * op is complete (no reply can be pending then).  The ops socket is in
 * blocking mode: with block set, the first recv() waits up to the socket's
 * SO_RCVTIMEO (see wait_rx); all others use MSG_DONTWAIT. */
static int progress_rx(struct rt_conn *c, int block)
{
	struct tcp_conn *t = c->backend;

	for (;; block = 0) {
		int fl = block ? 0 : MSG_DONTWAIT;
		ssize_t n;

		if (t->rx_left) {
			n = recv(t->ofd, t->rx_dst, t->rx_left, fl);
			if (n > 0) {
				t->rx_dst += n;
				t->rx_left -= (uint64_t)n;
				if (!t->rx_left) {
					slot_done(t, slot_of(t, t->acked), 0);
					if (t->acked == t->head)
						return RDMAPS_OK; /* nothing more can come */
				}
				continue;
			}
		} else {
			n = recv(t->ofd, t->rxh + t->rxh_got, TCP_FRAME_LEN - t->rxh_got, fl);
			if (n > 0) {
				t->rxh_got += (unsigned)n;
				if (t->rxh_got == TCP_FRAME_LEN) {
					struct tcp_frame f;
					int rc;

					t->rxh_got = 0;
					rc = tcp_frame_decode(t->rxh, &f);
					if (!rc)
						rc = on_reply(c, &f);
					if (rc) {
						RDMAPS_ERR("tcp: malformed reply from the peer");
						rt_conn_set_err(c, "tcp: malformed reply from the peer");
						tcp_conn_break(c, RDMAPS_E_PROTO);
						return RDMAPS_E_PROTO;
					}
					if (t->acked == t->head && !t->rx_left)
						return RDMAPS_OK; /* saves a recv() that would say EAGAIN */
				}
				continue;
			}
		}
		if (n == 0) {
			tcp_conn_break(c, RDMAPS_E_PEER_GONE);
			return RDMAPS_E_PEER_GONE;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return RDMAPS_OK;
		return break_on_errno(c, errno);
	}
}

/* Busy-poll for up to t->spin_us (cfg.tcp_spin_us): return as soon as a
 * reply byte was consumed (the caller re-checks) or on an error; 1 when
 * the budget ran out with nothing received (the caller blocks then). */
static int spin_rx(struct rt_conn *c, int *rc)
{
	struct tcp_conn *t = c->backend;
	uint64_t end = rt_now_us() + (uint64_t)t->spin_us;

	do {
		uint32_t acked = t->acked;
		unsigned got = t->rxh_got;
		uint64_t left = t->rx_left;

		*rc = progress_rx(c, 0);
		if (*rc || t->acked != acked || t->rxh_got != got || t->rx_left != left)
			return 0;
	} while (rt_now_us() < end);
	return 1;
}

/* Wait up to timeout_ms for replies and consume them; 0 on timeout too.
 * The wait is the blocking recv() itself (SO_RCVTIMEO, set only when the
 * timeout changes), which saves a poll() per operation; with
 * cfg.tcp_spin_us it is first a busy-poll of that length.
 * RT_PROGRESS_CALLER: a poll() of this socket and the context's serve
 * sockets, serving those meanwhile (a peer may be waiting on us). */
static int wait_rx(struct rt_conn *c, int timeout_ms)
{
	struct tcp_conn *t = c->backend;
	const struct tcp_ctx *tc = c->ctx->backend;
	int rc;

	if (timeout_ms <= 0)
		return progress_rx(c, 0);
	if (t->spin_us && !spin_rx(c, &rc))
		return rc;
	if (tc->caller) {
		struct pollfd p = { .fd = t->ofd, .events = POLLIN };

		if (tcp_poll_serving(c->ctx, &p, timeout_ms) < 0 && errno != EINTR)
			return break_on_poll_error(c);
		return progress_rx(c, 0);
	}
	if (timeout_ms != t->rcvtimeo_ms) {
		struct timeval tv = { .tv_sec = timeout_ms / 1000,
				      .tv_usec = (timeout_ms % 1000) * 1000 };

		if (setsockopt(t->ofd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
			RDMAPS_ERR("tcp: setsockopt(SO_RCVTIMEO) failed: %s", strerror(errno));
			tcp_conn_break(c, RDMAPS_E_IO);
			return RDMAPS_E_IO;
		}
		t->rcvtimeo_ms = timeout_ms;
	}
	return progress_rx(c, 1);
}

/* Send header (+payload) fully; while the socket is full, keep draining
 * replies (and, RT_PROGRESS_CALLER, serving our targets) so that neither
 * side can deadlock on full buffers. */
static int send_frame(struct rt_conn *c, const uint8_t *data, uint64_t dlen)
{
	struct tcp_conn *t = c->backend;
	uint64_t total = TCP_FRAME_LEN + dlen, off = 0;
	uint64_t deadline = 0;

	while (off < total) {
		struct iovec iov[2];
		struct msghdr m = { .msg_iov = iov };
		ssize_t n;

		if (off < TCP_FRAME_LEN) {
			iov[0].iov_base = t->txh + off;
			iov[0].iov_len = TCP_FRAME_LEN - off;
			iov[1].iov_base = (void *)data;
			iov[1].iov_len = dlen;
			m.msg_iovlen = dlen ? 2 : 1;
		} else {
			iov[0].iov_base = (void *)(data + (off - TCP_FRAME_LEN));
			iov[0].iov_len = total - off;
			m.msg_iovlen = 1;
		}
		n = sendmsg(t->ofd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (uint64_t)n;
			deadline = 0;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = { .fd = t->ofd, .events = POLLIN | POLLOUT };
			int rc;

			if (!deadline)
				deadline = rt_now_ms() + (uint64_t)t->io_timeout_ms;
			rc = tcp_poll_serving(c->ctx, &p, rt_remaining_ms(deadline));
			if (rc < 0 && errno != EINTR)
				return break_on_poll_error(c); /* (it spun past the deadline) */
			if (rc == 0) {
				rt_conn_set_err(c, "tcp: send stalled for %d ms", t->io_timeout_ms);
				tcp_conn_break(c, RDMAPS_E_TIMEOUT);
				return RDMAPS_E_TIMEOUT;
			}
			if (rc > 0 && (p.revents & POLLIN)) {
				rc = progress_rx(c, 0);
				if (rc)
					return rc;
			}
			continue;
		}
		/* (it said PEER_GONE for every errno until stop 37) */
		return break_on_errno(c, n < 0 ? errno : EPIPE);
	}
	return RDMAPS_OK;
}

/* Move tail over leading done slots that produce no completion. */
static void reap_silent(struct tcp_conn *t)
{
	while (t->tail != t->acked) {
		struct tcp_slot *s = slot_of(t, t->tail);

		if ((s->report || s->status) && !s->internal)
			break;
		t->tail++;
	}
}

/* The queue of unanswered ops is full (TCP_USER_DEPTH): take the answers
 * that arrived, then, unless nowait (RT_F_NOWAIT), wait for more up to the
 * ctx timeout, as the verbs backend waits for room in its send queue.
 * RDMAPS_E_AGAIN (the conn stays usable) when nowait found no room, when
 * the oldest op is done and waits for rt_poll (only the caller can free
 * it), or at the timeout; a broken conn's status.  Until stop 33
 * (2026-12-07) a full queue was RDMAPS_E_AGAIN at once whatever the flags:
 * a worker whose pieces outnumbered the queue stopped, or not, depending
 * on how fast the ps answered (a CI run). */
static int make_room(struct rt_conn *c, int nowait)
{
	struct tcp_conn *t = c->backend;
	uint64_t deadline = 0;
	int rc;

	for (;;) {
		reap_silent(t);
		if (t->head - t->tail < TCP_USER_DEPTH)
			return RDMAPS_OK;
		if (t->tail != t->acked)
			return RDMAPS_E_AGAIN; /* a completion to poll first */
		if (!deadline) {
			/* first what has arrived, without waiting (rt_ctx_new
			 * makes the ctx timeout > 0) */
			deadline = rt_now_ms() + (uint64_t)c->ctx->timeout_ms;
			rc = progress_rx(c, 0);
		} else if (nowait || !rt_remaining_ms(deadline)) {
			return RDMAPS_E_AGAIN;
		} else {
			rc = wait_rx(c, rt_remaining_ms(deadline));
		}
		if (rc)
			return rc;
		if (t->broken)
			return t->broken;
	}
}

static int post_frame(struct rt_conn *c, uint8_t op, uint32_t rid, uint64_t roff,
		      uint64_t len, uint64_t a, uint64_t b, const uint8_t *payload,
		      uint8_t *dst, uint64_t wr_id, int report, int want, int internal)
{
	struct tcp_conn *t = c->backend;
	struct tcp_slot *s = slot_of(t, t->head);
	uint8_t *h = t->txh;
	int rc;

	if (t->since_reply + 1 >= TCP_AUTO_ACK)
		want = 1;
	s->wr_id = wr_id;
	s->dst = dst;
	s->len = len;
	s->status = 0;
	s->op = op;
	s->report = (uint8_t)report;
	s->want_reply = (uint8_t)want;
	s->internal = (uint8_t)internal;
	/* header: magic is pre-built at conn set-up */
	h[4] = op;
	h[5] = want ? TCP_FL_REPLY : 0;
	rt_put16(h + 6, (uint16_t)rid);
	rt_put32(h + 8, t->head);
	rt_put64(h + 16, roff);
	rt_put64(h + 24, len);
	rt_put64(h + 32, a);
	rt_put64(h + 40, b);
	t->head++;              /* the slot is live before any reply can arrive */
	t->since_reply = want ? 0 : t->since_reply + 1;
	rc = send_frame(c, payload, payload ? len : 0);
	if (rc)
		s->internal = 1; /* the caller gets rc; no completion as well */
	return rc;
}

int tcp_post(struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
	     uint32_t rid, uint64_t roff, size_t len, uint64_t a, uint64_t b,
	     uint64_t wr_id, unsigned flags)
{
	struct tcp_conn *t = c->backend;
	uint8_t *local = (uint8_t *)c->local[lid].addr + loff;
	int sig = (flags & RT_F_SIGNALED) != 0;
	int rc;

	if (t->broken)
		return t->broken;
	if (t->head - t->tail >= TCP_USER_DEPTH &&
	    (rc = make_room(c, (flags & RT_F_NOWAIT) != 0)))
		return rc;
	/* RT_F_FENCE: the target executes in order, so it holds already. */
	switch (op) {
	case RT_OP_READ:
		return post_frame(c, RT_OP_READ, rid, roff, len, 0, 0, NULL, local, wr_id,
				  sig, 1, 0);
	case RT_OP_WRITE:
		return post_frame(c, RT_OP_WRITE, rid, roff, len, 0, 0, local, NULL, wr_id,
				  sig, sig, 0);
	case RT_OP_FETCH_ADD:
	case RT_OP_CMP_SWAP:
		return post_frame(c, (uint8_t)op, rid, roff, 8, a, b, NULL, local, wr_id,
				  sig, 1, 0);
	}
	return RDMAPS_E_INVAL;
}

static int harvest(struct tcp_conn *t, struct rt_completion *comps, int max)
{
	int n = 0;

	while (t->tail != t->acked && n < max) {
		struct tcp_slot *s = slot_of(t, t->tail);

		if (!s->internal && (s->report || s->status)) {
			comps[n].wr_id = s->wr_id;
			comps[n].op = (enum rt_op)s->op;
			comps[n].status = s->status;
			n++;
		}
		t->tail++;
	}
	return n;
}

/* A timeout of 0 (or one run out) is "do not wait", not "do not look":
 * one non-blocking read of the replies already in the socket, as verbs
 * polls its CQ, before saying there is nothing.  Without it rt_poll(c, ..,
 * 0) only handed out what an earlier wait had read: the ps's reap and its
 * duplicate-index check (poll_dup) never saw a liveness answer, a failed
 * release or a hang-up over TCP.  1 when it looked (the caller harvests
 * again), 0 when there is nothing it could find. */
static int look_once(struct rt_conn *c, int *looked)
{
	struct tcp_conn *t = c->backend;

	if (*looked || t->broken || t->acked == t->head)
		return 0;
	*looked = 1;
	progress_rx(c, 0);
	return 1;
}

int tcp_poll(struct rt_conn *c, struct rt_completion *comps, int max, int timeout_ms)
{
	struct tcp_conn *t = c->backend;
	uint64_t deadline = rt_now_ms() + (uint64_t)timeout_ms;
	int looked = 0, n;

	if (max == 0) {
		look_once(c, &looked);
		return t->broken && t->tail == t->acked ? t->broken : 0;
	}
	for (;;) {
		int left;

		n = harvest(t, comps, max);
		if (n > 0)
			return n;
		if (t->broken)
			return t->broken;
		left = rt_remaining_ms(deadline);
		if (!left) {
			if (look_once(c, &looked))
				continue;
			return 0;
		}
		wait_rx(c, left);
	}
}

int tcp_flush(struct rt_conn *c, int timeout_ms)
{
	struct tcp_conn *t = c->backend;
	uint64_t deadline = rt_now_ms() + (uint64_t)timeout_ms;
	int looked = 0, rc;

	if (!t->broken && t->acked != t->head &&
	    !slot_of(t, t->head - 1)->want_reply) {
		reap_silent(t);
		if (t->head - t->tail >= TCP_DEPTH)
			return RDMAPS_E_AGAIN; /* cannot happen: one slot is reserved */
		rc = post_frame(c, TCP_OP_NOP, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 1, 1);
		if (rc)
			goto out;
	}
	while (!t->broken && t->acked != t->head) {
		int left = rt_remaining_ms(deadline);

		if (!left) {
			if (look_once(c, &looked))
				continue;
			return RDMAPS_E_TIMEOUT;
		}
		wait_rx(c, left);
	}
out:
	reap_silent(t);
	rc = t->first_err;
	t->first_err = t->broken;
	return rc;
}
