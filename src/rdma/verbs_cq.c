/* verbs backend: completion queue and work-completion status mapping. */
#include <errno.h>
#include <string.h>

#include "verbs_internal.h"

int verbs_cq_new(struct ibv_context *verbs, int depth, struct ibv_cq **cq)
{
	struct ibv_cq *q = ibv_create_cq(verbs, depth, NULL, NULL, 0);

	if (!q) {
		RDMAPS_ERR("verbs: ibv_create_cq(%d) failed: %s", depth, strerror(errno));
		return RDMAPS_E_NOMEM;
	}
	*cq = q;
	return RDMAPS_OK;
}

int verbs_cq_delete(struct ibv_cq **cq)
{
	int rc;

	if (!cq || !*cq)
		return RDMAPS_OK;
	rc = ibv_destroy_cq(*cq);
	*cq = NULL;
	if (rc) {
		RDMAPS_ERR("verbs: ibv_destroy_cq failed: %s", strerror(rc));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}

int verbs_wc_status(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return RDMAPS_OK;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return RDMAPS_E_REMOTE_ACCESS;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_WR_FLUSH_ERR:
		return RDMAPS_E_PEER_GONE;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_LEN_ERR:
		return RDMAPS_E_INVAL;
	default:
		return RDMAPS_E_IO;
	}
}
