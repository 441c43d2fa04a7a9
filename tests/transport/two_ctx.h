/* two_ctx.h: the set-up shared by the one-process transport tests
 * (ordered_placement, expect_reads, serve_turn): a target context and a
 * client context of the backend named on the command line, one connection
 * between them (two_ctx_join connects more client contexts).  Header-only,
 * test code.
 *
 *   struct two_ctx t;
 *   int rc = two_ctx_open(argc, argv, "prog", TMO, &t);  // 0, 77 (no device), 2 (usage/set-up)
 *   ... rt_alloc(t.tctx / t.cctx, ...) ...
 *   rc = two_ctx_connect(&t, target_grants, n, client_grants, m);  // 0 or 2
 *   rc = two_ctx_serve_start(&t);  // 0 or 2; a server thread in caller mode
 *   ... t.c (client side), t.tconn (target side) ...
 *   two_ctx_disconnect(&t);   // conns and listener
 *   ... rt_free the regions ...
 *   two_ctx_close(&t);        // contexts
 */
#ifndef RDMAPS_TESTS_TWO_CTX_H
#define RDMAPS_TESTS_TWO_CTX_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rt.h"

struct two_ctx {
	enum rt_kind kind;
	const char *addr;
	int tmo_ms;
	struct rt_ctx *tctx, *cctx;
	struct rt_listener *lst;
	struct rt_conn *c, *tconn;
	/* the target's grants for every client (two_ctx_join) */
	const struct rt_grant *tg;
	int ntg;
	/* RDMAPS_TEST_TCP_PROGRESS=caller (tcp only): the target context has
	 * no progress thread; two_ctx_serve_start runs a thread that serves
	 * it the way a ps does, waiting in rt_ctx_wait_target */
	int caller;
	pthread_t server;
	int serving;       /* the server thread was started (owner's thread only) */
	int stop;          /* atomic: tells the server thread to end */
};

/* argv: PROG tcp|rdma [address]; the rdma address defaults to
 * $RDMAPS_RDMA_ADDR (as transport_suite), else 127.0.0.1. */
static inline int two_ctx_open(int argc, char **argv, const char *prog, int tmo_ms, struct two_ctx *t)
{
	*t = (struct two_ctx){ .addr = argc > 2 ? argv[2] : "127.0.0.1", .tmo_ms = tmo_ms };
	if (argc < 2 || rt_kind_parse(argv[1], &t->kind) || t->kind == RT_AUTO) {
		fprintf(stderr, "usage: %s tcp|rdma [address]\n", prog);
		return 2;
	}
	if (argc <= 2 && t->kind == RT_RDMA && getenv("RDMAPS_RDMA_ADDR") && *getenv("RDMAPS_RDMA_ADDR"))
		t->addr = getenv("RDMAPS_RDMA_ADDR");
	const char *prog_env = getenv("RDMAPS_TEST_TCP_PROGRESS");
	t->caller = t->kind == RT_TCP && prog_env && !strcmp(prog_env, "caller");
	struct rt_ctx_cfg cfg = { .kind = t->kind, .bind_host = t->addr, .timeout_ms = tmo_ms, .numa_node = -1 };
	cfg.progress = t->caller ? RT_PROGRESS_CALLER : RT_PROGRESS_THREAD;
	int rc = rt_ctx_new(&cfg, &t->tctx);
	if (rc == RDMAPS_E_NODEV) {
		printf("SKIP: no RDMA device\n");
		return 77;
	}
	cfg.progress = RT_PROGRESS_THREAD; /* the client: as a worker */
	if (rc || (rc = rt_ctx_new(&cfg, &t->cctx))) {
		fprintf(stderr, "rt_ctx_new: %s\n", rdmaps_strerror(rc));
		return 2;
	}
	return 0;
}

/* one accept on t's listener, with t's grants, in a thread of its own */
struct two_ctx_accept_ {
	struct two_ctx *t;
	struct rt_conn *conn;
	int rc;
};

static inline void *two_ctx_acceptor_(void *arg)
{
	struct two_ctx_accept_ *a = arg;
	struct rt_request *req = NULL;

	a->rc = rt_accept(a->t->lst, a->t->tmo_ms, &req);
	if (!a->rc)
		a->rc = rt_accept_grant(&req, a->t->tg, a->t->ntg, &a->conn);
	return NULL;
}

/* Connect a client context cctx (hello role 1, index) to t's listener and
 * accept it with t's grants: *c is the client's end, *tconn the target's.
 * 0, or 2 after printing what failed.  two_ctx_connect does this for
 * t->cctx; a test with more peers calls it for each other context. */
static inline int two_ctx_join(struct two_ctx *t, struct rt_ctx *cctx, uint32_t index,
			       const struct rt_grant *cg, int ncg, struct rt_conn **c, struct rt_conn **tconn)
{
	struct rt_hello h = { .role = 1, .index = index, .layout_hash = 1 };
	struct two_ctx_accept_ a = { .t = t };
	pthread_t at;
	int rc;

	pthread_create(&at, NULL, two_ctx_acceptor_, &a);
	rc = rt_connect(cctx, t->addr, rt_listener_port(t->lst), &h, cg, ncg, t->tmo_ms, c);
	pthread_join(at, NULL);
	*tconn = a.conn;
	if (rc || a.rc) {
		fprintf(stderr, "connect: %s / accept: %s\n", rdmaps_strerror(rc), rdmaps_strerror(a.rc));
		return 2;
	}
	return 0;
}

/* Listen on the target, connect the client (role 1, index 0), accept with
 * the target's grants.  0, or 2 after printing what failed. */
static inline int two_ctx_connect(struct two_ctx *t, const struct rt_grant *tg, int ntg,
				  const struct rt_grant *cg, int ncg)
{
	int rc = rt_listen(t->tctx, t->addr, 0, &t->lst);

	if (rc) {
		fprintf(stderr, "rt_listen: %s\n", rdmaps_strerror(rc));
		return 2;
	}
	t->tg = tg;
	t->ntg = ntg;
	return two_ctx_join(t, t->cctx, 0, cg, ncg, &t->c, &t->tconn);
}

static inline void *two_ctx_server_(void *arg)
{
	struct two_ctx *t = arg;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		int rc = rt_ctx_wait_target(t->tctx, rt_ctx_target_events(t->tctx), 20000);

		if (rc && rc != RDMAPS_E_TIMEOUT) {
			fprintf(stderr, "rt_ctx_wait_target: %s\n", rdmaps_strerror(rc));
			break;
		}
	}
	return NULL;
}

/* With t->caller: start the thread that serves the target context (its
 * owner's waits), as the ps's loop does; else nothing.  0, or 2. */
static inline int two_ctx_serve_start(struct two_ctx *t)
{
	if (!t->caller)
		return 0;
	if (pthread_create(&t->server, NULL, two_ctx_server_, t)) {
		fprintf(stderr, "pthread_create(server) failed\n");
		return 2;
	}
	t->serving = 1;
	printf("target context: RT_PROGRESS_CALLER, served by a thread waiting in rt_ctx_wait_target\n");
	return 0;
}

static inline void two_ctx_serve_stop(struct two_ctx *t)
{
	if (!t->serving)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t->server, NULL);
	t->serving = 0;
}

static inline void two_ctx_disconnect(struct two_ctx *t)
{
	two_ctx_serve_stop(t);
	rt_conn_delete(&t->c);
	rt_conn_delete(&t->tconn);
	rt_listener_delete(&t->lst);
}

static inline void two_ctx_close(struct two_ctx *t)
{
	two_ctx_disconnect(t);
	rt_ctx_delete(&t->cctx);
	rt_ctx_delete(&t->tctx);
}

#endif
