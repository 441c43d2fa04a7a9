/* TCP backend: context, listen / accept / connect, the handshake, teardown
 * and the ops table.
 *
 * Handshake (docs/transport.md): the client opens two sockets to the
 * server's port and sends a hello on each (channel OPS / SERVE, the same
 * random 64-bit nonce, its identity and the auth token).  The server pairs
 * them by nonce, checks the token (constant time; a wrong one gets an AUTH
 * set-up reply and is closed, rt_accept keeps waiting), and rt_accept
 * returns.  rt_accept_grant sends, on the client's OPS socket, a set-up
 * reply (status 0) with the server's grants table; the client answers with
 * its own table on the same socket, within RT_HANDSHAKE_MS (rt_internal.h).
 * rt_accept_grant_start sends the reply and returns; rt_accept_poll then
 * completes the connection once the client's whole answer is there, without
 * waiting.  rt_reject answers REFUSED. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_internal.h"

/* Connection attempts whose hellos are not paired yet (the listener's table).
 * A full table evicts its oldest entry without a whole hello (else its
 * oldest), so idle sockets cannot lock real clients out; each entry lives at
 * most TCP_HELLO_MS (or the ctx timeout if shorter): an honest client sends
 * both hellos right after connecting (docs/hardening.md, "Hostile TCP
 * peers"). */
#define TCP_PENDING_MAX 64
#define TCP_HELLO_MS 5000

struct tcp_pending {
	int fd;
	unsigned got;
	uint64_t deadline;
	uint8_t buf[TCP_HELLO_LEN];
	struct tcp_hello hello;
	int complete;
};

/* A name may resolve to several addresses (::1 and 127.0.0.1; the
 * wildcards 0.0.0.0 and ::): the listener binds each, up to this many. */
#define TCP_LISTEN_MAX 4

struct tcp_listener {
	int fd[TCP_LISTEN_MAX];
	int nfd;
	int npend;
	int warned_full;        /* said once that the table filled up */
	struct tcp_pending pend[TCP_PENDING_MAX];
};

struct tcp_request {
	int fd_ops;     /* client's OPS channel: our serve socket */
	int fd_serve;   /* client's SERVE channel: our ops socket */
};

/* ------------------------------------------------------------ context */

static int tcp_ctx_init(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg)
{
	struct tcp_ctx *tc = calloc(1, sizeof(*tc));
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };

	if (!tc) {
		RDMAPS_ERR("tcp: calloc(ctx) failed");
		return RDMAPS_E_NOMEM;
	}
	tc->ev_mask = cfg->target_events ? cfg->target_events : RT_EV_WRITE | RT_EV_ATOMIC;
	tc->caller = cfg->progress == RT_PROGRESS_CALLER;
	tc->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (tc->epfd < 0) {
		RDMAPS_ERR("tcp: epoll_create1 failed: %s", strerror(errno));
		goto err_free;
	}
	tc->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (tc->evfd < 0) {
		RDMAPS_ERR("tcp: eventfd failed: %s", strerror(errno));
		goto err_ep;
	}
	if (epoll_ctl(tc->epfd, EPOLL_CTL_ADD, tc->evfd, &e) < 0) {
		RDMAPS_ERR("tcp: epoll_ctl(eventfd) failed: %s", strerror(errno));
		goto err_ev;
	}
	pthread_mutex_init(&tc->lock, NULL);
	ctx->backend = tc;
	return RDMAPS_OK;
err_ev:
	close(tc->evfd);
err_ep:
	close(tc->epfd);
err_free:
	free(tc);
	return RDMAPS_E_IO;
}

static void tcp_ctx_fini(struct rt_ctx *ctx)
{
	struct tcp_ctx *tc = ctx->backend;

	if (!tc)
		return;
	tcp_serve_stop(ctx);
	pthread_mutex_destroy(&tc->lock);
	close(tc->evfd);
	close(tc->epfd);
	free(tc);
	ctx->backend = NULL;
}

/* ------------------------------------------------------------ helpers */

static int resolve(const char *host, uint16_t port, int passive, struct addrinfo **ai)
{
	struct addrinfo hints;
	char serv[8];
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	snprintf(serv, sizeof(serv), "%u", port);
	rc = getaddrinfo(host && *host ? host : NULL, serv, &hints, ai);
	if (rc) {
		static char last[300];
		char key[300];
		snprintf(key, sizeof(key), "%s:%s %d", host ? host : "*", serv, rc);
		if (rt_first_time(last, sizeof(last), key))
			RDMAPS_ERR("tcp: getaddrinfo(%s) failed: %s", host ? host : "*", gai_strerror(rc));
		return rt_gai_status(rc);
	}
	return RDMAPS_OK;
}

static int send_setup(int fd, int32_t status, const uint8_t *table, size_t tlen,
		      uint64_t deadline)
{
	uint8_t h[TCP_SETUP_LEN] = { 0 };
	int rc;

	rt_put32(h, TCP_SETUP_MAGIC);
	rt_put16(h + 4, 1);
	rt_put32(h + 8, (uint32_t)status);
	rt_put32(h + 12, (uint32_t)tlen);
	rc = tcp_send_all(fd, h, sizeof(h), deadline);
	if (!rc && tlen)
		rc = tcp_send_all(fd, table, tlen, deadline);
	return rc;
}

/* A set-up header: magic and version, the peer's status, the table length
 * that follows (none after a refusal, at most RT_TABLE_MAX_LEN). */
static int setup_header(const uint8_t *h, int32_t *status, uint32_t *tlen)
{
	if (rt_get32(h) != TCP_SETUP_MAGIC || rt_get16(h + 4) != 1)
		return RDMAPS_E_PROTO;
	*status = (int32_t)rt_get32(h + 8);
	*tlen = rt_get32(h + 12);
	if (*status ? *tlen != 0 : *tlen > RT_TABLE_MAX_LEN)
		return RDMAPS_E_PROTO;
	return RDMAPS_OK;
}

/* Receive a set-up message; *status is the peer's; the table lands in conn. */
static int recv_setup(int fd, struct rt_conn *conn, int32_t *status, uint64_t deadline)
{
	uint8_t h[TCP_SETUP_LEN], table[RT_TABLE_MAX_LEN];
	struct rt_remote r[RT_MAX_GRANTS];
	uint32_t tlen;
	int n = 0, rc;

	rc = tcp_recv_all(fd, h, sizeof(h), deadline);
	if (!rc)
		rc = setup_header(h, status, &tlen);
	if (rc || *status)
		return rc;
	rc = tcp_recv_all(fd, table, tlen, deadline);
	if (rc)
		return rc;
	rc = rt_desc_table_decode(table, tlen, r, RT_MAX_GRANTS, &n);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++) {
		conn->remote[r[i].id] = r[i];
		conn->remote_valid[r[i].id] = 1;
	}
	return RDMAPS_OK;
}

static int encode_my_table(const struct rt_conn *c, uint8_t *buf, size_t *len)
{
	struct rt_remote mine[RT_MAX_GRANTS];
	int n = 0;

	for (uint32_t i = 0; i < RT_MAX_GRANTS; i++) {
		const struct rt_local *l = &c->local[i];

		if (!l->valid || !l->rights)
			continue;
		mine[n].id = i;
		mine[n].addr = (uint64_t)(uintptr_t)l->addr;
		mine[n].len = l->len;
		mine[n].rkey = 0;
		mine[n].rights = l->rights;
		n++;
	}
	return rt_desc_table_encode(mine, n, buf, RT_TABLE_MAX_LEN, len);
}

/* Both sockets are set up: build the initiator state and start serving. */
static int conn_start(struct rt_conn *c, int ofd, int sfd)
{
	struct tcp_conn *t = aligned_alloc(64, (sizeof(*t) + 63) & ~(size_t)63);
	int rc;

	if (!t) {
		RDMAPS_ERR("tcp: out of memory for a connection");
		return RDMAPS_E_NOMEM;
	}
	memset(t, 0, sizeof(*t));
	t->ofd = ofd;
	{
		int fl = fcntl(ofd, F_GETFL);

		/* the initiator waits in recv() itself (SO_RCVTIMEO) */
		if (fl < 0 || fcntl(ofd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
			RDMAPS_ERR("tcp: fcntl(~O_NONBLOCK) failed: %s", strerror(errno));
			free(t);
			return RDMAPS_E_IO;
		}
	}
	t->io_timeout_ms = c->ctx->timeout_ms;
	t->spin_us = c->ctx->tcp_spin_us;
	rt_put32(t->txh, TCP_FRAME_MAGIC);
	c->backend = t;
	rc = tcp_serve_add(c->ctx, c, sfd);
	if (rc) {
		free(t);
		c->backend = NULL;
		return rc;
	}
	return RDMAPS_OK;
}

/* ------------------------------------------------------------ server */

/* One listening socket on a (port: the listener's, once the first bound
 * an ephemeral one).  v6only: an IPv6 socket beside IPv4 ones takes IPv6
 * only (else its bind would clash with theirs on Linux). */
static int listen_one(const struct addrinfo *a, uint16_t port, int v6only, int *out, int *eno)
{
	struct sockaddr_storage ss;
	int one = 1, fd, rc;

	memcpy(&ss, a->ai_addr, a->ai_addrlen);
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
	fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		RDMAPS_ERR("tcp: socket failed: %s", strerror(errno));
		return RDMAPS_E_IO;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6only && a->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, a->ai_addrlen) < 0) {
		*eno = errno;
		rc = errno == EADDRNOTAVAIL ? RDMAPS_E_UNREACHABLE
		     : errno == EADDRINUSE ? RDMAPS_E_ADDR_IN_USE : RDMAPS_E_IO;
		close(fd);
		return rc;
	}
	if (listen(fd, 128) < 0) {
		RDMAPS_ERR("tcp: listen failed: %s", strerror(errno));
		close(fd);
		return RDMAPS_E_IO;
	}
	*out = fd;
	return RDMAPS_OK;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

/* Listen on every address host resolves to (up to TCP_LISTEN_MAX), on one
 * port: a client tries them in turn (tcp_connect_any), and one that cannot
 * reach the first must find us on the next.  The first address must bind
 * (its failure is the listen's); a later one that cannot is left out with
 * a warning. */
static int tcp_listen(struct rt_ctx *ctx, const char *host, uint16_t port,
		      struct rt_listener *lst)
{
	struct tcp_listener *tl;
	struct addrinfo *ai = NULL;
	int v4 = 0, rc;

	(void)ctx;
	tl = calloc(1, sizeof(*tl));
	if (!tl) {
		RDMAPS_ERR("tcp: calloc(listener) failed");
		return RDMAPS_E_NOMEM;
	}
	rc = resolve(host, port, 1, &ai);
	if (rc)
		goto err_free;
	for (const struct addrinfo *a = ai; a; a = a->ai_next)
		v4 |= a->ai_family == AF_INET;
	for (const struct addrinfo *a = ai; a && tl->nfd < TCP_LISTEN_MAX; a = a->ai_next) {
		char name[INET6_ADDRSTRLEN] = "?";
		int eno = 0, dup = 0;

		for (const struct addrinfo *b = ai; b != a && !dup; b = b->ai_next)
			dup = b->ai_addrlen == a->ai_addrlen && !memcmp(b->ai_addr, a->ai_addr, a->ai_addrlen);
		if (dup) /* a name listed twice in /etc/hosts */
			continue;
		rc = listen_one(a, port, v4, &tl->fd[tl->nfd], &eno);
		if (!rc) {
			if (!tl->nfd++ && !(port = bound_port(tl->fd[0]))) {
				RDMAPS_ERR("tcp: getsockname failed: %s", strerror(errno));
				rc = RDMAPS_E_IO;
				goto err_socks;
			}
			continue;
		}
		getnameinfo(a->ai_addr, a->ai_addrlen, name, sizeof(name), NULL, 0, NI_NUMERICHOST);
		if (!tl->nfd) {
			if (eno)
				RDMAPS_ERR("tcp: bind(%s:%u) failed: %s", host && *host ? host : "*", port,
					   strerror(eno));
			goto err_socks;
		}
		RDMAPS_WARN("tcp: %s:%u also resolves to %s, which cannot be bound (%s): not listening there",
			    host && *host ? host : "*", port, name, eno ? strerror(eno) : rdmaps_strerror(rc));
	}
	lst->port = port;
	freeaddrinfo(ai);
	lst->backend = tl;
	return RDMAPS_OK;
err_socks:
	while (tl->nfd)
		close(tl->fd[--tl->nfd]);
	freeaddrinfo(ai);
err_free:
	free(tl);
	return rc;
}

static void pend_drop(struct tcp_listener *tl, int i, int close_fd)
{
	if (close_fd)
		close(tl->pend[i].fd);
	tl->pend[i] = tl->pend[--tl->npend];
}

/* The table is full: close the oldest entry that has not sent a whole hello
 * (silent or slow), or, if every one has, the oldest (a half pair whose other
 * socket never came). */
static void pend_evict(struct tcp_listener *tl)
{
	int v = 0;

	for (int i = 1; i < tl->npend; i++) {
		const struct tcp_pending *p = &tl->pend[i], *q = &tl->pend[v];

		/* every entry lives the same TCP_HELLO_MS: the earliest deadline
		 * is the oldest */
		if (p->complete != q->complete ? !p->complete : p->deadline < q->deadline)
			v = i;
	}
	if (!tl->warned_full) {
		RDMAPS_WARN("tcp: %d connection attempts without a complete hello pair: closing the oldest "
			    "to accept new ones (a flood of idle connections?)", TCP_PENDING_MAX);
		tl->warned_full = 1;
	}
	RDMAPS_DBG("tcp: pending table full: evicting an entry %s", tl->pend[v].complete ? "with a hello" : "without a hello");
	pend_drop(tl, v, 1);
}

static void tcp_listener_fini(struct rt_listener *lst)
{
	struct tcp_listener *tl = lst->backend;

	if (!tl)
		return;
	while (tl->npend)
		pend_drop(tl, 0, 1);
	while (tl->nfd)
		close(tl->fd[--tl->nfd]);
	free(tl);
	lst->backend = NULL;
}

/* A hello is complete on pend[i]: validate; 1 = keep, 0 = dropped. */
static int pend_hello(struct rt_ctx *ctx, struct tcp_listener *tl, int i)
{
	struct tcp_pending *p = &tl->pend[i];
	uint8_t tok[RT_TOKEN_MAX] = { 0 };

	if (tcp_hello_decode(p->buf, &p->hello)) {
		RDMAPS_WARN("tcp: malformed hello; connection dropped");
		pend_drop(tl, i, 1);
		return 0;
	}
	memcpy(tok, ctx->token, ctx->token_len);
	/* Equal tokens or none on both sides (docs/failure-modes.md): a token
	 * this ps does not expect is refused like a wrong one, as on verbs. */
	if (p->hello.token_len != ctx->token_len ||
	    !tcp_token_equal(p->hello.token, tok, RT_TOKEN_MAX)) {
		if (p->hello.channel == TCP_CH_OPS) /* once per attempt */
			RDMAPS_WARN("tcp: %s from role %u index %u; refused",
				    !ctx->token_len ? "an auth token, but this side has none (no --auth_token_file),"
				    : !p->hello.token_len ? "no auth token" : "wrong auth token",
				    p->hello.h.role, p->hello.h.index);
		send_setup(p->fd, RDMAPS_E_AUTH, NULL, 0, rt_now_ms() + 100);
		pend_drop(tl, i, 1);
		return 0;
	}
	p->complete = 1;
	return 1;
}

static void pend_expire(struct tcp_listener *tl, uint64_t now)
{
	for (int i = 0; i < tl->npend;) {
		if (now >= tl->pend[i].deadline) {
			/* a client's half pair is worth a line; a socket that sent
			 * no whole hello (a scan, a flood) is not */
			if (tl->pend[i].complete)
				RDMAPS_WARN("tcp: incomplete connection attempt timed out");
			else
				RDMAPS_DBG("tcp: a connection that sent no whole hello timed out");
			pend_drop(tl, i, 1);
		} else {
			i++;
		}
	}
}

static int find_pair(struct tcp_listener *tl, int *iops, int *iserve)
{
	for (int i = 0; i < tl->npend; i++) {
		if (!tl->pend[i].complete || tl->pend[i].hello.channel != TCP_CH_OPS)
			continue;
		for (int j = 0; j < tl->npend; j++) {
			if (tl->pend[j].complete && tl->pend[j].hello.channel == TCP_CH_SERVE &&
			    tl->pend[j].hello.nonce == tl->pend[i].hello.nonce) {
				*iops = i;
				*iserve = j;
				return 1;
			}
		}
	}
	return 0;
}

static int tcp_accept(struct rt_listener *lst, int timeout_ms, struct rt_request *req)
{
	struct tcp_listener *tl = lst->backend;
	struct rt_ctx *ctx = lst->ctx;
	uint64_t deadline = rt_now_ms() + (uint64_t)timeout_ms;
	uint64_t hello_ms = (uint64_t)(ctx->timeout_ms < TCP_HELLO_MS ? ctx->timeout_ms : TCP_HELLO_MS);

	for (int pass = 0;; pass++) {
		struct pollfd pfd[TCP_LISTEN_MAX + TCP_PENDING_MAX];
		struct pollfd *pp = pfd + tl->nfd; /* the pending sockets' */
		int a, b, rc, wait;
		uint64_t now = rt_now_ms();

		if (find_pair(tl, &a, &b)) {
			struct tcp_request *r = calloc(1, sizeof(*r));
			int fa = tl->pend[a].fd, fb = tl->pend[b].fd;

			if (!r) {
				RDMAPS_ERR("tcp: calloc(request) failed");
				return RDMAPS_E_NOMEM;
			}
			r->fd_ops = fa;
			r->fd_serve = fb;
			req->hello = tl->pend[a].hello.h;
			req->backend = r;
			/* drop the higher index first so the lower stays valid */
			pend_drop(tl, a > b ? a : b, 0);
			pend_drop(tl, a > b ? b : a, 0);
			return RDMAPS_OK;
		}
		/* expire half-open sockets; not on the first pass: what arrived
		 * while the caller was away (serving, or in a set-up) is read first */
		if (pass)
			pend_expire(tl, now);
		wait = rt_remaining_ms(deadline);
		if (!wait && timeout_ms)
			return RDMAPS_E_TIMEOUT;
		/* a non-blocking call ends after a bounded number of passes
		 * (each accepts one socket), even while sockets keep coming */
		if (!timeout_ms && pass >= 2 * TCP_PENDING_MAX)
			return RDMAPS_E_TIMEOUT;
		for (int k = 0; k < tl->nfd; k++) {
			pfd[k].fd = tl->fd[k];
			pfd[k].events = POLLIN; /* a full table evicts (pend_evict) */
		}
		for (int i = 0; i < tl->npend; i++) {
			pp[i].fd = tl->pend[i].fd;
			/* complete ones too: their client may hang up */
			pp[i].events = POLLIN;
			if (tl->pend[i].deadline <= now)
				wait = 0; /* read what it sent, then expire it */
			else if (tl->pend[i].deadline - now < (uint64_t)wait)
				wait = (int)(tl->pend[i].deadline - now) + 1;
		}
		rc = poll(pfd, (nfds_t)(tl->nfd + tl->npend), wait);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			RDMAPS_ERR("tcp: poll(listener) failed: %s", strerror(errno));
			return RDMAPS_E_IO;
		}
		if (rc == 0 && !timeout_ms) {
			pend_expire(tl, rt_now_ms());
			return RDMAPS_E_TIMEOUT;
		}
		/* read hellos (indices of pfd are stable until we drop) */
		for (int i = tl->npend - 1; i >= 0; i--) {
			struct tcp_pending *p = &tl->pend[i];
			ssize_t n;

			if (!(pp[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			if (p->complete) {
				/* nothing may follow a hello before our set-up
				 * reply: the client hung up, failed, or breaks the
				 * protocol; its slot is freed */
				pend_drop(tl, i, 1);
				continue;
			}
			n = recv(p->fd, p->buf + p->got, TCP_HELLO_LEN - p->got, 0);
			if (n > 0) {
				p->got += (unsigned)n;
				if (p->got == TCP_HELLO_LEN)
					pend_hello(ctx, tl, i);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				pend_drop(tl, i, 1);
			}
		}
		for (int k = 0; k < tl->nfd; k++) {
			int fd;

			if (!(pfd[k].revents & POLLIN))
				continue;
			fd = accept4(tl->fd[k], NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				if (tcp_set_sock_opts(fd)) {
					close(fd);
				} else {
					struct tcp_pending *p;

					if (tl->npend == TCP_PENDING_MAX)
						pend_evict(tl);
					p = &tl->pend[tl->npend++];
					memset(p, 0, sizeof(*p));
					p->fd = fd;
					p->deadline = rt_now_ms() + hello_ms;
				}
			} else if (errno != EAGAIN && errno != EINTR) {
				RDMAPS_WARN("tcp: accept failed: %s", strerror(errno));
			}
		}
	}
}

/* The same in two halves, for a server that must not wait on one client
 * (the ps: rt_accept_grant_start).  The start sends our set-up reply; the
 * poll looks (MSG_PEEK, never waiting) for the client's whole answer and
 * only then reads it, so a client that stops half-way costs the server
 * nothing but its sockets until RT_HANDSHAKE_MS has passed. */
struct tcp_hs {
	int fd_ops, fd_serve;
	uint64_t deadline;
};

static int tcp_accept_start(struct rt_request *req, const struct rt_grant *g, int n,
			    struct rt_conn *conn)
{
	struct tcp_request *r = req->backend;
	uint64_t deadline = rt_handshake_deadline(req->ctx, RT_HANDSHAKE_MS);
	uint8_t table[RT_TABLE_MAX_LEN];
	struct tcp_hs *hs = NULL;
	size_t tlen = 0;
	int rc;

	rc = rt_grants_to_local(conn, g, n);
	if (!rc)
		rc = encode_my_table(conn, table, &tlen);
	if (rc) {
		send_setup(r->fd_ops, RDMAPS_E_REFUSED, NULL, 0, deadline);
		goto err;
	}
	hs = malloc(sizeof(*hs));
	if (!hs) {
		RDMAPS_ERR("tcp: out of memory for a connection");
		send_setup(r->fd_ops, RDMAPS_E_REFUSED, NULL, 0, deadline);
		rc = RDMAPS_E_NOMEM;
		goto err;
	}
	/* 16 bytes and a table of at most 1 KiB on a new socket: its send
	 * buffer takes them at once */
	rc = send_setup(r->fd_ops, 0, table, tlen, deadline);
	if (rc) {
		RDMAPS_ERR("tcp: completing the connection of role %u index %u failed: %s",
			   req->hello.role, req->hello.index, rdmaps_strerror(rc));
		goto err;
	}
	hs->fd_ops = r->fd_ops;
	hs->fd_serve = r->fd_serve;
	hs->deadline = deadline;
	conn->hs = hs;
	free(r);
	req->backend = NULL;
	return RDMAPS_OK;
err:
	free(hs);
	close(r->fd_ops);
	close(r->fd_serve);
	free(r);
	req->backend = NULL;
	return rc;
}

static void hs_close(struct rt_conn *conn)
{
	struct tcp_hs *hs = conn->hs;

	if (!hs)
		return;
	close(hs->fd_ops);
	close(hs->fd_serve);
	free(hs);
	conn->hs = NULL;
}

/* Part of a client's answer is queued: a client that then hung up shows
 * only to poll, since the peek keeps returning those bytes.  0 while it is
 * still connected, else PEER_GONE (FIN) or the reset's status. */
static int hs_hung_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	int err = 0;
	socklen_t len = sizeof(err);

	if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return 0;
	if ((p.revents & POLLERR) && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && err)
		return tcp_errno_status(err);
	return RDMAPS_E_PEER_GONE;
}

static int tcp_accept_poll(struct rt_conn *conn)
{
	struct tcp_hs *hs = conn->hs;
	uint8_t buf[TCP_SETUP_LEN + RT_TABLE_MAX_LEN];
	ssize_t got;
	int32_t st = 0;
	int rc;

	if (!hs)
		return RDMAPS_E_INVAL;
	do
		got = recv(hs->fd_ops, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	if (got == 0) {
		rc = RDMAPS_E_PEER_GONE;
		goto fail;
	}
	if (got < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			rc = tcp_errno_status(errno);
			goto fail;
		}
		got = 0;
	}
	if (got >= TCP_SETUP_LEN) {
		uint32_t tlen;

		rc = setup_header(buf, &st, &tlen);
		if (rc)
			goto fail;
		if ((size_t)got >= TCP_SETUP_LEN + (size_t)tlen)
			goto complete;
	}
	if (got > 0 && (rc = hs_hung_up(hs->fd_ops)))
		goto fail; /* it left with its answer cut short */
	if (rt_now_ms() < hs->deadline)
		return RDMAPS_E_AGAIN;
	rc = RDMAPS_E_TIMEOUT;
	goto fail;
complete:
	/* all of it is there: recv_setup does not wait */
	rc = recv_setup(hs->fd_ops, conn, &st, rt_now_ms() + 100);
	if (!rc && st)
		rc = RDMAPS_E_PROTO;
	if (!rc)
		rc = conn_start(conn, hs->fd_serve, hs->fd_ops);
	if (rc)
		goto fail;
	free(hs);
	conn->hs = NULL;
	return RDMAPS_OK;
fail:
	RDMAPS_ERR("tcp: completing the connection of role %u index %u failed: %s%s",
		   conn->peer_hello.role, conn->peer_hello.index, rdmaps_strerror(rc),
		   rc == RDMAPS_E_TIMEOUT ? " (its grants table did not come within the set-up bound)" : "");
	hs_close(conn);
	return rc;
}

/* Both halves in one call (rt_accept_grant): waits for the client's part,
 * within RT_HANDSHAKE_MS. */
static int tcp_accept_grant(struct rt_request *req, const struct rt_grant *g, int n,
			    struct rt_conn *conn)
{
	int rc = tcp_accept_start(req, g, n, conn);

	if (rc)
		return rc;
	while ((rc = tcp_accept_poll(conn)) == RDMAPS_E_AGAIN) {
		const struct tcp_hs *hs = conn->hs;
		struct pollfd p = { .fd = hs->fd_ops, .events = POLLIN };
		int left = rt_remaining_ms(hs->deadline);

		/* part of the answer may be there already (poll returns at
		 * once): then wait a little instead of spinning on it */
		if (poll(&p, 1, left > 0 ? left : 1) > 0) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	return rc;
}

static void tcp_reject(struct rt_request *req)
{
	struct tcp_request *r = req->backend;

	if (!r)
		return;
	send_setup(r->fd_ops, req->reject_status ? req->reject_status : RDMAPS_E_REFUSED, NULL, 0,
		   rt_now_ms() + 100);
	close(r->fd_ops);
	close(r->fd_serve);
	free(r);
	req->backend = NULL;
}

/* ------------------------------------------------------------ client */

static int connect_one(const struct addrinfo *ai, uint64_t deadline, int *out)
{
	int fd, rc, err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		RDMAPS_ERR("tcp: socket failed: %s", strerror(errno));
		return RDMAPS_E_IO;
	}
	rc = tcp_set_sock_opts(fd);
	if (rc)
		goto err;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			err = errno;
			goto err_errno;
		}
		p.fd = fd;
		p.events = POLLOUT;
		do
			rc = poll(&p, 1, rt_remaining_ms(deadline));
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			rc = RDMAPS_E_TIMEOUT;
			goto err;
		}
		if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) {
			err = errno;
			goto err_errno;
		}
		if (err)
			goto err_errno;
	}
	*out = fd;
	return RDMAPS_OK;
err_errno:
	rc = tcp_errno_status(err);
	if (rc == RDMAPS_E_IO || rc == RDMAPS_E_PEER_GONE)
		rc = err == ECONNRESET ? RDMAPS_E_REFUSED : RDMAPS_E_UNREACHABLE;
err:
	close(fd);
	return rc;
}

/* A name may resolve to several addresses (::1 and 127.0.0.1; one per
 * interface) and the server listens on one of them: try each in turn until
 * one accepts.  Every address but the last gets an equal share of the time
 * left, so one that never answers does not use up the whole wait.  On
 * failure the status is the last address's. */
int tcp_connect_any(const struct addrinfo *ai, uint64_t deadline, int *fd,
		    const struct addrinfo **used)
{
	int n = 0, rc = RDMAPS_E_TIMEOUT;

	for (const struct addrinfo *a = ai; a; a = a->ai_next)
		n++;
	for (int i = 0; ai; ai = ai->ai_next, i++) {
		uint64_t now = rt_now_ms(), sub = deadline;

		if (now >= deadline)
			return RDMAPS_E_TIMEOUT;
		if (i < n - 1)
			sub = now + (deadline - now) / (uint64_t)(n - i);
		rc = connect_one(ai, sub, fd);
		if (!rc) {
			*used = ai;
			return RDMAPS_OK;
		}
		if (ai->ai_next)
			RDMAPS_DBG("tcp: address %d of %d failed (%s); trying the next", i + 1, n,
				   rdmaps_strerror(rc));
	}
	return rc;
}

static int tcp_connect(struct rt_ctx *ctx, const char *host, uint16_t port,
		       const struct rt_hello *hello, const struct rt_grant *g, int n,
		       int timeout_ms, struct rt_conn *conn)
{
	uint64_t deadline = rt_now_ms() + (uint64_t)timeout_ms;
	struct addrinfo *ai = NULL;
	const struct addrinfo *addr = NULL;
	struct tcp_hello th;
	uint8_t hb[TCP_HELLO_LEN], table[RT_TABLE_MAX_LEN];
	size_t tlen = 0;
	int fa = -1, fb = -1, rc;
	int32_t st = 0;

	rc = rt_grants_to_local(conn, g, n);
	if (!rc)
		rc = encode_my_table(conn, table, &tlen);
	if (rc)
		return rc;
	rc = resolve(host, port, 0, &ai);
	if (rc)
		return rc;
	memset(&th, 0, sizeof(th));
	th.h = *hello;
	th.token_len = (uint32_t)ctx->token_len;
	memcpy(th.token, ctx->token, ctx->token_len);
	if (getrandom(&th.nonce, sizeof(th.nonce), 0) != sizeof(th.nonce))
		th.nonce = rt_now_ms() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)conn;
	rc = tcp_connect_any(ai, deadline, &fa, &addr);
	if (rc)
		goto err;
	th.channel = TCP_CH_OPS;
	tcp_hello_encode(&th, hb);
	rc = tcp_send_all(fa, hb, sizeof(hb), deadline);
	if (rc)
		goto err;
	rc = connect_one(addr, deadline, &fb); /* where the first one got in */
	if (rc)
		goto err;
	th.channel = TCP_CH_SERVE;
	tcp_hello_encode(&th, hb);
	rc = tcp_send_all(fb, hb, sizeof(hb), deadline);
	if (rc)
		goto err;
	rc = recv_setup(fa, conn, &st, deadline);
	if (!rc && st)
		rc = st == RDMAPS_E_AUTH || st == RDMAPS_E_REFUSED || st == RDMAPS_E_IN_USE || st == RDMAPS_E_MISMATCH
		     ? st : RDMAPS_E_PROTO;
	if (rc)
		goto err;
	rc = send_setup(fa, 0, table, tlen, deadline);
	if (rc)
		goto err;
	rc = conn_start(conn, fa, fb);
	if (rc)
		goto err;
	freeaddrinfo(ai);
	return RDMAPS_OK;
err:
	if (rt_connect_caller_reports(rc))
		/* a peer that is not up (yet), or that said why it refused us:
		 * the caller decides whether to retry, and reports it (one
		 * line per attempt is noise) */
		RDMAPS_DBG("tcp: connect to %s:%u failed: %s", host, port, rdmaps_strerror(rc));
	else
		RDMAPS_ERR("tcp: connect to %s:%u failed: %s", host, port, rdmaps_strerror(rc));
	rt_conn_set_err(conn, "tcp: connect to %s:%u failed: %s", host, port,
			rdmaps_strerror(rc));
	if (fb >= 0)
		close(fb);
	if (fa >= 0)
		close(fa);
	freeaddrinfo(ai);
	return rc;
}

static void tcp_conn_fini(struct rt_conn *c)
{
	struct tcp_conn *t = c->backend;

	hs_close(c);
	if (!t)
		return;
	tcp_serve_remove(c->ctx, t->srv);  /* closes the serve socket later */
	close(t->ofd);
	free(t);
	c->backend = NULL;
}

const struct rt_ops rt_tcp_ops = {
	.name = "tcp",
	/* tcp_serve.c: a WRITE's payload is received into the region before the
	 * next request of that connection is read; atomics are SEQ_CST */
	.caps = RT_CAP_ORDERED_PLACEMENT | RT_CAP_TARGET_WAKE | RT_CAP_ATOMIC_GLOBAL,
	.ctx_init = tcp_ctx_init,
	.ctx_fini = tcp_ctx_fini,
	.listen = tcp_listen,
	.listener_fini = tcp_listener_fini,
	.accept = tcp_accept,
	.accept_grant = tcp_accept_grant,
	.accept_start = tcp_accept_start,
	.accept_poll = tcp_accept_poll,
	.reject = tcp_reject,
	.connect = tcp_connect,
	.conn_fini = tcp_conn_fini,
	.post = tcp_post,
	.poll = tcp_poll,
	.flush = tcp_flush,
	.target_events = tcp_target_events,
	.wait_target = tcp_wait_target,
	.expect_reads = tcp_expect_reads,
};
