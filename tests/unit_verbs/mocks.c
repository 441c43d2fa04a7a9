/* Mock ibverbs / librdmacm: see mocks.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mocks.h"

struct mock_knobs mock_k;
struct mock_counts mock_c;

struct mock_ev {
	struct rdma_cm_event ev;
	struct rdma_event_channel *ch;
	uint8_t pd[64];
	struct mock_ev *next;
};

static struct mock_ev *evq;
static struct ibv_wc wcq[512];
static int wcq_head, wcq_n;
static struct ibv_context fake_ctx;
static struct ibv_recv_wr posted_recv;
static struct ibv_sge posted_recv_sge;
static int have_recv;

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int m_req_notify(struct ibv_cq *cq, int solicited) { (void)cq; (void)solicited; mock_c.arms++; return 0; }

void mock_reset(void)
{
	while (evq) {
		struct mock_ev *e = evq;

		evq = e->next;
		free(e);
	}
	memset(&mock_k, 0, sizeof(mock_k));
	memset(&mock_c, 0, sizeof(mock_c));
	mock_k.addr_event = RDMA_CM_EVENT_ADDR_RESOLVED;
	mock_k.route_event = RDMA_CM_EVENT_ROUTE_RESOLVED;
	mock_k.connect_event = RDMA_CM_EVENT_ESTABLISHED;
	mock_k.accept_event = RDMA_CM_EVENT_ESTABLISHED;
	wcq_head = wcq_n = 0;
	have_recv = 0;
	memset(&fake_ctx, 0, sizeof(fake_ctx));
	fake_ctx.ops.post_send = m_post_send;
	fake_ctx.ops.post_recv = m_post_recv;
	fake_ctx.ops.poll_cq = m_poll_cq;
	fake_ctx.ops.req_notify_cq = m_req_notify;
}

void mock_queue_event(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		      enum rdma_cm_event_type t, int status, const void *pd,
		      uint8_t pd_len)
{
	struct mock_ev *e = calloc(1, sizeof(*e)), **pp = &evq;

	e->ch = ch;
	e->ev.id = id;
	e->ev.event = t;
	e->ev.status = status;
	if (pd_len) {
		memcpy(e->pd, pd, pd_len);
		e->ev.param.conn.private_data = e->pd;
		e->ev.param.conn.private_data_len = pd_len;
	}
	e->ev.param.conn.initiator_depth = 16;
	e->ev.param.conn.responder_resources = 16;
	while (*pp)
		pp = &(*pp)->next;
	*pp = e;
}

void mock_queue_wc(uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op,
		   uint32_t byte_len)
{
	struct ibv_wc *w = &wcq[(wcq_head + wcq_n++) % 512];

	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->status = st;
	w->opcode = op;
	w->byte_len = byte_len;
}

/* ---- ibverbs --------------------------------------------------------- */

static struct ibv_device fake_dev[2];
static struct ibv_device *fake_list[3] = { &fake_dev[0], &fake_dev[1], NULL };
static struct ibv_context fake_vctx[2];

struct ibv_device **ibv_get_device_list(int *n)
{
	if (n)
		*n = mock_k.ndevices;
	return fake_list;
}
void ibv_free_device_list(struct ibv_device **l) { (void)l; }
const char *ibv_get_device_name(struct ibv_device *d) { return d == &fake_dev[1] ? "mock1" : "mock0"; }

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	int k = d == &fake_dev[1];

	if (mock_k.dev_ports <= 0) {
		errno = ENODEV;
		return NULL;
	}
	memset(&fake_vctx[k], 0, sizeof(fake_vctx[k])); /* not extended: the compat calls below */
	fake_vctx[k].device = d;
	return &fake_vctx[k];
}
int ibv_close_device(struct ibv_context *c) { (void)c; return 0; }
int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	(void)c;
	if (mock_k.dev_ports <= 0)
		return ENOSYS;
	memset(a, 0, sizeof(*a));
	a->phys_port_cnt = (uint8_t)mock_k.dev_ports;
	a->atomic_cap = (enum ibv_atomic_cap)mock_k.dev_atomic_cap;
	a->max_qp_rd_atom = mock_k.dev_max_qp_rd_atom ? mock_k.dev_max_qp_rd_atom : 16;
	a->max_qp_init_rd_atom = mock_k.dev_max_qp_init_rd_atom ? mock_k.dev_max_qp_init_rd_atom : 16;
	return 0;
}

/* 1 iff port p (1-based) of c's fake device can be queried; *d = that device */
static int fake_port(struct ibv_context *c, uint8_t p, int *d)
{
	*d = c == &fake_vctx[1];
	return mock_k.dev_ports > 0 && p >= 1 && p <= mock_k.dev_ports && p <= 2 &&
	       mock_k.port_state[*d][p - 1] != IBV_PORT_NOP;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *c, uint8_t p, struct _compat_ibv_port_attr *a)
{
	struct ibv_port_attr *pa = (struct ibv_port_attr *)a; /* verbs.h zeroed it */
	int d;

	if (!fake_port(c, p, &d))
		return ENOSYS;
	pa->state = (enum ibv_port_state)mock_k.port_state[d][p - 1];
	pa->link_layer = mock_k.port_link[d][p - 1];
	pa->gid_tbl_len = 1;
	return 0;
}

int ibv_query_gid(struct ibv_context *c, uint8_t p, int i, union ibv_gid *g)
{
	int d;

	if (!fake_port(c, p, &d) || i != 0)
		return ENOSYS;
	*g = mock_k.port_gid[d][p - 1];
	return 0;
}

const char *ibv_wc_status_str(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "success";
	case IBV_WC_REM_ACCESS_ERR: return "remote access error";
	case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
	case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
	default: return "other";
	}
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct ibv_pd *pd;

	if (mock_k.fail_alloc_pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	pd->context = c;
	mock_c.pds++;
	return pd;
}
int ibv_dealloc_pd(struct ibv_pd *pd) { free(pd); mock_c.pds--; return 0; }

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, unsigned access)
{
	struct ibv_mr *mr;

	mock_c.reg_mr_calls++;
	mock_c.last_access = access;
	if (mock_k.fail_reg_mr_at && mock_c.reg_mr_calls == mock_k.fail_reg_mr_at) {
		errno = EFAULT;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = 0x100u + (uint32_t)mock_c.reg_mr_calls;
	mr->rkey = 0x200u + (uint32_t)mock_c.reg_mr_calls;
	mock_c.mrs++;
	return mr;
}
#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{ return reg(pd, addr, len, (unsigned)access); }
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len,
				uint64_t iova, unsigned int access)
{ (void)iova; return reg(pd, addr, len, access); }
int ibv_dereg_mr(struct ibv_mr *mr) { free(mr); mock_c.mrs--; return 0; }

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *ctx,
			     struct ibv_comp_channel *ch, int vec)
{
	struct ibv_cq *cq;

	(void)ctx; (void)ch; (void)vec;
	if (mock_k.fail_create_cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	cq->context = c;
	cq->cqe = cqe;
	mock_c.cqs++;
	return cq;
}
int ibv_destroy_cq(struct ibv_cq *cq) { free(cq); mock_c.cqs--; return 0; }

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	ch->context = c;
	ch->fd = eventfd(0, 0);   /* never readable */
	mock_c.comp_channels++;
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	mock_c.comp_channels--;
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	(void)ch; (void)cq; (void)ctx;
	errno = EAGAIN;
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n) { (void)cq; (void)n; }

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp; (void)bad;
	mock_c.posts++;
	mock_c.last_wr = *wr;
	if (wr->num_sge)
		mock_c.last_sge = wr->sg_list[0];
	if (wr->opcode == IBV_WR_SEND) {
		mock_queue_wc(wr->wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, wr->sg_list[0].length);
		if (have_recv && !mock_k.no_peer_table) {
			memcpy((void *)(uintptr_t)posted_recv_sge.addr, mock_k.peer_table,
			       mock_k.peer_table_len);
			mock_queue_wc(posted_recv.wr_id,
				      mock_k.peer_table_lenerr ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS,
				      IBV_WC_RECV, mock_k.peer_table_len);
			have_recv = 0;
		}
	} else if (mock_k.auto_complete && (wr->send_flags & IBV_SEND_SIGNALED)) {
		mock_queue_wc(wr->wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	}
	return 0;
}

static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp; (void)bad;
	posted_recv = *wr;
	posted_recv_sge = wr->sg_list[0];
	have_recv = 1;
	return 0;
}

static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k = 0;

	(void)cq;
	while (k < n && wcq_n) {
		wc[k++] = wcq[wcq_head];
		wcq_head = (wcq_head + 1) % 512;
		wcq_n--;
	}
	return k;
}

/* ---- librdmacm ------------------------------------------------------- */

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rdma_event_channel *ch = calloc(1, sizeof(*ch));

	ch->fd = eventfd(0, 0);   /* never readable: waits really time out */
	if (ch->fd < 0) {
		free(ch);
		return NULL;
	}
	mock_c.channels++;
	return ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	close(ch->fd);
	free(ch);
	mock_c.channels--;
}

static struct rdma_cm_id *new_id(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id = calloc(1, sizeof(*id));

	id->channel = ch;
	id->verbs = &fake_ctx;
	id->ps = RDMA_PS_TCP;
	mock_c.ids++;
	return id;
}

struct rdma_cm_id *mock_new_child_id(void) { return new_id(NULL); }

int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id,
		   void *ctx, enum rdma_port_space ps)
{
	(void)ctx; (void)ps;
	*id = new_id(ch);
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id) { free(id); mock_c.ids--; return 0; }
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *a) { (void)id; (void)a; return 0; }
int rdma_listen(struct rdma_cm_id *id, int backlog) { (void)id; (void)backlog; return 0; }
__be16 rdma_get_src_port(struct rdma_cm_id *id) { (void)id; return htons(7471); }
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *ch)
{ id->channel = ch; return 0; }
int rdma_set_option(struct rdma_cm_id *id, int l, int o, void *v, size_t n)
{ (void)id; (void)l; (void)o; (void)v; (void)n; return 0; }

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *s, struct sockaddr *d, int t)
{
	(void)s; (void)d; (void)t;
	if (mock_k.addr_event != MOCK_NO_EVENT)
		mock_queue_event(id->channel, id, mock_k.addr_event, mock_k.addr_status, NULL, 0);
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int t)
{
	(void)t;
	if (mock_k.route_event != MOCK_NO_EVENT)
		mock_queue_event(id->channel, id, mock_k.route_event, 0, NULL, 0);
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp *qp;

	if (mock_k.fail_create_qp) {
		errno = EINVAL;
		return -1;
	}
	qp = calloc(1, sizeof(*qp));
	qp->context = id->verbs;
	qp->pd = pd;
	qp->send_cq = a->send_cq;
	qp->recv_cq = a->recv_cq;
	id->qp = qp;
	mock_c.qps++;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id) { free(id->qp); id->qp = NULL; mock_c.qps--; }

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	mock_c.connects++;
	mock_c.last_resp_res = p->responder_resources;
	mock_c.last_init_depth = p->initiator_depth;
	if (mock_k.connect_event != MOCK_NO_EVENT)
		mock_queue_event(id->channel, id, mock_k.connect_event,
				 mock_k.connect_event == RDMA_CM_EVENT_REJECTED ? 28 : 0,
				 mock_k.rej_data, mock_k.rej_len);
	return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	mock_c.accepts++;
	mock_c.last_resp_res = p->responder_resources;
	mock_c.last_init_depth = p->initiator_depth;
	if (mock_k.accept_event != MOCK_NO_EVENT)
		mock_queue_event(id->channel, id, mock_k.accept_event, 0, NULL, 0);
	if (mock_k.accept_then_event)
		mock_queue_event(id->channel, id, mock_k.accept_then_event, 0, NULL, 0);
	return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *pd, uint8_t len)
{
	(void)id;
	mock_c.rejects++;
	mock_c.last_reject_len = len;
	memcpy(mock_c.last_reject, pd, len < 8 ? len : 8);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id) { (void)id; mock_c.disconnects++; return 0; }

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	for (struct mock_ev **pp = &evq; *pp; pp = &(*pp)->next) {
		if ((*pp)->ch == ch) {
			struct mock_ev *e = *pp;

			*pp = e->next;
			*ev = &e->ev;
			return 0;
		}
	}
	errno = EAGAIN;
	return -1;
}

int rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	free((struct mock_ev *)(void *)ev);  /* ev is the first member */
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type t)
{
	static char b[4][16];
	static int i;

	i = (i + 1) % 4;
	snprintf(b[i], sizeof(b[i]), "event%d", (int)t);
	return b[i];
}
