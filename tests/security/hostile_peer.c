/* hostile_peer: TCP peers that try to stall a real ps (`rdmaps --job_name=ps`)
 * without breaking any rule the ps checks, each found by the network review
 * (docs/hardening.md, "Hostile TCP peers").  Started by
 * tests/security/security.sh next to two honest workers.  TCP: it speaks
 * the wire format of docs/transport.md on plain sockets (encoders from
 * tcp_internal.h) where it must misbehave; stall_rdma speaks rdma_cm and
 * verbs directly (the hello of verbs_internal.h).
 *
 * usage:
 *   hostile_peer stall HOST:PORT NWORKERS INDEX OBSERVER TOKEN_FILE|-
 *     A half handshake as worker INDEX: both hellos, read the ps's set-up
 *     reply, never send our own table.  Prints how long the ps kept the
 *     half-open connection ("HOSTILE stall: ps closed it after S s").
 *   hostile_peer stall_rdma HOST:PORT NWORKERS INDEX OBSERVER TOKEN_FILE|-
 *     The same over rdma_cm (the observer over verbs too): connect as worker
 *     INDEX with a valid hello, take ESTABLISHED and the ps's grants table
 *     (a RECV is posted for it), never SEND our own table.  Prints the same
 *     lines; "closed" = the ps's DISCONNECTED arrived.
 *   hostile_peer dup HOST:PORT NWORKERS INDEX OBSERVER TOKEN_FILE|-
 *     A child process connects as worker INDEX through the rt library and
 *     stops itself (SIGSTOP): its connection stays open and answers
 *     nothing, as a stopped worker's; then the honest connection below for
 *     the same index, which the ps must take without holding training
 *     while it checks the first (tcp).
 *   hostile_peer ring HOST:PORT NWORKERS INDEX OBSERVER TOKEN_FILE|-
 *     A full handshake as worker INDEX, then up to 600 "pushes" (a slot header of
 *     kind 99, which the ps ignores but releases, and a FETCH_ADD on
 *     ready_seq[INDEX]) while never reading the socket that carries the ps's
 *     mailbox WRITEs: the ps's send ring to us fills up.
 *   hostile_peer flood HOST:PORT NCONN SECS
 *     Holds NCONN plain TCP connections that send nothing (reopening any the
 *     ps closes) for SECS s; no token, no hash.  Prints how many the ps
 *     closed and when it closed the first.
 *
 * stall and ring also connect, through the rt library, an honest observer as
 * worker OBSERVER that READs the parameters' current_version every 50 ms
 * while the honest workers train, and prints the longest time the version
 * did not move during the attack ("HOSTILE observer: longest stall S s").
 * After the attack both connect honestly as worker INDEX, which must be
 * accepted (the index is free again: the rejoin path).
 * Exit 0 when the attack ran and that connection was accepted (the rest of
 * the verdict is the driver's: it compares the printed times), 1 otherwise,
 * 2 on bad arguments.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "ps/layout.h"
#include "rdma/tcp_internal.h"
#include "rdma/verbs_internal.h"

static char host[256];
static uint16_t port;
static char token[RT_TOKEN_MAX + 1];

/* ---- plain sockets --------------------------------------------------- */

static int raw_connect(int nonblock)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char serv[8];
	int fd;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd >= 0) /* small frames go out at once (as the rt library's) */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static int send_all(int fd, const void *b, size_t n)
{
	const uint8_t *p = b;
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Receive n bytes within tmo_ms; 0 ok, -1 closed or error, -2 timeout. */
static int recv_all(int fd, void *b, size_t n, int tmo_ms)
{
	uint8_t *p = b;
	double end = rdmaps_now() + tmo_ms / 1000.0;
	while (n) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int left = (int)((end - rdmaps_now()) * 1000);
		if (left <= 0)
			return -2;
		if (poll(&pf, 1, left) == 0)
			return -2;
		ssize_t k = recv(fd, p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int send_hello(int fd, int channel, uint32_t index, uint64_t hash, uint64_t nonce)
{
	struct tcp_hello th;
	uint8_t b[TCP_HELLO_LEN];

	memset(&th, 0, sizeof(th));
	th.channel = (uint8_t)channel;
	th.h.role = RDMAPS_ROLE_WORKER;
	th.h.index = index;
	th.h.layout_hash = hash;
	th.nonce = nonce;
	th.token_len = (uint32_t)strlen(token);
	memcpy(th.token, token, th.token_len);
	tcp_hello_encode(&th, b);
	return send_all(fd, b, sizeof(b));
}

/* Both hellos, then the ps's set-up reply (status and table skipped). */
static int half_handshake(uint32_t index, uint64_t hash, int *fa, int *fb, int32_t *st)
{
	uint8_t h[TCP_SETUP_LEN], table[RT_TABLE_MAX_LEN];
	uint64_t nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)(rdmaps_now() * 1e6);

	*fa = raw_connect(0);
	if (*fa < 0 || send_hello(*fa, TCP_CH_OPS, index, hash, nonce))
		return -1;
	*fb = raw_connect(0);
	if (*fb < 0 || send_hello(*fb, TCP_CH_SERVE, index, hash, nonce))
		return -1;
	if (recv_all(*fa, h, sizeof(h), 20000))
		return -1;
	*st = (int32_t)rt_get32(h + 8);
	uint32_t tlen = rt_get32(h + 12);
	if (tlen > sizeof(table) || recv_all(*fa, table, tlen, 20000))
		return -1;
	return 0;
}

/* ---- the observer: an honest connection through the rt library ---------- */

struct observer {
	struct rt_ctx *ctx;
	struct rt_conn *c;
	uint64_t *mbox, *buf, *mbox2;
	pthread_t thr;
	int stop;            /* __atomic */
	double maxgap;       /* longest time current_version stood still */
	double gap_at;       /* when that stall began (obs_since clock) */
	double maxrtt, rtt_at; /* longest READ round trip, and when it began: a
	                        * slow READ counts in the stall (its value may
	                        * be as old as its start), this tells them apart */
	uint64_t v0, v1;
	int err;
};

/* Seconds since the observer started: the clock of every HOSTILE line that
 * says "+T s", so that the longest stall can be placed among the phases
 * of the attack (security.sh prints them). */
static double obs_origin;
static double obs_since(void)
{
	return rdmaps_now() - obs_origin;
}

static int obs_version(struct observer *o, uint64_t *v)
{
	struct rt_completion c;
	int rc = rt_read(o->c, 1, 0, G_PS_PARAMS, offsetof(struct rdmaps_params_hdr, current_version), 8, 1,
			 RT_F_SIGNALED);
	if (rc)
		return rc;
	rc = rt_poll(o->c, &c, 1, 30000);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return RDMAPS_E_TIMEOUT;
	if (c.status)
		return c.status;
	*v = *o->buf;
	return 0;
}

static void *obs_run(void *arg)
{
	struct observer *o = arg;
	uint64_t last;
	double changed = rdmaps_now();

	if ((o->err = obs_version(o, &last)))
		return NULL;
	o->v0 = last;
	while (!__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) {
		uint64_t v;
		usleep(50000);
		double issued = rdmaps_now();
		if ((o->err = obs_version(o, &v)))
			return NULL;
		double now = rdmaps_now();
		if (now - issued > o->maxrtt) {
			o->maxrtt = now - issued;
			o->rtt_at = issued - obs_origin;
		}
		if (v != last) {
			last = v;
			changed = now;
		}
		if (now - changed > o->maxgap) {
			o->maxgap = now - changed;
			o->gap_at = changed - obs_origin;
		}
	}
	o->v1 = last;
	return NULL;
}

static int obs_start(struct observer *o, uint32_t index, uint64_t hash, enum rt_kind kind)
{
	struct rt_ctx_cfg cc = { .kind = kind, .bind_host = host, .timeout_ms = 30000, .auth_token = token,
				 .numa_node = -1 };
	struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER, .index = index, .layout_hash = hash };
	int rc;

	memset(o, 0, sizeof(*o));
	if ((rc = rt_ctx_new(&cc, &o->ctx)))
		goto err;
	o->mbox = rt_alloc(o->ctx, 64);
	o->buf = rt_alloc(o->ctx, 64);
	o->mbox2 = rt_alloc(o->ctx, 64); /* for the honest connection after the attack */
	if (!o->mbox || !o->buf) {
		rc = RDMAPS_E_NOMEM;
		goto err;
	}
	struct rt_grant g[2] = { { G_W_MAILBOX, o->mbox, 64, RT_RIGHT_WRITE }, { 1, o->buf, 64, RT_RIGHT_NONE } };
	if ((rc = rt_connect(o->ctx, host, port, &hello, g, 2, 20000, &o->c)))
		goto err;
	/* the parameters must be live: the honest workers train */
	for (int t = 0;; t++) {
		struct rt_completion c;
		rc = rt_read(o->c, 1, 0, G_PS_PARAMS, offsetof(struct rdmaps_params_hdr, state), 8, 2, RT_F_SIGNALED);
		if (!rc)
			rc = rt_poll(o->c, &c, 1, 20000) == 1 ? c.status : RDMAPS_E_TIMEOUT;
		if (rc)
			goto err;
		if (*o->buf == PARAMS_STATE_READY)
			break;
		if (t > 600) {
			rc = RDMAPS_E_TIMEOUT;
			goto err;
		}
		usleep(100000);
	}
	obs_origin = rdmaps_now();
	if (pthread_create(&o->thr, NULL, obs_run, o)) {
		rc = RDMAPS_E_NOMEM;
		goto err;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		printf("HOSTILE observer: connected as worker %u, parameters live; +0 s = %.3f (unix time)\n",
		       index, (double)ts.tv_sec + ts.tv_nsec / 1e9);
	}
	fflush(stdout);
	return 0;
err:
	fprintf(stderr, "hostile_peer: observer: %s\n", rdmaps_strerror(rc));
	return 1;
}

static int obs_finish(struct observer *o)
{
	__atomic_store_n(&o->stop, 1, __ATOMIC_RELEASE);
	pthread_join(o->thr, NULL);
	if (o->err)
		printf("HOSTILE observer: READ failed: %s\n", rdmaps_strerror(o->err));
	else
		printf("HOSTILE observer: versions %llu -> %llu; longest READ %.3f s from +%.2f s; "
		       "from +%.2f s to +%.2f s: longest stall %.2f s\n",
		       (unsigned long long)o->v0, (unsigned long long)o->v1, o->maxrtt, o->rtt_at, o->gap_at,
		       o->gap_at + o->maxgap, o->maxgap);
	fflush(stdout);
	rt_conn_delete(&o->c);
	rt_free(o->ctx, o->mbox, 64);
	rt_free(o->ctx, o->buf, 64);
	if (o->mbox2)
		rt_free(o->ctx, o->mbox2, 64);
	rt_ctx_delete(&o->ctx);
	return o->err ? 1 : 0;
}

/* ---- the attacks ----------------------------------------------------- */

static int do_stall(uint32_t index, uint64_t hash)
{
	int fa = -1, fb = -1;
	int32_t st = 0;
	double t0 = rdmaps_now();
	uint8_t x;

	if (half_handshake(index, hash, &fa, &fb, &st)) {
		fprintf(stderr, "hostile_peer: stall: handshake failed\n");
		return 1;
	}
	printf("HOSTILE stall: ps answered set-up status %d after %.2f s; now silent\n", st, rdmaps_now() - t0);
	fflush(stdout);
	t0 = rdmaps_now();
	int r = recv_all(fa, &x, 1, 20000);
	printf("HOSTILE stall: ps %s after %.2f s\n", r == -2 ? "still holds it" : "closed it", rdmaps_now() - t0);
	close(fa);
	close(fb);
	sleep(1); /* let the observer see the ps go on */
	return 0;
}

/* A half set-up over rdma_cm: everything an honest client does up to
 * ESTABLISHED (its RECV for the ps's table posted), then silence. */
static int do_stall_rdma(uint32_t index, uint64_t hash)
{
	struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER, .index = index, .layout_hash = hash };
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct rdma_cm_event *ev = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL;
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr qa;
	uint8_t priv[VERBS_HELLO_LEN];
	char serv[8];
	void *buf = NULL;
	int rc = 1, qp = 0, connected = 0;
	double t0 = rdmaps_now();

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai)) {
		fprintf(stderr, "hostile_peer: stall_rdma: cannot resolve %s\n", host);
		return 1;
	}
	if (!(ch = rdma_create_event_channel()) || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "hostile_peer: stall_rdma: rdma_cm: %s\n", strerror(errno));
		goto out;
	}
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 5000) ||
	    verbs_cm_wait(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 10000, 0, &ev))
		goto cm_failed;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 5000) || verbs_cm_wait(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 10000, 0, &ev))
		goto cm_failed;
	rdma_ack_cm_event(ev);
	buf = aligned_alloc(64, VERBS_CTRL_BYTES);
	if (!buf || !(pd = ibv_alloc_pd(id->verbs)) || !(cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0)) ||
	    !(mr = ibv_reg_mr(pd, buf, VERBS_CTRL_BYTES, IBV_ACCESS_LOCAL_WRITE))) {
		fprintf(stderr, "hostile_peer: stall_rdma: verbs resources: %s\n", strerror(errno));
		goto out;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &qa)) {
		fprintf(stderr, "hostile_peer: stall_rdma: rdma_create_qp: %s\n", strerror(errno));
		goto out;
	}
	qp = 1;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = VERBS_CTRL_BYTES, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	if (ibv_post_recv(id->qp, &rw, &bad)) {
		fprintf(stderr, "hostile_peer: stall_rdma: ibv_post_recv failed\n");
		goto out;
	}
	verbs_hello_encode(priv, &hello, token, strlen(token));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = priv;
	cp.private_data_len = sizeof(priv);
	cp.retry_count = cp.rnr_retry_count = 7;
	if (rdma_connect(id, &cp) || verbs_cm_wait(ch, RDMA_CM_EVENT_ESTABLISHED, 20000, 0, &ev))
		goto cm_failed;
	rdma_ack_cm_event(ev);
	connected = 1;
	printf("HOSTILE stall: ps accepted the rdma_cm connection after %.2f s; now silent\n", rdmaps_now() - t0);
	fflush(stdout);
	t0 = rdmaps_now();
	/* the ps ends the set-up with a disconnect */
	int r = verbs_cm_wait(ch, RDMA_CM_EVENT_DISCONNECTED, 20000, 1, &ev);
	if (!r)
		rdma_ack_cm_event(ev);
	struct ibv_wc wc;
	int got = ibv_poll_cq(cq, 1, &wc);
	printf("HOSTILE stall: its grants table %s\n", got == 1 && wc.status == IBV_WC_SUCCESS ? "arrived"
	       : "did not arrive");
	printf("HOSTILE stall: ps %s after %.2f s\n", r == RDMAPS_E_TIMEOUT ? "still holds it" : "closed it",
	       rdmaps_now() - t0);
	fflush(stdout);
	sleep(1); /* let the observer see the ps go on */
	rc = 0;
	goto out;
cm_failed:
	fprintf(stderr, "hostile_peer: stall_rdma: rdma_cm set-up failed (%s)\n", strerror(errno));
out:
	if (connected)
		rdma_disconnect(id);
	if (qp)
		rdma_destroy_qp(id);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
	free(buf);
	freeaddrinfo(ai);
	return rc;
}

/* dup: the child is forked before any thread exists; it connects when
 * told (dup_go), then stops itself. */
static pid_t dup_pid = -1;
static int dup_go[2] = { -1, -1 }, dup_ok[2] = { -1, -1 };

static void dup_child(uint32_t index, uint64_t hash)
{
	struct rt_ctx_cfg cc = { .kind = RT_TCP, .bind_host = host, .timeout_ms = 30000, .auth_token = token,
				 .numa_node = -1 };
	struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER, .index = index, .layout_hash = hash };
	struct rt_ctx *ctx = NULL;
	struct rt_conn *c = NULL;
	uint64_t *mbox = NULL;
	char x;
	int rc;

	if (read(dup_go[0], &x, 1) != 1)
		_exit(1);
	rc = rt_ctx_new(&cc, &ctx);
	if (!rc && !(mbox = rt_alloc(ctx, 64)))
		rc = RDMAPS_E_NOMEM;
	if (!rc) {
		struct rt_grant g[1] = { { G_W_MAILBOX, mbox, 64, RT_RIGHT_WRITE } };
		rc = rt_connect(ctx, host, port, &hello, g, 1, 20000, &c);
	}
	if (rc) {
		fprintf(stderr, "hostile_peer: dup: %s\n", rdmaps_strerror(rc));
		_exit(1);
	}
	x = 1;
	if (write(dup_ok[1], &x, 1) != 1)
		_exit(1);
	raise(SIGSTOP); /* every thread: nothing of ours answers from here on */
	_exit(0);
}

static int dup_fork(uint32_t index, uint64_t hash)
{
	if (pipe(dup_go) || pipe(dup_ok))
		return 1;
	dup_pid = fork();
	if (dup_pid < 0)
		return 1;
	if (dup_pid == 0)
		dup_child(index, hash);
	return 0;
}

static int do_dup(uint32_t index)
{
	struct pollfd p = { .fd = dup_ok[0], .events = POLLIN };
	int st;
	char x = 1;

	if (write(dup_go[1], &x, 1) != 1 || poll(&p, 1, 30000) != 1 || read(dup_ok[0], &x, 1) != 1 ||
	    waitpid(dup_pid, &st, WUNTRACED) != dup_pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "hostile_peer: dup: the child did not connect and stop\n");
		return 1;
	}
	printf("HOSTILE dup: a stopped process holds a connection as worker %u\n", index);
	fflush(stdout);
	usleep(300000);
	return 0;
}

static void dup_close(void)
{
	if (dup_pid > 0) {
		kill(dup_pid, SIGKILL);
		waitpid(dup_pid, NULL, 0);
		dup_pid = -1;
	}
}

static int do_ring(uint32_t index, uint64_t hash)
{
	int fa = -1, fb = -1, pushes = 0;
	int32_t st = 0;
	uint8_t h[TCP_SETUP_LEN] = { 0 }, table[RT_TABLE_MAX_LEN], fr[TCP_FRAME_LEN];
	size_t tlen = 0;
	struct rt_remote mine = { G_W_MAILBOX, 0x10000, 64, 0, RT_RIGHT_WRITE };
	double t0 = rdmaps_now(), tdrop = 0;

	if (half_handshake(index, hash, &fa, &fb, &st) || st) {
		fprintf(stderr, "hostile_peer: ring: handshake failed (status %d)\n", st);
		return 1;
	}
	rt_desc_table_encode(&mine, 1, table, sizeof(table), &tlen);
	rt_put32(h, TCP_SETUP_MAGIC);
	rt_put16(h + 4, 1);
	rt_put32(h + 12, (uint32_t)tlen);
	if (send_all(fa, h, sizeof(h)) || send_all(fa, table, tlen)) {
		fprintf(stderr, "hostile_peer: ring: sending the table failed\n");
		return 1;
	}
	printf("HOSTILE ring: connected as worker %u at +%.2f s; its serve socket is never read\n", index,
	       obs_since());
	fflush(stdout);
	for (int k = 1; k <= 600 && !tdrop; k++) {
		struct rdmaps_slot_hdr sh = { .seq = (uint64_t)k, .kind = 99, .worker = index };
		struct tcp_frame w = { .op = RT_OP_WRITE, .flags = TCP_FL_REPLY, .rid = G_PS_SLOT, .seq = 2u * k,
				       .len = sizeof(sh) };
		struct tcp_frame f = { .op = RT_OP_FETCH_ADD, .flags = TCP_FL_REPLY, .rid = G_PS_COUNTERS,
				       .seq = 2u * k + 1, .roff = (uint64_t)index * 8, .len = 8, .a = 1 };
		uint8_t wb[TCP_FRAME_LEN];
		tcp_frame_encode(&w, wb);
		tcp_frame_encode(&f, fr);
		if (send_all(fa, wb, sizeof(wb)) || send_all(fa, &sh, sizeof(sh)) || recv_all(fa, wb, sizeof(wb), 20000) ||
		    send_all(fa, fr, sizeof(fr)) || recv_all(fa, fr, sizeof(fr), 20000)) {
			tdrop = rdmaps_now() - t0;
			break;
		}
		pushes = k;
		usleep(2000);
	}
	printf("HOSTILE ring: %d pushes in %.2f s%s (+%.2f s)\n", pushes, rdmaps_now() - t0,
	       tdrop ? " (then the ps closed the connection)" : "", obs_since());
	fflush(stdout);
	if (!tdrop) {
		/* hold, still never reading fb, until the ps closes fa */
		uint8_t x;
		int r = recv_all(fa, &x, 1, 12000);
		printf("HOSTILE ring: ps %s %.2f s after the start (+%.2f s)\n", r == -2 ? "still holds the connection"
		       : "closed the connection", rdmaps_now() - t0, obs_since());
	}
	close(fa);
	close(fb);
	sleep(1);
	return 0;
}

static int do_flood(int n, double secs)
{
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	int opened = 0, closed = 0;
	double t0 = rdmaps_now(), first = -1;

	if (!p)
		return 1;
	for (int i = 0; i < n; i++) {
		p[i].fd = raw_connect(1);
		p[i].events = POLLIN;
		opened += p[i].fd >= 0;
	}
	printf("HOSTILE flood: %d idle connections open\n", opened);
	fflush(stdout);
	while (rdmaps_now() - t0 < secs) {
		if (poll(p, (nfds_t)n, 200) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			uint8_t b[64];
			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			ssize_t k = recv(p[i].fd, b, sizeof(b), MSG_DONTWAIT);
			if (k > 0 || (k < 0 && errno == EAGAIN && !(p[i].revents & (POLLERR | POLLHUP))))
				continue;
			close(p[i].fd);
			if (first < 0)
				first = rdmaps_now() - t0;
			closed++;
			p[i].fd = raw_connect(1); /* reopen: keep the pressure */
			opened += p[i].fd >= 0;
		}
	}
	printf("HOSTILE flood: %d opened, %d closed by the ps (the first after %.2f s)\n", opened, closed, first);
	for (int i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdmaps_job j;
	struct rdmaps_layout L;
	struct observer o;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || rdmaps_split_hostport(argv[2], host, sizeof(host), &port))
		goto usage;
	rdmaps_log_set_tag("hostile");
	if (!strcmp(argv[1], "flood")) {
		if (argc != 5)
			goto usage;
		return do_flood(atoi(argv[3]), atof(argv[4]));
	}
	int rdma = !strcmp(argv[1], "stall_rdma"), dup = !strcmp(argv[1], "dup");
	if (argc != 7 || (strcmp(argv[1], "stall") && strcmp(argv[1], "ring") && !rdma && !dup))
		goto usage;
	if (strcmp(argv[6], "-")) {
		char err[160];
		if (rdmaps_read_token_file(argv[6], token, sizeof(token), err, sizeof(err))) {
			fprintf(stderr, "hostile_peer: %s: %s\n", argv[6], err);
			return 2;
		}
	}
	rdmaps_job_defaults(&j);
	j.nps = 1;
	j.nworkers = atoi(argv[3]);
	if (j.nworkers < 2) /* the layout asks nothing else of the job */
		goto usage;
	if ((rc = rdmaps_layout_new(&j, 1, &L))) {
		fprintf(stderr, "hostile_peer: layout: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	uint64_t hash = rdmaps_hello_hash(&L, 0); /* its one ps */
	rdmaps_layout_free(&L);
	if (dup && dup_fork((uint32_t)atoi(argv[4]), hash)) {
		fprintf(stderr, "hostile_peer: dup: fork failed: %s\n", strerror(errno));
		return 1;
	}
	if (obs_start(&o, (uint32_t)atoi(argv[5]), hash, rdma ? RT_RDMA : RT_TCP)) {
		dup_close();
		return 1;
	}
	sleep(1); /* a baseline for the observer */
	printf("HOSTILE %s: the attack starts at +%.2f s\n", argv[1], obs_since());
	rc = rdma ? do_stall_rdma((uint32_t)atoi(argv[4]), hash)
		  : dup ? do_dup((uint32_t)atoi(argv[4]))
		  : !strcmp(argv[1], "stall") ? do_stall((uint32_t)atoi(argv[4]), hash)
					      : do_ring((uint32_t)atoi(argv[4]), hash);
	if (!rc) {
		/* the index the ps dropped (or timed out) is free again: an honest
		 * worker restarted with it must get in (the rejoin path) */
		struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER, .index = (uint32_t)atoi(argv[4]), .layout_hash = hash };
		struct rt_grant g[1] = { { G_W_MAILBOX, o.mbox2, 64, RT_RIGHT_WRITE } };
		struct rt_conn *c = NULL;
		double t0 = rdmaps_now();
		int crc = o.mbox2 ? rt_connect(o.ctx, host, port, &hello, g, 1, 10000, &c) : RDMAPS_E_NOMEM;
		printf("HOSTILE %s: then an honest connection as worker %s: %s after %.2f s (+%.2f s)\n", argv[1],
		       argv[4], crc ? rdmaps_strerror(crc) : "accepted", rdmaps_now() - t0, obs_since());
		rt_conn_delete(&c);
		rc = crc != 0;
	}
	dup_close();
	return obs_finish(&o) | rc;
usage:
	fprintf(stderr, "usage: hostile_peer stall|stall_rdma|dup|ring HOST:PORT NWORKERS INDEX OBSERVER TOKEN_FILE|-\n"
			"       hostile_peer flood HOST:PORT NCONN SECS\n");
	return 2;
}
