/* expect_reads: rt_ctx_expect_reads (rt.h), the "READs are coming" hint.
 *   expect_reads tcp|rdma [address]     (default 127.0.0.1)
 * One process, two contexts: a target granting a 256 KiB region READ, and
 * a client.  Checks:
 *   1. arguments: NULL is RDMAPS_E_INVAL; n <= 0 or budget <= 0 do nothing.
 *   2. READs during a hint return the right bytes (12 rounds of 2 READs,
 *      with more READs than announced and fewer).
 *   3. the polling ends: a hint of 100 ms with no READ coming costs the
 *      process at most ~that CPU time, measured over the following 600 ms
 *      (a thread that kept polling would use all of it).  TCP also: it did
 *      poll (at least 10 ms of CPU in that window; the NIC serves verbs
 *      READs, so there the hint does nothing and uses none).
 *   4. the polling stops at the READ it waited for: a hint of 5 s, a READ
 *      20 ms later, then 600 ms idle: at most half of those 620 ms of CPU
 *      (a thread that kept polling would use all of it).
 * CPU time is the process's (CLOCK_PROCESS_CPUTIME_ID): the main thread
 * sleeps meanwhile, so what it counts is the progress thread.
 * With RDMAPS_TEST_TCP_PROGRESS=caller (ctest transport_tcp_expect_reads_caller)
 * the target context has no progress thread: a thread waiting in
 * rt_ctx_wait_target serves it, as the ps's loop does, and the same checks
 * hold for that thread's waits (they poll while the hint lasts). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma/rt.h"
#include "two_ctx.h"

#define LEN (256u << 10)
#define TMO 10000
#define ROUNDS 12 /* 2 READs each */

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Round k's bytes: a fixed pattern rotated by k * 4099 bytes, made and
 * compared with memcpy / memcmp (one range each for a sanitizer, instead
 * of a check per byte: under TSan the byte loops took over 60 s). */
static uint8_t g_base[LEN], g_want[LEN];

static void round_bytes(unsigned k)
{
	size_t off = ((size_t)k * 4099u) % LEN;

	memcpy(g_want, g_base + off, LEN - off);
	memcpy(g_want + (LEN - off), g_base, off);
}

/* READ the whole region into dst and check it holds g_want (round k). */
static int read_check(struct rt_conn *c, uint8_t *dst, unsigned k)
{
	struct rt_completion cmp;
	int rc;

	memset(dst, 0, LEN);
	if ((rc = rt_read(c, 0, 0, 0, 0, LEN, k, RT_F_SIGNALED))) {
		fprintf(stderr, "FAIL: rt_read: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	if (rt_poll(c, &cmp, 1, TMO) != 1 || cmp.status || cmp.wr_id != k) {
		fprintf(stderr, "FAIL: READ %u did not complete cleanly\n", k);
		return 1;
	}
	if (memcmp(dst, g_want, LEN)) {
		size_t i = 0;

		while (dst[i] == g_want[i])
			i++;
		fprintf(stderr, "FAIL: READ %u: byte %zu is %u, expected %u\n", k, i, dst[i], g_want[i]);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct two_ctx t;
	int rc = two_ctx_open(argc, argv, "expect_reads", TMO, &t);
	if (rc)
		return rc;
	struct rt_ctx *tctx = t.tctx;
	uint8_t *region = rt_alloc(tctx, LEN);
	uint8_t *dst = rt_alloc(t.cctx, LEN);
	if (!region || !dst) {
		fprintf(stderr, "rt_alloc failed\n");
		return 2;
	}
	struct rt_grant tg = { 0, region, LEN, RT_RIGHT_READ };
	struct rt_grant cg = { 0, dst, LEN, RT_RIGHT_NONE };
	if ((rc = two_ctx_connect(&t, &tg, 1, &cg, 1)) || (rc = two_ctx_serve_start(&t)))
		return rc;
	struct rt_conn *c = t.c;
	int ret = 0, polls = t.kind == RT_TCP;

	/* 1. arguments */
	if (rt_ctx_expect_reads(NULL, 1, 100) != RDMAPS_E_INVAL || rt_ctx_expect_reads(tctx, 0, 100) ||
	    rt_ctx_expect_reads(tctx, -3, 100) || rt_ctx_expect_reads(tctx, 1, 0) ||
	    rt_ctx_expect_reads(tctx, 1, -5)) {
		fprintf(stderr, "FAIL: argument checks of rt_ctx_expect_reads\n");
		ret = 1;
	}
	/* 2. correct bytes under the hint: announce 1, 2 or 3 READs, do 2 */
	for (size_t i = 0; i < LEN; i++)
		g_base[i] = (uint8_t)(i * 13u + (i >> 10) + 7u);
	for (unsigned k = 1; k <= ROUNDS && !ret; k++) {
		round_bytes(k);
		memcpy(region, g_want, LEN);
		if (rt_ctx_expect_reads(tctx, 1 + k % 3, 200000) || read_check(c, dst, k) || read_check(c, dst, k))
			ret = 1;
	}
	if (!ret)
		printf("ok: %d READs of %u B under hints of 1-3 READs returned the region's bytes\n", 2 * ROUNDS, LEN);
	/* whatever the rounds above left announced expires within 200 ms */
	usleep(300000);

	/* 3. a hint with nothing coming ends at its budget */
	if (!ret) {
		double c0 = cpu_ms(), used;

		rt_ctx_expect_reads(tctx, 1, 100000);
		usleep(600000);
		used = cpu_ms() - c0;
		if (used > 400) {
			fprintf(stderr, "FAIL: a 100 ms hint with no READ cost %.0f ms of CPU in 600 ms (polls on?)\n",
				used);
			ret = 1;
		} else if (polls && used < 10) {
			fprintf(stderr, "FAIL: a 100 ms hint cost only %.1f ms of CPU: the progress thread did not poll\n",
				used);
			ret = 1;
		} else {
			printf("ok: a 100 ms hint with no READ coming: %.1f ms of CPU in the next 600 ms\n", used);
		}
	}
	/* 4. ... and at the READ it waited for */
	if (!ret) {
		double c0 = cpu_ms(), used;

		rt_ctx_expect_reads(tctx, 1, 5000000);
		usleep(20000);
		if (read_check(c, dst, ROUNDS))
			ret = 1;
		usleep(600000);
		used = cpu_ms() - c0;
		if (!ret && used > 300) {
			fprintf(stderr, "FAIL: a 5 s hint went on polling after its READ: %.0f ms of CPU in 0.6 s\n",
				used);
			ret = 1;
		} else if (!ret) {
			printf("ok: a 5 s hint ended at its READ: %.1f ms of CPU in the next 0.62 s\n", used);
		}
	}
	two_ctx_disconnect(&t);
	rt_free(tctx, region, LEN);
	rt_free(t.cctx, dst, LEN);
	two_ctx_close(&t);
	return ret;
}
