/* serve_turn: the TCP target's serving turn is fair between peers
 * (tcp_serve.c srv_rx: a turn ends when the peer's socket is empty, or
 * after TCP_TURN_BYTES of READ/WRITE data, or after 64 requests).
 *   serve_turn tcp [address]     (default 127.0.0.1; rdma: skipped, 77)
 * One process: a target context in RT_PROGRESS_CALLER (served only while a
 * thread waits on it, and by its 50 ms watchdog) and two client contexts,
 * A and B, each with its own connection.  Per trial, with nobody serving:
 * A posts 255 FETCH_ADD +1 on the target's counter (its whole ring), then
 * B posts one FETCH_ADD +2^32 on the same counter.  Then a thread serves.
 * The low half of B's old value counts A's atomics executed before B's:
 * with the 64-request cap B waits for at most 64 of A's (0 when served
 * first); a turn that ran until A's socket was empty made it wait for all
 * 255.  A trial in which the watchdog served part of A's ops before B
 * posted shows nothing and is repeated (up to 5 trials). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma/rt.h"
#include "two_ctx.h"

#define TMO 10000
#define NA 255        /* TCP_USER_DEPTH: A's whole ring */
#define CAP 64        /* requests per turn (TCP_TURN_BYTES / 64 each) */
#define TRIALS 5

struct peer {
	struct rt_ctx *ctx;
	struct rt_conn *c, *tconn;
	uint64_t *buf;     /* the old values land here */
};

/* B: its own client context and connection to t's listener (two_ctx_join) */
static int connect_b(struct two_ctx *t, struct peer *b)
{
	struct rt_ctx_cfg cfg = { .kind = RT_TCP, .bind_host = t->addr, .timeout_ms = TMO, .numa_node = -1,
				  .progress = RT_PROGRESS_THREAD };
	struct rt_grant cg;
	int rc = rt_ctx_new(&cfg, &b->ctx);

	if (rc) {
		fprintf(stderr, "rt_ctx_new(B): %s\n", rdmaps_strerror(rc));
		return 2;
	}
	b->buf = rt_alloc(b->ctx, 4096);
	if (!b->buf) {
		fprintf(stderr, "rt_alloc(B) failed\n");
		return 2;
	}
	cg = (struct rt_grant){ 0, b->buf, 4096, RT_RIGHT_NONE };
	return two_ctx_join(t, b->ctx, 1, &cg, 1, &b->c, &b->tconn);
}

/* Wait for n signaled completions on c; 0 or 1 (printed). */
static int wait_done(struct rt_conn *c, int n, const char *who)
{
	struct rt_completion cmp[8];

	while (n > 0) {
		int got = rt_poll(c, cmp, 8, TMO);

		if (got <= 0) {
			fprintf(stderr, "FAIL: %s: rt_poll returned %d (%s)\n", who, got,
				got < 0 ? rdmaps_strerror(got) : "timed out");
			return 1;
		}
		for (int i = 0; i < got; i++)
			if (cmp[i].status) {
				fprintf(stderr, "FAIL: %s: an atomic completed with %s\n", who,
					rdmaps_strerror(cmp[i].status));
				return 1;
			}
		n -= got;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct two_ctx t;
	struct peer b = { 0 };
	int rc, ret = 1, valid = 0;

	if (argc > 1 && strcmp(argv[1], "tcp")) {
		printf("SKIP: the serving turn is the TCP target's (verbs: the device serves)\n");
		return 77;
	}
	setenv("RDMAPS_TEST_TCP_PROGRESS", "caller", 1); /* the target serves only when told */
	rc = two_ctx_open(argc, argv, "serve_turn", TMO, &t);
	if (rc)
		return rc;
	uint64_t *cnt = rt_alloc(t.tctx, 4096);
	uint64_t *abuf = rt_alloc(t.cctx, 4096);
	if (!cnt || !abuf) {
		fprintf(stderr, "rt_alloc failed\n");
		return 2;
	}
	struct rt_grant tg = { 0, cnt, 4096, RT_RIGHT_ATOMIC };
	struct rt_grant ag = { 0, abuf, 4096, RT_RIGHT_NONE };
	if ((rc = two_ctx_connect(&t, &tg, 1, &ag, 1)) || (rc = connect_b(&t, &b)))
		return rc;

	for (int trial = 1; trial <= TRIALS && !valid; trial++) {
		uint64_t x0, v;

		__atomic_store_n(cnt, 0, __ATOMIC_SEQ_CST); /* nothing is pending: no op races this */
		for (int k = 0; k < NA; k++)
			if ((rc = rt_fetch_add(t.c, 0, (size_t)(k % 512) * 8, 0, 0, 1, (uint64_t)k,
					       k == NA - 1 ? RT_F_SIGNALED : 0))) {
				fprintf(stderr, "FAIL: A's FETCH_ADD %d: %s\n", k, rdmaps_strerror(rc));
				goto out;
			}
		x0 = __atomic_load_n(cnt, __ATOMIC_SEQ_CST);
		if ((rc = rt_fetch_add(b.c, 0, 0, 0, 0, 1ull << 32, 1, RT_F_SIGNALED))) {
			fprintf(stderr, "FAIL: B's FETCH_ADD: %s\n", rdmaps_strerror(rc));
			goto out;
		}
		usleep(20000); /* both sockets hold their requests (loopback) */
		t.stop = 0;
		if ((rc = two_ctx_serve_start(&t))) {
			ret = rc;
			goto out;
		}
		rc = wait_done(t.c, 1, "A") || wait_done(b.c, 1, "B");
		two_ctx_serve_stop(&t);
		if (rc)
			goto out;
		v = b.buf[0];
		if (__atomic_load_n(cnt, __ATOMIC_SEQ_CST) != (1ull << 32) + NA || v >> 32) {
			fprintf(stderr, "FAIL: trial %d: counter %#llx after A's %d and B's one (B saw %#llx)\n", trial,
				(unsigned long long)*cnt, NA, (unsigned long long)v);
			goto out;
		}
		if (x0) {
			printf("trial %d: %llu of A's atomics were served (watchdog) before B posted: repeated\n",
			       trial, (unsigned long long)x0);
			continue;
		}
		valid = 1;
		if (v > CAP) {
			fprintf(stderr, "FAIL: B's FETCH_ADD waited for %llu of A's %d queued atomics (a turn is at "
				"most %d requests)\n", (unsigned long long)v, NA, CAP);
			goto out;
		}
		printf("ok: trial %d: B's FETCH_ADD ran after %llu of A's %d queued atomics (at most %d)\n", trial,
		       (unsigned long long)v, NA, CAP);
	}
	if (!valid) {
		fprintf(stderr, "FAIL: in %d trials the watchdog always served A before B posted\n", TRIALS);
		goto out;
	}
	ret = 0;
out:
	two_ctx_serve_stop(&t);
	rt_conn_delete(&b.c);
	rt_conn_delete(&b.tconn);
	two_ctx_disconnect(&t);
	if (b.buf)
		rt_free(b.ctx, b.buf, 4096);
	rt_ctx_delete(&b.ctx);
	rt_free(t.tctx, cnt, 4096);
	rt_free(t.cctx, abuf, 4096);
	two_ctx_close(&t);
	return ret;
}
