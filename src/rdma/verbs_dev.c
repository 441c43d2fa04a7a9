/* verbs backend: device probe, context, protection domain. */
#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"

/* The probe must not use librdmacm: librdmacm caches the device contexts it
 * opens for the life of the process, and a process that fork()s after a
 * probe would hand its children contexts the kernel refuses to serve
 * (uverbs write: EACCES, the file was opened with the parent's creds).  So
 * the probe opens and closes devices with plain verbs and matches the host
 * address against the ports' GID tables (RoCE: IPv4-mapped / IPv6 GIDs). */

/* host -> GID form of its address; *wild for 0.0.0.0 / ::.  0 or -1. */
static int host_gid(const char *host, union ibv_gid *gid, int *wild)
{
	struct addrinfo hints, *ai = NULL;
	int rc = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	memset(gid, 0, sizeof(*gid));
	*wild = 0;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return -1;
	if (ai->ai_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ai->ai_addr;

		*wild = sin->sin_addr.s_addr == htonl(INADDR_ANY);
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &sin->sin_addr, 4);
		rc = 0;
	} else if (ai->ai_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ai->ai_addr;

		*wild = !memcmp(&s6->sin6_addr, &in6addr_any, sizeof(in6addr_any));
		memcpy(gid->raw, &s6->sin6_addr, 16);
		rc = 0;
	}
	freeaddrinfo(ai);
	return rc;
}

/* Does port p of vc serve gid (NULL: any address)?  Active, and gid in
 * its GID table.  *pa gets the port's attributes (zeroed if the query
 * failed). */
static int port_serves(struct ibv_context *vc, uint8_t p, struct ibv_port_attr *pa,
		       const union ibv_gid *gid)
{
	memset(pa, 0, sizeof(*pa));
	if (ibv_query_port(vc, p, pa) != 0) {
		memset(pa, 0, sizeof(*pa));
		return 0;
	}
	if (pa->state != IBV_PORT_ACTIVE)
		return 0;
	if (!gid)
		return 1;
	for (int i = 0; i < pa->gid_tbl_len; i++) {
		union ibv_gid g;

		if (ibv_query_gid(vc, p, i, &g) == 0 && !memcmp(g.raw, gid->raw, sizeof(g.raw)))
			return 1;
	}
	return 0;
}

/* True iff dev has a port that serves gid (port_serves). */
static int dev_serves(struct ibv_device *dev, const union ibv_gid *gid)
{
	struct ibv_context *vc = ibv_open_device(dev);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int ok = 0;

	if (!vc)
		return 0;
	if (ibv_query_device(vc, &da) == 0)
		for (int p = 1; p <= da.phys_port_cnt && !ok; p++) /* int: 255 ports must not wrap */
			ok = port_serves(vc, (uint8_t)p, &pa, gid);
	ibv_close_device(vc);
	return ok;
}

/* The device serving host (NULL/wildcard: the first active one), called
 * with the device list held; fn(dev, arg) is evaluated on it.  -1 = none. */
static int with_device(const char *host, int (*fn)(struct ibv_device *, void *),
		       void *arg)
{
	struct ibv_device **list;
	union ibv_gid gid;
	int n = 0, wild = 1, r = -1;

	if (host && *host && host_gid(host, &gid, &wild))
		return -1;
	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	for (int i = 0; i < n; i++) {
		if (dev_serves(list[i], wild ? NULL : &gid)) {
			r = fn(list[i], arg);
			break;
		}
	}
	ibv_free_device_list(list);
	return r;
}

static int found(struct ibv_device *dev, void *arg) { (void)dev; (void)arg; return 1; }

/* The device's atomic_cap (enum ibv_atomic_cap), -1 if it cannot be
 * queried; name (char[64]) gets the device's name. */
#define DEV_NAME_LEN 64
static int atomic_cap_of(struct ibv_device *dev, void *name)
{
	struct ibv_context *vc = ibv_open_device(dev);
	struct ibv_device_attr da;
	int cap = -1;

	snprintf(name, DEV_NAME_LEN, "%s", ibv_get_device_name(dev));
	if (!vc)
		return -1;
	if (ibv_query_device(vc, &da) == 0)
		cap = (int)da.atomic_cap;
	ibv_close_device(vc);
	return cap;
}
static int node_of(struct ibv_device *dev, void *arg) { (void)arg; return rt_numa_node_of_device(dev); }
static int cpuset_of(struct ibv_device *dev, void *set) { return rt_cpuset_of_device(dev, set); }

int rt_verbs_probe(const char *host)
{
	return with_device(host, found, NULL) == 1;
}

int rt_verbs_device_cpuset(const char *host, cpu_set_t *set)
{
	return with_device(host, cpuset_of, set) == 0 ? 0 : -1;
}

int verbs_ctx_init(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg)
{
	const char *host = cfg ? cfg->bind_host : NULL;

	if (!rt_verbs_probe(host)) {
		RDMAPS_INFO("verbs: no active RDMA device%s%s", host ? " serves " : "",
			    host ? host : "");
		return RDMAPS_E_NODEV;
	}
	/* FETCH_ADD carries the sync counters: a device without atomics is
	 * refused here, not at the first push (a remote op error then) */
	char dname[DEV_NAME_LEN] = "?";
	int cap = with_device(host, atomic_cap_of, dname);
	if (cap == IBV_ATOMIC_NONE) {
		RDMAPS_ERR("verbs: device %s has no RDMA atomics (atomic_cap NONE): rdmaps' sync counters "
			   "need FETCH_ADD; use --transport=tcp", dname);
		return RDMAPS_E_NOSUPPORT;
	}
	ctx->caps_extra = cap == IBV_ATOMIC_GLOB ? RT_CAP_ATOMIC_GLOBAL : 0;
	if (cfg && cfg->numa_node < 0) {
		int node = with_device(host, node_of, NULL);

		ctx->numa_node = node >= 0 ? node : -1;
	}
	ctx->backend = NULL; /* all verbs state is per connection */
	return RDMAPS_OK;
}

void verbs_ctx_fini(struct rt_ctx *ctx)
{
	ctx->backend = NULL;
}

int verbs_pd_new(struct ibv_context *verbs, struct ibv_pd **pd)
{
	struct ibv_pd *p = ibv_alloc_pd(verbs);

	if (!p) {
		RDMAPS_ERR("verbs: ibv_alloc_pd failed: %s", strerror(errno));
		return RDMAPS_E_NOMEM;
	}
	*pd = p;
	return RDMAPS_OK;
}

void verbs_pd_delete(struct ibv_pd **pd)
{
	int rc;

	if (!pd || !*pd)
		return;
	rc = ibv_dealloc_pd(*pd);
	if (rc)
		RDMAPS_ERR("verbs: ibv_dealloc_pd failed: %s", strerror(rc));
	*pd = NULL;
}

static const char *state_name(enum ibv_port_state st)
{
	switch (st) {
	case IBV_PORT_DOWN: return "DOWN";
	case IBV_PORT_INIT: return "INIT";
	case IBV_PORT_ARMED: return "ARMED";
	case IBV_PORT_ACTIVE: return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
	default: return "unknown";
	}
}

static const char *link_name(uint8_t link)
{
	switch (link) {
	case IBV_LINK_LAYER_UNSPECIFIED: /* older drivers: InfiniBand */
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	default: return "unknown";
	}
}

static const char *atomic_name(int cap)
{
	switch (cap) {
	case IBV_ATOMIC_GLOB: return "GLOB";
	case IBV_ATOMIC_HCA: return "HCA";
	case IBV_ATOMIC_NONE: return "NONE";
	default: return "?";
	}
}

/* Entry k of out (if k < max) for a port of dev; port 0 = dev unusable. */
static void put_port(struct rt_port_info *out, int max, int k, struct ibv_device *dev,
		     int port, const char *state, const char *link, int node, int serves, int acap)
{
	const char *name = ibv_get_device_name(dev);

	if (k >= max)
		return;
	snprintf(out[k].dev, sizeof(out[k].dev), "%s", name ? name : "?");
	out[k].port = port;
	snprintf(out[k].state, sizeof(out[k].state), "%s", state);
	snprintf(out[k].link, sizeof(out[k].link), "%s", link);
	out[k].numa_node = node;
	out[k].serves = serves;
	snprintf(out[k].atomics, sizeof(out[k].atomics), "%s", atomic_name(acap));
}

int rt_verbs_list_ports(const char *host, struct rt_port_info *out, int max)
{
	struct ibv_device **list;
	union ibv_gid gid;
	int n = 0, wild = 1, k = 0;

	if (host && *host && host_gid(host, &gid, &wild))
		return RDMAPS_E_INVAL;
	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) /* ENOSYS: no RDMA support in this kernel, i.e. no devices */
		return errno == ENOSYS ? 0 : RDMAPS_E_IO;
	for (int i = 0; i < n; i++) {
		struct ibv_context *vc = ibv_open_device(list[i]);
		struct ibv_device_attr da;
		int node = rt_numa_node_of_device(list[i]);

		if (!vc || ibv_query_device(vc, &da) != 0) {
			put_port(out, max, k++, list[i], 0, "unknown", "unknown", node, 0, -1);
			if (vc)
				ibv_close_device(vc);
			continue;
		}
		for (int p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			int s = port_serves(vc, (uint8_t)p, &pa, wild ? NULL : &gid);

			/* (a failed query leaves pa zeroed: state NOP) */
			put_port(out, max, k++, list[i], p, state_name(pa.state),
				 pa.state == IBV_PORT_NOP ? "unknown" : link_name(pa.link_layer), node, s,
				 (int)da.atomic_cap);
		}
		ibv_close_device(vc);
	}
	ibv_free_device_list(list);
	return k;
}
