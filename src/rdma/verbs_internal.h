/* verbs backend: private structures and the functions the verbs_*.c files
 * share.  One file per verbs object:
 *   verbs_dev.c   device probe, context, protection domain
 *   verbs_mr.c    rights -> access flags, registration of a conn's grants
 *   verbs_cq.c    completion queue, work-completion status mapping
 *   verbs_conn.c  rdma_cm event channel, QP, connect/accept, grants exchange
 *   verbs_ops.c   post / poll / flush (hot path) and the ops table
 * Nothing here is public; rt.h is the contract. */
#ifndef RDMAPS_VERBS_INTERNAL_H
#define RDMAPS_VERBS_INTERNAL_H

#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rt_internal.h"

#define VERBS_SQ_DEPTH 128           /* send queue slots per connection */
#define VERBS_STASH (VERBS_SQ_DEPTH + 16)
#define VERBS_MAX_INLINE 64          /* requested max_inline_data */
#define VERBS_RD_ATOM 16             /* responder resources / initiator depth */
#define VERBS_ACK_TIMEOUT 16         /* 4.096us * 2^16 = 268 ms per try */
#define VERBS_RETRY 7
#define VERBS_CTRL_BYTES 1024        /* grants table message buffer (each way) */
#define VERBS_SPIN_MS 1              /* (default of cfg.poll_spin_us, in ms) */
/* Busy-poll iterations between clock reads while waiting: a clock read can
 * be a system call (hpet/acpi_pm clocksources, e.g. the TCG guest), and a
 * READ round trip there is only ~150 polls; the first read comes after this
 * many polls, so short waits read no clock at all. */
#define VERBS_SPIN_CHECK 1024u

/* Private data of rdma_connect (client hello), fixed little-endian layout:
 *   0  u16 magic 0x5244 ("DR" on the wire)   2 u8 version (1)   3 u8 role
 *   4  u32 index   8 u64 layout_hash   16 token[40] zero padded   = 56 bytes */
#define VERBS_HELLO_MAGIC 0x5244u
#define VERBS_HELLO_VERSION 1u
#define VERBS_HELLO_LEN 56
/* Private data of rdma_reject: u16 magic, u8 version, u8 reason. */
#define VERBS_REJ_LEN 4
enum verbs_rej_reason { VERBS_REJ_REFUSED = 1, VERBS_REJ_AUTH = 2, VERBS_REJ_PROTO = 3, VERBS_REJ_IN_USE = 4,
			VERBS_REJ_MISMATCH = 5 };

/* wr_id values of the control messages (user ops use the sequence number). */
#define VERBS_WRID_CTRL_SEND (~0ull)
#define VERBS_WRID_CTRL_RECV (~0ull - 1)

struct verbs_slot {               /* one posted send WR */
	uint64_t wr_id;           /* user's */
	uint8_t op;               /* enum rt_op */
	uint8_t report;           /* user asked for a completion */
	uint8_t internal;         /* our own (flush) op: never reported */
	uint8_t pad[5];
};

struct verbs_conn {
	/* hot path first */
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint64_t head;            /* next sequence number to post */
	uint64_t tail;            /* oldest sequence not known complete */
	unsigned since_signal;    /* unsignaled posts since the last signaled */
	unsigned sq_depth;
	uint32_t max_inline;
	int broken;               /* 0 or the fatal status once the QP failed */
	int first_err;            /* first op error not yet returned by rt_flush */
	unsigned stash_head, stash_n;
	struct ibv_send_wr wr;    /* pre-built: num_sge 1, sg_list = &sge */
	struct ibv_sge sge;
	struct verbs_slot slot[VERBS_SQ_DEPTH];
	struct rt_completion stash[VERBS_STASH];
	/* set-up / teardown */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_mr *ctrl_mr;
	uint8_t *ctrl;            /* [0, CTRL_BYTES) send, [CTRL_BYTES, 2x) recv */
	int connected;
	int ctrl_sent;            /* control SEND completed (set-up) */
	int ctrl_recvd;           /* control RECV completed (set-up) */
	int hs_state;             /* server set-up by verbs_accept_start: 0 none or done,
				   * 1 ESTABLISHED awaited, 2 tables being exchanged */
	uint64_t hs_deadline;     /* rt_now_ms() bound of that set-up */
	struct ibv_comp_channel *cch; /* for long waits in rt_poll / rt_flush */
	int armed;                /* ibv_req_notify_cq done, event not yet taken */
	uint32_t ctrl_recv_len;
};

struct verbs_listener {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
};

struct verbs_request {
	struct rdma_event_channel *ch;  /* the child id's own channel */
	struct rdma_cm_id *id;
	uint8_t initiator_depth, responder_resources;
};

/* verbs_dev.c */
int verbs_pd_new(struct ibv_context *verbs, struct ibv_pd **pd);
void verbs_pd_delete(struct ibv_pd **pd);

/* verbs_mr.c */
/* The one place that maps what a peer may do to access flags. */
unsigned verbs_rights_to_access(unsigned rights);
/* Register every grant in pd into conn->local[]; on failure nothing stays
 * registered.  RDMAPS_E_INVAL for a bad grant, RDMAPS_E_NOMEM if reg fails. */
int verbs_mr_reg_grants(struct rt_conn *conn, struct ibv_pd *pd,
			const struct rt_grant *g, int n);
int verbs_mr_dereg_grants(struct rt_conn *conn);
int verbs_mr_reg(struct ibv_pd *pd, void *addr, size_t len, unsigned access,
		 struct ibv_mr **mr);
int verbs_mr_dereg(struct ibv_mr **mr);

/* verbs_cq.c */
/* CQ with a non-blocking completion channel (for long waits). */
int verbs_cq_new(struct ibv_context *verbs, int depth, struct ibv_cq **cq,
		 struct ibv_comp_channel **cch);
int verbs_cq_delete(struct ibv_cq **cq, struct ibv_comp_channel **cch);
/* Sleep until the CQ or the cm channel has news, at most ms; arms the CQ
 * first (the caller re-polls after an arm).  Returns RDMAPS_OK. */
struct verbs_conn;
int verbs_cq_wait(struct verbs_conn *vc, int ms);
int verbs_wc_status(enum ibv_wc_status st);

/* verbs_conn.c */
/* Wait for event `want`; any other event ends the wait with its status.
 * quiet (rt_connect's waits): a status rt_connect_caller_reports is logged
 * at debug level; otherwise it is logged here. */
int verbs_cm_wait(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		  int timeout_ms, int quiet, struct rdma_cm_event **ev);
int verbs_check_cm_events(struct rt_conn *c);   /* non-blocking */
void verbs_hello_encode(uint8_t out[VERBS_HELLO_LEN], const struct rt_hello *h,
			const char *token, size_t token_len);
int verbs_hello_decode(const void *pd, size_t len, struct rt_hello *h,
		       uint8_t token[RT_TOKEN_MAX]);
int verbs_token_equal(const uint8_t *a, const uint8_t *b, size_t n);

int verbs_ctx_init(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg);
void verbs_ctx_fini(struct rt_ctx *ctx);
int verbs_listen(struct rt_ctx *ctx, const char *host, uint16_t port,
		 struct rt_listener *lst);
void verbs_listener_fini(struct rt_listener *lst);
int verbs_accept(struct rt_listener *lst, int timeout_ms, struct rt_request *req);
int verbs_accept_grant(struct rt_request *req, const struct rt_grant *g, int n,
		       struct rt_conn *conn);
int verbs_accept_start(struct rt_request *req, const struct rt_grant *g, int n,
		       struct rt_conn *conn);
int verbs_accept_poll(struct rt_conn *conn);
void verbs_reject(struct rt_request *req);
int verbs_connect(struct rt_ctx *ctx, const char *host, uint16_t port,
		  const struct rt_hello *hello, const struct rt_grant *g, int n,
		  int timeout_ms, struct rt_conn *conn);
void verbs_conn_fini(struct rt_conn *conn);

/* verbs_ops.c */
int verbs_post(struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
	       uint32_t rid, uint64_t roff, size_t len, uint64_t a, uint64_t b,
	       uint64_t wr_id, unsigned flags);
int verbs_poll(struct rt_conn *c, struct rt_completion *comps, int max, int timeout_ms);
int verbs_flush(struct rt_conn *c, int timeout_ms);
/* Poll the CQ once into the stash (set-up helpers use it too). */
int verbs_progress(struct rt_conn *c);
/* ms to busy-poll before sleeping (ctx->poll_spin_us; UINT64_MAX = never). */
uint64_t verbs_spin_ms(const struct rt_ctx *ctx);

#endif
