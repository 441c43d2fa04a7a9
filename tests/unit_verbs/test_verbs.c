/* Unit tests of the verbs backend against mocked ibverbs / librdmacm
 * (mocks.c): error paths of connection set-up and their unwinding, the
 * hello / reject private data, the rights -> access mapping, wc status
 * mapping, selective signaling, and the hot-path struct layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>

#include "rdma/desc.h"
#include "rdma/verbs_internal.h"
#include "mocks.h"

/* rt.c is not linked (it pulls the TCP backend in): its helper here. */
void rt_conn_set_err(struct rt_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
}

int rt_numa_node_of_device(struct ibv_device *dev)
{
	(void)dev;
	return -1;
}

int rt_cpuset_of_device(struct ibv_device *dev, cpu_set_t *set)
{
	(void)dev;
	(void)set;
	return -1;
}

static struct rt_ctx ctx;
static struct rt_conn conn;
static _Alignas(64) uint8_t mem[3 * 4096];
static const struct rt_hello hello = { .role = 1, .index = 3, .layout_hash = 0x1122334455667788ull };
static struct rt_grant grants[2];

static void set_peer_table(int n)
{
	struct rt_remote r[2] = {
		{ .id = 0, .addr = 0x10000, .len = 4096, .rkey = 0x77,
		  .rights = RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC },
		{ .id = 5, .addr = 0x20000, .len = 64, .rkey = 0x78, .rights = RT_RIGHT_READ },
	};
	size_t len = 0;

	assert_int_equal(rt_desc_table_encode(r, n, mock_k.peer_table,
					      sizeof(mock_k.peer_table), &len), 0);
	mock_k.peer_table_len = (uint32_t)len;
}

static int setup(void **state)
{
	(void)state;
	mock_reset();
	memset(&ctx, 0, sizeof(ctx));
	memset(&conn, 0, sizeof(conn));
	ctx.ops = &rt_verbs_ops;
	ctx.kind = RT_RDMA;
	ctx.timeout_ms = 200;
	conn.ops = &rt_verbs_ops;
	conn.ctx = &ctx;
	grants[0] = (struct rt_grant){ .id = 0, .addr = mem, .len = 4096,
				       .rights = RT_RIGHT_READ | RT_RIGHT_WRITE };
	grants[1] = (struct rt_grant){ .id = 1, .addr = mem + 4096, .len = 4096, .rights = 0 };
	set_peer_table(2);
	rdmaps_log_set_level(RDMAPS_LOG_ERROR);
	return 0;
}

static void assert_all_freed(void)
{
	assert_int_equal(mock_c.channels, 0);
	assert_int_equal(mock_c.ids, 0);
	assert_int_equal(mock_c.pds, 0);
	assert_int_equal(mock_c.mrs, 0);
	assert_int_equal(mock_c.cqs, 0);
	assert_int_equal(mock_c.qps, 0);
	assert_int_equal(mock_c.comp_channels, 0);
	assert_null(conn.backend);
}

static int do_connect(int timeout_ms)
{
	return rt_verbs_ops.connect(&ctx, "127.0.0.1", 7471, &hello, grants, 2,
				    timeout_ms, &conn);
}

/* connect fails with want, and everything it made is freed again */
static void connect_fails(int timeout_ms, int want)
{
	assert_int_equal(do_connect(timeout_ms), want);
	assert_all_freed();
}

/* the connection torn down frees everything */
static void conn_fini_all_freed(void)
{
	rt_verbs_ops.conn_fini(&conn);
	assert_all_freed();
}

/* the listener torn down frees everything */
static void listener_fini_all_freed(struct rt_listener *lst)
{
	rt_verbs_ops.listener_fini(lst);
	assert_all_freed();
}

static long elapsed_ms(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

/* ---- pure functions ------------------------------------------------------ */

static void test_rights_mapping(void **state)
{
	static const struct { unsigned rights, access; } t[] = {
		{ RT_RIGHT_NONE, IBV_ACCESS_LOCAL_WRITE },
		{ RT_RIGHT_READ, IBV_ACCESS_REMOTE_READ },
		{ RT_RIGHT_WRITE, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE },
		{ RT_RIGHT_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE },
		{ RT_RIGHT_READ | RT_RIGHT_WRITE,
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE },
		{ RT_RIGHT_READ | RT_RIGHT_ATOMIC,
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE },
		{ RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC,
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(verbs_rights_to_access(t[i].rights), t[i].access);
	/* never a remote right the grant did not give */
	assert_false(verbs_rights_to_access(RT_RIGHT_READ) &
		     (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC));
	assert_false(verbs_rights_to_access(RT_RIGHT_NONE) &
		     (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC));
}

static void test_hello_roundtrip(void **state)
{
	uint8_t pd[VERBS_HELLO_LEN], tok[RT_TOKEN_MAX], want[RT_TOKEN_MAX] = "secret";
	struct rt_hello h;

	(void)state;
	assert_true(VERBS_HELLO_LEN <= 56);
	verbs_hello_encode(pd, &hello, "secret", 6);
	assert_int_equal(pd[0], 0x44);
	assert_int_equal(pd[1], 0x52);
	assert_int_equal(pd[2], VERBS_HELLO_VERSION);
	assert_int_equal(verbs_hello_decode(pd, sizeof(pd), &h, tok), 0);
	assert_int_equal(h.role, 1);
	assert_int_equal(h.index, 3);
	assert_true(h.layout_hash == hello.layout_hash);
	assert_true(verbs_token_equal(tok, want, RT_TOKEN_MAX));
	want[0] = 'S';
	assert_false(verbs_token_equal(tok, want, RT_TOKEN_MAX));
	assert_int_equal(verbs_hello_decode(pd, sizeof(pd) - 1, &h, tok), RDMAPS_E_PROTO);
	assert_int_equal(verbs_hello_decode(NULL, 0, &h, tok), RDMAPS_E_PROTO);
	pd[0] ^= 1;
	assert_int_equal(verbs_hello_decode(pd, sizeof(pd), &h, tok), RDMAPS_E_PROTO);
	pd[0] ^= 1;
	pd[2] = 9;
	assert_int_equal(verbs_hello_decode(pd, sizeof(pd), &h, tok), RDMAPS_E_PROTO);
}

static void test_wc_status(void **state)
{
	(void)state;
	assert_int_equal(verbs_wc_status(IBV_WC_SUCCESS), RDMAPS_OK);
	assert_int_equal(verbs_wc_status(IBV_WC_REM_ACCESS_ERR), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(verbs_wc_status(IBV_WC_REM_INV_REQ_ERR), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(verbs_wc_status(IBV_WC_RETRY_EXC_ERR), RDMAPS_E_PEER_GONE);
	assert_int_equal(verbs_wc_status(IBV_WC_RNR_RETRY_EXC_ERR), RDMAPS_E_PEER_GONE);
	assert_int_equal(verbs_wc_status(IBV_WC_WR_FLUSH_ERR), RDMAPS_E_PEER_GONE);
	assert_int_equal(verbs_wc_status(IBV_WC_GENERAL_ERR), RDMAPS_E_IO);
}

static void test_hot_struct_layout(void **state)
{
	(void)state;
	/* what every post/poll touches sits in the first cache line */
	assert_true(offsetof(struct verbs_conn, stash_n) + sizeof(unsigned) <= 64);
	assert_int_equal(sizeof(struct verbs_slot), 16);
	assert_int_equal(offsetof(struct verbs_conn, wr) % 8, 0);
}

static void test_probe_no_device(void **state)
{
	struct rt_ctx_cfg cfg = { .kind = RT_RDMA, .bind_host = NULL };

	(void)state;
	mock_k.ndevices = 0;
	assert_int_equal(rt_verbs_probe(NULL), 0);
	assert_int_equal(rt_verbs_probe("127.0.0.1"), 0);
	assert_int_equal(rt_verbs_ops.ctx_init(&ctx, &cfg), RDMAPS_E_NODEV);
}

/* ::ffff:10.0.0.x, a RoCE GID of an IPv4 address */
static union ibv_gid v4_gid(uint8_t x)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = 10;
	g.raw[15] = x;
	return g;
}

/* rt_verbs_list_ports and the probe agree on which port serves an address:
 * mock0 port 1 DOWN (10.0.0.1), port 2 ACTIVE (10.0.0.2); mock1 port 1
 * ACTIVE InfiniBand (10.0.0.3), port 2 cannot be queried. */
static void test_list_ports(void **state)
{
	struct rt_port_info p[5];

	(void)state;
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 0); /* no devices */
	mock_k.ndevices = 2;
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 2); /* devices that cannot be opened */
	assert_string_equal(p[0].dev, "mock0");
	assert_int_equal(p[0].port, 0);
	assert_int_equal(p[0].serves, 0);
	assert_string_equal(p[0].atomics, "?");
	assert_string_equal(p[1].dev, "mock1");
	mock_k.dev_ports = 2;
	mock_k.port_state[0][0] = IBV_PORT_DOWN;
	mock_k.port_state[0][1] = IBV_PORT_ACTIVE;
	mock_k.port_state[1][0] = IBV_PORT_ACTIVE;
	mock_k.port_link[0][0] = mock_k.port_link[0][1] = IBV_LINK_LAYER_ETHERNET;
	mock_k.port_link[1][0] = IBV_LINK_LAYER_INFINIBAND;
	mock_k.port_gid[0][0] = v4_gid(1);
	mock_k.port_gid[0][1] = v4_gid(2);
	mock_k.port_gid[1][0] = v4_gid(3);

	memset(p, 0, sizeof(p));
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 4);
	assert_string_equal(p[0].dev, "mock0");
	assert_int_equal(p[0].port, 1);
	assert_string_equal(p[0].state, "DOWN");
	assert_string_equal(p[0].link, "Ethernet");
	assert_int_equal(p[0].serves, 0);
	assert_int_equal(p[1].port, 2);
	assert_string_equal(p[1].state, "ACTIVE");
	assert_int_equal(p[1].serves, 1); /* any address: the first active port */
	assert_string_equal(p[1].atomics, "NONE"); /* the mock's default atomic_cap */
	assert_string_equal(p[2].dev, "mock1");
	assert_string_equal(p[2].link, "InfiniBand");
	assert_int_equal(p[2].serves, 1);
	assert_string_equal(p[3].state, "unknown");
	assert_string_equal(p[3].link, "unknown");
	assert_int_equal(p[3].serves, 0);
	assert_int_equal(p[3].numa_node, -1);
	assert_int_equal(rt_verbs_probe(NULL), 1);

	/* by address: only the port whose GID table holds it, and only if active */
	assert_int_equal(rt_verbs_list_ports("10.0.0.2", p, 5), 4);
	assert_int_equal(p[1].serves + p[0].serves + p[2].serves + p[3].serves, 1);
	assert_int_equal(p[1].serves, 1);
	assert_int_equal(rt_verbs_probe("10.0.0.2"), 1);
	assert_int_equal(rt_verbs_list_ports("10.0.0.3", p, 5), 4);
	assert_int_equal(p[1].serves, 0);
	assert_int_equal(p[2].serves, 1);
	assert_int_equal(rt_verbs_probe("10.0.0.3"), 1);
	assert_int_equal(rt_verbs_list_ports("10.0.0.1", p, 5), 4); /* its port is DOWN */
	assert_int_equal(p[0].serves + p[1].serves + p[2].serves + p[3].serves, 0);
	assert_int_equal(rt_verbs_probe("10.0.0.1"), 0);
	assert_int_equal(rt_verbs_probe("10.0.0.9"), 0);
	assert_int_equal(rt_verbs_list_ports("0.0.0.0", p, 5), 4); /* wildcard = any */
	assert_int_equal(p[1].serves, 1);

	mock_k.dev_atomic_cap = IBV_ATOMIC_HCA;
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 4);
	assert_string_equal(p[1].atomics, "HCA");
	mock_k.dev_atomic_cap = IBV_ATOMIC_GLOB;
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 4);
	assert_string_equal(p[2].atomics, "GLOB");

	/* more ports than room: the count, and nothing written past max */
	memset(p, 0x5a, sizeof(p));
	assert_int_equal(rt_verbs_list_ports(NULL, p, 1), 4);
	assert_string_equal(p[0].dev, "mock0");
	assert_int_equal((unsigned char)p[1].dev[0], 0x5a);
	assert_int_equal(rt_verbs_list_ports(NULL, NULL, 0), 4);
	mock_k.ndevices = 1;
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 2);
	/* phys_port_cnt is a uint8_t: 255 ports end (a uint8_t counter wrapped) */
	mock_k.dev_ports = 255;
	assert_int_equal(rt_verbs_list_ports(NULL, p, 5), 255);
	assert_int_equal(rt_verbs_probe("10.0.0.9"), 0);
}

/* ---- connect error paths -------------------------------------------------- */

static void test_connect_alloc_pd_fails(void **state)
{
	(void)state;
	mock_k.fail_alloc_pd = 1;
	connect_fails(200, RDMAPS_E_NOMEM);
}

static void test_connect_reg_mr_fails(void **state)
{
	(void)state;
	/* 2nd grant, then the control buffer (3rd registration) */
	for (int at = 1; at <= 3; at++) {
		setup(NULL);
		mock_k.fail_reg_mr_at = at;
		assert_int_equal(do_connect(200), RDMAPS_E_NOMEM);
		assert_int_equal(mock_c.reg_mr_calls, at);
		assert_int_equal(mock_c.connects, 0);
		assert_all_freed();
	}
}

static void test_connect_bad_grant(void **state)
{
	(void)state;
	grants[1].id = 0; /* duplicate id */
	connect_fails(200, RDMAPS_E_INVAL);
}

static void test_connect_create_cq_fails(void **state)
{
	(void)state;
	mock_k.fail_create_cq = 1;
	connect_fails(200, RDMAPS_E_NOMEM);
}

static void test_connect_create_qp_fails(void **state)
{
	(void)state;
	mock_k.fail_create_qp = 1;
	assert_int_equal(do_connect(200), RDMAPS_E_IO);
	assert_int_equal(mock_c.connects, 0);
	assert_all_freed();
}

static void test_connect_resolve_addr_timeout(void **state)
{
	struct timespec a, b;
	long ms;

	(void)state;
	mock_k.addr_event = MOCK_NO_EVENT;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(do_connect(60), RDMAPS_E_TIMEOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = elapsed_ms(&a, &b);
	assert_true(ms >= 50 && ms < 2000);
	assert_all_freed();
}

static void test_connect_addr_error(void **state)
{
	(void)state;
	mock_k.addr_event = RDMA_CM_EVENT_ADDR_ERROR;
	mock_k.addr_status = -EHOSTUNREACH;
	connect_fails(200, RDMAPS_E_UNREACHABLE);
	setup(NULL);
	mock_k.addr_event = RDMA_CM_EVENT_ADDR_ERROR;
	mock_k.addr_status = -ETIMEDOUT;
	connect_fails(200, RDMAPS_E_TIMEOUT);
}

static void test_connect_event_mismatch(void **state)
{
	(void)state;
	mock_k.route_event = RDMA_CM_EVENT_ESTABLISHED; /* wrong event */
	connect_fails(200, RDMAPS_E_PROTO);
}

/* the peer answers the connect with REJECTED carrying our private data
 * with reason code why */
static void reject_with(uint8_t why)
{
	const uint8_t rej[4] = { 0x44, 0x52, 1, why };

	mock_k.connect_event = RDMA_CM_EVENT_REJECTED;
	memcpy(mock_k.rej_data, rej, 4);
	mock_k.rej_len = 4;
}

static void test_connect_rejected(void **state)
{
	(void)state;
	reject_with(VERBS_REJ_AUTH);
	connect_fails(200, RDMAPS_E_AUTH);

	setup(NULL);
	reject_with(VERBS_REJ_REFUSED);
	connect_fails(200, RDMAPS_E_REFUSED);

	setup(NULL); /* the index is held by a live peer (rt_reject_status) */
	reject_with(VERBS_REJ_IN_USE);
	connect_fails(200, RDMAPS_E_IN_USE);

	setup(NULL); /* the server runs another job configuration */
	reject_with(VERBS_REJ_MISMATCH);
	connect_fails(200, RDMAPS_E_MISMATCH);

	setup(NULL); /* no listener: REJECTED without our private data */
	mock_k.connect_event = RDMA_CM_EVENT_REJECTED;
	connect_fails(200, RDMAPS_E_REFUSED);
}

static void test_connect_no_table(void **state)
{
	(void)state;
	mock_k.no_peer_table = 1;
	connect_fails(80, RDMAPS_E_TIMEOUT);
}

static void test_connect_bad_table(void **state)
{
	(void)state;
	mock_k.peer_table[0] = 'X';
	connect_fails(200, RDMAPS_E_PROTO);
}

/* a table longer than the 1024-byte RECV: the peer broke the protocol
 * (until 2026-12-06 its LOC_LEN_ERR read as a local INVAL) */
static void test_connect_table_too_long(void **state)
{
	(void)state;
	mock_k.peer_table_lenerr = 1;
	connect_fails(200, RDMAPS_E_PROTO);
}

/* responder resources / initiator depth: 16, or the device's lower limits
 * (librdmacm refuses more with EINVAL) */
static void test_connect_rd_atom_limits(void **state)
{
	(void)state;
	assert_int_equal(do_connect(200), 0);
	assert_int_equal(mock_c.last_resp_res, 16);
	assert_int_equal(mock_c.last_init_depth, 16);
	conn_fini_all_freed();
	mock_k.dev_ports = 1;
	mock_k.dev_max_qp_rd_atom = 4;
	mock_k.dev_max_qp_init_rd_atom = 2;
	assert_int_equal(do_connect(200), 0);
	assert_int_equal(mock_c.last_resp_res, 4);
	assert_int_equal(mock_c.last_init_depth, 2);
	conn_fini_all_freed();
}

/* the device's atomic_cap: NONE is refused at ctx_init, GLOB gives
 * RT_CAP_ATOMIC_GLOBAL, HCA (rxe's) does not */
static void test_ctx_atomic_cap(void **state)
{
	struct rt_ctx_cfg cfg = { .kind = RT_RDMA, .bind_host = NULL };

	(void)state;
	mock_k.ndevices = 1;
	mock_k.dev_ports = 1;
	mock_k.port_state[0][0] = IBV_PORT_ACTIVE;
	mock_k.dev_atomic_cap = IBV_ATOMIC_NONE;
	assert_int_equal(rt_verbs_ops.ctx_init(&ctx, &cfg), RDMAPS_E_NOSUPPORT);
	mock_k.dev_atomic_cap = IBV_ATOMIC_HCA;
	assert_int_equal(rt_verbs_ops.ctx_init(&ctx, &cfg), 0);
	assert_int_equal(ctx.caps_extra & RT_CAP_ATOMIC_GLOBAL, 0);
	rt_verbs_ops.ctx_fini(&ctx);
	mock_k.dev_atomic_cap = IBV_ATOMIC_GLOB;
	assert_int_equal(rt_verbs_ops.ctx_init(&ctx, &cfg), 0);
	assert_int_equal(ctx.caps_extra & RT_CAP_ATOMIC_GLOBAL, RT_CAP_ATOMIC_GLOBAL);
	rt_verbs_ops.ctx_fini(&ctx);
	ctx.caps_extra = 0;
}

/* ---- connect success and the hot path ------------------------------------- */

static void test_connect_ok_and_ops(void **state)
{
	struct verbs_conn *vc;
	struct rt_completion comp[4];

	(void)state;
	assert_int_equal(do_connect(200), 0);
	vc = conn.backend;
	assert_int_equal(mock_c.pds, 1);
	assert_int_equal(mock_c.mrs, 3);       /* 2 grants + control buffer */
	assert_int_equal(conn.remote_valid[0], 1);
	assert_int_equal(conn.remote_valid[5], 1);
	assert_int_equal(conn.remote[0].rkey, 0x77);
	assert_true(conn.remote[5].addr == 0x20000);
	assert_int_equal(conn.local[0].valid, 1);
	assert_int_equal(conn.local[1].rights, 0);

	/* inline unsignaled WRITE */
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 16, 8, 0, 0, 42,
					   RT_F_INLINE), 0);
	assert_int_equal(mock_c.last_wr.opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(mock_c.last_wr.send_flags, IBV_SEND_INLINE);
	assert_true(mock_c.last_wr.wr.rdma.remote_addr == 0x10000 + 16);
	assert_int_equal(mock_c.last_wr.wr.rdma.rkey, 0x77);
	assert_true(mock_c.last_sge.addr == (uintptr_t)(mem + 4096));
	assert_int_equal(mock_c.last_sge.lkey, conn.local[1].lkey);

	/* selective signaling: a hidden signaled op every sq_depth/2 posts */
	for (unsigned i = 1; i < VERBS_SQ_DEPTH / 2 - 1; i++) {
		assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 64, 0, 0,
						   i, 0), 0);
		assert_false(mock_c.last_wr.send_flags & IBV_SEND_SIGNALED);
	}
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_READ, 1, 0, 0, 0, 64, 0, 0, 99,
					   RT_F_FENCE), 0);
	assert_int_equal(mock_c.last_wr.opcode, IBV_WR_RDMA_READ);
	assert_int_equal(mock_c.last_wr.send_flags, IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	/* the hidden completion is consumed, not reported */
	mock_queue_wc(mock_c.last_wr.wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 64);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 0), 0);
	assert_true(vc->tail == vc->head);

	/* signaled atomic is reported with the user's wr_id */
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_FETCH_ADD, 1, 8, 0, 8, 8, 5, 0, 7,
					   RT_F_SIGNALED), 0);
	assert_int_equal(mock_c.last_wr.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	assert_true(mock_c.last_wr.wr.atomic.compare_add == 5);
	mock_queue_wc(mock_c.last_wr.wr_id, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 10), 1);
	assert_true(comp[0].wr_id == 7);
	assert_int_equal(comp[0].op, RT_OP_FETCH_ADD);
	assert_int_equal(comp[0].status, 0);

	/* CMP_SWAP carries expect / desired */
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_CMP_SWAP, 1, 8, 0, 8, 8, 1, 2, 8, 0), 0);
	assert_int_equal(mock_c.last_wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	assert_true(mock_c.last_wr.wr.atomic.compare_add == 1 && mock_c.last_wr.wr.atomic.swap == 2);

	/* a remote access error on an unsignaled op is reported; conn unusable */
	mock_queue_wc(mock_c.last_wr.wr_id, IBV_WC_REM_ACCESS_ERR, IBV_WC_COMP_SWAP, 0);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 10), 1);
	assert_true(comp[0].wr_id == 8);
	assert_int_equal(comp[0].status, RDMAPS_E_REMOTE_ACCESS);
	assert_non_null(strstr(conn.errmsg, "error state"));
	/* every later call says what broke it (until 2026-12-06: PEER_GONE,
	 * which a caller reads as a dead peer worth reconnecting to) */
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, 9, 0),
			 RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 0), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 10), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_verbs_ops.flush(&conn, 10), RDMAPS_E_REMOTE_ACCESS);

	conn_fini_all_freed();
}

static void test_read_into_read_only_grant(void **state)
{
	(void)state;
	grants[1].rights = RT_RIGHT_READ;
	assert_int_equal(do_connect(200), 0);
	assert_int_equal(mock_c.last_access, IBV_ACCESS_LOCAL_WRITE); /* control buffer */
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_READ, 1, 0, 0, 0, 8, 0, 0, 1, 0),
			 RDMAPS_E_INVAL);
	conn_fini_all_freed();
}

static void test_sq_full_and_flush(void **state)
{
	int posted = 0, rc = 0;

	(void)state;
	assert_int_equal(do_connect(200), 0);
	ctx.timeout_ms = 30;
	/* nothing completes: the SQ fills up, then post reports AGAIN (bounded) */
	for (int i = 0; i < VERBS_SQ_DEPTH + 1; i++) {
		rc = rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, i, 0);
		if (rc)
			break;
		posted++;
	}
	assert_int_equal(posted, VERBS_SQ_DEPTH);
	assert_int_equal(rc, RDMAPS_E_AGAIN);
	assert_int_equal(rt_verbs_ops.flush(&conn, 20), RDMAPS_E_TIMEOUT);
	/* now completions flow: flush waits for everything */
	mock_queue_wc(VERBS_SQ_DEPTH - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	mock_k.auto_complete = 1;
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, 1000, 0), 0);
	assert_int_equal(rt_verbs_ops.flush(&conn, 100), 0);
	{
		struct verbs_conn *vc = conn.backend;

		assert_true(vc->tail == vc->head);
		/* the flush op was our own, signaled, and not reported */
		assert_true(mock_c.last_wr.send_flags & IBV_SEND_SIGNALED);
	}
	assert_int_equal(rt_verbs_ops.flush(&conn, 0), 0); /* nothing pending */
	conn_fini_all_freed();
}

/* Fill the SQ with 8-byte WRITEs (wr_id = their index) that nothing
 * completes: flags on each, plus RT_F_SIGNALED on the one at signaled_at
 * (-1: none beyond the hidden ones). */
static void fill_sq(unsigned flags, int signaled_at)
{
	int rc = 0;

	for (int i = 0; i < VERBS_SQ_DEPTH && !rc; i++)
		rc = rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, i,
				       flags | (i == signaled_at ? RT_F_SIGNALED : 0));
	assert_int_equal(rc, 0);
}

/* RT_F_NOWAIT (the ps's mailbox WRITEs): a full SQ is AGAIN at once, not
 * after the ctx timeout; room that completions freed is taken first. */
static void test_sq_full_nowait(void **state)
{
	struct timespec a, b;

	(void)state;
	assert_int_equal(do_connect(200), 0);
	ctx.timeout_ms = 3000;
	fill_sq(RT_F_NOWAIT, -1);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, 500, RT_F_NOWAIT),
			 RDMAPS_E_AGAIN);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(elapsed_ms(&a, &b) < 100); /* without the flag: the 3 s ctx timeout */
	/* the first half completes (the signaled op every sq_depth/2 posts):
	 * the next NOWAIT post takes that room */
	mock_queue_wc(VERBS_SQ_DEPTH / 2 - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, 501, RT_F_NOWAIT), 0);
	ctx.timeout_ms = 30;
	conn_fini_all_freed();
}

/* A full send queue whose last ops are unsignaled: rt_flush needs room for
 * its own signaled op, and waits for it within its own timeout, asleep on
 * the completion channel (until 2026-12-06 it spun for the ctx timeout,
 * then returned AGAIN) */
static void test_flush_full_sq_own_timeout(void **state)
{
	struct rt_completion comp[1];
	struct timespec a, b;

	(void)state;
	assert_int_equal(do_connect(200), 0);
	ctx.timeout_ms = 3000;
	fill_sq(0, VERBS_SQ_DEPTH - 28);
	mock_c.arms = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(rt_verbs_ops.flush(&conn, 40), RDMAPS_E_TIMEOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(elapsed_ms(&a, &b) >= 35 && elapsed_ms(&a, &b) < 1500);
	assert_true(mock_c.arms >= 1);
	ctx.timeout_ms = 30;
	(void)comp;
	conn_fini_all_freed();
}

static void test_peer_gone(void **state)
{
	struct rt_completion comp[4];

	(void)state;
	assert_int_equal(do_connect(200), 0);
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, 1, 0), 0);
	assert_int_equal(rt_verbs_ops.post(&conn, RT_OP_WRITE, 1, 0, 0, 0, 8, 0, 0, 2,
					   RT_F_SIGNALED), 0);
	mock_queue_wc(mock_c.last_wr.wr_id - 1, IBV_WC_RETRY_EXC_ERR, IBV_WC_RDMA_WRITE, 0);
	mock_queue_wc(mock_c.last_wr.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE, 0);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 10), 2);
	assert_int_equal(comp[0].status, RDMAPS_E_PEER_GONE);
	assert_int_equal(comp[1].status, RDMAPS_E_PEER_GONE);
	assert_true(comp[1].wr_id == 2);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 4, 10), RDMAPS_E_PEER_GONE);
	conn_fini_all_freed();
}

static void test_long_wait_sleeps_on_channel(void **state)
{
	struct rt_completion comp[1];
	struct timespec a, b;
	long ms;

	(void)state;
	assert_int_equal(do_connect(200), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 1, 40), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = elapsed_ms(&a, &b);
	assert_true(ms >= 35 && ms < 1000);
	assert_true(mock_c.arms >= 1);   /* armed the CQ, then slept in poll() */
	conn_fini_all_freed();
}

/* poll_spin_us < 0: busy-poll until the timeout, never arm / sleep */
static void test_spin_forever_never_sleeps(void **state)
{
	struct rt_completion comp[1];
	struct timespec a, b;
	long ms;

	(void)state;
	assert_int_equal(do_connect(200), 0);
	ctx.poll_spin_us = -1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(rt_verbs_ops.poll(&conn, comp, 1, 40), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ctx.poll_spin_us = 0;
	ms = elapsed_ms(&a, &b);
	assert_true(ms >= 35);
	assert_int_equal(mock_c.arms, 0);
	conn_fini_all_freed();
}

/* ---- server side ---------------------------------------------------------- */

static void queue_request(struct rt_listener *lst, const char *token, int bad_magic)
{
	struct verbs_listener *vl = lst->backend;
	uint8_t pd[VERBS_HELLO_LEN];

	verbs_hello_encode(pd, &hello, token, token ? strlen(token) : 0);
	if (bad_magic)
		pd[0] ^= 0xff;
	mock_queue_event(vl->ch, mock_new_child_id(), RDMA_CM_EVENT_CONNECT_REQUEST, 0,
			 pd, sizeof(pd));
}

/* A client's connect request, taken: *req is a fresh request holding it. */
static void accept_next(struct rt_listener *lst, struct rt_request *req)
{
	queue_request(lst, NULL, 0);
	*req = (struct rt_request){ .ctx = &ctx };
	assert_int_equal(rt_verbs_ops.accept(lst, 200, req), 0);
}

static void set_token(const char *token)
{
	ctx.token_len = strlen(token);
	memcpy(ctx.token, token, ctx.token_len);
}

/* a request presenting token (NULL: none) is refused for auth and accept
 * finds nothing else (bounded wait); it is the only refusal so far */
static void request_refused_for_auth(struct rt_listener *lst, const char *token)
{
	struct rt_request req = { .ctx = &ctx };

	queue_request(lst, token, 0);
	assert_int_equal(rt_verbs_ops.accept(lst, 30, &req), RDMAPS_E_TIMEOUT);
	assert_int_equal(mock_c.rejects, 1);
	assert_int_equal(mock_c.last_reject[3], VERBS_REJ_AUTH);
}

static void test_accept_token(void **state)
{
	struct rt_listener lst = { .ctx = &ctx };
	struct rt_request req = { .ctx = &ctx };

	(void)state;
	set_token("secret");
	assert_int_equal(rt_verbs_ops.listen(&ctx, "127.0.0.1", 0, &lst), 0);
	assert_int_equal(lst.port, 7471);
	queue_request(&lst, "wrong", 0);
	queue_request(&lst, "secret", 1);   /* malformed hello */
	queue_request(&lst, "secret", 0);
	assert_int_equal(rt_verbs_ops.accept(&lst, 200, &req), 0);
	assert_int_equal(mock_c.rejects, 2);
	assert_int_equal(mock_c.last_reject_len, VERBS_REJ_LEN);
	assert_int_equal(mock_c.last_reject[3], VERBS_REJ_PROTO);
	assert_int_equal(req.hello.index, 3);
	assert_int_equal(mock_c.ids, 2);        /* listener + the accepted child */
	/* nothing more: bounded wait */
	{
		struct rt_request r2 = { .ctx = &ctx };

		assert_int_equal(rt_verbs_ops.accept(&lst, 30, &r2), RDMAPS_E_TIMEOUT);
		assert_int_equal(rt_verbs_ops.accept(&lst, 0, &r2), RDMAPS_E_TIMEOUT);
	}
	rt_verbs_ops.reject(&req);
	assert_int_equal(mock_c.rejects, 3);
	assert_int_equal(mock_c.last_reject[3], VERBS_REJ_REFUSED);
	assert_null(req.backend);
	listener_fini_all_freed(&lst);
}

static void test_accept_wrong_token_logged_and_refused(void **state)
{
	struct rt_listener lst = { .ctx = &ctx };

	(void)state;
	set_token("secret");
	assert_int_equal(rt_verbs_ops.listen(&ctx, "127.0.0.1", 0, &lst), 0);
	request_refused_for_auth(&lst, "secreT");
	listener_fini_all_freed(&lst);
}

/* A side without a token refuses a peer that presents one, as the tcp
 * backend does (equal tokens or none on both sides); no token is accepted. */
static void test_accept_unexpected_token_refused(void **state)
{
	struct rt_listener lst = { .ctx = &ctx };
	struct rt_request req = { .ctx = &ctx };

	(void)state;
	assert_int_equal(ctx.token_len, 0);
	assert_int_equal(rt_verbs_ops.listen(&ctx, "127.0.0.1", 0, &lst), 0);
	request_refused_for_auth(&lst, "secret");
	accept_next(&lst, &req);
	assert_int_equal(mock_c.rejects, 1);
	/* a refusal with a reason: the index is in use */
	req.reject_status = RDMAPS_E_IN_USE;
	rt_verbs_ops.reject(&req);
	assert_int_equal(mock_c.rejects, 2);
	assert_int_equal(mock_c.last_reject[3], VERBS_REJ_IN_USE);
	listener_fini_all_freed(&lst);
}

static void test_accept_grant(void **state)
{
	struct rt_listener lst = { .ctx = &ctx };
	struct rt_request req = { .ctx = &ctx };

	(void)state;
	assert_int_equal(rt_verbs_ops.listen(&ctx, "0.0.0.0", 7471, &lst), 0);
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_grant(&req, grants, 2, &conn), 0);
	assert_int_equal(mock_c.accepts, 1);
	assert_int_equal(conn.peer_hello.role, 1);
	assert_int_equal(conn.remote_valid[0], 1);
	assert_int_equal(mock_c.pds, 1);
	rt_verbs_ops.conn_fini(&conn);
	assert_int_equal(mock_c.pds, 0);

	/* failure before rdma_accept: the peer is rejected, all unwound */
	accept_next(&lst, &req);
	mock_k.fail_create_qp = 1;
	assert_int_equal(rt_verbs_ops.accept_grant(&req, grants, 2, &conn), RDMAPS_E_IO);
	assert_int_equal(mock_c.rejects, 1);
	assert_null(req.backend);

	/* no ESTABLISHED */
	mock_k.fail_create_qp = 0;
	mock_k.accept_event = RDMA_CM_EVENT_CONNECT_ERROR;
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_grant(&req, grants, 2, &conn), RDMAPS_E_UNREACHABLE);

	/* ESTABLISHED, then the client leaves before its table: PEER_GONE
	 * (until 2026-12-06 the wait for the table read no rdma_cm event and
	 * ended in TIMEOUT at the bound) */
	mock_k.accept_event = RDMA_CM_EVENT_ESTABLISHED;
	mock_k.accept_then_event = RDMA_CM_EVENT_DISCONNECTED;
	mock_k.no_peer_table = 1;
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_grant(&req, grants, 2, &conn), RDMAPS_E_PEER_GONE);
	assert_null(conn.backend);

	/* no event at all: TIMEOUT at the bound (the ctx timeout, 200 ms) */
	mock_k.accept_event = MOCK_NO_EVENT;
	mock_k.accept_then_event = 0;
	accept_next(&lst, &req);
	{
		uint64_t t0 = rt_now_ms();

		assert_int_equal(rt_verbs_ops.accept_grant(&req, grants, 2, &conn), RDMAPS_E_TIMEOUT);
		assert_true(rt_now_ms() - t0 >= 190);
	}
	assert_null(conn.backend);
	assert_int_equal(mock_c.pds, 0);
	listener_fini_all_freed(&lst);
}

/* The split set-up the ps uses (rt_accept_grant_start / rt_accept_poll):
 * the start returns after rdma_accept, the poll never waits and completes
 * the connection once ESTABLISHED and the peer's table are there. */
static void test_accept_start_poll(void **state)
{
	struct rt_listener lst = { .ctx = &ctx };
	struct rt_request req = { .ctx = &ctx };
	int rc, polls = 0;

	(void)state;
	assert_int_equal(rt_verbs_ops.listen(&ctx, "0.0.0.0", 7471, &lst), 0);
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_start(&req, grants, 2, &conn), 0);
	assert_int_equal(mock_c.accepts, 1);
	assert_int_equal(conn.remote_valid[0], 0);   /* no table yet */
	while ((rc = rt_verbs_ops.accept_poll(&conn)) == RDMAPS_E_AGAIN)
		assert_true(++polls < 1000000);
	assert_int_equal(rc, 0);
	assert_int_equal(conn.remote_valid[0], 1);
	assert_int_equal(rt_verbs_ops.accept_poll(&conn), 0);   /* complete stays complete */
	rt_verbs_ops.conn_fini(&conn);
	assert_int_equal(mock_c.pds, 0);

	/* no ESTABLISHED but an error event: the poll fails, all unwound */
	mock_k.accept_event = RDMA_CM_EVENT_CONNECT_ERROR;
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_start(&req, grants, 2, &conn), 0);
	assert_int_equal(rt_verbs_ops.accept_poll(&conn), RDMAPS_E_UNREACHABLE);
	assert_null(conn.backend);
	assert_int_equal(mock_c.pds, 0);
	rt_verbs_ops.conn_fini(&conn);   /* what rt_conn_delete does next: harmless */

	/* no event at all: AGAIN without waiting, then TIMEOUT once the bound
	 * (the ctx timeout, 200 ms here, below RT_HANDSHAKE_VERBS_MS) passed */
	mock_k.accept_event = MOCK_NO_EVENT;
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_start(&req, grants, 2, &conn), 0);
	{
		uint64_t t0 = rt_now_ms();

		assert_int_equal(rt_verbs_ops.accept_poll(&conn), RDMAPS_E_AGAIN);
		assert_true(rt_now_ms() - t0 < 100);
		while ((rc = rt_verbs_ops.accept_poll(&conn)) == RDMAPS_E_AGAIN)
			usleep(1000);
		assert_int_equal(rc, RDMAPS_E_TIMEOUT);
		assert_true(rt_now_ms() - t0 >= 190);
	}
	assert_null(conn.backend);

	/* ESTABLISHED, then the client leaves before its table: the
	 * DISCONNECTED ends the set-up at the next poll, not at the deadline */
	mock_k.accept_event = RDMA_CM_EVENT_ESTABLISHED;
	mock_k.no_peer_table = 1;
	accept_next(&lst, &req);
	assert_int_equal(rt_verbs_ops.accept_start(&req, grants, 2, &conn), 0);
	assert_int_equal(rt_verbs_ops.accept_poll(&conn), RDMAPS_E_AGAIN);
	{
		struct verbs_conn *vc = conn.backend;

		mock_queue_event(vc->ch, vc->id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	}
	assert_int_equal(rt_verbs_ops.accept_poll(&conn), RDMAPS_E_PEER_GONE);
	assert_null(conn.backend);
	assert_int_equal(mock_c.pds, 0);
	listener_fini_all_freed(&lst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_rights_mapping, setup),
		cmocka_unit_test_setup(test_hello_roundtrip, setup),
		cmocka_unit_test_setup(test_wc_status, setup),
		cmocka_unit_test_setup(test_hot_struct_layout, setup),
		cmocka_unit_test_setup(test_probe_no_device, setup),
		cmocka_unit_test_setup(test_list_ports, setup),
		cmocka_unit_test_setup(test_connect_alloc_pd_fails, setup),
		cmocka_unit_test_setup(test_connect_reg_mr_fails, setup),
		cmocka_unit_test_setup(test_connect_bad_grant, setup),
		cmocka_unit_test_setup(test_connect_create_cq_fails, setup),
		cmocka_unit_test_setup(test_connect_create_qp_fails, setup),
		cmocka_unit_test_setup(test_connect_resolve_addr_timeout, setup),
		cmocka_unit_test_setup(test_connect_addr_error, setup),
		cmocka_unit_test_setup(test_connect_event_mismatch, setup),
		cmocka_unit_test_setup(test_connect_rejected, setup),
		cmocka_unit_test_setup(test_connect_no_table, setup),
		cmocka_unit_test_setup(test_connect_table_too_long, setup),
		cmocka_unit_test_setup(test_connect_rd_atom_limits, setup),
		cmocka_unit_test_setup(test_ctx_atomic_cap, setup),
		cmocka_unit_test_setup(test_flush_full_sq_own_timeout, setup),
		cmocka_unit_test_setup(test_connect_bad_table, setup),
		cmocka_unit_test_setup(test_connect_ok_and_ops, setup),
		cmocka_unit_test_setup(test_read_into_read_only_grant, setup),
		cmocka_unit_test_setup(test_sq_full_and_flush, setup),
		cmocka_unit_test_setup(test_spin_forever_never_sleeps, setup),
		cmocka_unit_test_setup(test_peer_gone, setup),
		cmocka_unit_test_setup(test_long_wait_sleeps_on_channel, setup),
		cmocka_unit_test_setup(test_accept_token, setup),
		cmocka_unit_test_setup(test_accept_wrong_token_logged_and_refused, setup),
		cmocka_unit_test_setup(test_accept_unexpected_token_refused, setup),
		cmocka_unit_test_setup(test_accept_grant, setup),
		cmocka_unit_test_setup(test_sq_full_nowait, setup),
		cmocka_unit_test_setup(test_accept_start_poll, setup),
	};

	return cmocka_run_group_tests_name("unit_verbs", tests, NULL, NULL);
}
