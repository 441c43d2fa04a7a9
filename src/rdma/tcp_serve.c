/* TCP backend: the context's progress thread.  It serves every "serve"
 * socket of the context (epoll): decodes a request, checks bounds and rights
 * against our grants for that connection, and executes it:
 *   READ      reply header + bytes sent straight from the region
 *   WRITE     payload received straight into the region (after the check);
 *             on a violation the payload is drained into scratch and an
 *             error is answered
 *   FETCH_ADD / CMP_SWAP  __atomic builtins on the target word
 * A reply is sent when the initiator asked for one, when the op returns
 * data, or on error.  A malformed frame closes only that connection.
 * Transmission is non-blocking: while a reply is partly sent the socket is
 * watched for EPOLLOUT only (back-pressure on that peer, others go on).
 * The thread's loop takes no lock: connection removal is a dead flag plus a
 * wait for the batch in progress (tc->batch), and freed sockets go through
 * a lock-free graveyard (tcp_serve_remove).
 * It sleeps in epoll_wait, except after rt_ctx_expect_reads: then it polls
 * (epoll_wait with timeout 0) until the expected READs came or the budget
 * ran out.
 * RT_PROGRESS_CALLER: there is no progress thread; serve_once runs in the
 * thread that waits on the context (tcp_wait_target, tcp_poll_serving),
 * one at a time (tc->driving), with the same batch counter and graveyard.
 * A watchdog thread (watchdog_main) takes its turn every WD_PERIOD_MS when
 * nobody drives, so that an owner busy elsewhere (a worker computing a
 * step for seconds) still answers its peers (the ps's liveness WRITEs want
 * an answer within 3 s). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tcp_internal.h"


enum { ST_OK = 0, ST_BLOCKED = 1, ST_CLOSE = 2 };

/* ---- target events (RT_CAP_TARGET_WAKE) --------------------------------
 * After a peer's WRITE payload is in the region, or an atomic executed:
 * bump tc->events, and wake sleepers if there are any.  Both sides use
 * SEQ_CST: either the sleeper's waiters++ is seen here (wake), or the bump
 * is seen by its FUTEX_WAIT (which then does not sleep). */
static void target_event(struct tcp_ctx *tc, unsigned kind)
{
	if (!(tc->ev_mask & kind))
		return;
	__atomic_fetch_add(&tc->events, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&tc->waiters, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &tc->events, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

uint32_t tcp_target_events(const struct rt_ctx *ctx)
{
	const struct tcp_ctx *tc = ctx->backend;
	return __atomic_load_n(&tc->events, __ATOMIC_SEQ_CST);
}

/* ---- expected READs (rt_ctx_expect_reads) ------------------------------
 * The caller (e.g. the ps right after it released its workers) moves the
 * deadline, adds to hot_left, and kicks the eventfd if the thread was not
 * polling already.  The thread polls while hot_left > 0 and the deadline
 * has not passed, counts every READ request down, and zeroes hot_left
 * when the deadline passed.  A hint lost in a race (added just as the
 * thread zeroes it) only costs the wake-up it was meant to save. */
void tcp_expect_reads(struct rt_ctx *ctx, int n, int budget_us)
{
	struct tcp_ctx *tc = ctx->backend;
	uint64_t one = 1;
	int was;

	__atomic_store_n(&tc->hot_until, rt_now_us() + (uint64_t)budget_us, __ATOMIC_RELAXED);
	was = __atomic_fetch_add(&tc->hot_left, n, __ATOMIC_RELEASE);
	if (was <= 0 && !tc->caller && write(tc->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		RDMAPS_WARN("tcp: write(eventfd) failed: %s", strerror(errno));
}

/* epoll_wait's timeout: 0 while expected READs are due, else 200 ms */
static int serve_timeout(struct tcp_ctx *tc)
{
	if (__atomic_load_n(&tc->hot_left, __ATOMIC_ACQUIRE) <= 0)
		return 200;
	if (rt_now_us() < __atomic_load_n(&tc->hot_until, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&tc->hot_left, 0, __ATOMIC_RELAXED); /* budget spent */
	return 200;
}

static void read_arrived(struct tcp_ctx *tc)
{
	if (__atomic_load_n(&tc->hot_left, __ATOMIC_RELAXED) > 0)
		__atomic_fetch_sub(&tc->hot_left, 1, __ATOMIC_RELAXED);
}

static void srv_kill(struct tcp_ctx *tc, struct tcp_srv *s, int proto)
{
	if (__atomic_exchange_n(&s->dead, 1, __ATOMIC_SEQ_CST))
		return;
	epoll_ctl(tc->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	/* A broken stream from the peer ends the whole connection: stop our
	 * initiator side too, so the owner sees RDMAPS_E_PEER_GONE. */
	shutdown(s->fd, SHUT_RDWR);
	if (proto && s->conn && s->conn->backend) {
		struct tcp_conn *t = s->conn->backend;

		shutdown(t->ofd, SHUT_RDWR);
	}
}

static int srv_watch(struct tcp_ctx *tc, struct tcp_srv *s, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = s };

	if (epoll_ctl(tc->epfd, EPOLL_CTL_MOD, s->fd, &e) < 0) {
		RDMAPS_ERR("tcp: epoll_ctl(MOD) failed: %s", strerror(errno));
		return ST_CLOSE;
	}
	return ST_OK;
}

/* Push the pending reply; ST_OK when fully sent. */
static int srv_tx(struct tcp_ctx *tc, struct tcp_srv *s)
{
	uint64_t total = TCP_FRAME_LEN + s->tdata_len;

	while (s->toff < total) {
		struct iovec iov[2];
		struct msghdr m = { .msg_iov = iov };
		ssize_t n;

		if (s->toff < TCP_FRAME_LEN) {
			iov[0].iov_base = s->th + s->toff;
			iov[0].iov_len = TCP_FRAME_LEN - s->toff;
			iov[1].iov_base = (void *)s->tdata;
			iov[1].iov_len = s->tdata_len;
			m.msg_iovlen = s->tdata_len ? 2 : 1;
		} else {
			iov[0].iov_base = (void *)(s->tdata + (s->toff - TCP_FRAME_LEN));
			iov[0].iov_len = total - s->toff;
			m.msg_iovlen = 1;
		}
		n = sendmsg(s->fd, &m, MSG_NOSIGNAL);
		if (n > 0) {
			s->toff += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!s->tx_busy) {
				s->tx_busy = 1;
				if (srv_watch(tc, s, EPOLLOUT) != ST_OK)
					return ST_CLOSE;
			}
			return ST_BLOCKED;
		}
		return ST_CLOSE; /* peer gone */
	}
	if (s->tx_busy) {
		s->tx_busy = 0;
		if (srv_watch(tc, s, EPOLLIN) != ST_OK)
			return ST_CLOSE;
	}
	return ST_OK;
}

static int srv_reply(struct tcp_ctx *tc, struct tcp_srv *s, const struct tcp_frame *req,
		     int32_t status, const uint8_t *data, uint64_t dlen, uint64_t a)
{
	struct tcp_frame r = {
		.op = (uint8_t)(req->op | TCP_OP_REPLY), .flags = 0, .rid = req->rid,
		.seq = req->seq, .status = status, .roff = 0, .len = dlen, .a = a, .b = 0,
	};

	tcp_frame_encode(&r, s->th);
	s->tdata = data;
	s->tdata_len = dlen;
	s->toff = 0;
	return srv_tx(tc, s);
}

static unsigned need_right(uint8_t op)
{
	switch (op) {
	case RT_OP_READ: return RT_RIGHT_READ;
	case RT_OP_WRITE: return RT_RIGHT_WRITE;
	case RT_OP_FETCH_ADD:
	case RT_OP_CMP_SWAP: return RT_RIGHT_ATOMIC;
	default: return 0;
	}
}

/* Bounds and rights against our grants; returns the target pointer or NULL. */
static uint8_t *srv_check(const struct tcp_srv *s, const struct tcp_frame *f)
{
	const struct rt_local *l;
	unsigned need = need_right(f->op);
	uint8_t *p;

	if (f->rid >= RT_MAX_GRANTS)
		return NULL;
	l = &s->conn->local[f->rid];
	if (!l->valid || (l->rights & need) != need || f->roff > l->len ||
	    f->len > l->len - f->roff)
		return NULL;
	p = (uint8_t *)l->addr + f->roff;
	if (need == RT_RIGHT_ATOMIC && ((uintptr_t)p & 7))
		return NULL;
	return p;
}

/* Structural validation of a request: RDMAPS_E_PROTO closes the conn. */
static int req_valid(const struct tcp_frame *f)
{
	if (f->flags & ~TCP_FL_REPLY)
		return 0;
	if (f->status != 0)
		return 0;
	switch (f->op) {
	case RT_OP_READ:
	case RT_OP_WRITE:
		return f->len >= 1 && f->len <= TCP_MAX_LEN;
	case RT_OP_FETCH_ADD:
	case RT_OP_CMP_SWAP:
		return f->len == 8;
	case TCP_OP_NOP:
		return f->len == 0;
	default:
		return 0;
	}
}

static int srv_request(struct tcp_ctx *tc, struct tcp_srv *s)
{
	struct tcp_frame f;
	uint8_t *p;
	int want;

	if (tcp_frame_decode(s->rh, &f) || !req_valid(&f)) {
		RDMAPS_WARN("tcp: malformed request from peer (role %u index %u); closing it",
			    s->conn->peer_hello.role, s->conn->peer_hello.index);
		return -1;
	}
	want = f.flags & TCP_FL_REPLY;
	/* every request also costs 1/64 of the turn: a peer streaming tiny
	 * requests (atomics, NOPs) yields after 64, as a bulk one after 1 MiB */
	s->turn += TCP_TURN_BYTES / 64;
	if (f.op == RT_OP_READ || f.op == RT_OP_WRITE)
		s->turn += f.len;
	if (f.op == TCP_OP_NOP)
		return srv_reply(tc, s, &f, 0, NULL, 0, 0);
	p = srv_check(s, &f);
	switch (f.op) {
	case RT_OP_READ:
		read_arrived(tc);
		if (!p)
			return srv_reply(tc, s, &f, RDMAPS_E_REMOTE_ACCESS, NULL, 0, 0);
		return srv_reply(tc, s, &f, 0, p, f.len, 0);
	case RT_OP_WRITE:
		s->pend = f;
		s->pend_status = p ? 0 : RDMAPS_E_REMOTE_ACCESS;
		s->discard = !p;
		s->dst = p;
		s->left = f.len;
		return ST_OK;
	case RT_OP_FETCH_ADD:
		if (!p)
			return srv_reply(tc, s, &f, RDMAPS_E_REMOTE_ACCESS, NULL, 0, 0);
		{
			uint64_t old = __atomic_fetch_add((uint64_t *)(void *)p, f.a, __ATOMIC_SEQ_CST);
			target_event(tc, RT_EV_ATOMIC);
			return srv_reply(tc, s, &f, 0, NULL, 0, old);
		}
	case RT_OP_CMP_SWAP: {
		uint64_t expect = f.a;

		if (!p)
			return srv_reply(tc, s, &f, RDMAPS_E_REMOTE_ACCESS, NULL, 0, 0);
		__atomic_compare_exchange_n((uint64_t *)(void *)p, &expect, f.b, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		target_event(tc, RT_EV_ATOMIC);
		return srv_reply(tc, s, &f, 0, NULL, 0, expect); /* old value */
	}
	}
	(void)want;
	return -1;
}

/* Read and execute the requests a peer has queued, until its socket is
 * empty or this turn has moved TCP_TURN_BYTES of READ/WRITE data or served
 * 64 requests (each costs 1/64 of the budget besides its bytes); then go
 * back to epoll_wait (level-triggered: it reports at once if more is
 * queued).  The budget keeps the thread fair across peers: neither a bulk
 * peer nor one streaming tiny requests holds it for long.  It is checked
 * between requests, so one WRITE's payload is taken whole (a gradient
 * piece of several MiB holds the thread for its transfer).  Until 2026-12-07
 * a turn was one request, so a pull's small fenced READ, posted with its
 * parameter READ, waited behind every other peer's parameter READ: with W
 * workers pulling at once, each pull ended only after all W were sent
 * (docs/benchmarks.md, "Where a sync update's spread comes from"). */
static int srv_rx(struct tcp_ctx *tc, struct tcp_srv *s)
{
	s->turn = 0;
	for (;;) {
		ssize_t n;

		if (s->left) {
			uint8_t *dst = s->discard ? tc->scratch : s->dst;
			size_t want = s->discard && s->left > sizeof(tc->scratch) ?
				sizeof(tc->scratch) : (size_t)s->left;

			n = recv(s->fd, dst, want, 0);
			if (n > 0) {
				s->left -= (uint64_t)n;
				if (!s->discard)
					s->dst += n;
				if (!s->left) {
					if (!s->discard)
						target_event(tc, RT_EV_WRITE);
					if (s->pend_status || (s->pend.flags & TCP_FL_REPLY)) {
						int rc = srv_reply(tc, s, &s->pend, s->pend_status, NULL, 0, 0);
						if (rc)
							return rc;
					}
					if (s->turn >= TCP_TURN_BYTES)
						return ST_OK;
				}
				continue;
			}
		} else {
			n = recv(s->fd, s->rh + s->rh_got, TCP_FRAME_LEN - s->rh_got, 0);
			if (n > 0) {
				s->rh_got += (unsigned)n;
				if (s->rh_got == TCP_FRAME_LEN) {
					int rc;

					s->rh_got = 0;
					rc = srv_request(tc, s);
					if (rc < 0)
						return -1;
					if (rc)
						return rc;
					if (!s->left && s->turn >= TCP_TURN_BYTES)
						return ST_OK; /* epoll_wait says if more is there */
				}
				continue;
			}
		}
		if (n == 0)
			return ST_CLOSE;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return ST_OK;
		return ST_CLOSE;
	}
}

/* Close and free every removed serve socket (tcp_serve_remove pushed them). */
static void free_graveyard(struct tcp_ctx *tc)
{
	struct tcp_srv *d = __atomic_exchange_n(&tc->graveyard, NULL, __ATOMIC_ACQUIRE);

	while (d) {
		struct tcp_srv *next = d->next_dead;

		close(d->fd);
		free(d);
		d = next;
	}
}

/* One batch: free the graveyard, wait up to timeout_ms for events, serve
 * them.  The progress thread's loop body, and what a waiting caller runs
 * (RT_PROGRESS_CALLER, holding tc->driving).  -1 when epoll_wait failed. */
static int serve_once(struct tcp_ctx *tc, int timeout_ms)
{
	struct epoll_event ev[64];
	int n;

	/* no event of this epoll set can name these any more: they were
	 * removed from it before they were pushed here, and the batch that
	 * may have held them is over */
	free_graveyard(tc);
	n = epoll_wait(tc->epfd, ev, 64, timeout_ms);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		RDMAPS_ERR("tcp: epoll_wait failed: %s", strerror(errno));
		return -1;
	}
	/* odd: a batch is in progress.  SEQ_CST pairs with tcp_serve_remove:
	 * either we see its dead = 1 below, or it sees this odd value and
	 * waits for the even one. */
	__atomic_fetch_add(&tc->batch, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < n; i++) {
		struct tcp_srv *s = ev[i].data.ptr;
		int rc = ST_OK;

		if (!s) { /* the eventfd: stop (checked by the thread) or expected READs */
			uint64_t x;

			if (read(tc->evfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
				RDMAPS_WARN("tcp: read(eventfd) failed: %s", strerror(errno));
			continue;
		}
		if (__atomic_load_n(&s->dead, __ATOMIC_SEQ_CST))
			continue;   /* already removed */
		if (s->tx_busy) {
			if (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
				rc = srv_tx(tc, s);
		} else if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
			rc = srv_rx(tc, s);
		}
		if (rc < 0 || rc == ST_CLOSE)
			srv_kill(tc, s, rc < 0);
	}
	__atomic_fetch_add(&tc->batch, 1, __ATOMIC_RELEASE);   /* even: done */
	return n;
}

static void *serve_main(void *arg)
{
	struct rt_ctx *ctx = arg;
	struct tcp_ctx *tc = ctx->backend;

	/* bounded waits: tc->stop is re-checked even if the eventfd wake-up
	 * was lost (a failed write in tcp_serve_stop hung the ps at exit:
	 * fault sweep, docs/hardening.md) */
	while (!__atomic_load_n(&tc->stop, __ATOMIC_ACQUIRE))
		if (serve_once(tc, serve_timeout(tc)) < 0)
			break;
	return NULL;
}

/* ---- RT_PROGRESS_CALLER: the waiting thread serves --------------------- */

static int drive_acquire(struct tcp_ctx *tc)
{
	return tc->caller && !__atomic_exchange_n(&tc->driving, 1, __ATOMIC_ACQUIRE);
}

/* SEQ_CST: pairs with the waiter's check in tcp_wait_target (either the
 * watchdog sees waiters > 0 after this store and wakes them, or the waiter
 * sees driving == 0 and drives itself) */
static void drive_release(struct tcp_ctx *tc)
{
	__atomic_store_n(&tc->driving, 0, __ATOMIC_SEQ_CST);
}

/* ---- RT_PROGRESS_CALLER's watchdog --------------------------------------
 * Every WD_PERIOD_MS: if no thread drives, serve what is ready (at most
 * WD_BATCHES non-blocking batches), hand the context back, and wake the
 * threads that waited meanwhile so that one of them drives.  It never
 * blocks in epoll_wait: an owner that starts waiting takes over at once. */
#define WD_PERIOD_MS 50
#define WD_BATCHES 16

static void *watchdog_main(void *arg)
{
	struct tcp_ctx *tc = arg;

	for (;;) {
		struct timespec ts = { 0, WD_PERIOD_MS * 1000000L };

		if (__atomic_load_n(&tc->stop, __ATOMIC_ACQUIRE))
			break;
		syscall(SYS_futex, &tc->stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (__atomic_load_n(&tc->stop, __ATOMIC_ACQUIRE))
			break;
		if (!drive_acquire(tc))
			continue; /* the owner serves */
		for (int k = 0; k < WD_BATCHES && serve_once(tc, 0) > 0; k++)
			;
		drive_release(tc);
		if (__atomic_load_n(&tc->waiters, __ATOMIC_SEQ_CST))
			syscall(SYS_futex, &tc->events, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
	return NULL;
}

/* epoll_wait's timeout for a caller with us_left to go: as serve_timeout
 * (0 while expected READs are due), else us_left rounded up to ms */
static int caller_timeout(struct tcp_ctx *tc, uint64_t us_left)
{
	if (!serve_timeout(tc))
		return 0;
	return us_left >= (uint64_t)INT_MAX * 1000 ? INT_MAX : (int)((us_left + 999) / 1000);
}

int tcp_wait_target(struct rt_ctx *ctx, uint32_t seen, int timeout_us)
{
	struct tcp_ctx *tc = ctx->backend;
	struct timespec ts = { timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000 };
	int rc = RDMAPS_OK;

	if (timeout_us < 0)
		return RDMAPS_E_INVAL;
	if (drive_acquire(tc)) {
		uint64_t end = rt_now_us() + (uint64_t)timeout_us;

		rc = RDMAPS_E_TIMEOUT;
		for (;;) {
			uint64_t now;

			if (__atomic_load_n(&tc->events, __ATOMIC_SEQ_CST) != seen) {
				rc = RDMAPS_OK;
				break;
			}
			now = rt_now_us();
			if (now >= end || serve_once(tc, caller_timeout(tc, end - now)) < 0)
				break;
		}
		drive_release(tc);
		return rc;
	}
	__atomic_fetch_add(&tc->waiters, 1, __ATOMIC_SEQ_CST);
	if (tc->caller && !__atomic_load_n(&tc->driving, __ATOMIC_SEQ_CST)) {
		/* the driver (the watchdog, or another waiter) just let go:
		 * drive instead of sleeping with nobody serving */
		__atomic_fetch_sub(&tc->waiters, 1, __ATOMIC_SEQ_CST);
		return RDMAPS_E_TIMEOUT; /* the caller re-checks and waits again */
	}
	if (__atomic_load_n(&tc->events, __ATOMIC_SEQ_CST) == seen &&
	    syscall(SYS_futex, &tc->events, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0) < 0 &&
	    errno == ETIMEDOUT)
		rc = RDMAPS_E_TIMEOUT;
	__atomic_fetch_sub(&tc->waiters, 1, __ATOMIC_SEQ_CST);
	if (rc == RDMAPS_OK && __atomic_load_n(&tc->events, __ATOMIC_SEQ_CST) == seen)
		rc = RDMAPS_E_TIMEOUT; /* spurious or EINTR: the caller re-checks and waits again */
	return rc;
}

int tcp_poll_serving(struct rt_ctx *ctx, struct pollfd *p, int timeout_ms)
{
	struct tcp_ctx *tc = ctx->backend;
	struct pollfd pp[2];
	uint64_t deadline;
	int rc;

	if (!drive_acquire(tc))
		return poll(p, 1, timeout_ms);
	pp[0] = *p;
	pp[1] = (struct pollfd){ .fd = tc->epfd, .events = POLLIN };
	deadline = rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		rc = poll(pp, 2, rt_remaining_ms(deadline));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc > 0 && pp[1].revents && serve_once(tc, 0) < 0)
			rc = -1;
		if (rc <= 0 || pp[0].revents)
			break;
		if (!rt_remaining_ms(deadline)) { /* only our targets were ready */
			rc = 0;
			break;
		}
	}
	drive_release(tc);
	p->revents = pp[0].revents;
	return rc > 0 ? 1 : rc;
}

/* Start the progress thread, created on ctx->cpus when pin_progress is set
 * (so it never runs elsewhere, not even briefly), named "rt-progress". */
static int start_thread(struct rt_ctx *ctx)
{
	struct tcp_ctx *tc = ctx->backend;
	pthread_attr_t attr;
	int err;

	err = pthread_attr_init(&attr);
	if (err) {
		RDMAPS_ERR("tcp: pthread_attr_init failed: %s", strerror(err));
		return RDMAPS_E_NOMEM;
	}
	if (ctx->pin_progress) {
		err = pthread_attr_setaffinity_np(&attr, sizeof(ctx->cpus), &ctx->cpus);
		if (err) {
			RDMAPS_ERR("tcp: pthread_attr_setaffinity_np failed: %s", strerror(err));
			pthread_attr_destroy(&attr);
			return RDMAPS_E_IO;
		}
	}
	err = pthread_create(&tc->thr, &attr, serve_main, ctx);
	pthread_attr_destroy(&attr);
	if (err) {
		RDMAPS_ERR("tcp: pthread_create(progress thread) failed: %s", strerror(err));
		return err == EINVAL ? RDMAPS_E_IO : RDMAPS_E_NOMEM;
	}
	pthread_setname_np(tc->thr, "rt-progress"); /* cosmetic: top -H, tests */
	__atomic_store_n(&tc->started, 1, __ATOMIC_RELEASE);   /* tc->thr is set */
	return RDMAPS_OK;
}

int tcp_serve_add(struct rt_ctx *ctx, struct rt_conn *conn, int fd)
{
	struct tcp_ctx *tc = ctx->backend;
	struct tcp_conn *t = conn->backend;
	struct tcp_srv *s = calloc(1, sizeof(*s));
	struct epoll_event e = { .events = EPOLLIN };
	int rc = RDMAPS_OK;

	if (!s) {
		RDMAPS_ERR("tcp: calloc(serve state) failed");
		return RDMAPS_E_NOMEM;
	}
	s->fd = fd;
	s->conn = conn;
	e.data.ptr = s;
	pthread_mutex_lock(&tc->lock);
	if (!tc->caller && !__atomic_load_n(&tc->started, __ATOMIC_ACQUIRE)) {
		rc = start_thread(ctx);
		if (rc)
			goto out;
	}
	if (tc->caller && !tc->wd_started) {
		int err = pthread_create(&tc->wd_thr, NULL, watchdog_main, tc);

		if (err) {
			RDMAPS_ERR("tcp: pthread_create(watchdog) failed: %s", strerror(err));
			rc = err == EINVAL ? RDMAPS_E_IO : RDMAPS_E_NOMEM;
			goto out;
		}
		pthread_setname_np(tc->wd_thr, "rt-watchdog");
		tc->wd_started = 1;
	}
	if (epoll_ctl(tc->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
		RDMAPS_ERR("tcp: epoll_ctl(ADD) failed: %s", strerror(errno));
		rc = RDMAPS_E_IO;
		goto out;
	}
	t->srv = s;
out:
	pthread_mutex_unlock(&tc->lock);
	if (rc)
		free(s);
	return rc;
}

void tcp_serve_remove(struct rt_ctx *ctx, struct tcp_srv *s)
{
	struct tcp_ctx *tc = ctx->backend;

	if (!s)
		return;
	if (!__atomic_exchange_n(&s->dead, 1, __ATOMIC_SEQ_CST))
		epoll_ctl(tc->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	shutdown(s->fd, SHUT_RDWR);
	/* Wait out a batch the thread (or, RT_PROGRESS_CALLER, another waiting
	 * thread) may be in: it may have read dead == 0 before our store and
	 * be using s->conn, which our caller frees next.  Batches are short
	 * (non-blocking I/O).  Not from the thread itself; a caller is never
	 * inside a batch here (a batch calls nothing of the owner's). */
	if (tc->caller || (__atomic_load_n(&tc->started, __ATOMIC_ACQUIRE) &&
			   !pthread_equal(pthread_self(), tc->thr))) {
		uint64_t b = __atomic_load_n(&tc->batch, __ATOMIC_SEQ_CST);

		if (b & 1)
			while (__atomic_load_n(&tc->batch, __ATOMIC_ACQUIRE) == b)
				sched_yield();
	}
	s->conn = NULL;
	/* freed by the thread before its next epoll_wait, or by tcp_serve_stop */
	s->next_dead = __atomic_load_n(&tc->graveyard, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&tc->graveyard, &s->next_dead, s, 1,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

void tcp_serve_stop(struct rt_ctx *ctx)
{
	struct tcp_ctx *tc = ctx->backend;
	uint64_t one = 1;

	if (tc->started) {
		__atomic_store_n(&tc->stop, 1, __ATOMIC_RELEASE);
		if (write(tc->evfd, &one, sizeof(one)) < 0)
			RDMAPS_ERR("tcp: write(eventfd) failed: %s", strerror(errno));
		pthread_join(tc->thr, NULL);
		__atomic_store_n(&tc->started, 0, __ATOMIC_RELEASE);
	}
	if (tc->wd_started) {
		__atomic_store_n(&tc->stop, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &tc->stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		pthread_join(tc->wd_thr, NULL);
		tc->wd_started = 0;
	}
	free_graveyard(tc);
}
