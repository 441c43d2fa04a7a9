/* Free ports for a local cluster's tasks (rdmaps launch, the test drivers). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/ports.h"

/* The low end of the kernel's ephemeral port range, 0 if unknown. */
static int eph_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 0, hi = 0;

	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 0;
		fclose(f);
	}
	return lo;
}

/* port (0: any) on host, if a socket can bind and listen there now; else -1 */
static int port_free(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t l = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1, got = -1;

	if (s < 0)
		return -1;
	inet_pton(AF_INET, host, &a.sin_addr);
	/* as the ps binds (SO_REUSEADDR: a TIME_WAIT left by a past run is no
	 * obstacle), and listen, so a port another process listens on fails */
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!bind(s, (struct sockaddr *)&a, sizeof(a)) && !listen(s, 1) &&
	    !getsockname(s, (struct sockaddr *)&a, &l))
		got = ntohs(a.sin_port);
	close(s);
	return got;
}

int rdmaps_pick_ports(const char *host, int n, int *ports)
{
	const int lo = eph_low(), base = lo - 16384 > 1024 ? lo - 16384 : 1024;
	unsigned int seed = (unsigned int)getpid() ^ (unsigned int)time(NULL);

	for (int k = 0; k < n; k++) {
		int p = -1;

		for (int tries = 0; tries < 1000 && p < 0; tries++) {
			p = lo - base >= 1024 ? port_free(host, base + (int)(rand_r(&seed) % (unsigned)(lo - base)))
					      : port_free(host, 0);
			for (int i = 0; i < k && p >= 0; i++)
				if (ports[i] == p)
					p = -1;
		}
		if (p < 0)
			return -1;
		ports[k] = p;
	}
	return 0;
}
