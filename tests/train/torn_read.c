/* torn_read: sync reads of a parameter buffer are never torn (test (f)).
 *
 * One process, two transport contexts over loopback: a "ps" side holding a
 * PARAMS region laid out as in src/ps/layout.h, and a "worker" side that
 * hammers it with the worker's read protocol (READ buffer V%2, then a
 * FENCED READ of that buffer's version word; accept only if it is still V)
 * while a writer thread publishes versions 1, 2, ... with the ps's
 * protocol (rdmaps_buf_begin/end), each version writing every float = V.
 * Fails if an accepted copy holds any float != V.  It also counts copies
 * whose floats were mixed (what a reader without the check would have
 * used), to show the race is really exercised.
 * Usage: torn_read [tcp|rdma] [reads]; exit 77 when rdma has no device. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "ps/layout.h"
#include "rdma/rt.h"

#define NF 79510 /* the mnist mlp */

static unsigned char *params;
static volatile int stop;
/* The writer publishes in bursts of 4 versions, then pauses: the bursts make
 * reads race publications (mixed copies), the pauses let reads succeed even
 * where a READ is slow (rxe under QEMU TCG takes milliseconds). */
static long pause_us = 500;
static struct rt_listener *lst;
static struct rt_conn *srv;
static struct rt_grant pg;

static void *acceptor(void *a)
{
	(void)a;
	struct rt_request *req = NULL;
	if (rt_accept(lst, 10000, &req) || rt_accept_grant(&req, &pg, 1, &srv))
		fprintf(stderr, "torn_read: accept failed\n");
	return NULL;
}

static void *writer(void *a)
{
	(void)a;
	struct rdmaps_params_hdr *h = (struct rdmaps_params_hdr *)params;
	for (uint64_t v = 1; !stop; v++) {
		uint64_t *vw = (uint64_t *)(params + buf_off(NF, v));
		float *f = (float *)(params + buf_off(NF, v) + 64);
		rdmaps_buf_begin(vw, v);
		for (size_t i = 0; i < NF; i++)
			f[i] = (float)v;
		rdmaps_buf_end(vw, &h->current_version, v);
		if (v % 4 == 0)
			usleep((useconds_t)pause_us);
	}
	return NULL;
}

static int wait1(struct rt_conn *c)
{
	struct rt_completion comp;
	for (int k = 0; k < 1000; k++) {
		int n = rt_poll(c, &comp, 1, 100);
		if (n < 0)
			return n;
		if (n == 1)
			return comp.status;
	}
	return RDMAPS_E_TIMEOUT;
}

int main(int argc, char **argv)
{
	enum rt_kind kind = RT_TCP;
	long reads = argc > 2 ? atol(argv[2]) : 3000;
	if (argc > 1 && rt_kind_parse(argv[1], &kind))
		return 2;
	struct rt_ctx_cfg cc = { .kind = kind, .bind_host = "127.0.0.1", .numa_node = -1 };
	const char *ra = getenv("RDMAPS_RDMA_ADDR");
	if (kind == RT_RDMA)
		pause_us = 20000;
	if (kind == RT_RDMA && ra)
		cc.bind_host = ra;
	struct rt_ctx *cps = NULL, *cwk = NULL;
	int rc = rt_ctx_new(&cc, &cps);
	if (rc == RDMAPS_E_NODEV) {
		printf("SKIPPED: no RDMA device\n");
		return 77;
	}
	if (rc || rt_ctx_new(&cc, &cwk)) {
		fprintf(stderr, "torn_read: context: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	params = rt_alloc(cps, params_bytes(NF));
	unsigned char *dst = rt_alloc(cwk, buf_bytes(NF));
	uint64_t *scratch = rt_alloc(cwk, 64);
	if (!params || !dst || !scratch)
		return 1;
	struct rdmaps_params_hdr *h = (struct rdmaps_params_hdr *)params;
	h->magic = RDMAPS_MAGIC;
	h->state = PARAMS_STATE_READY;
	h->nfloats = NF;
	pg = (struct rt_grant){ G_PS_PARAMS, params, params_bytes(NF), RT_RIGHT_READ };
	if ((rc = rt_listen(cps, cc.bind_host, 0, &lst))) {
		fprintf(stderr, "torn_read: listen: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	pthread_t ta, tw;
	pthread_create(&ta, NULL, acceptor, NULL);
	struct rt_grant wg[2] = { { G_W_PARAMS_DST, dst, buf_bytes(NF), RT_RIGHT_NONE },
				  { G_W_SCRATCH, scratch, 64, RT_RIGHT_NONE } };
	struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER };
	struct rt_conn *c = NULL;
	rc = rt_connect(cwk, cc.bind_host, rt_listener_port(lst), &hello, wg, 2, 10000, &c);
	pthread_join(ta, NULL);
	if (rc || !srv) {
		fprintf(stderr, "torn_read: connect: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	pthread_create(&tw, NULL, writer, NULL);
	long accepted = 0, retried = 0, bad = 0, mixed = 0;
	for (long r = 0; r < reads; r++) {
		/* the version to ask for, as a worker learns it */
		if ((rc = rt_read(c, G_W_SCRATCH, 0, G_PS_PARAMS, offsetof(struct rdmaps_params_hdr, current_version),
				  8, 1, RT_F_SIGNALED)) || (rc = wait1(c)))
			break;
		uint64_t v = *scratch;
		size_t off = buf_off(NF, v);
		if ((rc = rt_read(c, G_W_PARAMS_DST, 0, G_PS_PARAMS, off, buf_bytes(NF), 2, 0)) ||
		    (rc = rt_read(c, G_W_SCRATCH, 0, G_PS_PARAMS, off, 8, 3, RT_F_SIGNALED | RT_F_FENCE)) ||
		    (rc = wait1(c)))
			break;
		const float *f = (const float *)(dst + 64);
		long wrong = 0;
		for (size_t i = 0; i < NF; i++)
			wrong += f[i] != (float)v;
		mixed += wrong > 0;
		if (*scratch == v) {
			accepted++;
			bad += wrong > 0;
		} else {
			retried++;
		}
	}
	stop = 1;
	pthread_join(tw, NULL);
	if (rc) {
		fprintf(stderr, "torn_read: op failed: %s (%s)\n", rdmaps_strerror(rc), rt_conn_errmsg(c));
		return 1;
	}
	printf("torn_read over %s: %ld reads, %ld accepted, %ld rejected by the version check, "
	       "%ld copies not all = V (torn or lapped), %ld accepted-but-torn, final version %llu\n",
	       rt_kind_name(kind), reads, accepted, retried, mixed, bad,
	       (unsigned long long)__atomic_load_n(&h->current_version, __ATOMIC_ACQUIRE));
	rt_conn_delete(&c);
	rt_conn_delete(&srv);
	rt_listener_delete(&lst);
	rt_ctx_delete(&cwk);
	rt_ctx_delete(&cps);
	return bad == 0 && accepted > 0 ? 0 : 1;
}
