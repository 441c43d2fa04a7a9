/* rt_alloc / rt_free: page-aligned zeroed memory on the context's NUMA node,
 * and the device -> NUMA node lookup (hwloc) used when the verbs device is
 * known.  With one node (or no libnuma support) it is a plain anonymous mmap. */
#include <numa.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/openfabrics-verbs.h>

#include "rt_internal.h"

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (len + pg - 1) / pg * pg;
}

static int use_numa(const struct rt_ctx *ctx)
{
	return ctx && ctx->numa_node >= 0 && numa_available() >= 0 &&
	       numa_num_configured_nodes() > 1;
}

void *rt_alloc(struct rt_ctx *ctx, size_t len)
{
	void *p;

	if (!len)
		return NULL;
	len = page_round(len);
	if (use_numa(ctx)) {
		p = numa_alloc_onnode(len, ctx->numa_node); /* mmap: zeroed, aligned */
		if (!p)
			RDMAPS_ERR("rt: numa_alloc_onnode(%zu, %d) failed", len, ctx->numa_node);
		return p;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		RDMAPS_ERR("rt: mmap(%zu) failed", len);
		return NULL;
	}
	return p;
}

void rt_free(struct rt_ctx *ctx, void *p, size_t len)
{
	if (!p || !len)
		return;
	len = page_round(len);
	if (use_numa(ctx))
		numa_free(p, len);
	else
		munmap(p, len);
}

int rt_numa_node_of_device(struct ibv_device *dev)
{
	hwloc_topology_t topo;
	hwloc_cpuset_t set;
	int node = -1;

	if (!dev || numa_available() < 0 || numa_num_configured_nodes() <= 1)
		return -1;
	if (hwloc_topology_init(&topo) != 0)
		return -1;
	if (hwloc_topology_load(topo) != 0)
		goto out_topo;
	set = hwloc_bitmap_alloc();
	if (!set)
		goto out_topo;
	if (hwloc_ibv_get_device_cpuset(topo, dev, set) == 0) {
		hwloc_obj_t obj = NULL;

		while ((obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, obj))) {
			if (hwloc_bitmap_intersects(obj->cpuset, set)) {
				node = (int)obj->os_index;
				break;
			}
		}
	}
	hwloc_bitmap_free(set);
out_topo:
	hwloc_topology_destroy(topo);
	return node;
}
