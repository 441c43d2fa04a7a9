/* verbs backend: rdma_cm event channel, RC queue pair, connect / accept,
 * and the one-SEND-each grants table exchange after ESTABLISHED.
 * Every wait is bounded: the event channel fd is non-blocking and waited
 * for with poll(). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "desc.h"
#include "verbs_internal.h"

/* ---- the hello private data (little-endian, see verbs_internal.h) ------- */

void verbs_hello_encode(uint8_t out[VERBS_HELLO_LEN], const struct rt_hello *h,
			const char *token, size_t token_len)
{
	memset(out, 0, VERBS_HELLO_LEN);
	rt_put16(out, VERBS_HELLO_MAGIC);
	out[2] = VERBS_HELLO_VERSION;
	out[3] = h->role;
	rt_put32(out + 4, h->index);
	rt_put64(out + 8, h->layout_hash);
	if (token_len > RT_TOKEN_MAX)
		token_len = RT_TOKEN_MAX;
	if (token && token_len)
		memcpy(out + 16, token, token_len);
}

int verbs_hello_decode(const void *pd, size_t len, struct rt_hello *h,
		       uint8_t token[RT_TOKEN_MAX])
{
	const uint8_t *p = pd;

	if (!p || len < VERBS_HELLO_LEN || rt_get16(p) != VERBS_HELLO_MAGIC ||
	    p[2] != VERBS_HELLO_VERSION)
		return RDMAPS_E_PROTO;
	h->role = p[3];
	h->index = rt_get32(p + 4);
	h->layout_hash = rt_get64(p + 8);
	memcpy(token, p + 16, RT_TOKEN_MAX);
	return RDMAPS_OK;
}

/* Constant-time comparison of n bytes. */
int verbs_token_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	volatile uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

static void rej_encode(uint8_t out[VERBS_REJ_LEN], enum verbs_rej_reason r)
{
	rt_put16(out, VERBS_HELLO_MAGIC);
	out[2] = VERBS_HELLO_VERSION;
	out[3] = (uint8_t)r;
}

static int rej_decode(const struct rdma_cm_event *ev)
{
	const uint8_t *p = ev->param.conn.private_data;

	if (!p || ev->param.conn.private_data_len < VERBS_REJ_LEN || rt_get16(p) != VERBS_HELLO_MAGIC)
		return RDMAPS_E_REFUSED;
	if (p[3] == VERBS_REJ_AUTH)
		return RDMAPS_E_AUTH;
	if (p[3] == VERBS_REJ_IN_USE)
		return RDMAPS_E_IN_USE;
	if (p[3] == VERBS_REJ_MISMATCH)
		return RDMAPS_E_MISMATCH;
	return RDMAPS_E_REFUSED;
}

/* ---- event channel ------------------------------------------------------ */

static int channel_new(struct rdma_event_channel **ch)
{
	struct rdma_event_channel *c = rdma_create_event_channel();
	int fl;

	if (!c) {
		int e = errno; /* the log line may change errno */

		RDMAPS_ERR("verbs: rdma_create_event_channel failed: %s", strerror(e));
		return e == ENODEV ? RDMAPS_E_NODEV : RDMAPS_E_IO;
	}
	fl = fcntl(c->fd, F_GETFL);
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		RDMAPS_ERR("verbs: fcntl(O_NONBLOCK) on the cm channel failed: %s",
			   strerror(errno));
		rdma_destroy_event_channel(c);
		return RDMAPS_E_IO;
	}
	*ch = c;
	return RDMAPS_OK;
}

static void channel_delete(struct rdma_event_channel **ch)
{
	if (*ch)
		rdma_destroy_event_channel(*ch);
	*ch = NULL;
}

static void id_delete(struct rdma_cm_id **id)
{
	if (*id && rdma_destroy_id(*id))
		RDMAPS_ERR("verbs: rdma_destroy_id failed: %s", strerror(errno));
	*id = NULL;
}

static int event_status(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return ev->status == -ETIMEDOUT ? RDMAPS_E_TIMEOUT : RDMAPS_E_UNREACHABLE;
	case RDMA_CM_EVENT_REJECTED:
		return rej_decode(ev);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return RDMAPS_E_NODEV;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return RDMAPS_E_PEER_GONE;
	default:
		return RDMAPS_E_PROTO;
	}
}

int verbs_cm_wait(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		  int timeout_ms, int quiet, struct rdma_cm_event **ev)
{
	uint64_t deadline = rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	struct rdma_cm_event *e;
	int rc;

	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		uint64_t now;

		if (rdma_get_cm_event(ch, &e) == 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			RDMAPS_ERR("verbs: rdma_get_cm_event failed: %s", strerror(errno));
			return RDMAPS_E_IO;
		}
		now = rt_now_ms();
		if (now >= deadline)
			return RDMAPS_E_TIMEOUT;
		rc = poll(&pfd, 1, (int)(deadline - now));
		if (rc < 0 && errno != EINTR) {
			RDMAPS_ERR("verbs: poll on the cm channel failed: %s", strerror(errno));
			return RDMAPS_E_IO;
		}
	}
	if (e->event == want) {
		*ev = e;
		return RDMAPS_OK;
	}
	rc = event_status(e);
	if (quiet && rt_connect_caller_reports(rc))
		RDMAPS_DBG("verbs: waiting for %s, got %s (status %d): %s",
			   rdma_event_str(want), rdma_event_str(e->event), e->status,
			   rdmaps_strerror(rc));
	else if (rc == RDMAPS_E_AUTH)
		RDMAPS_INFO("verbs: waiting for %s, got %s (status %d): %s",
			    rdma_event_str(want), rdma_event_str(e->event), e->status,
			    rdmaps_strerror(rc));
	else
		RDMAPS_ERR("verbs: waiting for %s, got %s (status %d)",
			   rdma_event_str(want), rdma_event_str(e->event), e->status);
	rdma_ack_cm_event(e);
	return rc;
}

int verbs_check_cm_events(struct rt_conn *c)
{
	struct verbs_conn *vc = c->backend;
	struct rdma_cm_event *e;

	while (vc->ch && rdma_get_cm_event(vc->ch, &e) == 0) {
		enum rdma_cm_event_type t = e->event;

		rdma_ack_cm_event(e);
		if (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			if (!vc->broken) {
				vc->broken = RDMAPS_E_PEER_GONE;
				rt_conn_set_err(c, "verbs: peer disconnected (%s)",
						rdma_event_str(t));
			}
			if (vc->connected) {
				rdma_disconnect(vc->id); /* QP -> error: pending ops flush */
				vc->connected = 0;
			}
		}
	}
	return vc->broken;
}

/* ---- per-connection resources ------------------------------------------- */

static void conn_teardown(struct rt_conn *conn)
{
	struct verbs_conn *vc = conn->backend;

	if (!vc)
		return;
	if (vc->connected && vc->id)
		rdma_disconnect(vc->id);
	vc->connected = 0;
	if (vc->id && vc->qp)
		rdma_destroy_qp(vc->id);
	vc->qp = NULL;
	verbs_cq_delete(&vc->cq, &vc->cch);
	verbs_mr_dereg(&vc->ctrl_mr);
	free(vc->ctrl);
	vc->ctrl = NULL;
	verbs_mr_dereg_grants(conn);
	verbs_pd_delete(&vc->pd);
	id_delete(&vc->id);
	channel_delete(&vc->ch);
	free(vc);
	conn->backend = NULL;
}

static int post_ctrl_recv(struct verbs_conn *vc)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(vc->ctrl + VERBS_CTRL_BYTES),
		.length = VERBS_CTRL_BYTES,
		.lkey = vc->ctrl_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = VERBS_WRID_CTRL_RECV, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;
	int rc = ibv_post_recv(vc->qp, &wr, &bad);

	if (rc) {
		RDMAPS_ERR("verbs: ibv_post_recv failed: %s", strerror(rc));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}

/* Build PD, MRs, CQ, QP on id (already owned by conn->backend) and pre-post
 * the RECV for the peer's grants table. */
static int conn_setup(struct rt_conn *conn, const struct rt_grant *g, int n)
{
	struct verbs_conn *vc = conn->backend;
	struct ibv_qp_init_attr qa;
	uint8_t tmo = VERBS_ACK_TIMEOUT;
	int rc;

	if (!vc->id->verbs) {
		RDMAPS_ERR("verbs: the cm id is not bound to an RDMA device");
		return RDMAPS_E_NODEV;
	}
	rc = verbs_pd_new(vc->id->verbs, &vc->pd);
	if (rc)
		return rc;
	rc = verbs_mr_reg_grants(conn, vc->pd, g, n);
	if (rc)
		return rc;
	vc->ctrl = aligned_alloc(64, 2 * VERBS_CTRL_BYTES);
	if (!vc->ctrl) {
		RDMAPS_ERR("verbs: out of memory for the control buffer");
		return RDMAPS_E_NOMEM;
	}
	memset(vc->ctrl, 0, 2 * VERBS_CTRL_BYTES);
	rc = verbs_mr_reg(vc->pd, vc->ctrl, 2 * VERBS_CTRL_BYTES,
			  verbs_rights_to_access(RT_RIGHT_NONE), &vc->ctrl_mr);
	if (rc)
		return rc;
	rc = verbs_cq_new(vc->id->verbs, VERBS_SQ_DEPTH + 4, &vc->cq, &vc->cch);
	if (rc)
		return rc;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = vc->cq;
	qa.recv_cq = vc->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 0;
	qa.cap.max_send_wr = VERBS_SQ_DEPTH;
	qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = VERBS_MAX_INLINE;
	if (rdma_create_qp(vc->id, vc->pd, &qa)) {
		int e = errno;

		RDMAPS_ERR("verbs: rdma_create_qp failed: %s", strerror(e));
		return e == ENOMEM ? RDMAPS_E_NOMEM : RDMAPS_E_IO;
	}
	vc->qp = vc->id->qp;
	vc->sq_depth = VERBS_SQ_DEPTH;
	vc->max_inline = qa.cap.max_inline_data;
	vc->wr.sg_list = &vc->sge;
	vc->wr.num_sge = 1;
	if (rdma_set_option(vc->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &tmo, sizeof(tmo)))
		RDMAPS_WARN("verbs: rdma_set_option(ACK_TIMEOUT) failed: %s (default kept)",
			    strerror(errno));
	return post_ctrl_recv(vc);
}

/* After ESTABLISHED: SEND our advertised grants (tables_post), RECV the
 * peer's (tables_take, once ctrl_sent and ctrl_recvd): exchange_tables (the client)
 * waits for both, verbs_accept_poll looks without waiting. */
static int tables_post(struct rt_conn *conn)
{
	struct verbs_conn *vc = conn->backend;
	struct rt_remote mine[RT_MAX_GRANTS];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	size_t len = 0;
	int n = 0, rc;

	for (uint32_t i = 0; i < RT_MAX_GRANTS; i++) {
		const struct rt_local *l = &conn->local[i];

		if (!l->valid || l->rights == RT_RIGHT_NONE)
			continue;
		mine[n].id = i;
		mine[n].addr = (uint64_t)(uintptr_t)l->addr;
		mine[n].len = l->len;
		mine[n].rkey = ((struct ibv_mr *)l->mr)->rkey;
		mine[n].rights = l->rights;
		n++;
	}
	rc = rt_desc_table_encode(mine, n, vc->ctrl, VERBS_CTRL_BYTES, &len);
	if (rc) {
		RDMAPS_ERR("verbs: encoding the grants table failed: %s", rdmaps_strerror(rc));
		return rc;
	}
	sge.addr = (uintptr_t)vc->ctrl;
	sge.length = (uint32_t)len;
	sge.lkey = vc->ctrl_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = VERBS_WRID_CTRL_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	rc = ibv_post_send(vc->qp, &wr, &bad);
	if (rc) {
		RDMAPS_ERR("verbs: ibv_post_send(grants table) failed: %s", strerror(rc));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}

static int tables_take(struct rt_conn *conn)
{
	struct verbs_conn *vc = conn->backend;
	struct rt_remote theirs[RT_MAX_GRANTS];
	int m = 0, rc;

	rc = rt_desc_table_decode(vc->ctrl + VERBS_CTRL_BYTES, vc->ctrl_recv_len,
				  theirs, RT_MAX_GRANTS, &m);
	if (rc) {
		RDMAPS_ERR("verbs: malformed grants table from the peer: %s",
			   rdmaps_strerror(rc));
		return rc;
	}
	for (int i = 0; i < m; i++) {
		if (theirs[i].id >= RT_MAX_GRANTS) {
			RDMAPS_ERR("verbs: peer grant id %u out of range", theirs[i].id);
			return RDMAPS_E_PROTO;
		}
		conn->remote[theirs[i].id] = theirs[i];
		conn->remote_valid[theirs[i].id] = 1;
	}
	return RDMAPS_OK;
}

static int exchange_tables(struct rt_conn *conn, uint64_t deadline)
{
	struct verbs_conn *vc = conn->backend;
	int rc = tables_post(conn);

	if (rc)
		return rc;
	while (!(vc->ctrl_sent && vc->ctrl_recvd)) {
		rc = verbs_progress(conn);
		if (rc < 0)
			return rc;
		if (vc->broken)
			return vc->broken;
		if (!rc && rt_now_ms() >= deadline) {
			RDMAPS_ERR("verbs: timed out exchanging grants tables");
			return RDMAPS_E_TIMEOUT;
		}
	}
	return tables_take(conn);
}

static struct verbs_conn *vconn_new(void)
{
	struct verbs_conn *vc = aligned_alloc(64, (sizeof(*vc) + 63) & ~(size_t)63);

	if (!vc) {
		RDMAPS_ERR("verbs: out of memory for a connection");
		return NULL;
	}
	memset(vc, 0, sizeof(*vc));
	return vc;
}

static int set_timeout(const struct rt_ctx *ctx, int timeout_ms)
{
	if (timeout_ms > 0)
		return timeout_ms;
	return ctx->timeout_ms > 0 ? ctx->timeout_ms : 10000;
}

static int resolve(const char *host, uint16_t port, int passive, struct addrinfo **ai)
{
	struct addrinfo hints;
	char ps[8];
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = host ? AF_UNSPEC : AF_INET; /* NULL: 0.0.0.0, not :: */
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	snprintf(ps, sizeof(ps), "%u", port);
	rc = getaddrinfo(host, ps, &hints, ai);
	if (rc || !*ai) {
		static char last[300];
		char key[300];
		snprintf(key, sizeof(key), "%s:%u %d", host ? host : "*", port, rc);
		if (rt_first_time(last, sizeof(last), key))
			RDMAPS_ERR("verbs: getaddrinfo(%s:%u) failed: %s", host ? host : "*", port,
				   gai_strerror(rc));
		return rc ? rt_gai_status(rc) : RDMAPS_E_NONAME;
	}
	return RDMAPS_OK;
}

/* ---- listener ------------------------------------------------------------ */

int verbs_listen(struct rt_ctx *ctx, const char *host, uint16_t port,
		 struct rt_listener *lst)
{
	struct verbs_listener *vl;
	struct addrinfo *ai = NULL;
	int rc;

	(void)ctx;
	vl = calloc(1, sizeof(*vl));
	if (!vl) {
		RDMAPS_ERR("verbs: out of memory for a listener");
		return RDMAPS_E_NOMEM;
	}
	rc = channel_new(&vl->ch);
	if (rc)
		goto err_free;
	if (rdma_create_id(vl->ch, &vl->id, NULL, RDMA_PS_TCP)) {
		RDMAPS_ERR("verbs: rdma_create_id failed: %s", strerror(errno));
		rc = RDMAPS_E_IO;
		goto err_channel;
	}
	rc = resolve(host, port, 1, &ai);
	if (rc)
		goto err_id;
	if (rdma_bind_addr(vl->id, ai->ai_addr)) {
		int e = errno;

		RDMAPS_ERR("verbs: rdma_bind_addr(%s:%u) failed: %s", host ? host : "*",
			   port, strerror(e));
		rc = e == EADDRINUSE ? RDMAPS_E_ADDR_IN_USE : RDMAPS_E_NODEV;
		goto err_ai;
	}
	if (rdma_listen(vl->id, 64)) {
		RDMAPS_ERR("verbs: rdma_listen failed: %s", strerror(errno));
		rc = RDMAPS_E_IO;
		goto err_ai;
	}
	freeaddrinfo(ai);
	lst->port = ntohs(rdma_get_src_port(vl->id));
	lst->backend = vl;
	return RDMAPS_OK;

err_ai:
	freeaddrinfo(ai);
err_id:
	id_delete(&vl->id);
err_channel:
	channel_delete(&vl->ch);
err_free:
	free(vl);
	return rc;
}

void verbs_listener_fini(struct rt_listener *lst)
{
	struct verbs_listener *vl = lst->backend;

	if (!vl)
		return;
	id_delete(&vl->id);
	channel_delete(&vl->ch);
	free(vl);
	lst->backend = NULL;
}

static void reject_id(struct rdma_cm_id *id, enum verbs_rej_reason r)
{
	uint8_t pd[VERBS_REJ_LEN];

	rej_encode(pd, r);
	if (rdma_reject(id, pd, sizeof(pd)))
		RDMAPS_ERR("verbs: rdma_reject failed: %s", strerror(errno));
}

int verbs_accept(struct rt_listener *lst, int timeout_ms, struct rt_request *req)
{
	struct verbs_listener *vl = lst->backend;
	struct rt_ctx *ctx = lst->ctx;
	uint64_t deadline = rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	uint8_t want[RT_TOKEN_MAX];

	memset(want, 0, sizeof(want));
	memcpy(want, ctx->token, ctx->token_len < RT_TOKEN_MAX ? ctx->token_len : RT_TOKEN_MAX);
	for (;;) {
		struct rdma_cm_event *ev = NULL;
		struct verbs_request *vr;
		struct rdma_cm_id *id;
		uint8_t tok[RT_TOKEN_MAX];
		struct rt_hello h;
		int rc, left = rt_remaining_ms(deadline);

		rc = verbs_cm_wait(vl->ch, RDMA_CM_EVENT_CONNECT_REQUEST, left, 0, &ev);
		/* DEVICE_REMOVAL: the listener's device is gone, no request will
		 * come (rdma_cm wants the id destroyed: the caller's listener
		 * delete does that) */
		if (rc == RDMAPS_E_TIMEOUT || rc == RDMAPS_E_IO || rc == RDMAPS_E_NODEV)
			return rc;
		if (rc) {
			if (rt_now_ms() >= deadline)
				return RDMAPS_E_TIMEOUT;
			continue; /* unexpected event on the listener: already logged */
		}
		id = ev->id;
		if (verbs_hello_decode(ev->param.conn.private_data,
				       ev->param.conn.private_data_len, &h, tok)) {
			RDMAPS_WARN("verbs: connection request with a malformed hello refused");
			reject_id(id, VERBS_REJ_PROTO);
			rdma_ack_cm_event(ev);
			id_delete(&id);
			continue;
		}
		/* Equal tokens or none on both sides, as on tcp: a token this
		 * side does not expect is refused too.  Tokens hold no NUL
		 * (rt_ctx_new uses strnlen), so the zero-padded 40 bytes are
		 * equal exactly when length and bytes are. */
		if (!verbs_token_equal(tok, want, RT_TOKEN_MAX)) {
			RDMAPS_WARN("verbs: connection request (role %u index %u) with %s refused",
				    h.role, h.index,
				    !ctx->token_len ? "an auth token, but this side has none (no --auth_token_file),"
				    : !tok[0] ? "no auth token" : "a wrong auth token");
			reject_id(id, VERBS_REJ_AUTH);
			rdma_ack_cm_event(ev);
			id_delete(&id);
			continue;
		}
		vr = calloc(1, sizeof(*vr));
		if (!vr) {
			RDMAPS_ERR("verbs: out of memory for a request");
			reject_id(id, VERBS_REJ_REFUSED);
			rdma_ack_cm_event(ev);
			id_delete(&id);
			return RDMAPS_E_NOMEM;
		}
		vr->id = id;
		vr->initiator_depth = ev->param.conn.initiator_depth;
		vr->responder_resources = ev->param.conn.responder_resources;
		rdma_ack_cm_event(ev);
		/* the child id gets its own channel: its events must not mix
		 * with other requests on the listener's channel */
		rc = channel_new(&vr->ch);
		if (!rc && rdma_migrate_id(id, vr->ch)) {
			RDMAPS_ERR("verbs: rdma_migrate_id failed: %s", strerror(errno));
			rc = RDMAPS_E_IO;
		}
		if (rc) {
			reject_id(id, VERBS_REJ_REFUSED);
			id_delete(&vr->id);
			channel_delete(&vr->ch);
			free(vr);
			return rc;
		}
		req->hello = h;
		req->backend = vr;
		return RDMAPS_OK;
	}
}

static uint8_t min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }

/* VERBS_RD_ATOM, or less where the device allows less outstanding RDMA
 * READs / atomics per QP (librdmacm fails rdma_connect / rdma_accept with
 * EINVAL above max_qp_rd_atom / max_qp_init_rd_atom) */
static void rd_atom_limits(struct ibv_context *verbs, uint8_t *resp, uint8_t *init)
{
	struct ibv_device_attr da;

	*resp = *init = VERBS_RD_ATOM;
	if (!verbs || ibv_query_device(verbs, &da))
		return;
	if (da.max_qp_rd_atom >= 0 && da.max_qp_rd_atom < VERBS_RD_ATOM)
		*resp = (uint8_t)da.max_qp_rd_atom;
	if (da.max_qp_init_rd_atom >= 0 && da.max_qp_init_rd_atom < VERBS_RD_ATOM)
		*init = (uint8_t)da.max_qp_init_rd_atom;
}

/* The server's half of the set-up, up to rdma_accept: verbs_accept_poll
 * (without waiting) or verbs_accept_grant (waiting) completes it. */
int verbs_accept_start(struct rt_request *req, const struct rt_grant *g, int n,
		       struct rt_conn *conn)
{
	struct verbs_request *vr = req->backend;
	/* ESTABLISHED and the client's table: a short bound, not the ctx
	 * timeout (the ps serves everyone on one thread) */
	uint64_t deadline = rt_handshake_deadline(req->ctx, RT_HANDSHAKE_VERBS_MS);
	struct rdma_conn_param cp;
	struct verbs_conn *vc;
	int rc;

	vc = vconn_new();
	if (!vc) {
		verbs_reject(req);
		return RDMAPS_E_NOMEM;
	}
	memset(&cp, 0, sizeof(cp));
	{
		uint8_t resp, init;

		rd_atom_limits(vr->id->verbs, &resp, &init);
		cp.responder_resources = min_u8(vr->initiator_depth, resp);
		cp.initiator_depth = min_u8(vr->responder_resources, init);
	}
	cp.retry_count = VERBS_RETRY;
	cp.rnr_retry_count = VERBS_RETRY;
	vc->id = vr->id;   /* the connection owns id and channel from here on */
	vc->ch = vr->ch;
	free(vr);
	req->backend = NULL;
	conn->backend = vc;
	conn->peer_hello = req->hello;

	rc = conn_setup(conn, g, n);
	if (rc)
		goto err;
	if (rdma_accept(vc->id, &cp)) {
		RDMAPS_ERR("verbs: rdma_accept failed: %s", strerror(errno));
		rc = RDMAPS_E_IO;
		goto err;
	}
	vc->hs_state = 1;
	vc->hs_deadline = deadline;
	return RDMAPS_OK;
err:
	if (vc->id)
		reject_id(vc->id, VERBS_REJ_REFUSED);
	rt_conn_set_err(conn, "verbs: accept failed: %s", rdmaps_strerror(rc));
	conn_teardown(conn);
	return rc;
}

static int accept_fail(struct rt_conn *conn, int rc)
{
	rt_conn_set_err(conn, "verbs: accept failed: %s", rdmaps_strerror(rc));
	conn_teardown(conn);
	return rc;
}

int verbs_accept_poll(struct rt_conn *conn)
{
	struct verbs_conn *vc = conn->backend;
	struct rdma_cm_event *ev = NULL;
	int rc;

	if (!vc)
		return RDMAPS_E_INVAL;
	if (!vc->hs_state)
		return RDMAPS_OK;
	if (vc->hs_state == 1) {
		rc = verbs_cm_wait(vc->ch, RDMA_CM_EVENT_ESTABLISHED, 0, 0, &ev);
		if (rc == RDMAPS_E_TIMEOUT)
			goto later;    /* nothing yet: verbs_cm_wait(0) does not wait */
		if (rc)
			return accept_fail(conn, rc);
		rdma_ack_cm_event(ev);
		vc->connected = 1;
		rc = tables_post(conn);
		if (rc)
			return accept_fail(conn, rc);
		vc->hs_state = 2;
	}
	/* a client that leaves before its table: its DISCONNECTED ends the
	 * set-up now, not at the deadline */
	verbs_check_cm_events(conn);
	rc = verbs_progress(conn);
	if (rc < 0)
		return accept_fail(conn, rc);
	if (vc->broken)
		return accept_fail(conn, vc->broken);
	if (vc->ctrl_sent && vc->ctrl_recvd) {
		rc = tables_take(conn);
		if (rc)
			return accept_fail(conn, rc);
		vc->hs_state = 0;
		return RDMAPS_OK;
	}
later:
	if (rt_now_ms() < vc->hs_deadline)
		return RDMAPS_E_AGAIN;
	RDMAPS_ERR("verbs: the set-up of role %u index %u did not complete in time (%s)",
		   conn->peer_hello.role, conn->peer_hello.index,
		   vc->hs_state == 1 ? "no ESTABLISHED" : "no grants table");
	return accept_fail(conn, RDMAPS_E_TIMEOUT);
}

/* The split set-up, waited for: between polls, sleep on the rdma_cm
 * channel until ESTABLISHED (or a DISCONNECTED) arrives; then spin on the
 * CQ for the tables (they come as completions, which the channel does not
 * signal), as the client does.  verbs_accept_poll bounds it. */
int verbs_accept_grant(struct rt_request *req, const struct rt_grant *g, int n,
		       struct rt_conn *conn)
{
	int rc = verbs_accept_start(req, g, n, conn);

	if (rc)
		return rc;
	while ((rc = verbs_accept_poll(conn)) == RDMAPS_E_AGAIN) {
		const struct verbs_conn *vc = conn->backend;

		if (vc->hs_state == 1) {
			struct pollfd p = { .fd = vc->ch->fd, .events = POLLIN };
			int ms = rt_remaining_ms(vc->hs_deadline);

			if (poll(&p, 1, ms < 100 ? ms : 100) < 0 && errno != EINTR) {
				RDMAPS_ERR("verbs: poll on the cm channel failed: %s", strerror(errno));
				return accept_fail(conn, RDMAPS_E_IO);
			}
		}
	}
	return rc;
}

void verbs_reject(struct rt_request *req)
{
	struct verbs_request *vr = req->backend;

	if (!vr)
		return;
	reject_id(vr->id, req->reject_status == RDMAPS_E_IN_USE ? VERBS_REJ_IN_USE
			  : req->reject_status == RDMAPS_E_MISMATCH ? VERBS_REJ_MISMATCH : VERBS_REJ_REFUSED);
	id_delete(&vr->id);
	channel_delete(&vr->ch);
	free(vr);
	req->backend = NULL;
}

/* ---- client -------------------------------------------------------------- */

int verbs_connect(struct rt_ctx *ctx, const char *host, uint16_t port,
		  const struct rt_hello *hello, const struct rt_grant *g, int n,
		  int timeout_ms, struct rt_conn *conn)
{
	uint64_t deadline = rt_now_ms() + (uint64_t)set_timeout(ctx, timeout_ms);
	uint8_t pd[VERBS_HELLO_LEN];
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev = NULL;
	struct addrinfo *ai = NULL;
	struct verbs_conn *vc;
	int rc;

	vc = vconn_new();
	if (!vc)
		return RDMAPS_E_NOMEM;
	conn->backend = vc;
	rc = channel_new(&vc->ch);
	if (rc)
		goto err;
	if (rdma_create_id(vc->ch, &vc->id, NULL, RDMA_PS_TCP)) {
		RDMAPS_ERR("verbs: rdma_create_id failed: %s", strerror(errno));
		rc = RDMAPS_E_IO;
		goto err;
	}
	rc = resolve(host, port, 0, &ai);
	if (rc)
		goto err;
	if (rdma_resolve_addr(vc->id, NULL, ai->ai_addr, rt_remaining_ms(deadline))) {
		RDMAPS_ERR("verbs: rdma_resolve_addr(%s:%u) failed: %s", host, port,
			   strerror(errno));
		rc = RDMAPS_E_UNREACHABLE;
		goto err_ai;
	}
	rc = verbs_cm_wait(vc->ch, RDMA_CM_EVENT_ADDR_RESOLVED, rt_remaining_ms(deadline), 1, &ev);
	if (rc)
		goto err_ai;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(vc->id, rt_remaining_ms(deadline))) {
		RDMAPS_ERR("verbs: rdma_resolve_route(%s:%u) failed: %s", host, port,
			   strerror(errno));
		rc = RDMAPS_E_UNREACHABLE;
		goto err_ai;
	}
	rc = verbs_cm_wait(vc->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, rt_remaining_ms(deadline), 1, &ev);
	if (rc)
		goto err_ai;
	rdma_ack_cm_event(ev);
	rc = conn_setup(conn, g, n);
	if (rc)
		goto err_ai;
	verbs_hello_encode(pd, hello, ctx->token, ctx->token_len);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	rd_atom_limits(vc->id->verbs, &cp.responder_resources, &cp.initiator_depth);
	cp.retry_count = VERBS_RETRY;
	cp.rnr_retry_count = VERBS_RETRY;
	if (rdma_connect(vc->id, &cp)) {
		RDMAPS_ERR("verbs: rdma_connect(%s:%u) failed: %s", host, port, strerror(errno));
		rc = RDMAPS_E_UNREACHABLE;
		goto err_ai;
	}
	rc = verbs_cm_wait(vc->ch, RDMA_CM_EVENT_ESTABLISHED, rt_remaining_ms(deadline), 1, &ev);
	if (rc)
		goto err_ai;
	rdma_ack_cm_event(ev);
	vc->connected = 1;
	rc = exchange_tables(conn, deadline);
	if (rc)
		goto err_ai;
	freeaddrinfo(ai);
	return RDMAPS_OK;

err_ai:
	freeaddrinfo(ai);
err:
	rt_conn_set_err(conn, "verbs: connect to %s:%u failed: %s", host, port,
			rdmaps_strerror(rc));
	conn_teardown(conn);
	return rc;
}

void verbs_conn_fini(struct rt_conn *conn)
{
	conn_teardown(conn);
}
