/* verbs backend: device probe, context, protection domain. */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"

/* True iff this device has at least one ACTIVE port.  Quiet. */
static int dev_has_active_port(struct ibv_device *dev)
{
	struct ibv_context *vc = ibv_open_device(dev);
	struct ibv_device_attr da;
	int ok = 0;

	if (!vc)
		return 0;
	if (ibv_query_device(vc, &da) == 0) {
		for (uint8_t p = 1; p <= da.phys_port_cnt && !ok; p++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(vc, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
				ok = 1;
		}
	}
	ibv_close_device(vc);
	return ok;
}

/* Does rdma_cm map host to an RDMA device?  Wildcard addresses: yes. */
static int host_has_device(const char *host)
{
	struct rdma_cm_id *id = NULL;
	struct addrinfo hints, *ai = NULL;
	int ok = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return 0;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0)
		goto out;
	/* bound: id->verbs is the serving device, or NULL for a wildcard
	 * address, which any active device serves; a local address without an
	 * RDMA device fails with ENODEV */
	if (rdma_bind_addr(id, ai->ai_addr) == 0)
		ok = 1;
	rdma_destroy_id(id);
out:
	freeaddrinfo(ai);
	return ok;
}

int rt_verbs_probe(const char *host)
{
	struct ibv_device **list;
	int n = 0, found = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0;
	for (int i = 0; i < n && !found; i++)
		found = dev_has_active_port(list[i]);
	ibv_free_device_list(list);
	if (!found)
		return 0;
	if (host && *host)
		return host_has_device(host);
	return 1;
}

/* NUMA node of the device serving host (or of the first active one). */
static int device_numa_node(const char *host)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	int n = 0, node = -1;

	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	if (host && *host) {
		struct rdma_cm_id *id = NULL;
		struct addrinfo hints, *ai = NULL;

		memset(&hints, 0, sizeof(hints));
		hints.ai_flags = AI_PASSIVE;
		if (getaddrinfo(host, NULL, &hints, &ai) == 0 && ai) {
			if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0) {
				if (rdma_bind_addr(id, ai->ai_addr) == 0 && id->verbs)
					node = rt_numa_node_of_device(id->verbs->device);
				rdma_destroy_id(id);
			}
			freeaddrinfo(ai);
		}
	}
	for (int i = 0; node < 0 && !dev && i < n; i++)
		if (dev_has_active_port(list[i]))
			dev = list[i];
	if (node < 0 && dev)
		node = rt_numa_node_of_device(dev);
	ibv_free_device_list(list);
	return node;
}

int verbs_ctx_init(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg)
{
	if (!rt_verbs_probe(cfg ? cfg->bind_host : NULL)) {
		RDMAPS_INFO("verbs: no active RDMA device%s%s",
			    cfg && cfg->bind_host ? " serves " : "",
			    cfg && cfg->bind_host ? cfg->bind_host : "");
		return RDMAPS_E_NODEV;
	}
	if (cfg && cfg->numa_node < 0)
		ctx->numa_node = device_numa_node(cfg->bind_host);
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
