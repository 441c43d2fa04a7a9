/* unit_tcp_addr: the TCP client tries every address a name resolves to
 * (tcp_connect_any), on loopback sockets: a name such as "localhost" may
 * resolve to ::1 and 127.0.0.1 while the server listens on one of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "rdma/rt_internal.h"
#include "rdma/tcp_internal.h"

/* A listening socket on 127.0.0.1 with an ephemeral port; *port gets it. */
static int listener(int backlog, uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A 127.0.0.1 port where nothing listens (bound, then closed). */
static uint16_t closed_port(void)
{
	uint16_t p;
	int fd = listener(1, &p);

	close(fd);
	return p;
}

static struct addrinfo *ai_of(uint16_t port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *ai = NULL;
	char serv[8];

	snprintf(serv, sizeof(serv), "%u", port);
	assert_int_equal(getaddrinfo("127.0.0.1", serv, &hints, &ai), 0);
	assert_non_null(ai);
	ai->ai_next = NULL; /* one entry each; the tests chain them */
	return ai;
}

static uint16_t port_of(const struct addrinfo *a)
{
	return ntohs(((const struct sockaddr_in *)a->ai_addr)->sin_port);
}

/* Two chained addresses on 127.0.0.1: which of them has a listener (lfd,
 * else -1) is the test's. */
struct two {
	int lfd;
	uint16_t lport;
	struct addrinfo *a, *b;
};

static void two_new(struct two *t, int a_listens, int b_listens)
{
	t->lfd = -1;
	t->a = ai_of(a_listens ? (t->lfd = listener(8, &t->lport), t->lport) : closed_port());
	t->b = ai_of(b_listens ? (t->lfd = listener(8, &t->lport), t->lport) : closed_port());
	t->a->ai_next = t->b;
}

static void two_free(struct two *t)
{
	t->a->ai_next = NULL;
	freeaddrinfo(t->a);
	freeaddrinfo(t->b);
	if (t->lfd >= 0)
		close(t->lfd);
}

/* The first address refuses, the second listens: the second is used. */
static void second_address_after_refusal(void **st)
{
	const struct addrinfo *used = NULL;
	struct two t;
	int fd = -1, c;

	(void)st;
	two_new(&t, 0, 1);
	assert_int_equal(tcp_connect_any(t.a, rt_now_ms() + 5000, &fd, &used), RDMAPS_OK);
	assert_ptr_equal(used, t.b);
	assert_true(fd >= 0);
	c = accept(t.lfd, NULL, NULL); /* it really is connected there */
	assert_true(c >= 0);
	close(c);
	close(fd);
	two_free(&t);
}

/* The first address listens: the second is never tried. */
static void first_address_wins(void **st)
{
	const struct addrinfo *used = NULL;
	struct two t;
	int fd = -1;

	(void)st;
	two_new(&t, 1, 0);
	assert_int_equal(tcp_connect_any(t.a, rt_now_ms() + 5000, &fd, &used), RDMAPS_OK);
	assert_ptr_equal(used, t.a);
	assert_int_equal(port_of(used), t.lport);
	close(fd);
	two_free(&t);
}

/* Every address refuses: REFUSED (retriable: the server may not be up yet),
 * at once, and no descriptor leaks out. */
static void all_refuse(void **st)
{
	const struct addrinfo *used = NULL;
	uint64_t t0 = rt_now_ms();
	struct two t;
	int fd = -1;

	(void)st;
	two_new(&t, 0, 0);
	assert_int_equal(tcp_connect_any(t.a, t0 + 5000, &fd, &used), RDMAPS_E_REFUSED);
	assert_int_equal(fd, -1);
	assert_null(used);
	assert_true(rt_now_ms() - t0 < 2000);
	two_free(&t);
}

/* A silent first address (a listener whose backlog is full: the SYN goes
 * unanswered) gets only its share of the wait, and the second still
 * connects before the deadline.  Skipped where a full backlog does not
 * silence a connect (the stack answers or refuses instead). */
static void silent_address_gets_a_share(void **st)
{
	uint16_t sp;
	int sfd = listener(0, &sp), fill[4], nfill = 0, fd = -1, silent = 0;
	const struct addrinfo *used = NULL;
	struct two t;

	(void)st;
	two_new(&t, 0, 1);
	t.a->ai_next = NULL;
	freeaddrinfo(t.a); /* the closed port: the full backlog instead */
	t.a = ai_of(sp);
	/* fill the backlog until a connect stays unanswered for 300 ms */
	while (nfill < 4) {
		int rc = tcp_connect_any(t.a, rt_now_ms() + 300, &fill[nfill], &used);

		if (rc)
			silent = rc == RDMAPS_E_TIMEOUT;
		if (rc)
			break;
		nfill++;
	}
	if (silent) {
		uint64_t t0 = rt_now_ms();

		t.a->ai_next = t.b;
		assert_int_equal(tcp_connect_any(t.a, t0 + 2000, &fd, &used), RDMAPS_OK);
		assert_ptr_equal(used, t.b);
		/* about half of the 2 s went to the silent one, not all of it */
		assert_true(rt_now_ms() - t0 >= 800);
		assert_true(rt_now_ms() - t0 < 1900);
		close(fd);
	}
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(sfd);
	two_free(&t);
	if (!silent)
		skip();
}

/* 1 when a plain connect to addr:port (a numeric address) is accepted
 * before 2 s, 0 when refused or silent, -1 when the family is missing. */
static int reaches(const char *addr, uint16_t port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV },
			*ai = NULL;
	const struct addrinfo *used = NULL;
	char serv[8];
	int fd = -1, rc, probe;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(addr, serv, &hints, &ai))
		return -1;
	probe = socket(ai->ai_family, SOCK_STREAM, 0);
	if (probe < 0) {
		freeaddrinfo(ai);
		return -1;
	}
	close(probe);
	rc = tcp_connect_any(ai, rt_now_ms() + 2000, &fd, &used);
	freeaddrinfo(ai);
	if (fd >= 0)
		close(fd);
	return rc == RDMAPS_OK;
}

/* The listener binds every address its name resolves to: the wildcard
 * ("", as a ps binding no name gets) is 0.0.0.0 and :: here, and both
 * families reach it.  Until stop 28 it bound the first (0.0.0.0) only and
 * [::1] was refused. */
static void listener_binds_every_address(void **st)
{
	struct rt_ctx_cfg cc = { .kind = RT_TCP, .timeout_ms = 2000, .numa_node = -1 };
	struct rt_ctx *ctx = NULL;
	struct rt_listener *lst = NULL;
	uint16_t port;
	int v6;

	(void)st;
	assert_int_equal(rt_ctx_new(&cc, &ctx), RDMAPS_OK);
	assert_int_equal(rt_listen(ctx, "", 0, &lst), RDMAPS_OK);
	port = rt_listener_port(lst);
	assert_true(port != 0);
	assert_int_equal(reaches("127.0.0.1", port), 1);
	v6 = reaches("::1", port);
	rt_listener_delete(&lst);
	/* both sockets closed: the port refuses on both families */
	assert_int_equal(reaches("127.0.0.1", port), 0);
	rt_ctx_delete(&ctx);
	if (v6 < 0)
		skip(); /* no IPv6 here: only half of the case ran */
	assert_int_equal(v6, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(second_address_after_refusal),
		cmocka_unit_test(first_address_wins),
		cmocka_unit_test(all_refuse),
		cmocka_unit_test(silent_address_gets_a_share),
		cmocka_unit_test(listener_binds_every_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
