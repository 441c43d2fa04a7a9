/* verbs_smoke: end-to-end checks of the verbs backend on a real device
 * (rxe in the SoftRoCE VM).  Exits 77 (SKIPPED) when no device serves an
 * address.  Host: $RDMAPS_RDMA_ADDR, else the first local IPv4 address that
 * rdma_cm maps to an RDMA device.
 * Checks: auth refusal, WRITE/READ/atomics/inline, many unsignaled ops +
 * flush, and least privilege: a key granted to peer B is useless on peer A's
 * connection (remote access error on A) while B keeps working. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rt_internal.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)
#define CHECK_RC(e, want) do { int _r = (e); if (_r != (want)) { fprintf(stderr, "FAIL %s:%d: %s = %d (%s), want %d\n", __FILE__, __LINE__, #e, _r, rdmaps_strerror(_r), want); failures++; } } while (0)

static char host[64];
static struct rt_ctx *sctx;
static struct rt_listener *lst;
static uint8_t *ra, *rb;                /* server regions for peers A and B */
static struct rt_conn *sconn[2];
static int server_rc;

static int find_host(void)
{
	struct ifaddrs *ifa, *i;
	const char *env = getenv("RDMAPS_RDMA_ADDR");

	if (env && *env) {
		snprintf(host, sizeof(host), "%s", env);
		return rt_verbs_probe(host);
	}
	if (getifaddrs(&ifa))
		return 0;
	for (int pass = 0; pass < 2; pass++) {   /* loopback addresses last */
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				  host, sizeof(host));
			if ((strncmp(host, "127.", 4) == 0) != pass)
				continue;
			if (rt_verbs_probe(host)) {
				freeifaddrs(ifa);
				return 1;
			}
		}
	}
	freeifaddrs(ifa);
	return 0;
}

static void *server(void *arg)
{
	(void)arg;
	for (int k = 0; k < 2; k++) {
		struct rt_request *req = NULL;
		const struct rt_hello *h;
		struct rt_grant g = { .id = 0, .len = 4096,
				      .rights = RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC };
		int rc = rt_accept(lst, 20000, &req);

		if (rc) {
			server_rc = rc;
			return NULL;
		}
		h = rt_request_hello(req);
		if (h->index > 1 || sconn[h->index]) {
			rt_reject(&req);
			server_rc = RDMAPS_E_PROTO;
			return NULL;
		}
		g.addr = h->index == 0 ? ra : rb;
		rc = rt_accept_grant(&req, &g, 1, &sconn[h->index]);
		if (rc) {
			server_rc = rc;
			return NULL;
		}
	}
	return NULL;
}

static struct rt_ctx *new_ctx(const char *token)
{
	struct rt_ctx_cfg cfg = { .kind = RT_RDMA, .bind_host = host, .timeout_ms = 10000,
				  .auth_token = token, .numa_node = -1 };
	struct rt_ctx *c = NULL;
	int rc = rt_ctx_new(&cfg, &c);

	if (rc) {
		fprintf(stderr, "rt_ctx_new: %s\n", rdmaps_strerror(rc));
		exit(1);
	}
	return c;
}

static int wait_one(struct rt_conn *c, struct rt_completion *cp)
{
	for (int i = 0; i < 100; i++) {
		int n = rt_poll(c, cp, 1, 100);

		if (n != 0)
			return n;
	}
	return 0;
}

int main(void)
{
	struct rt_hello ha = { .role = 1, .index = 0, .layout_hash = 42 };
	struct rt_hello hb = { .role = 1, .index = 1, .layout_hash = 42 };
	struct rt_ctx *cctx, *badctx;
	struct rt_conn *a = NULL, *b = NULL, *bad = NULL;
	struct rt_completion cp;
	uint8_t *la, *lb;
	pthread_t th;

	if (!find_host()) {
		printf("SKIPPED: no active RDMA device serves a local address\n");
		return 77;
	}
	printf("verbs_smoke on %s\n", host);
	sctx = new_ctx("s3cret");
	cctx = new_ctx("s3cret");
	badctx = new_ctx("wrong");
	ra = rt_alloc(sctx, 4096);
	rb = rt_alloc(sctx, 4096);
	la = rt_alloc(cctx, 4096);
	lb = rt_alloc(cctx, 4096);
	CHECK(ra && rb && la && lb);
	CHECK_RC(rt_listen(sctx, host, 0, &lst), 0);
	if (failures)
		return 1;
	pthread_create(&th, NULL, server, NULL);

	{
		struct rt_grant g = { .id = 0, .addr = la, .len = 4096, .rights = 0 };

		CHECK_RC(rt_connect(badctx, host, rt_listener_port(lst), &ha, &g, 1, 5000, &bad),
			 RDMAPS_E_AUTH);
		CHECK_RC(rt_connect(cctx, host, rt_listener_port(lst), &ha, &g, 1, 10000, &a), 0);
		g.addr = lb;
		CHECK_RC(rt_connect(cctx, host, rt_listener_port(lst), &hb, &g, 1, 10000, &b), 0);
	}
	pthread_join(th, NULL);
	CHECK_RC(server_rc, 0);
	if (failures || !a || !b)
		goto out;
	CHECK(rt_conn_remote(a, 0) && rt_conn_remote(a, 0)->len == 4096);
	CHECK(rt_conn_hello(sconn[1])->index == 1);

	/* WRITE + flush, READ back */
	for (int i = 0; i < 256; i++)
		la[i] = (uint8_t)i;
	CHECK_RC(rt_write(a, 0, 0, 0, 512, 256, 1, 0), 0);
	CHECK_RC(rt_flush(a, 5000), 0);
	CHECK(memcmp(ra + 512, la, 256) == 0);
	CHECK_RC(rt_read(a, 0, 1024, 0, 512, 256, 2, RT_F_SIGNALED), 0);
	CHECK_RC(wait_one(a, &cp), 1);
	CHECK(cp.wr_id == 2 && cp.status == 0 && cp.op == RT_OP_READ);
	CHECK(memcmp(la + 1024, la, 256) == 0);
	/* inline WRITE */
	memcpy(la + 2048, "inline!", 8);
	CHECK_RC(rt_write(a, 0, 2048, 0, 64, 8, 3, RT_F_INLINE | RT_F_SIGNALED), 0);
	CHECK_RC(wait_one(a, &cp), 1);
	CHECK(cp.status == 0 && memcmp(ra + 64, "inline!", 8) == 0);
	/* atomics */
	__atomic_store_n((uint64_t *)ra, 10, __ATOMIC_SEQ_CST);
	CHECK_RC(rt_fetch_add(a, 0, 3072, 0, 0, 5, 4, RT_F_SIGNALED), 0);
	CHECK_RC(wait_one(a, &cp), 1);
	CHECK(cp.status == 0 && *(uint64_t *)(la + 3072) == 10);
	CHECK(__atomic_load_n((uint64_t *)ra, __ATOMIC_SEQ_CST) == 15);
	CHECK_RC(rt_cmp_swap(a, 0, 3080, 0, 0, 15, 99, 5, RT_F_SIGNALED | RT_F_FENCE), 0);
	CHECK_RC(wait_one(a, &cp), 1);
	CHECK(cp.status == 0 && *(uint64_t *)(la + 3080) == 15);
	CHECK(__atomic_load_n((uint64_t *)ra, __ATOMIC_SEQ_CST) == 99);
	/* many unsignaled ops: hidden signaling frees the SQ; flush waits */
	for (int i = 0; i < 1000; i++) {
		la[4000] = (uint8_t)i;
		CHECK_RC(rt_write(a, 0, 4000, 0, 4000, 1, 100 + i, 0), 0);
		if (failures)
			break;
	}
	CHECK_RC(rt_flush(a, 10000), 0);
	CHECK_RC(rt_poll(a, &cp, 1, 0), 0);   /* none were signaled */

	/* least privilege: B's key on A's connection (A's PD) must fail */
	memset(rb, 0x5a, 64);
	a->remote[1] = *rt_conn_remote(b, 0);
	a->remote[1].id = 1;
	a->remote_valid[1] = 1;
	CHECK_RC(rt_write(a, 0, 0, 1, 0, 64, 6, RT_F_SIGNALED), 0);
	CHECK_RC(wait_one(a, &cp), 1);
	CHECK_RC(cp.status, RDMAPS_E_REMOTE_ACCESS);
	printf("peer A errmsg: %s\n", rt_conn_errmsg(a));
	CHECK(rb[0] == 0x5a && rb[63] == 0x5a);
	/* ... and B is unaffected */
	memset(lb, 0x11, 64);
	CHECK_RC(rt_write(b, 0, 0, 0, 0, 64, 7, RT_F_SIGNALED), 0);
	CHECK_RC(wait_one(b, &cp), 1);
	CHECK(cp.status == 0 && rb[0] == 0x11);
out:
	rt_conn_delete(&a);
	rt_conn_delete(&b);
	rt_conn_delete(&sconn[0]);
	rt_conn_delete(&sconn[1]);
	rt_listener_delete(&lst);
	rt_free(sctx, ra, 4096);
	rt_free(sctx, rb, 4096);
	rt_free(cctx, la, 4096);
	rt_free(cctx, lb, 4096);
	rt_ctx_delete(&badctx);
	rt_ctx_delete(&cctx);
	rt_ctx_delete(&sctx);
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
