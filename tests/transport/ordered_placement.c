/* ordered_placement: checks RT_CAP_ORDERED_PLACEMENT (rt.h) where the
 * backend claims it.
 *   ordered_placement tcp|rdma [address]     (default 127.0.0.1)
 * One process, two contexts: a target (listens, grants a 1 MiB region
 * WRITE and a counter ATOMIC) and a client.  The client, ROUNDS times:
 * fills its source buffer with the round's pattern, posts an unsignaled
 * WRITE of the whole buffer and, right behind it, a signaled FETCH_ADD +1
 * on the counter, and waits once.  A target thread spins on the counter
 * (acquire loads) and, each time it moves to k, checks every byte of the
 * region against round k's pattern.  With the capability this can never
 * mismatch; a backend that executed the atomic before the WRITE's bytes
 * were all placed would fail here.  A backend without the capability is
 * reported and skipped (exit 77).
 * Then RT_CAP_TARGET_WAKE, where claimed: rt_ctx_wait_target times out
 * when no peer op comes, and a sleeping waiter is woken by a FETCH_ADD
 * (and sees the counter's new value). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma/rt.h"
#include "two_ctx.h"

#define LEN (1u << 20)
#define ROUNDS 300
#define TMO 10000

static uint8_t *g_region;
static uint64_t *g_cnt;
static long g_bad, g_seen;

static struct rt_ctx *g_tctx;
static int g_wake_rc = 1;

/* Sleeps until a peer op lands (up to 10 s), then checks the counter moved. */
static void *waker_target(void *arg)
{
	uint32_t seen = *(uint32_t *)arg;
	uint64_t before = __atomic_load_n(g_cnt, __ATOMIC_ACQUIRE);
	int rc = rt_ctx_wait_target(g_tctx, seen, 10000000);
	g_wake_rc = rc == RDMAPS_OK && __atomic_load_n(g_cnt, __ATOMIC_ACQUIRE) == before + 1 ? 0 : 1;
	return NULL;
}

static uint8_t pat(size_t i, uint64_t k) { return (uint8_t)(i * 31u + k * 7u + (i >> 12)); }

/* The target CPU: sees the counter move, checks the region. */
static void *checker(void *arg)
{
	(void)arg;
	uint64_t last = 0;
	while (last < ROUNDS) {
		uint64_t k = __atomic_load_n(g_cnt, __ATOMIC_ACQUIRE);
		if (k == last)
			continue;
		last = k;
		for (size_t i = 0; i < LEN; i++)
			if (g_region[i] != pat(i, k)) {
				if (g_bad++ < 3)
					fprintf(stderr, "FAIL: counter %llu but byte %zu is %u, expected %u\n",
						(unsigned long long)k, i, g_region[i], pat(i, k));
				break;
			}
		__atomic_fetch_add(&g_seen, 1, __ATOMIC_RELEASE); /* the client may write round k+1 */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct two_ctx t;
	int rc = two_ctx_open(argc, argv, "ordered_placement", TMO, &t);
	if (rc)
		return rc;
	struct rt_ctx *tctx = t.tctx, *cctx = t.cctx;
	g_tctx = tctx;
	g_region = rt_alloc(tctx, LEN);
	g_cnt = rt_alloc(tctx, 64);
	uint8_t *src = rt_alloc(cctx, LEN);
	uint64_t *res = rt_alloc(cctx, 64);
	if (!g_region || !g_cnt || !src || !res) {
		fprintf(stderr, "rt_alloc failed\n");
		return 2;
	}
	struct rt_grant tg[2] = { { 0, g_region, LEN, RT_RIGHT_WRITE }, { 1, g_cnt, 64, RT_RIGHT_ATOMIC } };
	struct rt_grant g[2] = { { 0, src, LEN, RT_RIGHT_NONE }, { 1, res, 64, RT_RIGHT_NONE } };
	if ((rc = two_ctx_connect(&t, tg, 2, g, 2)))
		return rc;
	struct rt_conn *c = t.c;
	pthread_t ct;
	int ret = 0;
	if (!(rt_conn_caps(c) & RT_CAP_ORDERED_PLACEMENT)) {
		printf("SKIP: the %s backend does not claim RT_CAP_ORDERED_PLACEMENT\n", rt_kind_name(t.kind));
		ret = 77;
		goto out;
	}
	pthread_create(&ct, NULL, checker, NULL);
	for (uint64_t k = 1; k <= ROUNDS && !ret; k++) {
		for (size_t i = 0; i < LEN; i++)
			src[i] = pat(i, k);
		struct rt_completion cmp;
		if ((rc = rt_write(c, 0, 0, 0, 0, LEN, 2 * k, 0)) ||
		    (rc = rt_fetch_add(c, 1, 0, 1, 0, 1, 2 * k + 1, RT_F_SIGNALED))) {
			fprintf(stderr, "FAIL: post in round %llu: %s\n", (unsigned long long)k, rdmaps_strerror(rc));
			ret = 1;
			break;
		}
		int n = rt_poll(c, &cmp, 1, TMO);
		if (n != 1 || cmp.status || cmp.wr_id != 2 * k + 1 || *res != k - 1) {
			fprintf(stderr, "FAIL: round %llu: poll %d status %d wr_id %llu old %llu\n", (unsigned long long)k,
				n, n == 1 ? cmp.status : 0, (unsigned long long)cmp.wr_id, (unsigned long long)*res);
			ret = 1;
		}
		/* wait until the checker has looked at round k (it must see each) */
		while (!ret && __atomic_load_n(&g_seen, __ATOMIC_ACQUIRE) < (long)k)
			;
	}
	if (ret) /* let the checker finish */
		__atomic_store_n(g_cnt, ROUNDS, __ATOMIC_RELEASE);
	pthread_join(ct, NULL);
	if (!ret && g_bad) {
		fprintf(stderr, "FAIL: %ld of %ld rounds saw the counter before the WRITE's bytes\n", g_bad, g_seen);
		ret = 1;
	}
	if (!ret)
		printf("ok: %d rounds of WRITE %u B + FETCH_ADD posted back to back; the target saw every round's bytes with its counter\n",
		       ROUNDS, LEN);
	if (!ret && (rt_ctx_caps(tctx) & RT_CAP_TARGET_WAKE)) {
		uint32_t seen = rt_ctx_target_events(tctx);
		if ((rc = rt_ctx_wait_target(tctx, seen, 2000)) != RDMAPS_E_TIMEOUT) {
			fprintf(stderr, "FAIL: wait_target with no peer op: %s, expected a timeout\n", rdmaps_strerror(rc));
			ret = 1;
		} else if (rt_ctx_wait_target(tctx, seen - 1, 10000000) != RDMAPS_OK) {
			fprintf(stderr, "FAIL: wait_target with a stale 'seen' did not return at once\n");
			ret = 1;
		} else {
			pthread_t wt;
			struct rt_completion cmp;
			pthread_create(&wt, NULL, waker_target, &seen);
			usleep(20000); /* most likely asleep by now; either way it must see the op */
			rc = rt_fetch_add(c, 1, 0, 1, 0, 1, 7, RT_F_SIGNALED);
			if (rc || rt_poll(c, &cmp, 1, TMO) != 1 || cmp.status)
				ret = 1;
			pthread_join(wt, NULL);
			if (ret || g_wake_rc) {
				fprintf(stderr, "FAIL: a FETCH_ADD did not wake rt_ctx_wait_target (or the counter did not move)\n");
				ret = 1;
			} else {
				printf("ok: rt_ctx_wait_target times out without peer ops and is woken by a FETCH_ADD\n");
			}
		}
	}
out:
	two_ctx_disconnect(&t);
	rt_free(tctx, g_region, LEN);
	rt_free(tctx, g_cnt, 64);
	rt_free(cctx, src, LEN);
	rt_free(cctx, res, 64);
	two_ctx_close(&t);
	return ret;
}
