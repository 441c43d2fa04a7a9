/* transport_suite: one integration suite for every backend.
 *   transport_suite tcp|rdma [address]      (default address 127.0.0.1)
 * Forks a target process (grants below), 4 fetch-add peers and a victim
 * target that gets SIGKILLed, then checks, from the parent:
 *   read/write correctness 1 B .. 16 MiB, fetch-add from 4 peers sums
 *   exactly, cmp-swap success/failure, bounds/rights violations (caught
 *   locally and - by forging the peer's table - at the target) while the
 *   target keeps serving, wrong auth token, closed port, killed peer,
 *   connections the target deletes while their peer keeps it busy.
 * rdma: exits 77 (SKIPPED) when rt_ctx_new(RT_RDMA) says RDMAPS_E_NODEV. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdma/rt.h"
#include "rdma/rt_internal.h"   /* to forge a peer table (target-side checks) */
#include "rdma/tcp_internal.h"  /* to inject a malformed frame (TCP only) */

#define BIG (16u << 20)
#define BIG_ALLOC (BIG + 4096)
#define SMALL 4096
#define TOKEN "s3cret-token"
#define NADDERS 4
#define ADDS_PER_PEER 2000
#define ADDS_LOCAL 5000
#define TMO 10000

enum { G_BIG = 0, G_CNT = 1, G_RO = 2, G_WO = 3 };
enum { L_BUF = 0, L_RES = 1 };

static enum rt_kind g_kind;
static const char *g_addr = "127.0.0.1";
static int g_fail;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                           \
			fprintf(stderr, "\n");                                  \
			g_fail++;                                               \
			return -1;                                              \
		}                                                               \
	} while (0)

/* Allocation counter (linked with --wrap=malloc/calloc/realloc): the
 * hot path (post + poll) must not allocate, in any thread of this process. */
static unsigned long g_allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { __atomic_fetch_add(&g_allocs, 1, __ATOMIC_RELAXED); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { __atomic_fetch_add(&g_allocs, 1, __ATOMIC_RELAXED); return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { __atomic_fetch_add(&g_allocs, 1, __ATOMIC_RELAXED); return __real_realloc(p, n); }

/* Test hook (--wrap=recv, this binary only): while g_slow_serve is set,
 * the TCP progress thread ("rt-progress") sleeps 1 ms before each recv(),
 * i.e. inside its epoll batch, just before it looks up the grants of the
 * request it reads.  t_churn's target sets it while it deletes
 * connections under load, so that the deletion lands inside a batch. */
static int g_slow_serve;
ssize_t __real_recv(int fd, void *buf, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t n, int flags)
{
	char name[16];

	if (__atomic_load_n(&g_slow_serve, __ATOMIC_RELAXED) &&
	    !pthread_getname_np(pthread_self(), name, sizeof(name)) && !strcmp(name, "rt-progress"))
		usleep(1000);
	return __real_recv(fd, buf, n, flags);
}

static int sock_addr(uint16_t port, struct sockaddr_storage *ss, socklen_t *len);

static uint8_t pat(size_t i, unsigned seed) { return (uint8_t)(i * 7u + seed * 13u + 3u); }

/* RDMAPS_TEST_TCP_PROGRESS=caller: every context of the suite (targets,
 * peers) with cfg.progress = RT_PROGRESS_CALLER (ctest transport_tcp_caller):
 * no progress thread; the target serves inside its own loop's waits. */
static int caller_progress(void)
{
	const char *p = getenv("RDMAPS_TEST_TCP_PROGRESS");

	return p && !strcmp(p, "caller");
}

static struct rt_ctx *mkctx(const char *token)
{
	/* RDMAPS_TEST_TCP_SPIN_US: the same suite with cfg.tcp_spin_us set
	 * (ctest transport_tcp_spin) */
	const char *spin = getenv("RDMAPS_TEST_TCP_SPIN_US");
	struct rt_ctx_cfg cfg = { .kind = g_kind, .bind_host = g_addr, .timeout_ms = TMO,
				  .auth_token = token, .numa_node = -1,
				  .tcp_spin_us = spin ? atoi(spin) : 0,
				  .progress = caller_progress() ? RT_PROGRESS_CALLER : RT_PROGRESS_THREAD };
	struct rt_ctx *ctx = NULL;
	int rc = rt_ctx_new(&cfg, &ctx);

	if (rc) {
		fprintf(stderr, "rt_ctx_new: %s\n", rdmaps_strerror(rc));
		exit(2);
	}
	return ctx;
}

/* ------------------------------------------------------------ target */

struct target_mem {
	uint8_t *big, *cnt, *ro, *wo;
};

static void *local_adder(void *arg)
{
	uint64_t *w = arg;

	for (int i = 0; i < ADDS_LOCAL; i++) {
		__atomic_fetch_add(&w[0], 1, __ATOMIC_SEQ_CST);
		if (i % 64 == 0)
			sched_yield();
	}
	__atomic_store_n(&w[2], 1, __ATOMIC_SEQ_CST); /* local adds done */
	return NULL;
}

#define CHURN_MS 20

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Serve until the control pipe closes.  Writes the port to port_fd. */
static int target_main(int port_fd, int ctrl_fd, int with_adder)
{
	struct rt_ctx *ctx = mkctx(TOKEN);
	struct rt_listener *lst = NULL;
	struct rt_conn *conns[64];
	struct rt_conn *churn = NULL;   /* role 98: deleted CHURN_MS after accept */
	struct timespec churn_t0 = { 0 };
	int nconn = 0, rc, caller = caller_progress() && g_kind == RT_TCP;
	struct target_mem m;
	pthread_t thr;
	uint16_t port;

	rdmaps_log_set_tag("target");
	m.big = rt_alloc(ctx, BIG_ALLOC);
	m.cnt = rt_alloc(ctx, SMALL);
	m.ro = rt_alloc(ctx, SMALL);
	m.wo = rt_alloc(ctx, SMALL);
	if (!m.big || !m.cnt || !m.ro || !m.wo)
		return 2;
	for (size_t i = 0; i < BIG_ALLOC; i++)
		m.big[i] = pat(i, 0);
	for (size_t i = 0; i < SMALL; i++)
		m.ro[i] = pat(i, 1);
	/* local adds beside the peers' FETCH_ADDs only where the transport
	 * promises atomicity against them (RT_CAP_ATOMIC_GLOBAL: tcp; verbs
	 * with IBV_ATOMIC_GLOB, not rxe's IBV_ATOMIC_HCA); else the done word
	 * says 2: skipped, and the sum is the peers' alone */
	if (with_adder && !(rt_ctx_caps(ctx) & RT_CAP_ATOMIC_GLOBAL)) {
		with_adder = 0;
		__atomic_store_n(&((uint64_t *)m.cnt)[2], 2, __ATOMIC_SEQ_CST);
	}
	rc = rt_listen(ctx, g_addr, 0, &lst);
	if (rc) {
		fprintf(stderr, "target: rt_listen: %s\n", rdmaps_strerror(rc));
		return 2;
	}
	port = rt_listener_port(lst);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		return 2;
	close(port_fd);
	if (with_adder && pthread_create(&thr, NULL, local_adder, m.cnt))
		return 2;
	for (;;) {
		struct pollfd p = { .fd = ctrl_fd, .events = POLLIN };
		struct rt_request *req = NULL;
		struct rt_grant g[4] = {
			{ G_BIG, m.big, BIG_ALLOC, RT_RIGHT_READ | RT_RIGHT_WRITE },
			{ G_CNT, m.cnt, SMALL, RT_RIGHT_READ | RT_RIGHT_ATOMIC },
			{ G_RO, m.ro, SMALL, RT_RIGHT_READ },
			{ G_WO, m.wo, SMALL, RT_RIGHT_WRITE },
		};

		if (poll(&p, 1, 0) > 0)
			break; /* parent closed the pipe (or wrote): stop */
		if (churn && ms_since(&churn_t0) >= CHURN_MS) {
			/* the peer is busy on it: the progress thread may be
			 * serving it right now; after this returns nothing may
			 * touch the connection (ASan: its grants are freed) */
			rt_conn_delete(&churn);
			__atomic_store_n(&g_slow_serve, 0, __ATOMIC_RELAXED);
		}
		/* RT_PROGRESS_CALLER: nothing serves the peers unless this
		 * thread waits on the context, so it polls the listener and
		 * serves for up to 2 ms in turn */
		rc = rt_accept(lst, caller ? 0 : churn ? 2 : 50, &req);
		if (rc == RDMAPS_E_TIMEOUT && caller)
			rt_ctx_wait_target(ctx, rt_ctx_target_events(ctx), 2000);
		if (rc == RDMAPS_E_TIMEOUT)
			continue;
		if (rc) {
			fprintf(stderr, "target: rt_accept: %s\n", rdmaps_strerror(rc));
			continue;
		}
		if (nconn == 64 || rt_request_hello(req)->role == 99) {
			/* role 99: the suite's "reject me"; index 2: "... saying
			 * you run another configuration" */
			if (nconn < 64 && rt_request_hello(req)->index == 2)
				rt_reject_status(&req, RDMAPS_E_MISMATCH);
			else
				rt_reject(&req);
			continue;
		}
		if (rt_request_hello(req)->role == 98) {  /* the suite's "drop me soon" */
			if (churn)
				rt_conn_delete(&churn);
			rc = rt_accept_grant(&req, g, 4, &churn);
			if (rc)
				fprintf(stderr, "target: rt_accept_grant: %s\n", rdmaps_strerror(rc));
			clock_gettime(CLOCK_MONOTONIC, &churn_t0);
			__atomic_store_n(&g_slow_serve, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* the ps's way: start, then poll until the client's part is
		 * there (over verbs the start completes it) */
		rc = rt_accept_grant_start(&req, g, 4, &conns[nconn]);
		if (rc) {
			fprintf(stderr, "target: rt_accept_grant_start: %s\n", rdmaps_strerror(rc));
			continue;
		}
		while ((rc = rt_accept_poll(conns[nconn])) == RDMAPS_E_AGAIN) {
			/* not complete yet: no operation may touch it */
			if (rt_read(conns[nconn], G_BIG, 0, 0, 0, 8, 0, 0) != RDMAPS_E_INVAL ||
			    rt_flush(conns[nconn], 0) != RDMAPS_E_INVAL) {
				fprintf(stderr, "target: a connection in its set-up took an operation\n");
				abort();
			}
			usleep(100);
		}
		if (rc) {
			fprintf(stderr, "target: rt_accept_poll: %s\n", rdmaps_strerror(rc));
			rt_conn_delete(&conns[nconn]);
		} else {
			nconn++;
		}
	}
	if (with_adder)
		pthread_join(thr, NULL);
	for (int i = 0; i < nconn; i++)
		rt_conn_delete(&conns[i]);
	rt_conn_delete(&churn);
	rt_listener_delete(&lst);
	rt_ctx_delete(&ctx);
	return 0;
}

static pid_t spawn_target(uint16_t *port, int *ctrl_w, int with_adder)
{
	int pp[2], cp[2];
	pid_t pid;

	if (pipe(pp) || pipe(cp))
		exit(2);
	pid = fork();
	if (pid < 0)
		exit(2);
	if (pid == 0) {
		close(pp[0]);
		close(cp[1]);
		_exit(target_main(pp[1], cp[0], with_adder));
	}
	close(pp[1]);
	close(cp[0]);
	if (read(pp[0], port, sizeof(*port)) != sizeof(*port)) {
		fprintf(stderr, "target did not start\n");
		exit(2);
	}
	close(pp[0]);
	*ctrl_w = cp[1];
	return pid;
}

/* ------------------------------------------------------------ client side */

struct client {
	struct rt_ctx *ctx;
	struct rt_conn *conn;
	uint8_t *buf, *res;
};

static int client_open_role(struct client *c, struct rt_ctx *ctx, uint16_t port, uint32_t role,
			    uint32_t index)
{
	struct rt_hello h = { .role = role, .index = index, .layout_hash = 0x1234 };
	struct rt_grant g[2];
	int rc;

	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	c->buf = rt_alloc(ctx, BIG_ALLOC);
	c->res = rt_alloc(ctx, SMALL);
	if (!c->buf || !c->res)
		return RDMAPS_E_NOMEM;
	g[0] = (struct rt_grant){ L_BUF, c->buf, BIG_ALLOC, RT_RIGHT_NONE };
	g[1] = (struct rt_grant){ L_RES, c->res, SMALL, RT_RIGHT_NONE };
	rc = rt_connect(ctx, g_addr, port, &h, g, 2, TMO, &c->conn);
	return rc;
}

static int client_open(struct client *c, struct rt_ctx *ctx, uint16_t port, uint32_t index)
{
	return client_open_role(c, ctx, port, 1, index);
}

static void client_close(struct client *c)
{
	rt_conn_delete(&c->conn);
	rt_free(c->ctx, c->buf, BIG_ALLOC);
	rt_free(c->ctx, c->res, SMALL);
}

/* Wait for exactly one completion; returns its status. */
static int wait1(struct rt_conn *conn, uint64_t wr_id)
{
	struct rt_completion cmp;
	int n = rt_poll(conn, &cmp, 1, TMO);

	if (n < 0)
		return n;
	if (n == 0)
		return RDMAPS_E_TIMEOUT;
	if (cmp.wr_id != wr_id)
		return RDMAPS_E_PROTO;
	return cmp.status;
}

static int do_read(struct client *c, size_t loff, uint32_t rid, uint64_t roff, size_t len)
{
	int rc = rt_read(c->conn, L_BUF, loff, rid, roff, len, 11, RT_F_SIGNALED);

	return rc ? rc : wait1(c->conn, 11);
}

static int do_write(struct client *c, size_t loff, uint32_t rid, uint64_t roff, size_t len)
{
	int rc = rt_write(c->conn, L_BUF, loff, rid, roff, len, 12, RT_F_SIGNALED);

	return rc ? rc : wait1(c->conn, 12);
}

static int do_fadd(struct client *c, uint64_t roff, uint64_t add, uint64_t *old)
{
	int rc = rt_fetch_add(c->conn, L_RES, 0, G_CNT, roff, add, 13, RT_F_SIGNALED);

	if (!rc)
		rc = wait1(c->conn, 13);
	memcpy(old, c->res, 8);
	return rc;
}

static int do_cas(struct client *c, uint64_t roff, uint64_t exp, uint64_t des, uint64_t *old)
{
	int rc = rt_cmp_swap(c->conn, L_RES, 0, G_CNT, roff, exp, des, 14, RT_F_SIGNALED);

	if (!rc)
		rc = wait1(c->conn, 14);
	memcpy(old, c->res, 8);
	return rc;
}

/* ------------------------------------------------------------ tests */

static int t_pristine_read(struct client *c)
{
	int rc = do_read(c, 0, G_BIG, 0, BIG_ALLOC);

	CHECK(rc == 0, "read: %s", rdmaps_strerror(rc));
	for (size_t i = 0; i < BIG_ALLOC; i++)
		CHECK(c->buf[i] == pat(i, 0), "byte %zu", i);
	return 0;
}

static int t_sizes(struct client *c)
{
	size_t sizes[40];
	int n = 0;

	for (size_t s = 1; s <= BIG; s *= 4)
		sizes[n++] = s;
	size_t odd[] = { 3, 7, 63, 65, 4095, 4097, 65537, 1000003, BIG - 1, BIG + 3 };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		sizes[n++] = odd[i];
	for (int k = 0; k < n; k++) {
		size_t len = sizes[k], roff = (len * 31) % 4093 % (BIG_ALLOC - len + 1);
		size_t loff = (len * 17) % 4091 % (BIG_ALLOC - len + 1);
		unsigned seed = (unsigned)k + 5;
		int rc;

		for (size_t i = 0; i < len; i++)
			c->buf[loff + i] = pat(i, seed);
		rc = do_write(c, loff, G_BIG, roff, len);
		CHECK(rc == 0, "write %zu: %s", len, rdmaps_strerror(rc));
		memset(c->buf, 0, BIG_ALLOC);
		rc = do_read(c, loff, G_BIG, roff, len);
		CHECK(rc == 0, "read %zu: %s", len, rdmaps_strerror(rc));
		for (size_t i = 0; i < len; i++)
			CHECK(c->buf[loff + i] == pat(i, seed), "size %zu byte %zu", len, i);
		CHECK(loff == 0 || c->buf[loff - 1] == 0, "size %zu wrote before dst", len);
		CHECK(loff + len >= BIG_ALLOC || c->buf[loff + len] == 0,
		      "size %zu wrote past dst", len);
	}
	return 0;
}

/* Many unsignaled writes then one signaled read: ordering and flush. */
static int t_pipeline(struct client *c)
{
	int rc, posted = 0;

	for (int i = 0; i < 1000; i++) {
		memset(c->buf + (size_t)i * 64, (uint8_t)i, 64);
		rc = rt_write(c->conn, L_BUF, (size_t)i * 64, G_BIG, (uint64_t)i * 64, 64, 0, 0);
		if (rc == RDMAPS_E_AGAIN) {
			CHECK(rt_flush(c->conn, TMO) == 0, "flush");
			i--;
			continue;
		}
		CHECK(rc == 0, "post %d: %s", i, rdmaps_strerror(rc));
		posted++;
	}
	rc = rt_flush(c->conn, TMO);
	CHECK(rc == 0, "flush: %s", rdmaps_strerror(rc));
	memset(c->buf, 0xee, 64000);
	rc = do_read(c, 0, G_BIG, 0, 64000);
	CHECK(rc == 0, "read: %s", rdmaps_strerror(rc));
	for (int i = 0; i < 1000; i++)
		CHECK(c->buf[(size_t)i * 64 + 63] == (uint8_t)i, "chunk %d", i);
	CHECK(posted == 1000, "posted %d", posted);
	return 0;
}

/* 2000 unsignaled 8 KiB READs (of t_pipeline's chunks), far more than a
 * conn holds at once (tcp: 255; verbs: its send queue): each post waits
 * for room instead of failing, then one flush; every byte arrives.  Read k
 * (of 100 destinations) takes chunks k..k+127.  Until stop 33 tcp
 * returned AGAIN at once when 255 were unanswered: this case failed then
 * in 2 of the 3 tcp suites (at posts 1884 and 1623). */
static int t_read_pipeline(struct client *c)
{
	const size_t base = 1u << 20, len = 8192;
	int rc;

	memset(c->buf + base, 0xee, 100 * len);
	for (int i = 0; i < 2000; i++) {
		size_t k = (size_t)i % 100;

		rc = rt_read(c->conn, L_BUF, base + k * len, G_BIG, (uint64_t)k * 64, len, 0, 0);
		CHECK(rc == 0, "post %d: %s", i, rdmaps_strerror(rc));
	}
	rc = rt_flush(c->conn, TMO);
	CHECK(rc == 0, "flush: %s", rdmaps_strerror(rc));
	for (size_t k = 0; k < 100; k++)
		for (size_t j = 0; j < len / 64; j++)
			CHECK(c->buf[base + k * len + j * 64] == (uint8_t)(k + j) &&
			      c->buf[base + k * len + j * 64 + 63] == (uint8_t)(k + j), "read %zu chunk %zu", k, j);
	return 0;
}

static int t_cas(struct client *c)
{
	uint64_t old = 99, v;
	int rc;

	rc = do_cas(c, 8, 0, 5, &old);
	CHECK(rc == 0 && old == 0, "cas success: rc %d old %llu", rc, (unsigned long long)old);
	rc = do_cas(c, 8, 0, 7, &old);
	CHECK(rc == 0 && old == 5, "cas failure: rc %d old %llu", rc, (unsigned long long)old);
	rc = do_cas(c, 8, 5, 9, &old);
	CHECK(rc == 0 && old == 5, "cas success 2: rc %d old %llu", rc, (unsigned long long)old);
	rc = rt_read(c->conn, L_RES, 0, G_CNT, 8, 8, 15, RT_F_SIGNALED);
	CHECK(rc == 0 && wait1(c->conn, 15) == 0, "read back");
	memcpy(&v, c->res, 8);
	CHECK(v == 9, "value %llu", (unsigned long long)v);
	/* misaligned atomics are refused at the boundary */
	CHECK(rt_cmp_swap(c->conn, L_RES, 0, G_CNT, 12, 0, 1, 0, RT_F_SIGNALED) == RDMAPS_E_INVAL,
	      "misaligned remote");
	CHECK(rt_fetch_add(c->conn, L_RES, 4, G_CNT, 16, 1, 0, RT_F_SIGNALED) == RDMAPS_E_INVAL,
	      "misaligned local");
	return 0;
}

static int adder_main(uint16_t port, uint32_t idx)
{
	struct client c;
	uint64_t prev = 0, old;
	int rc;

	rdmaps_log_set_tag("adder");
	rc = client_open(&c, mkctx(TOKEN), port, 100 + idx);
	if (rc) {
		fprintf(stderr, "adder %u: connect: %s\n", idx, rdmaps_strerror(rc));
		return 1;
	}
	for (int i = 0; i < ADDS_PER_PEER; i++) {
		rc = do_fadd(&c, 0, 1, &old);
		if (rc) {
			fprintf(stderr, "adder %u: fetch_add: %s\n", idx, rdmaps_strerror(rc));
			return 1;
		}
		if (i && old <= prev) {
			fprintf(stderr, "adder %u: old value went back %llu <= %llu\n", idx,
				(unsigned long long)old, (unsigned long long)prev);
			return 1;
		}
		prev = old;
	}
	client_close(&c);
	return 0;
}

static int t_adders_sum(struct client *c, pid_t *adders)
{
	uint64_t w[3];
	int rc;

	for (int i = 0; i < NADDERS; i++) {
		int st = 0;

		CHECK(waitpid(adders[i], &st, 0) == adders[i], "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "adder %d failed", i);
	}
	/* the target's own local adds: wait (bounded) for its done flag */
	for (int tries = 0; tries < 1000; tries++) {
		rc = rt_read(c->conn, L_RES, 0, G_CNT, 0, 24, 16, RT_F_SIGNALED);
		CHECK(rc == 0 && wait1(c->conn, 16) == 0, "read counter");
		memcpy(w, c->res, 24);
		if (w[2] == 1 || w[2] == 2)
			break;
		usleep(10000);
	}
	CHECK(w[2] == 1 || w[2] == 2, "target's local adder did not finish");
	uint64_t want = (uint64_t)NADDERS * ADDS_PER_PEER + (w[2] == 1 ? ADDS_LOCAL : 0);
	if (w[2] == 2)
		printf("  (the target's local adds are left out: its device's atomics are atomic among "
		       "RDMA operations only, IBV_ATOMIC_HCA)\n");
	CHECK(w[0] == want, "sum %llu, want %llu", (unsigned long long)w[0], (unsigned long long)want);
	CHECK(rt_ctx_kind(c->ctx) != RT_TCP || w[2] == 1, "tcp must run the local adds (RT_CAP_ATOMIC_GLOBAL)");
	return 0;
}

static int t_violations(struct client *c, struct client *other)
{
	struct rt_conn *k = c->conn;
	struct rt_completion cmp;
	struct rt_remote save;
	int rc;

	/* caught at the initiator */
	CHECK(rt_read(k, L_BUF, 0, G_BIG, BIG_ALLOC - 10, 11, 0, RT_F_SIGNALED) ==
	      RDMAPS_E_REMOTE_ACCESS, "local OOB read");
	CHECK(rt_write(k, L_BUF, 0, G_RO, 0, 8, 0, RT_F_SIGNALED) == RDMAPS_E_REMOTE_ACCESS,
	      "local write to read-only");
	CHECK(rt_read(k, L_BUF, 0, G_WO, 0, 8, 0, RT_F_SIGNALED) == RDMAPS_E_REMOTE_ACCESS,
	      "local read of write-only");
	CHECK(rt_fetch_add(k, L_RES, 0, G_BIG, 0, 1, 0, RT_F_SIGNALED) == RDMAPS_E_REMOTE_ACCESS,
	      "local atomic without right");
	CHECK(rt_read(k, L_BUF, 0, 9, 0, 8, 0, RT_F_SIGNALED) == RDMAPS_E_REMOTE_ACCESS,
	      "unknown remote id");
	CHECK(rt_read(k, L_BUF, BIG_ALLOC, G_BIG, 0, 8, 0, RT_F_SIGNALED) == RDMAPS_E_INVAL,
	      "local OOB");
	/* longer than one op may be (verbs: a 32-bit sge length wrapped 4 GiB
	 * + 8 to 8 bytes, and the op succeeded; tcp: the target dropped the
	 * connection), whatever the grants: refused before any bounds check */
	CHECK(rt_read(k, L_BUF, 0, G_BIG, 0, RT_MAX_OP_LEN + 1, 0, RT_F_SIGNALED) == RDMAPS_E_INVAL,
	      "read longer than RT_MAX_OP_LEN");
	CHECK(rt_write(k, L_BUF, 0, G_BIG, 0, ((size_t)1 << 32) + 8, 0, RT_F_SIGNALED) == RDMAPS_E_INVAL,
	      "write of 4 GiB + 8");

	/* caught at the target: forge the table the peer sent us */
	save = k->remote[G_RO];
	k->remote[G_RO].rights |= RT_RIGHT_WRITE;
	k->remote[G_RO].len = 1u << 20;
	memset(c->buf, 0x5a, 300000);
	rc = rt_write(k, L_BUF, 0, G_RO, 0, 300000, 21, RT_F_SIGNALED); /* rights + OOB */
	CHECK(rc == 0, "post forged write: %s", rdmaps_strerror(rc));
	rc = wait1(k, 21);
	CHECK(rc == RDMAPS_E_REMOTE_ACCESS, "forged write: %s", rdmaps_strerror(rc));
	if (g_kind == RT_TCP) {
		/* unsignaled violation: still reported, and by rt_flush */
		rc = rt_read(k, L_BUF, 0, G_RO, SMALL - 8, 64, 22, 0);
		CHECK(rc == 0, "post forged read: %s", rdmaps_strerror(rc));
		rc = rt_flush(k, TMO);
		CHECK(rc == RDMAPS_E_REMOTE_ACCESS, "flush after violation: %s", rdmaps_strerror(rc));
		rc = rt_poll(k, &cmp, 1, TMO);
		CHECK(rc == 1 && cmp.wr_id == 22 && cmp.status == RDMAPS_E_REMOTE_ACCESS,
		      "unsignaled error completion: rc %d", rc);
	}
	k->remote[G_RO] = save;
	/* the target kept serving the other peer ... */
	rc = do_read(other, 0, G_RO, 0, SMALL);
	CHECK(rc == 0, "other peer read: %s", rdmaps_strerror(rc));
	for (size_t i = 0; i < SMALL; i++)
		CHECK(other->buf[i] == pat(i, 1), "read-only region changed at %zu", i);
	/* ... and this one (TCP; a verbs QP goes to error state on a
	 * remote access error, so the peer has to reconnect) */
	if (g_kind == RT_TCP) {
		rc = do_read(c, 0, G_RO, 0, SMALL);
		CHECK(rc == 0, "same peer read after violation: %s", rdmaps_strerror(rc));
		save = k->remote[G_CNT];
		k->remote[G_CNT].rights |= RT_RIGHT_WRITE;
		rc = do_write(c, 0, G_CNT, 0, 8);
		k->remote[G_CNT] = save;
		CHECK(rc == RDMAPS_E_REMOTE_ACCESS, "forged write to atomic-only: %s",
		      rdmaps_strerror(rc));
		rc = do_read(c, 0, G_BIG, 0, 100);
		CHECK(rc == 0, "same peer read 2: %s", rdmaps_strerror(rc));
	}
	return 0;
}

static int t_auth(uint16_t port, struct client *good)
{
	struct client c = { 0 };
	struct rt_ctx *bad = mkctx("wrong-token");
	int rc = client_open(&c, bad, port, 7);

	CHECK(rc == RDMAPS_E_AUTH, "wrong token: %s", rdmaps_strerror(rc));
	CHECK(c.conn == NULL, "conn set on failure");
	rt_free(bad, c.buf, BIG_ALLOC);
	rt_free(bad, c.res, SMALL);
	rt_ctx_delete(&bad);
	CHECK(bad == NULL, "ctx not NULLed");
	/* the target still accepts and serves */
	rc = do_read(good, 0, G_RO, 0, 16);
	CHECK(rc == 0, "good peer after bad token: %s", rdmaps_strerror(rc));
	{
		struct client c2;
		struct rt_ctx *ctx2 = mkctx(TOKEN);

		rc = client_open(&c2, ctx2, port, 8);
		CHECK(rc == 0, "new peer after bad token: %s", rdmaps_strerror(rc));
		rc = do_read(&c2, 0, G_RO, 0, 16);
		CHECK(rc == 0, "read: %s", rdmaps_strerror(rc));
		client_close(&c2);
		rt_ctx_delete(&ctx2);
	}
	return 0;
}

static int t_refused(struct rt_ctx *ctx)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	struct rt_hello h = { 1, 9, 0 };
	struct rt_conn *conn = NULL;
	int fd, rc;
	uint16_t port;

	/* a port nobody listens on: bind an ephemeral one, then close it */
	CHECK(sock_addr(0, &sa, &sl) == 0, "resolve %s", g_addr);
	fd = socket(sa.ss_family, SOCK_STREAM, 0);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sl) == 0 &&
	      getsockname(fd, (struct sockaddr *)&sa, &sl) == 0, "ephemeral port");
	port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
					      : ((struct sockaddr_in *)&sa)->sin_port);
	close(fd);
	rc = rt_connect(ctx, g_addr, port, &h, NULL, 0, 3000, &conn);
	CHECK(rc == RDMAPS_E_REFUSED, "closed port: %s", rdmaps_strerror(rc));
	CHECK(conn == NULL, "conn set");
	rc = rt_connect(ctx, "no-such-host.invalid", port, &h, NULL, 0, 3000, &conn);
	CHECK(rc == RDMAPS_E_NONAME, "bad host: %s", rdmaps_strerror(rc));
	return 0;
}

static int t_killed(struct rt_ctx *ctx, uint16_t port, pid_t victim)
{
	struct client c = { 0 };
	struct rt_completion cmp[8];
	int rc, got_err = 0, st;
	struct timespec t0, t1;

	rc = client_open(&c, ctx, port, 50);
	CHECK(rc == 0, "connect victim: %s", rdmaps_strerror(rc));
	rc = do_read(&c, 0, G_BIG, 0, 4096);
	CHECK(rc == 0, "first read: %s", rdmaps_strerror(rc));
	for (int i = 0; i < 4; i++) {
		rc = rt_read(c.conn, L_BUF, 0, G_BIG, 0, BIG, 100 + i, RT_F_SIGNALED);
		CHECK(rc == 0, "post: %s", rdmaps_strerror(rc));
	}
	kill(victim, SIGKILL);
	CHECK(waitpid(victim, &st, 0) == victim, "waitpid victim");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* keep the conn busy until the failure surfaces; each wait is bounded */
	for (int round = 0; round < 100 && !got_err; round++) {
		rc = rt_read(c.conn, L_BUF, 0, G_BIG, 0, BIG, 200 + round, RT_F_SIGNALED);
		if (rc < 0 && rc != RDMAPS_E_AGAIN) {
			got_err = rc;
			break;
		}
		for (;;) {
			int n = rt_poll(c.conn, cmp, 8, 2000);

			if (n < 0) {
				got_err = n;
				break;
			}
			if (n == 0)
				break;
			for (int i = 0; i < n; i++)
				if (cmp[i].status && !got_err)
					got_err = cmp[i].status;
			if (got_err)
				break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "  killed peer surfaced as %s after %.0f ms\n", rdmaps_strerror(got_err),
		(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	CHECK(got_err != 0 && got_err != RDMAPS_E_TIMEOUT, "no error after SIGKILL");
	if (g_kind == RT_TCP)
		CHECK(got_err == RDMAPS_E_PEER_GONE, "want PEER_GONE, got %s",
		      rdmaps_strerror(got_err));
	rc = rt_flush(c.conn, TMO);
	CHECK(rc != 0 && rc != RDMAPS_E_TIMEOUT, "flush on a dead conn: %d", rc);
	client_close(&c);
	return 0;
}

/* The target deletes a connection (rt_conn_delete, role 98) about
 * CHURN_MS after accepting it, while we keep READs and WRITEs of 64 KiB in
 * flight on it: each round must end in an error, not a hang, and the
 * target must live on (a use of the deleted connection by its progress
 * thread is a use-after-free: the ASan tier aborts the target, and its
 * exit status fails the suite).  Writes go to the last 64 KiB of G_BIG,
 * which no other test reads. */
static int t_churn(struct rt_ctx *ctx, uint16_t port, struct client *other)
{
	enum { ROUNDS = 12, LEN = 65536 };
	int ops_total = 0;

	for (int r = 0; r < ROUNDS; r++) {
		struct client c;
		struct timespec t0;
		int rc = client_open_role(&c, ctx, port, 98, 60 + (uint32_t)r), err = 0, ops = 0;

		CHECK(rc == 0, "churn round %d: connect: %s", r, rdmaps_strerror(rc));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!err && ms_since(&t0) < 5000) {
			rc = rt_read(c.conn, L_BUF, 0, G_BIG, 0, LEN, 1, RT_F_SIGNALED);
			if (!rc)
				rc = rt_write(c.conn, L_BUF, LEN, G_BIG, BIG_ALLOC - LEN, LEN, 2,
					      RT_F_SIGNALED);
			if (!rc)
				rc = wait1(c.conn, 1);
			if (!rc)
				rc = wait1(c.conn, 2);
			if (rc)
				err = rc;
			else
				ops += 2;
		}
		client_close(&c);
		CHECK(err && err != RDMAPS_E_TIMEOUT,
		      "churn round %d: %d ops in 5 s and no error (%s): the target did not drop us",
		      r, ops, rdmaps_strerror(err));
		ops_total += ops;
	}
	fprintf(stderr, "  %d connections deleted by the target under load (%d ops done)\n",
		ROUNDS, ops_total);
	CHECK(do_read(other, 0, G_RO, 0, SMALL) == 0, "target stopped serving after the churn");
	return 0;
}

/* TCP: garbage on one connection's request stream closes that connection
 * only (the target logs it); the other peer keeps being served. */
static int t_malformed(struct rt_ctx *ctx, uint16_t port, struct client *other)
{
	struct client c;
	struct rt_completion cmp;
	uint8_t junk[TCP_FRAME_LEN];
	struct tcp_frame f = { .op = RT_OP_READ, .rid = G_BIG, .len = TCP_MAX_LEN + 1 };
	int rc;

	for (int variant = 0; variant < 3; variant++) {
		rc = client_open(&c, ctx, port, 60);
		CHECK(rc == 0, "connect: %s", rdmaps_strerror(rc));
		tcp_frame_encode(&f, junk);
		if (variant == 1)
			junk[0] ^= 0xff;          /* bad magic */
		if (variant == 2)
			junk[4] = 0x42;           /* unknown op */
		{
			struct tcp_conn *t = c.conn->backend;

			CHECK(write(t->ofd, junk, sizeof(junk)) == (ssize_t)sizeof(junk), "inject");
		}
		rc = rt_poll(c.conn, &cmp, 1, TMO);
		CHECK(rc == RDMAPS_E_PEER_GONE, "variant %d: poll after garbage: %d %s", variant,
		      rc, rdmaps_strerror(rc));
		rc = rt_read(c.conn, L_BUF, 0, G_BIG, 0, 8, 1, RT_F_SIGNALED);
		CHECK(rc == RDMAPS_E_PEER_GONE, "post on the broken conn: %s", rdmaps_strerror(rc));
		client_close(&c);
		rc = do_read(other, 0, G_RO, 0, 64);
		CHECK(rc == 0, "other peer after garbage: %s", rdmaps_strerror(rc));
	}
	return 0;
}

static int t_no_malloc(struct client *c)
{
	unsigned long before, after;
	uint64_t old;
	int rc = 0;

	rc = do_read(c, 0, G_BIG, 0, 4096); /* warm */
	CHECK(rc == 0, "warm-up: %s", rdmaps_strerror(rc));
	before = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
	for (int i = 0; i < 300 && !rc; i++) {
		rc = do_read(c, 0, G_BIG, 0, 4096);
		if (!rc)
			rc = do_write(c, 0, G_BIG, 8192, 4096);
		if (!rc)
			rc = rt_write(c->conn, L_BUF, 0, G_BIG, 0, 64, 0, 0);
		if (!rc)
			rc = do_fadd(c, 24, 0, &old);
	}
	if (!rc)
		rc = rt_flush(c->conn, TMO);
	after = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
	CHECK(rc == 0, "ops: %s", rdmaps_strerror(rc));
	CHECK(after == before, "%lu allocations during 1200 ops", after - before);
	return 0;
}

/* Signaled ops not yet polled hold their slot: 255 fit, then AGAIN;
 * completions come back in posting order. */
static int t_depth(struct client *c)
{
	struct rt_completion cmp[64];
	int posted = 0, got = 0, rc;

	for (;;) {
		rc = rt_read(c->conn, L_BUF, (size_t)posted * 8, G_BIG, (uint64_t)posted * 8, 8,
			     1000 + (uint64_t)posted, RT_F_SIGNALED);
		if (rc)
			break;
		posted++;
		CHECK(posted <= 100000, "never AGAIN");
	}
	CHECK(rc == RDMAPS_E_AGAIN, "after %d posts: %s", posted, rdmaps_strerror(rc));
	if (g_kind == RT_TCP)
		CHECK(posted == 255, "depth %d", posted);
	while (got < posted) {
		int n = rt_poll(c->conn, cmp, 64, TMO);

		CHECK(n > 0, "poll: %d", n);
		for (int i = 0; i < n; i++, got++)
			CHECK(cmp[i].wr_id == 1000 + (uint64_t)got && cmp[i].status == 0 &&
			      cmp[i].op == RT_OP_READ, "completion %d out of order or failed", got);
	}
	CHECK(rt_poll(c->conn, cmp, 64, 0) == 0, "extra completion");
	CHECK(rt_flush(c->conn, TMO) == 0, "flush");
	return 0;
}

/* A timeout of 0 does not wait but does look: a signaled op's completion
 * is found by polls of 0 alone once the answer came, and flushes of 0 end
 * once the target answered.  Until stop 37 (2026-12-08) the TCP backend
 * only handed out what an earlier wait had read: neither ever succeeded,
 * and the ps's rt_poll(.., 0) of a liveness answer (poll_dup) saw nothing. */
static int t_zero_timeout(struct client *c)
{
	struct rt_completion cmp[4];
	struct timespec t0;
	int n, rc, polls = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(rt_read(c->conn, L_BUF, 0, G_BIG, 0, 8, 77, RT_F_SIGNALED) == 0, "post the read");
	while ((n = rt_poll(c->conn, cmp, 4, 0)) == 0 && ms_since(&t0) < TMO) {
		polls++;
		usleep(1000);
	}
	CHECK(n == 1 && cmp[0].wr_id == 77 && cmp[0].status == 0,
	      "polls of timeout 0 for %.0f ms (%d of them): %d", ms_since(&t0), polls, n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(rt_write(c->conn, L_BUF, 0, G_BIG, 0, 8, 78, 0) == 0, "post the write");
	while ((rc = rt_flush(c->conn, 0)) == RDMAPS_E_TIMEOUT && ms_since(&t0) < TMO)
		usleep(1000);
	CHECK(rc == 0, "flushes of timeout 0 for %.0f ms: %s", ms_since(&t0), rdmaps_strerror(rc));
	CHECK(rt_poll(c->conn, cmp, 4, 0) == 0, "extra completion");
	return 0;
}

/* listening on the target's port (another process holds it) fails with a
 * status that says so, and leaves no listener behind */
static int t_addr_in_use(struct rt_ctx *ctx, uint16_t port)
{
	struct rt_listener *lst = NULL;
	int rc = rt_listen(ctx, g_addr, port, &lst);
	CHECK(rc == RDMAPS_E_ADDR_IN_USE, "listen on a port in use: %s", rdmaps_strerror(rc));
	CHECK(lst == NULL, "listener set");
	return 0;
}

static int t_reject(struct rt_ctx *ctx, uint16_t port)
{
	struct rt_hello h = { .role = 99, .index = 1 };
	struct rt_conn *conn = NULL;
	int rc = rt_connect(ctx, g_addr, port, &h, NULL, 0, TMO, &conn);

	CHECK(rc == RDMAPS_E_REFUSED, "rejected: %s", rdmaps_strerror(rc));
	CHECK(conn == NULL, "conn set");
	h.index = 2; /* the reason reaches the peer */
	rc = rt_connect(ctx, g_addr, port, &h, NULL, 0, TMO, &conn);
	CHECK(rc == RDMAPS_E_MISMATCH, "rejected as another configuration: %s", rdmaps_strerror(rc));
	CHECK(conn == NULL, "conn set");
	return 0;
}

/* g_addr:port as a socket address (IPv4 or IPv6). */
static int sock_addr(uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char serv[8];

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(g_addr, serv, &hints, &ai) || !ai)
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* TCP: junk hellos and silent half-open sockets do not block rt_accept. */
static int t_bad_hello(struct rt_ctx *ctx, uint16_t port)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	uint8_t junk[TCP_HELLO_LEN];
	int silent, bad;
	struct client c;
	int rc;

	CHECK(sock_addr(port, &sa, &sl) == 0, "resolve %s", g_addr);
	silent = socket(sa.ss_family, SOCK_STREAM, 0);
	bad = socket(sa.ss_family, SOCK_STREAM, 0);
	memset(junk, 0xa5, sizeof(junk));
	CHECK(silent >= 0 && bad >= 0, "socket");
	CHECK(connect(silent, (struct sockaddr *)&sa, sl) == 0, "connect silent");
	CHECK(connect(bad, (struct sockaddr *)&sa, sl) == 0, "connect bad");
	CHECK(write(bad, junk, sizeof(junk)) == (ssize_t)sizeof(junk), "write junk");
	rc = client_open(&c, ctx, port, 61);
	CHECK(rc == 0, "connect after junk: %s", rdmaps_strerror(rc));
	rc = do_read(&c, 0, G_RO, 0, 64);
	CHECK(rc == 0, "read: %s", rdmaps_strerror(rc));
	client_close(&c);
	{
		struct timeval tv = { .tv_sec = TMO / 1000 };
		char b;

		/* the target dropped the junk one (bounded wait) */
		setsockopt(bad, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		CHECK(read(bad, &b, 1) == 0, "junk hello not closed");
	}
	close(silent);
	close(bad);
	return 0;
}

#define RUN(name, call)                                                         \
	do {                                                                    \
		int _f = g_fail;                                                \
		(void)(call);                                                   \
		printf("%s - %s\n", g_fail == _f ? "ok" : "not ok", name);      \
		fflush(stdout);                                                 \
	} while (0)

int main(int argc, char **argv)
{
	uint16_t port, vport;
	int ctrl, vctrl, st;
	pid_t target, victim, adders[NADDERS];
	struct rt_ctx *ctx;
	struct client c, other;
	int rc;

	if (argc < 2 || rt_kind_parse(argv[1], &g_kind) || g_kind == RT_AUTO) {
		fprintf(stderr, "usage: %s tcp|rdma [address]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		g_addr = argv[2];
	else if (g_kind == RT_RDMA && getenv("RDMAPS_RDMA_ADDR") && *getenv("RDMAPS_RDMA_ADDR"))
		g_addr = getenv("RDMAPS_RDMA_ADDR");
	setvbuf(stdout, NULL, _IOLBF, 0);
	rdmaps_log_set_tag("suite");
	if (g_kind == RT_RDMA) {
		struct rt_ctx_cfg cfg = { .kind = RT_RDMA, .bind_host = g_addr, .numa_node = -1 };

		ctx = NULL;
		rc = rt_ctx_new(&cfg, &ctx);
		if (rc == RDMAPS_E_NODEV) {
			printf("SKIPPED: no RDMA device\n");
			return 77;
		}
		if (rc) {
			fprintf(stderr, "rt_ctx_new(rdma): %s\n", rdmaps_strerror(rc));
			return 1;
		}
		rt_ctx_delete(&ctx);
	}
	/* every fork happens before this process starts any thread */
	target = spawn_target(&port, &ctrl, 1);
	victim = spawn_target(&vport, &vctrl, 0);
	for (int i = 0; i < NADDERS; i++) {
		adders[i] = fork();
		if (adders[i] == 0)
			_exit(adder_main(port, (uint32_t)i));
	}
	ctx = mkctx(TOKEN);
	printf("# transport_suite backend=%s address=%s target port %u\n",
	       rt_kind_name(rt_ctx_kind(ctx)), g_addr, port);
	rc = client_open(&c, ctx, port, 1);
	if (rc || client_open(&other, ctx, port, 2)) {
		fprintf(stderr, "connect: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	RUN("pristine 16 MiB read", t_pristine_read(&c));
	RUN("read/write 1 B .. 16 MiB", t_sizes(&c));
	RUN("1000 unsignaled writes + flush", t_pipeline(&c));
	RUN("2000 unsignaled 8 KiB reads, posts wait for room", t_read_pipeline(&c));
	RUN("cmp-swap semantics", t_cas(&c));
	RUN("outstanding-op bound (AGAIN) and completion order", t_depth(&c));
	RUN("poll and flush with timeout 0 look without waiting", t_zero_timeout(&c));
	RUN("no allocation on the hot path (post/poll/flush)", t_no_malloc(&c));
	RUN("rt_reject -> REFUSED, rt_reject_status(MISMATCH) -> MISMATCH", t_reject(ctx, port));
	RUN("fetch-add from 4 peers + target-local adds", t_adders_sum(&c, adders));
	RUN("bounds/rights violations, target keeps serving", t_violations(&c, &other));
	if (g_kind == RT_TCP)
		RUN("malformed frames close only that connection", t_malformed(ctx, port, &other));
	if (g_kind == RT_TCP)
		RUN("junk hello / half-open socket do not block accept", t_bad_hello(ctx, port));
	RUN("wrong auth token refused", t_auth(port, &other));
	RUN("closed port refused, bad host unreachable", t_refused(ctx));
	RUN("listen on a port in use: address in use", t_addr_in_use(ctx, port));
	RUN("target deletes connections under load", t_churn(ctx, port, &other));
	RUN("peer SIGKILLed mid-operation", t_killed(ctx, vport, victim));
	client_close(&c);
	client_close(&other);
	close(ctrl);
	close(vctrl);
	if (waitpid(target, &st, 0) != target || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "target exited badly\n");
		g_fail++;
	}
	rt_ctx_delete(&ctx);
	printf("# %s: %d failure(s)\n", g_fail ? "FAILED" : "PASSED", g_fail);
	return g_fail ? 1 : 0;
}
