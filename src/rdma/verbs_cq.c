/* verbs backend: completion queue and work-completion status mapping. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>

#include "verbs_internal.h"

int verbs_cq_new(struct ibv_context *verbs, int depth, struct ibv_cq **cq,
		 struct ibv_comp_channel **cch)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(verbs);
	struct ibv_cq *q;
	int fl;

	if (!ch) {
		RDMAPS_ERR("verbs: ibv_create_comp_channel failed: %s", strerror(errno));
		return RDMAPS_E_NOMEM;
	}
	fl = fcntl(ch->fd, F_GETFL);
	if (fl < 0 || fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		RDMAPS_ERR("verbs: fcntl(O_NONBLOCK) on the completion channel failed: %s",
			   strerror(errno));
		goto err_channel;
	}
	q = ibv_create_cq(verbs, depth, NULL, ch, 0);
	if (!q) {
		RDMAPS_ERR("verbs: ibv_create_cq(%d) failed: %s", depth, strerror(errno));
		goto err_channel;
	}
	*cq = q;
	*cch = ch;
	return RDMAPS_OK;

err_channel:
	ibv_destroy_comp_channel(ch);
	return RDMAPS_E_NOMEM;
}

int verbs_cq_delete(struct ibv_cq **cq, struct ibv_comp_channel **cch)
{
	int rc, first = RDMAPS_OK;

	if (cq && *cq) {
		rc = ibv_destroy_cq(*cq);
		*cq = NULL;
		if (rc) {
			RDMAPS_ERR("verbs: ibv_destroy_cq failed: %s", strerror(rc));
			first = RDMAPS_E_IO;
		}
	}
	if (cch && *cch) {
		rc = ibv_destroy_comp_channel(*cch);
		*cch = NULL;
		if (rc) {
			RDMAPS_ERR("verbs: ibv_destroy_comp_channel failed: %s", strerror(rc));
			if (!first)
				first = RDMAPS_E_IO;
		}
	}
	return first;
}

int verbs_cq_wait(struct verbs_conn *vc, int ms)
{
	struct pollfd pfd[2] = {
		{ .fd = vc->cch->fd, .events = POLLIN },
		{ .fd = vc->ch ? vc->ch->fd : -1, .events = POLLIN },
	};

	if (!vc->armed) {
		int rc = ibv_req_notify_cq(vc->cq, 0);

		if (rc) {
			RDMAPS_ERR("verbs: ibv_req_notify_cq failed: %s", strerror(rc));
			return RDMAPS_E_IO;
		}
		vc->armed = 1;
		return RDMAPS_OK; /* the caller polls the CQ again: no lost wake-up */
	}
	if (poll(pfd, 2, ms) > 0 && (pfd[0].revents & POLLIN)) {
		struct ibv_cq *cq;
		void *cq_ctx;

		if (ibv_get_cq_event(vc->cch, &cq, &cq_ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			vc->armed = 0;
		}
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
