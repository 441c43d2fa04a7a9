/* serve_turn: the TCP target's serving turn is fair between peers
 * (tcp_serve.c srv_rx: a turn ends when the peer's socket is empty, or
 * after TCP_TURN_BYTES of READ/WRITE data, or after 64 requests).
 *   serve_turn tcp [address]     (default 127.0.0.1; rdma: skipped, 77)
 * One process: a target context in RT_PROGRESS_CALLER (served only while a
 * thread waits on it, and by its 50 ms watchdog) and two client contexts,
 * A and B, each with its own connection.  Per trial, with nobody serving:
 * A queues its ops (below), each ending in a FETCH_ADD +1 on the target's
 * counter, then B posts one FETCH_ADD +2^32 on the same counter.  Then a
 * thread serves.  The low half of B's old value counts A's atomics
 * executed before B's (0 when B was served first).  Two cases:
 *   requests: A queues 255 FETCH_ADD +1 (its whole ring).  With the
 *     64-request cap B waits for at most 64 of them; a turn that ran until
 *     A's socket was empty made it wait for all 255.
 *   bytes: A queues 16 pairs of a 256 KiB READ and a FETCH_ADD +1 (32
 *     requests, under the request cap).  A pair costs 288 KiB of the 1 MiB
 *     turn (each request 1/64 of it, besides its bytes), so B waits for at
 *     most 4 pairs; without the byte budget it waited for all 16.
 * A trial in which the watchdog served part of A's ops before B posted
 * shows nothing and is repeated (up to 5 trials). */
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
#define TURN (1u << 20)         /* TCP_TURN_BYTES */
#define RLEN (256u << 10)       /* the bytes case: each READ's length */
#define NPAIR 16                /* the bytes case: READ + FETCH_ADD pairs */
#define PAIR_COST (RLEN + 2 * (TURN / 64))
#define PAIR_CAP ((TURN + PAIR_COST - 1) / PAIR_COST) /* 4 */

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

/* One case (see the top): A queues nop ops, READs of rlen (region 1) each
 * followed by a FETCH_ADD +1 when rlen > 0, else FETCH_ADDs only; B its
 * one +2^32; then serve.  B must see at most cap of A's atomics.  0 or 1. */
static int run_case(struct two_ctx *t, struct peer *b, uint64_t *cnt, const char *name, int nop,
		    size_t rlen, unsigned cap)
{
	int natom = rlen ? nop / 2 : nop, rc;

	for (int trial = 1; trial <= TRIALS; trial++) {
		uint64_t x0, v;

		__atomic_store_n(cnt, 0, __ATOMIC_SEQ_CST); /* nothing is pending: no op races this */
		for (int k = 0; k < nop; k++) {
			unsigned fl = k == nop - 1 ? RT_F_SIGNALED : 0;

			if (rlen && k % 2 == 0)
				rc = rt_read(t->c, 1, 0, 1, 0, rlen, (uint64_t)k, fl);
			else
				rc = rt_fetch_add(t->c, 0, (size_t)(k % 512) * 8, 0, 0, 1, (uint64_t)k, fl);
			if (rc) {
				fprintf(stderr, "FAIL: %s: A's op %d: %s\n", name, k, rdmaps_strerror(rc));
				return 1;
			}
		}
		x0 = __atomic_load_n(cnt, __ATOMIC_SEQ_CST);
		if ((rc = rt_fetch_add(b->c, 0, 0, 0, 0, 1ull << 32, 1, RT_F_SIGNALED))) {
			fprintf(stderr, "FAIL: %s: B's FETCH_ADD: %s\n", name, rdmaps_strerror(rc));
			return 1;
		}
		usleep(20000); /* both sockets hold their requests (loopback) */
		t->stop = 0;
		if (two_ctx_serve_start(t))
			return 1;
		rc = wait_done(t->c, 1, "A") || wait_done(b->c, 1, "B");
		two_ctx_serve_stop(t);
		if (rc)
			return 1;
		v = b->buf[0];
		if (__atomic_load_n(cnt, __ATOMIC_SEQ_CST) != (1ull << 32) + (uint64_t)natom || v >> 32) {
			fprintf(stderr, "FAIL: %s: trial %d: counter %#llx after A's %d atomics and B's one (B saw %#llx)\n",
				name, trial, (unsigned long long)*cnt, natom, (unsigned long long)v);
			return 1;
		}
		if (x0) {
			printf("%s: trial %d: %llu of A's atomics were served (watchdog) before B posted: repeated\n",
			       name, trial, (unsigned long long)x0);
			continue;
		}
		if (v > cap) {
			fprintf(stderr, "FAIL: %s: B's FETCH_ADD waited for %llu of A's %d queued atomics (at most %u)\n",
				name, (unsigned long long)v, natom, cap);
			return 1;
		}
		printf("ok: %s: trial %d: B's FETCH_ADD ran after %llu of A's %d queued atomics (at most %u)\n", name,
		       trial, (unsigned long long)v, natom, cap);
		return 0;
	}
	fprintf(stderr, "FAIL: %s: in %d trials the watchdog always served A before B posted\n", name, TRIALS);
	return 1;
}

int main(int argc, char **argv)
{
	struct two_ctx t;
	struct peer b = { 0 };
	int rc, ret = 1;

	if (argc > 1 && strcmp(argv[1], "tcp")) {
		printf("SKIP: the serving turn is the TCP target's (verbs: the device serves)\n");
		return 77;
	}
	setenv("RDMAPS_TEST_TCP_PROGRESS", "caller", 1); /* the target serves only when told */
	rc = two_ctx_open(argc, argv, "serve_turn", TMO, &t);
	if (rc)
		return rc;
	uint64_t *cnt = rt_alloc(t.tctx, 4096);
	void *tdata = rt_alloc(t.tctx, RLEN);
	uint64_t *abuf = rt_alloc(t.cctx, 4096);
	void *adata = rt_alloc(t.cctx, RLEN);
	if (!cnt || !tdata || !abuf || !adata) {
		fprintf(stderr, "rt_alloc failed\n");
		return 2;
	}
	struct rt_grant tg[2] = { { 0, cnt, 4096, RT_RIGHT_ATOMIC }, { 1, tdata, RLEN, RT_RIGHT_READ } };
	struct rt_grant ag[2] = { { 0, abuf, 4096, RT_RIGHT_NONE }, { 1, adata, RLEN, RT_RIGHT_NONE } };
	if ((rc = two_ctx_connect(&t, tg, 2, ag, 2)) || (rc = connect_b(&t, &b)))
		return rc;
	if (run_case(&t, &b, cnt, "requests", NA, 0, CAP) ||
	    run_case(&t, &b, cnt, "bytes", 2 * NPAIR, RLEN, PAIR_CAP))
		goto out;
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
	rt_free(t.tctx, tdata, RLEN);
	rt_free(t.cctx, abuf, 4096);
	rt_free(t.cctx, adata, RLEN);
	two_ctx_close(&t);
	return ret;
}
