/* Mocks of the ibv_* / rdma_* calls the verbs backend makes: the unit test
 * links these instead of libibverbs / librdmacm.  Knobs make one call fail
 * or one cm event differ; counters check that unwinding frees what was made. */
#ifndef UNIT_VERBS_MOCKS_H
#define UNIT_VERBS_MOCKS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MOCK_NO_EVENT (-1)

struct mock_knobs {
	int fail_alloc_pd;        /* ibv_alloc_pd returns NULL */
	int fail_reg_mr_at;       /* 1-based: the Nth ibv_reg_mr fails (0 = never) */
	int fail_create_cq;
	int fail_create_qp;
	int addr_event;           /* event after rdma_resolve_addr (default ADDR_RESOLVED) */
	int addr_status;
	int route_event;          /* after rdma_resolve_route */
	int connect_event;        /* after rdma_connect (default ESTABLISHED) */
	uint8_t rej_data[8];      /* private data of a REJECTED event */
	uint8_t rej_len;
	int accept_event;         /* after rdma_accept (default ESTABLISHED) */
	int accept_then_event;    /* queued right behind it (0 = none) */
	int ndevices;             /* ibv_get_device_list (at most 2: mock0, mock1) */
	/* With dev_ports > 0, ibv_open_device succeeds and every device has
	 * dev_ports ports (those past 2 cannot be queried); port p (1-based)
	 * of device d has state port_state[d][p-1] (0 = IBV_PORT_NOP: its
	 * query fails), link layer port_link[d][p-1] and one GID,
	 * port_gid[d][p-1]. */
	int dev_ports;
	int port_state[2][2];
	uint8_t port_link[2][2];
	union ibv_gid port_gid[2][2];
	/* the peer's grants table, delivered into the pre-posted RECV when the
	 * control SEND is posted */
	uint8_t peer_table[1024];
	uint32_t peer_table_len;
	int no_peer_table;        /* never deliver it */
	int peer_table_lenerr;    /* the RECV completes IBV_WC_LOC_LEN_ERR (a table over 1024 bytes) */
	/* ibv_query_device (with dev_ports > 0): atomic_cap, and the per-QP
	 * RDMA READ / atomic limits (0 = 16) */
	int dev_atomic_cap;
	int dev_max_qp_rd_atom, dev_max_qp_init_rd_atom;
	int auto_complete;        /* signaled RDMA ops complete successfully at once */
};

struct mock_counts {
	int channels, ids, pds, mrs, cqs, qps, comp_channels;  /* live objects */
	int arms;                               /* ibv_req_notify_cq calls */
	int reg_mr_calls;
	int rejects;
	uint8_t last_reject[8];
	uint8_t last_reject_len;
	int accepts, connects, disconnects;
	uint8_t last_resp_res, last_init_depth; /* rdma_connect / rdma_accept's conn param */
	int posts;                              /* ibv_post_send calls */
	struct ibv_send_wr last_wr;
	struct ibv_sge last_sge;
	unsigned last_access;
};

extern struct mock_knobs mock_k;
extern struct mock_counts mock_c;

void mock_reset(void);
/* Queue a cm event on a channel (CONNECT_REQUEST creates a child id). */
void mock_queue_event(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		      enum rdma_cm_event_type t, int status, const void *pd,
		      uint8_t pd_len);
/* Queue a work completion on the (single) mock CQ. */
void mock_queue_wc(uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op,
		   uint32_t byte_len);
struct rdma_cm_id *mock_new_child_id(void);

#endif
