/* unit_desc: descriptor and grants-table encoding, rights, rt_check_op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rdma/desc.h"
#include "rdma/rt_internal.h"
#include "rdma/tcp_internal.h"

/* weak: the library may be built without the verbs backend */
int rt_verbs_probe(const char *host) __attribute__((weak));

static struct rt_remote mk(uint32_t id, uint64_t addr, uint64_t len, unsigned rights)
{
	struct rt_remote r = { .id = id, .addr = addr, .len = len, .rkey = 0xabcd1234u,
			       .rights = rights };
	return r;
}

static void desc_round_trip(void **st)
{
	uint8_t b[RT_DESC_LEN];
	struct rt_remote in = mk(15, 0x7f0012345000ull, 1ull << 33, RT_RIGHTS_ALL), out;

	(void)st;
	assert_int_equal(rt_desc_encode(&in, b), 0);
	/* fixed little-endian layout */
	assert_int_equal(b[0], 1);
	assert_int_equal(b[1], 0);
	assert_int_equal(b[2], RT_RIGHTS_ALL);
	assert_int_equal(b[4], 15);
	assert_int_equal(b[8], 0x00);
	assert_int_equal(b[9], 0x50);
	assert_int_equal(b[24], 0x34);
	for (int i = 28; i < 40; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(rt_desc_decode(b, &out), 0);
	assert_int_equal(out.id, in.id);
	assert_true(out.addr == in.addr && out.len == in.len);
	assert_int_equal(out.rkey, in.rkey);
	assert_int_equal(out.rights, in.rights);
}

static void desc_rejects(void **st)
{
	uint8_t b[RT_DESC_LEN], g[RT_DESC_LEN];
	struct rt_remote in = mk(3, 4096, 100, RT_RIGHT_READ), out;

	(void)st;
	assert_int_equal(rt_desc_encode(&in, g), 0);
	/* encode refuses what would not decode */
	struct rt_remote bad[] = {
		mk(RT_MAX_GRANTS, 4096, 100, RT_RIGHT_READ), mk(1, 4096, 0, RT_RIGHT_READ),
		mk(1, UINT64_MAX - 10, 100, RT_RIGHT_READ), mk(1, 4096, 100, 0),
		mk(1, 4096, 100, 8),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rt_desc_encode(&bad[i], b), RDMAPS_E_INVAL);
	/* decode: each corruption is PROTO */
	memcpy(b, g, sizeof(b)); b[0] = 2;                 /* version */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); b[2] = 0x08;              /* unknown right */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); b[2] = 0;                 /* no right */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); b[4] = RT_MAX_GRANTS;     /* id */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); memset(b + 16, 0, 8);     /* len 0 */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); memset(b + 8, 0xff, 8);   /* addr + len overflows */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); b[29] = 1;                /* reserved u32 */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
	memcpy(b, g, sizeof(b)); b[39] = 1;                /* reserved u64 */
	assert_int_equal(rt_desc_decode(b, &out), RDMAPS_E_PROTO);
}

static void table_round_trip_and_rejects(void **st)
{
	struct rt_remote d[RT_MAX_GRANTS], out[RT_MAX_GRANTS];
	uint8_t buf[RT_TABLE_MAX_LEN + 8], b2[RT_TABLE_MAX_LEN + 8];
	size_t len = 0;
	int n = -1;

	(void)st;
	for (int i = 0; i < RT_MAX_GRANTS; i++)
		d[i] = mk((uint32_t)(RT_MAX_GRANTS - 1 - i), 4096u * (i + 1), 64u * (i + 1),
			  1u << (i % 3));
	assert_int_equal(rt_desc_table_encode(d, RT_MAX_GRANTS, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, RT_TABLE_HDR_LEN + RT_MAX_GRANTS * RT_DESC_LEN);
	assert_memory_equal(buf, "RDTB", 4);
	assert_int_equal(rt_desc_table_decode(buf, len, out, RT_MAX_GRANTS, &n), 0);
	assert_int_equal(n, RT_MAX_GRANTS);
	for (int i = 0; i < n; i++) {
		assert_int_equal(out[i].id, d[i].id);
		assert_true(out[i].addr == d[i].addr && out[i].len == d[i].len);
		assert_int_equal(out[i].rights, d[i].rights);
	}
	/* empty table */
	assert_int_equal(rt_desc_table_encode(NULL, 0, b2, sizeof(b2), &len), 0);
	assert_int_equal(rt_desc_table_decode(b2, len, out, RT_MAX_GRANTS, &n), 0);
	assert_int_equal(n, 0);
	/* encode: too small, too many, duplicate ids */
	assert_int_equal(rt_desc_table_encode(d, 2, buf, RT_TABLE_HDR_LEN + 79, &len),
			 RDMAPS_E_INVAL);
	assert_int_equal(rt_desc_table_encode(d, RT_MAX_GRANTS + 1, buf, sizeof(buf), &len),
			 RDMAPS_E_INVAL);
	d[1].id = d[0].id;
	assert_int_equal(rt_desc_table_encode(d, 2, buf, sizeof(buf), &len), RDMAPS_E_INVAL);
	d[1].id = 14;
	assert_int_equal(rt_desc_table_encode(d, 2, buf, sizeof(buf), &len), 0);
	/* decode rejects */
	assert_int_equal(rt_desc_table_decode(buf, len - 1, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
	assert_int_equal(rt_desc_table_decode(buf, 7, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
	memcpy(b2, buf, len);
	b2[0] = 'X';
	assert_int_equal(rt_desc_table_decode(b2, len, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
	memcpy(b2, buf, len);
	b2[4] = 9;
	assert_int_equal(rt_desc_table_decode(b2, len, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
	memcpy(b2, buf, len);
	b2[6] = 3;                                          /* count says 3, len says 2 */
	assert_int_equal(rt_desc_table_decode(b2, len, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
	assert_int_equal(rt_desc_table_decode(buf, len, out, 1, &n), RDMAPS_E_PROTO); /* max */
	memcpy(b2, buf, len);
	b2[RT_TABLE_HDR_LEN + RT_DESC_LEN + 4] = b2[RT_TABLE_HDR_LEN + 4]; /* duplicate id */
	assert_int_equal(rt_desc_table_decode(b2, len, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
	memcpy(b2, buf, len);
	b2[RT_TABLE_HDR_LEN + RT_DESC_LEN + 30] = 1;        /* bad entry */
	assert_int_equal(rt_desc_table_decode(b2, len, out, RT_MAX_GRANTS, &n), RDMAPS_E_PROTO);
}

static void kind_parse(void **st)
{
	enum rt_kind k;

	(void)st;
	assert_int_equal(rt_kind_parse("tcp", &k), 0);
	assert_int_equal(k, RT_TCP);
	assert_int_equal(rt_kind_parse("rdma", &k), 0);
	assert_int_equal(k, RT_RDMA);
	assert_int_equal(rt_kind_parse("auto", &k), 0);
	assert_int_equal(k, RT_AUTO);
	assert_int_equal(rt_kind_parse("udp", &k), RDMAPS_E_INVAL);
	assert_int_equal(rt_kind_parse(NULL, &k), RDMAPS_E_INVAL);
	assert_string_equal(rt_kind_name(RT_TCP), "tcp");
}

static uint64_t lbuf[64], rbuf[64];

static void setup_conn(struct rt_conn *c)
{
	memset(c, 0, sizeof(*c));
	struct rt_grant g[] = {
		{ 0, lbuf, sizeof(lbuf), RT_RIGHT_NONE },
		{ 5, (uint8_t *)lbuf + 8, 16, RT_RIGHT_READ },
	};
	assert_int_equal(rt_grants_to_local(c, g, 2), 0);
	c->remote[1] = mk(1, (uint64_t)(uintptr_t)rbuf, 256, RT_RIGHT_READ);
	c->remote[2] = mk(2, (uint64_t)(uintptr_t)rbuf, 256, RT_RIGHT_WRITE);
	c->remote[3] = mk(3, (uint64_t)(uintptr_t)rbuf, 256, RT_RIGHT_ATOMIC);
	c->remote_valid[1] = c->remote_valid[2] = c->remote_valid[3] = 1;
}

static void check_op(void **st)
{
	struct rt_conn c;

	(void)st;
	setup_conn(&c);
	/* rights mapping */
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 1, 0, 8), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_WRITE, 0, 0, 1, 0, 8), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_FETCH_ADD, 0, 0, 1, 0, 8), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_WRITE, 0, 0, 2, 0, 8), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 2, 0, 8), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_FETCH_ADD, 0, 0, 3, 0, 8), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_CMP_SWAP, 0, 0, 3, 248, 8), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 3, 0, 8), RDMAPS_E_REMOTE_ACCESS);
	/* remote bounds, incl. overflow */
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 1, 0, 256), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 1, 1, 256), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 1, 257, 1), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 1, UINT64_MAX, 2), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 0, 0, 8), RDMAPS_E_REMOTE_ACCESS);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, RT_MAX_GRANTS, 0, 8),
			 RDMAPS_E_REMOTE_ACCESS);
	/* local bounds and ids */
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, sizeof(lbuf) - 8, 1, 0, 8), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, sizeof(lbuf) - 7, 1, 0, 8), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 5, 8, 1, 0, 8), 0);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 5, 9, 1, 0, 8), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 4, 0, 1, 0, 8), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, RT_MAX_GRANTS, 0, 1, 0, 8), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(&c, RT_OP_READ, 0, 0, 1, 0, 0), RDMAPS_E_INVAL);
	/* atomics: len 8, 8-byte aligned local and remote */
	assert_int_equal(rt_check_op(&c, RT_OP_FETCH_ADD, 0, 0, 3, 0, 16), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(&c, RT_OP_FETCH_ADD, 0, 4, 3, 0, 8), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(&c, RT_OP_FETCH_ADD, 0, 0, 3, 4, 8), RDMAPS_E_INVAL);
	assert_int_equal(rt_check_op(NULL, RT_OP_READ, 0, 0, 1, 0, 8), RDMAPS_E_INVAL);
}

static void grants_validation(void **st)
{
	struct rt_conn c;
	struct rt_grant dup[] = { { 1, lbuf, 8, 0 }, { 1, rbuf, 8, 0 } };
	struct rt_grant badid[] = { { RT_MAX_GRANTS, lbuf, 8, 0 } };
	struct rt_grant badr[] = { { 0, lbuf, 8, 16 } };
	struct rt_grant zero[] = { { 0, lbuf, 0, 0 } };

	(void)st;
	memset(&c, 0, sizeof(c));
	assert_int_equal(rt_grants_to_local(&c, dup, 2), RDMAPS_E_INVAL);
	memset(&c, 0, sizeof(c));
	assert_int_equal(rt_grants_to_local(&c, badid, 1), RDMAPS_E_INVAL);
	assert_int_equal(rt_grants_to_local(&c, badr, 1), RDMAPS_E_INVAL);
	assert_int_equal(rt_grants_to_local(&c, zero, 1), RDMAPS_E_INVAL);
	assert_int_equal(rt_grants_to_local(&c, NULL, 1), RDMAPS_E_INVAL);
	assert_int_equal(rt_grants_to_local(&c, NULL, 0), 0);
}

static void api_null_safety(void **st)
{
	struct rt_ctx *ctx = NULL;
	struct rt_conn *conn = NULL;
	struct rt_ctx_cfg cfg = { .kind = RT_TCP, .numa_node = -1 };
	void *p;

	(void)st;
	assert_int_equal(rt_ctx_delete(&ctx), 0);
	assert_int_equal(rt_conn_delete(&conn), 0);
	assert_int_equal(rt_ctx_new(NULL, &ctx), RDMAPS_E_INVAL);
	cfg.kind = 7;
	assert_int_equal(rt_ctx_new(&cfg, &ctx), RDMAPS_E_INVAL);
	assert_null(ctx);
	cfg.kind = RT_TCP;
	assert_int_equal(rt_ctx_new(&cfg, &ctx), 0);
	assert_int_equal(rt_ctx_kind(ctx), RT_TCP);
	p = rt_alloc(ctx, 10000);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 4096, 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(((uint8_t *)p)[i], 0);
	rt_free(ctx, p, 10000);
	assert_int_equal(rt_read(NULL, 0, 0, 0, 0, 8, 0, 0), RDMAPS_E_INVAL);
	assert_int_equal(rt_ctx_delete(&ctx), 0);
	assert_null(ctx);
	/* RT_AUTO: verbs iff a device serves bind_host, else TCP */
	cfg.kind = RT_AUTO;
	cfg.bind_host = "127.0.0.1";
	assert_int_equal(rt_ctx_new(&cfg, &ctx), 0);
	assert_int_equal(rt_ctx_kind(ctx), (rt_verbs_probe && rt_verbs_probe("127.0.0.1")) ? RT_RDMA : RT_TCP);
	rt_ctx_delete(&ctx);
}

/* Wire records and hot-path structs: sizes and alignment are pinned. */
static void wire_and_struct_sizes(void **st)
{
	struct tcp_frame f = { .op = RT_OP_WRITE, .flags = TCP_FL_REPLY, .rid = 7, .seq = 0x01020304,
			       .status = RDMAPS_E_REMOTE_ACCESS, .roff = 1, .len = 2, .a = 3, .b = 4 }, g;
	uint8_t b[TCP_FRAME_LEN];
	struct tcp_hello h = { .channel = TCP_CH_SERVE, .h = { 1, 2, 3 }, .nonce = 42, .token_len = 3 }, h2;
	uint8_t hb[TCP_HELLO_LEN];

	(void)st;
	tcp_frame_encode(&f, b);
	assert_int_equal(b[0], 'R');
	assert_int_equal(b[3], 'F');
	assert_int_equal(b[8], 0x04);
	assert_int_equal(tcp_frame_decode(b, &g), 0);
	assert_true(g.op == f.op && g.flags == f.flags && g.rid == f.rid && g.seq == f.seq &&
		    g.status == f.status && g.roff == f.roff && g.len == f.len && g.a == f.a &&
		    g.b == f.b);
	b[1] ^= 1;
	assert_int_equal(tcp_frame_decode(b, &g), RDMAPS_E_PROTO);
	memcpy(h.token, "abc", 3);
	tcp_hello_encode(&h, hb);
	assert_int_equal(tcp_hello_decode(hb, &h2), 0);
	assert_int_equal(h2.nonce, 42);
	assert_int_equal(h2.channel, TCP_CH_SERVE);
	assert_int_equal(h2.h.index, 2);
	hb[6] = 9;                                      /* bad channel */
	assert_int_equal(tcp_hello_decode(hb, &h2), RDMAPS_E_PROTO);
	tcp_hello_encode(&h, hb);
	hb[12] = RT_TOKEN_MAX + 1;                      /* token too long */
	assert_int_equal(tcp_hello_decode(hb, &h2), RDMAPS_E_PROTO);
	assert_true(tcp_token_equal((const uint8_t *)"abcd", (const uint8_t *)"abcd", 4));
	assert_false(tcp_token_equal((const uint8_t *)"abcd", (const uint8_t *)"abce", 4));
	/* hot path: a ring slot is half a cache line; the conn's hot fields
	 * (fds, counters, pre-built header) sit in its first two lines */
	assert_int_equal(sizeof(struct tcp_slot), 32);
	assert_true(offsetof(struct tcp_conn, txh) + TCP_FRAME_LEN <= 128);
	assert_int_equal(offsetof(struct tcp_conn, slot) % 8, 0);
	assert_int_equal(sizeof(struct rt_local) % 8, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(desc_round_trip),
		cmocka_unit_test(desc_rejects),
		cmocka_unit_test(table_round_trip_and_rejects),
		cmocka_unit_test(kind_parse),
		cmocka_unit_test(check_op),
		cmocka_unit_test(grants_validation),
		cmocka_unit_test(api_null_safety),
		cmocka_unit_test(wire_and_struct_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
