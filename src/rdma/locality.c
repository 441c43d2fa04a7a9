/* Locality: the set of CPUs "near" the context's RDMA device, and pinning a
 * thread to it.
 *
 * The context's cpuset is resolved once, in rt_ctx_new:
 *   1. cfg->cpuset given ("0-3,8"): parsed; CPUs this process may not run on
 *      are dropped; nothing left -> RDMAPS_E_INVAL;
 *   2. else, with more than one NUMA node and an RDMA device serving
 *      cfg->bind_host: the device's cpuset (hwloc's verbs helper) intersected
 *      with the CPUs this process may run on;
 *   3. else (one NUMA node, no device, hwloc failure, empty intersection):
 *      every CPU this process may run on, i.e. pinning changes nothing.
 * The TCP backend's progress thread is created with that affinity when
 * cfg->pin_progress is set; rt_pin_thread() pins any caller's thread (the
 * verbs backend has no thread of its own: the poller is the caller). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#include <hwloc/openfabrics-verbs.h>
#include <numa.h>

#include "rt_internal.h"

int rt_cpulist_parse(const char *s, cpu_set_t *set)
{
	const char *p = s;

	if (!s || !set || !*s)
		return RDMAPS_E_INVAL;
	CPU_ZERO(set);
	for (;;) {
		char *end;
		unsigned long lo, hi;

		if (*p < '0' || *p > '9')
			return RDMAPS_E_INVAL;
		errno = 0;
		lo = strtoul(p, &end, 10);
		if (errno || lo >= CPU_SETSIZE)
			return RDMAPS_E_INVAL;
		hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return RDMAPS_E_INVAL;
			errno = 0;
			hi = strtoul(p, &end, 10);
			if (errno || hi >= CPU_SETSIZE || hi < lo)
				return RDMAPS_E_INVAL;
			p = end;
		}
		for (unsigned long c = lo; c <= hi; c++)
			CPU_SET((int)c, set);
		if (*p == '\0')
			return RDMAPS_OK;
		if (*p != ',')
			return RDMAPS_E_INVAL;
		p++;
	}
}

int rt_cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;

	if (!set || !buf || !len)
		return RDMAPS_E_INVAL;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int e = c, n;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		n = e == c ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", c)
			   : snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", c, e);
		if (n < 0 || (size_t)n >= len - off) {
			buf[0] = '\0';
			return RDMAPS_E_INVAL;
		}
		off += (size_t)n;
		c = e;
	}
	return RDMAPS_OK;
}

int rt_cpuset_of_device(struct ibv_device *dev, cpu_set_t *set)
{
	hwloc_topology_t topo;
	hwloc_cpuset_t hs;
	int rc = -1;

	if (!dev || !set)
		return -1;
	if (hwloc_topology_init(&topo) != 0)
		return -1;
	if (hwloc_topology_load(topo) != 0)
		goto out_topo;
	hs = hwloc_bitmap_alloc();
	if (!hs)
		goto out_topo;
	if (hwloc_ibv_get_device_cpuset(topo, dev, hs) == 0 && !hwloc_bitmap_iszero(hs)) {
		int c;

		CPU_ZERO(set);
		hwloc_bitmap_foreach_begin(c, hs)
			if (c < CPU_SETSIZE)
				CPU_SET(c, set);
		hwloc_bitmap_foreach_end();
		rc = CPU_COUNT(set) ? 0 : -1;
	}
	hwloc_bitmap_free(hs);
out_topo:
	hwloc_topology_destroy(topo);
	return rc;
}

#ifdef RT_HAVE_VERBS
static int device_cpuset(const char *host, cpu_set_t *set)
{
	return rt_verbs_device_cpuset(host, set);
}
#else
static int device_cpuset(const char *host, cpu_set_t *set)
{
	(void)host;
	(void)set;
	return -1;
}
#endif

int rt_locality_init(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg)
{
	cpu_set_t allowed, want;
	char list[256];

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
		RDMAPS_ERR("rt: sched_getaffinity failed: %s", strerror(errno));
		return RDMAPS_E_IO;
	}
	ctx->cpus = allowed;
	ctx->pin_progress = cfg->pin_progress != 0;
	if (cfg->cpuset && *cfg->cpuset) {
		if (rt_cpulist_parse(cfg->cpuset, &want) != RDMAPS_OK) {
			RDMAPS_ERR("rt: bad cpuset \"%s\" (want a CPU list like \"0-3,8\")",
				   cfg->cpuset);
			return RDMAPS_E_INVAL;
		}
		CPU_AND(&want, &want, &allowed);
		if (!CPU_COUNT(&want)) {
			rt_cpulist_format(&allowed, list, sizeof(list));
			RDMAPS_ERR("rt: cpuset \"%s\" has no CPU this process may run on (allowed: %s)",
				   cfg->cpuset, list);
			return RDMAPS_E_INVAL;
		}
		ctx->cpus = want;
		return RDMAPS_OK;
	}
	/* one NUMA node: every CPU is as near the device as any other */
	if (numa_available() < 0 || numa_num_configured_nodes() <= 1)
		return RDMAPS_OK;
	if (device_cpuset(cfg->bind_host, &want) == 0) {
		CPU_AND(&want, &want, &allowed);
		if (CPU_COUNT(&want))
			ctx->cpus = want;
	}
	return RDMAPS_OK;
}

int rt_ctx_cpuset(const struct rt_ctx *ctx, cpu_set_t *set)
{
	if (!ctx || !set)
		return RDMAPS_E_INVAL;
	*set = ctx->cpus;
	return RDMAPS_OK;
}

int rt_ctx_cpulist(const struct rt_ctx *ctx, char *buf, size_t len)
{
	if (!ctx)
		return RDMAPS_E_INVAL;
	return rt_cpulist_format(&ctx->cpus, buf, len);
}

int rt_pin_thread(const struct rt_ctx *ctx)
{
	int err;

	if (!ctx)
		return RDMAPS_E_INVAL;
	err = pthread_setaffinity_np(pthread_self(), sizeof(ctx->cpus), &ctx->cpus);
	if (err) {
		RDMAPS_ERR("rt: pthread_setaffinity_np failed: %s", strerror(err));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}
