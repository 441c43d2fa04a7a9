/* unit_tcp_setup: the server's side of the TCP connection set-up
 * (tcp_setup.c tcp_accept_poll) against a raw client on loopback that
 * sends both hellos, reads the set-up reply and then only part of its
 * answer (the header and its grants table).  While it stays connected the
 * poll says AGAIN; once it hangs up (FIN or reset) the poll says so at
 * once, not after the set-up bound (RT_HANDSHAKE_MS) as a TIMEOUT: the peek
 * that looks for the whole answer keeps returning the part that came. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rdma/rt.h"
#include "rdma/rt_internal.h"
#include "rdma/tcp_internal.h"

struct setup {
	struct rt_ctx *ctx;
	struct rt_listener *lst;
	struct rt_conn *c;
	int fa, fb;               /* the raw client's OPS and SERVE sockets */
	char region[4096];
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int raw_connect(uint16_t port, uint8_t channel)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct tcp_hello th;
	uint8_t b[TCP_HELLO_LEN];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	memset(&th, 0, sizeof(th));
	th.channel = channel;
	th.h.role = 1;
	th.h.index = 0;
	th.nonce = 42;
	tcp_hello_encode(&th, b);
	assert_int_equal(send(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	return fd;
}

/* Up to the client's answer: the server has sent its reply (split set-up)
 * and the client has read it; then the client sends part bytes of a valid
 * header announcing a 64-byte table. */
static void setup_part(struct setup *s, size_t part)
{
	struct rt_ctx_cfg cfg = { .kind = RT_TCP, .timeout_ms = 10000, .numa_node = -1 };
	struct rt_request *req;
	struct rt_grant g = { 0, s->region, sizeof(s->region), RT_RIGHT_READ };
	uint8_t reply[TCP_SETUP_LEN + RT_TABLE_MAX_LEN], ans[TCP_SETUP_LEN + 64];

	memset(s, 0, sizeof(*s));
	assert_int_equal(rt_ctx_new(&cfg, &s->ctx), 0);
	assert_int_equal(rt_listen(s->ctx, "127.0.0.1", 0, &s->lst), 0);
	s->fa = raw_connect(rt_listener_port(s->lst), TCP_CH_OPS);
	s->fb = raw_connect(rt_listener_port(s->lst), TCP_CH_SERVE);
	assert_int_equal(rt_accept(s->lst, 2000, &req), 0);
	assert_int_equal(rt_accept_grant_start(&req, &g, 1, &s->c), 0);
	assert_true(recv(s->fa, reply, sizeof(reply), 0) >= TCP_SETUP_LEN);
	memset(ans, 0, sizeof(ans));
	rt_put32(ans, TCP_SETUP_MAGIC);
	rt_put16(ans + 4, 1);
	rt_put32(ans + 12, 64);
	assert_true(part < sizeof(ans));
	assert_int_equal(send(s->fa, ans, part, 0), (ssize_t)part);
	usleep(20000); /* the part is queued at the server (loopback) */
}

static void setup_free(struct setup *s)
{
	if (s->fa >= 0)
		close(s->fa);
	if (s->fb >= 0)
		close(s->fb);
	rt_conn_delete(&s->c);
	rt_listener_delete(&s->lst);
	rt_ctx_delete(&s->ctx);
}

/* The client hangs up (reset: SO_LINGER 0) and the poll must end within
 * 0.5 s with something else than AGAIN or TIMEOUT; returns its status. */
static int hang_up_and_poll(struct setup *s, int reset)
{
	double t0;
	int rc;

	/* still connected: the answer is incomplete, nothing is wrong yet */
	assert_int_equal(rt_accept_poll(s->c), RDMAPS_E_AGAIN);
	if (reset) {
		struct linger lg = { 1, 0 };

		assert_int_equal(setsockopt(s->fa, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	}
	close(s->fa);
	close(s->fb);
	s->fa = s->fb = -1;
	t0 = now_s();
	while ((rc = rt_accept_poll(s->c)) == RDMAPS_E_AGAIN && now_s() - t0 < 5.0)
		usleep(5000);
	printf("  hung up (%s): rt_accept_poll -> %s after %.3f s\n", reset ? "reset" : "FIN",
	       rdmaps_strerror(rc), now_s() - t0);
	assert_true(now_s() - t0 < 0.5);
	assert_int_not_equal(rc, RDMAPS_E_AGAIN);
	assert_int_not_equal(rc, RDMAPS_E_TIMEOUT);
	assert_int_not_equal(rc, RDMAPS_OK);
	return rc;
}

static void part_of_header_then_fin(void **st)
{
	struct setup s;

	(void)st;
	setup_part(&s, 8);
	assert_int_equal(hang_up_and_poll(&s, 0), RDMAPS_E_PEER_GONE);
	setup_free(&s);
}

static void header_and_part_of_table_then_fin(void **st)
{
	struct setup s;

	(void)st;
	setup_part(&s, TCP_SETUP_LEN + 4);
	assert_int_equal(hang_up_and_poll(&s, 0), RDMAPS_E_PEER_GONE);
	setup_free(&s);
}

static void part_of_header_then_reset(void **st)
{
	struct setup s;

	(void)st;
	setup_part(&s, 8);
	hang_up_and_poll(&s, 1);
	setup_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(part_of_header_then_fin),
		cmocka_unit_test(header_and_part_of_table_then_fin),
		cmocka_unit_test(part_of_header_then_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
