/* verbs backend: memory registration and the rights -> access mapping. */
#include <errno.h>
#include <string.h>

#include "verbs_internal.h"

/* What the peer may do -> ibv access flags.  Registration in the
 * connection's own PD makes the key useless to any other peer.
 *   NONE   -> LOCAL_WRITE (source/sink of my own ops)
 *   READ   -> REMOTE_READ
 *   WRITE  -> REMOTE_WRITE | LOCAL_WRITE   (verbs requires LOCAL_WRITE)
 *   ATOMIC -> REMOTE_ATOMIC | LOCAL_WRITE */
unsigned verbs_rights_to_access(unsigned rights)
{
	unsigned a = 0;

	if (rights == RT_RIGHT_NONE)
		return IBV_ACCESS_LOCAL_WRITE;
	if (rights & RT_RIGHT_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (rights & RT_RIGHT_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (rights & RT_RIGHT_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	return a;
}

int verbs_mr_reg(struct ibv_pd *pd, void *addr, size_t len, unsigned access,
		 struct ibv_mr **mr)
{
	struct ibv_mr *m = ibv_reg_mr(pd, addr, len, access);

	if (!m) {
		RDMAPS_ERR("verbs: ibv_reg_mr(%zu bytes, access 0x%x) failed: %s",
			   len, access, strerror(errno));
		return RDMAPS_E_NOMEM;
	}
	*mr = m;
	return RDMAPS_OK;
}

int verbs_mr_dereg(struct ibv_mr **mr)
{
	int rc;

	if (!mr || !*mr)
		return RDMAPS_OK;
	rc = ibv_dereg_mr(*mr);
	*mr = NULL;
	if (rc) {
		RDMAPS_ERR("verbs: ibv_dereg_mr failed: %s", strerror(rc));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}

int verbs_mr_reg_grants(struct rt_conn *conn, struct ibv_pd *pd,
			const struct rt_grant *g, int n)
{
	int rc;

	if (n < 0 || n > RT_MAX_GRANTS || (n > 0 && !g))
		return RDMAPS_E_INVAL;
	for (int i = 0; i < n; i++) {
		struct rt_local *l;
		struct ibv_mr *mr = NULL;

		if (g[i].id >= RT_MAX_GRANTS || !g[i].addr || g[i].len == 0 ||
		    (g[i].rights & ~(unsigned)(RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC)) ||
		    conn->local[g[i].id].valid) {
			RDMAPS_ERR("verbs: bad grant #%d (id %u, len %zu, rights 0x%x)",
				   i, g[i].id, g[i].len, g[i].rights);
			rc = RDMAPS_E_INVAL;
			goto err_dereg;
		}
		rc = verbs_mr_reg(pd, g[i].addr, g[i].len,
				  verbs_rights_to_access(g[i].rights), &mr);
		if (rc)
			goto err_dereg;
		l = &conn->local[g[i].id];
		l->addr = g[i].addr;
		l->len = g[i].len;
		l->rights = g[i].rights;
		l->lkey = mr->lkey;
		l->mr = mr;
		l->valid = 1;
	}
	return RDMAPS_OK;

err_dereg:
	verbs_mr_dereg_grants(conn);
	return rc;
}

int verbs_mr_dereg_grants(struct rt_conn *conn)
{
	int first = RDMAPS_OK;

	for (int i = 0; i < RT_MAX_GRANTS; i++) {
		struct rt_local *l = &conn->local[i];
		struct ibv_mr *mr = l->mr;
		int rc;

		if (!l->valid)
			continue;
		rc = verbs_mr_dereg(&mr);
		if (rc && !first)
			first = rc;
		memset(l, 0, sizeof(*l));
	}
	return first;
}
