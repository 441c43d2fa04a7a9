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

/* The first address refuses, the second listens: the second is used. */
static void second_address_after_refusal(void **st)
{
	uint16_t lp, cp = closed_port();
	int lfd = listener(8, &lp), fd = -1;
	struct addrinfo *a = ai_of(cp), *b = ai_of(lp);
	const struct addrinfo *used = NULL;

	(void)st;
	a->ai_next = b;
	assert_int_equal(tcp_connect_any(a, rt_now_ms() + 5000, &fd, &used), RDMAPS_OK);
	assert_ptr_equal(used, b);
	assert_true(fd >= 0);
	{
		int c = accept(lfd, NULL, NULL); /* it really is connected there */

		assert_true(c >= 0);
		close(c);
	}
	close(fd);
	a->ai_next = NULL;
	freeaddrinfo(a);
	freeaddrinfo(b);
	close(lfd);
}

/* The first address listens: the second is never tried. */
static void first_address_wins(void **st)
{
	uint16_t lp, cp = closed_port();
	int lfd = listener(8, &lp), fd = -1;
	struct addrinfo *a = ai_of(lp), *b = ai_of(cp);
	const struct addrinfo *used = NULL;

	(void)st;
	a->ai_next = b;
	assert_int_equal(tcp_connect_any(a, rt_now_ms() + 5000, &fd, &used), RDMAPS_OK);
	assert_ptr_equal(used, a);
	assert_int_equal(port_of(used), lp);
	close(fd);
	a->ai_next = NULL;
	freeaddrinfo(a);
	freeaddrinfo(b);
	close(lfd);
}

/* Every address refuses: REFUSED (retriable: the server may not be up yet),
 * at once, and no descriptor leaks out. */
static void all_refuse(void **st)
{
	struct addrinfo *a = ai_of(closed_port()), *b = ai_of(closed_port());
	const struct addrinfo *used = NULL;
	uint64_t t0 = rt_now_ms();
	int fd = -1;

	(void)st;
	a->ai_next = b;
	assert_int_equal(tcp_connect_any(a, t0 + 5000, &fd, &used), RDMAPS_E_REFUSED);
	assert_int_equal(fd, -1);
	assert_null(used);
	assert_true(rt_now_ms() - t0 < 2000);
	a->ai_next = NULL;
	freeaddrinfo(a);
	freeaddrinfo(b);
}

/* A silent first address (a listener whose backlog is full: the SYN goes
 * unanswered) gets only its share of the wait, and the second still
 * connects before the deadline.  Skipped where a full backlog does not
 * silence a connect (the stack answers or refuses instead). */
static void silent_address_gets_a_share(void **st)
{
	uint16_t sp, lp;
	int sfd = listener(0, &sp), lfd = listener(8, &lp), fill[4], nfill = 0, fd = -1, silent = 0;
	struct addrinfo *s = ai_of(sp), *b = ai_of(lp);
	const struct addrinfo *used = NULL;
	const struct addrinfo *u = NULL;
	uint64_t t0;

	(void)st;
	/* fill the backlog until a connect stays unanswered for 300 ms */
	while (nfill < 4) {
		int rc = tcp_connect_any(s, rt_now_ms() + 300, &fill[nfill], &u);

		if (rc == RDMAPS_E_TIMEOUT) {
			silent = 1;
			break;
		}
		if (rc)
			break;
		nfill++;
	}
	if (!silent) {
		for (int i = 0; i < nfill; i++)
			close(fill[i]);
		freeaddrinfo(s);
		freeaddrinfo(b);
		close(sfd);
		close(lfd);
		skip();
	}
	s->ai_next = b;
	t0 = rt_now_ms();
	assert_int_equal(tcp_connect_any(s, t0 + 2000, &fd, &used), RDMAPS_OK);
	assert_ptr_equal(used, b);
	/* about half of the 2 s went to the silent one, not all of it */
	assert_true(rt_now_ms() - t0 >= 800);
	assert_true(rt_now_ms() - t0 < 1900);
	close(fd);
	s->ai_next = NULL;
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	freeaddrinfo(s);
	freeaddrinfo(b);
	close(sfd);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(second_address_after_refusal),
		cmocka_unit_test(first_address_wins),
		cmocka_unit_test(all_refuse),
		cmocka_unit_test(silent_address_gets_a_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
