#ifndef RDMAPS_CLI_PORTS_H
#define RDMAPS_CLI_PORTS_H

/* Ports for the cluster's tasks, distinct and free on host.  They are taken
 * from below the kernel's ephemeral range (ip_local_port_range), because a
 * port in that range can be taken between this check and the ps's bind as
 * the local port of any connect() on the machine (the job's own connect
 * retries, another job's), and the ps then fails with "address already in
 * use".  Where the range leaves no room below it, bind to port 0 instead.
 * Returns 0, or -1 with ports[] unset. */
int rdmaps_pick_ports(const char *host, int n, int *ports);

#endif
