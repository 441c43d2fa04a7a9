/* `rdmaps devices [HOST]`: the RDMA ports this machine has, and what
 * --transport=auto would choose for a task bound to HOST (its entry in
 * --ps_hosts / --worker_hosts; no HOST: any address).  For the question
 * "why did rdmaps fall back to tcp?" without reading verbs tools' output:
 * the decision is made by the same code as rt_ctx_new's (rt_list_ports).
 * Exit 0 when a port serves HOST, 1 when none does (auto: tcp), 2 on bad
 * arguments or an address that does not resolve.  HOST is taken as a task
 * takes its own entry (rdmaps_local_bind_host: a name on 127.0.1.1 means
 * every address). */
#include <stdio.h>
#include <string.h>

#include "cli/cluster.h"
#include "cli/devices.h"
#include "common/status.h"
#include "rdma/rt.h"

#define MAX_PORTS 64

int rdmaps_devices_main(int argc, char **argv)
{
	static struct rt_port_info p[MAX_PORTS];
	const char *host = argc > 1 ? argv[1] : NULL;
	const char *on = host ? " on " : "", *h = host ? host : "";
	int n, shown, use = -1;

	if (argc > 2 || (host && !*host)) {
		fprintf(stderr, "rdmaps: usage: rdmaps devices [HOST]\n");
		return 2;
	}
	/* the address a task named HOST uses (cli/cluster.h): a name whose
	 * first address here is a loopback one stands for every address */
	char bind[256], why[320];
	if (host && rdmaps_local_bind_host(host, bind, sizeof(bind), why, sizeof(why)))
		printf("%s: a task named so listens on every address (%s) and takes any active RDMA port\n",
		       why, bind);
	n = rt_list_ports(host ? bind : NULL, p, MAX_PORTS);
	if (n == RDMAPS_E_INVAL) {
		fprintf(stderr, "rdmaps: devices: cannot resolve '%s'\n", h);
		return 2;
	}
	if (n < 0) {
		fprintf(stderr, "rdmaps: devices: cannot list RDMA devices: %s\n", rdmaps_strerror(n));
		return 1;
	}
	shown = n < MAX_PORTS ? n : MAX_PORTS;
	if (!n)
		printf("no RDMA devices (none in libibverbs' list: no RDMA NIC, its driver not loaded, "
		       "or no SoftRoCE link: see ci/softroce/)\n");
	else
		printf("%-16s %4s  %-12s %-10s %4s  %-7s  %s\n", "device", "port", "state", "link", "numa",
		       "atomics", host ? "serves" : "active");
	for (int i = 0; i < shown; i++) {
		char node[16];

		snprintf(node, sizeof(node), "%d", p[i].numa_node);
		if (p[i].port)
			printf("%-16s %4d  %-12s %-10s %4s  %-7s  %s\n", p[i].dev, p[i].port, p[i].state, p[i].link,
			       p[i].numa_node < 0 ? "-" : node, p[i].atomics, p[i].serves ? "yes" : "no");
		else
			printf("%-16s %4s  %-12s %-10s %4s  %-7s  %s\n", p[i].dev, "-", "cannot open", "-",
			       p[i].numa_node < 0 ? "-" : node, "-", "no");
		if (p[i].serves && use < 0)
			use = i;
	}
	if (n > shown)
		printf("(%d more ports not shown)\n", n - shown);
	if (use >= 0 && !strcmp(p[use].atomics, "NONE")) {
		/* rt_ctx_new refuses such a device (rdmaps' counters need FETCH_ADD) */
		printf("--transport=auto%s%s: tcp (%s has no RDMA atomics, which rdmaps needs); "
		       "--transport=rdma%s%s fails\n", on, h, p[use].dev, on, h);
		return 1;
	}
	if (use >= 0) {
		printf("--transport=auto%s%s: rdma (%s, port %d)\n", on, h, p[use].dev, p[use].port);
		return 0;
	}
	printf("--transport=auto%s%s: tcp (no active RDMA port serves %s); --transport=rdma%s%s fails\n", on, h,
	       host ? "this address" : "any address", on, h);
	return 1;
}
