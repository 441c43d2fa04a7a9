/* Public transport API: argument checks at the boundary, object allocation,
 * transport selection, and dispatch through the backend ops table. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* The verbs backend is compiled in iff src/rdma/CMakeLists.txt found a
 * verbs_*.c defining rt_verbs_ops (RT_HAVE_VERBS).  Without it, RT_RDMA is
 * RDMAPS_E_NODEV and RT_AUTO picks TCP. */
#ifdef RT_HAVE_VERBS
static const struct rt_ops *verbs_ops(void) { return &rt_verbs_ops; }
static int verbs_probe(const char *h) { return rt_verbs_probe(h); }
static int verbs_list(const char *h, struct rt_port_info *o, int m) { return rt_verbs_list_ports(h, o, m); }
#else
static const struct rt_ops *verbs_ops(void) { return NULL; }
static int verbs_probe(const char *h) { (void)h; return 0; }
static int verbs_list(const char *h, struct rt_port_info *o, int m) { (void)h; (void)o; (void)m; return 0; }
#endif

/* ---------------------------------------------------------------- helpers */

void rt_conn_set_err(struct rt_conn *c, const char *fmt, ...)
{
	va_list ap;

	if (!c)
		return;
	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
}

static unsigned op_right(enum rt_op op)
{
	switch (op) {
	case RT_OP_READ: return RT_RIGHT_READ;
	case RT_OP_WRITE: return RT_RIGHT_WRITE;
	case RT_OP_FETCH_ADD:
	case RT_OP_CMP_SWAP: return RT_RIGHT_ATOMIC;
	}
	return 0;
}

int rt_check_op(const struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
		uint32_t rid, uint64_t roff, size_t len)
{
	const struct rt_local *l;
	const struct rt_remote *r;
	unsigned need = op_right(op);
	int atomic = op == RT_OP_FETCH_ADD || op == RT_OP_CMP_SWAP;

	if (!c || !need || len == 0 || len > RT_MAX_OP_LEN || lid >= RT_MAX_GRANTS)
		return RDMAPS_E_INVAL;
	l = &c->local[lid];
	if (!l->valid || loff > l->len || len > l->len - loff)
		return RDMAPS_E_INVAL;
	if (atomic && (len != 8 || (((uintptr_t)l->addr + loff) & 7)))
		return RDMAPS_E_INVAL;
	if (rid >= RT_MAX_GRANTS || !c->remote_valid[rid])
		return RDMAPS_E_REMOTE_ACCESS;
	r = &c->remote[rid];
	if ((r->rights & need) != need || roff > r->len || len > r->len - roff)
		return RDMAPS_E_REMOTE_ACCESS;
	if (atomic && ((r->addr + roff) & 7))
		return RDMAPS_E_INVAL;
	return RDMAPS_OK;
}

/* Copy grants into conn->local after validating them (used by backends). */
int rt_grants_to_local(struct rt_conn *c, const struct rt_grant *g, int n)
{
	if (n < 0 || n > RT_MAX_GRANTS || (n && !g))
		return RDMAPS_E_INVAL;
	for (int i = 0; i < n; i++) {
		if (g[i].id >= RT_MAX_GRANTS || !g[i].addr || !g[i].len ||
		    (g[i].rights & ~(unsigned)(RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC)) ||
		    c->local[g[i].id].valid)
			return RDMAPS_E_INVAL;
		c->local[g[i].id].addr = g[i].addr;
		c->local[g[i].id].len = g[i].len;
		c->local[g[i].id].rights = g[i].rights;
		c->local[g[i].id].valid = 1;
	}
	return RDMAPS_OK;
}

const char *rt_kind_name(enum rt_kind k)
{
	switch (k) {
	case RT_AUTO: return "auto";
	case RT_RDMA: return "rdma";
	case RT_TCP: return "tcp";
	}
	return "?";
}

int rt_kind_parse(const char *s, enum rt_kind *k)
{
	if (!s || !k)
		return RDMAPS_E_INVAL;
	if (!strcmp(s, "auto"))
		*k = RT_AUTO;
	else if (!strcmp(s, "rdma") || !strcmp(s, "verbs"))
		*k = RT_RDMA;
	else if (!strcmp(s, "tcp"))
		*k = RT_TCP;
	else
		return RDMAPS_E_INVAL;
	return RDMAPS_OK;
}

int rt_list_ports(const char *host, struct rt_port_info *out, int max)
{
	if (max < 0 || (max > 0 && !out))
		return RDMAPS_E_INVAL;
	return verbs_list(host, out, max);
}

/* ---------------------------------------------------------------- context */

int rt_ctx_new(const struct rt_ctx_cfg *cfg, struct rt_ctx **out)
{
	struct rt_ctx *ctx;
	const struct rt_ops *ops;
	enum rt_kind kind;
	int rc;

	if (!cfg || !out || cfg->timeout_ms < 0 ||
	    (cfg->kind != RT_AUTO && cfg->kind != RT_RDMA && cfg->kind != RT_TCP) ||
	    (cfg->progress != RT_PROGRESS_THREAD && cfg->progress != RT_PROGRESS_CALLER))
		return RDMAPS_E_INVAL;
	kind = cfg->kind;
	if (kind == RT_AUTO)
		kind = (verbs_ops() && verbs_probe(cfg->bind_host)) ? RT_RDMA : RT_TCP;
	if (kind == RT_RDMA) {
		ops = verbs_ops();
		if (!ops) {
			RDMAPS_INFO("rt: built without the verbs backend");
			return RDMAPS_E_NODEV;
		}
	} else {
		ops = &rt_tcp_ops;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		RDMAPS_ERR("rt: calloc(ctx) failed");
		return RDMAPS_E_NOMEM;
	}
	ctx->ops = ops;
	ctx->kind = kind;
	ctx->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 10000;
	ctx->numa_node = cfg->numa_node;
	ctx->poll_spin_us = cfg->poll_spin_us ? cfg->poll_spin_us : 1000;
	ctx->tcp_spin_us = cfg->tcp_spin_us > 0 ? cfg->tcp_spin_us : 0;
	if (cfg->auth_token) {
		size_t n = strnlen(cfg->auth_token, RT_TOKEN_MAX);

		memcpy(ctx->token, cfg->auth_token, n);
		ctx->token_len = n;
	}
	rc = rt_locality_init(ctx, cfg);
	if (rc) {
		free(ctx);
		return rc;
	}
	rc = ops->ctx_init(ctx, cfg);
	if (rc == RDMAPS_E_NOSUPPORT && cfg->kind == RT_AUTO && kind == RT_RDMA) {
		/* auto: a device that cannot serve rdmaps (no atomics, e.g. some
		 * iWARP NICs) is no RDMA device for it: TCP, said once */
		RDMAPS_WARN("rt: --transport=auto: the RDMA device cannot serve rdmaps; using tcp");
		ctx->caps_extra = 0;
		ctx->ops = ops = &rt_tcp_ops;
		ctx->kind = kind = RT_TCP;
		rc = ops->ctx_init(ctx, cfg);
	}
	if (rc) {
		free(ctx);
		return rc;
	}
	*out = ctx;
	return RDMAPS_OK;
}

int rt_ctx_delete(struct rt_ctx **pctx)
{
	if (!pctx || !*pctx)
		return RDMAPS_OK;
	(*pctx)->ops->ctx_fini(*pctx);
	free(*pctx);
	*pctx = NULL;
	return RDMAPS_OK;
}

enum rt_kind rt_ctx_kind(const struct rt_ctx *ctx)
{
	return ctx ? ctx->kind : RT_AUTO;
}

/* ---------------------------------------------------------------- set-up */

int rt_listen(struct rt_ctx *ctx, const char *host, uint16_t port,
	      struct rt_listener **out)
{
	struct rt_listener *l;
	int rc;

	if (!ctx || !out)
		return RDMAPS_E_INVAL;
	l = calloc(1, sizeof(*l));
	if (!l) {
		RDMAPS_ERR("rt: calloc(listener) failed");
		return RDMAPS_E_NOMEM;
	}
	l->ctx = ctx;
	rc = ctx->ops->listen(ctx, host, port, l);
	if (rc) {
		free(l);
		return rc;
	}
	*out = l;
	return RDMAPS_OK;
}

uint16_t rt_listener_port(const struct rt_listener *lst)
{
	return lst ? lst->port : 0;
}

int rt_listener_delete(struct rt_listener **pl)
{
	if (!pl || !*pl)
		return RDMAPS_OK;
	(*pl)->ctx->ops->listener_fini(*pl);
	free((*pl)->spare);
	free(*pl);
	*pl = NULL;
	return RDMAPS_OK;
}

/* The request is allocated before a peer is taken, so that an allocation
 * failure leaves the peer pending for the next call (not refused), and is
 * kept across polls that found nobody: a server polling with a short
 * timeout allocates once per connection, not once per poll. */
int rt_accept(struct rt_listener *lst, int timeout_ms, struct rt_request **out)
{
	struct rt_request *r;
	int rc;

	if (!lst || !out || timeout_ms < 0)
		return RDMAPS_E_INVAL;
	if (!lst->spare && !(lst->spare = malloc(sizeof(*lst->spare)))) {
		RDMAPS_ERR("rt: malloc(request) failed");
		return RDMAPS_E_NOMEM;
	}
	r = lst->spare;
	memset(r, 0, sizeof(*r));
	r->ctx = lst->ctx;
	rc = lst->ctx->ops->accept(lst, timeout_ms, r);
	if (rc)
		return rc;
	lst->spare = NULL;
	*out = r;
	return RDMAPS_OK;
}

const struct rt_hello *rt_request_hello(const struct rt_request *req)
{
	return req ? &req->hello : NULL;
}

static int accept_grant(struct rt_request **preq, const struct rt_grant *grants,
			int ngrants, struct rt_conn **out, int start)
{
	struct rt_request *req;
	struct rt_conn *c;
	int rc;

	if (!preq || !*preq || !out || ngrants < 0 || ngrants > RT_MAX_GRANTS ||
	    (ngrants && !grants))
		return RDMAPS_E_INVAL;
	req = *preq;
	c = calloc(1, sizeof(*c));
	if (!c) {
		RDMAPS_ERR("rt: calloc(conn) failed");
		req->ctx->ops->reject(req);
		rc = RDMAPS_E_NOMEM;
		goto out;
	}
	c->ops = req->ctx->ops;
	c->ctx = req->ctx;
	c->peer_hello = req->hello;
	if (start && req->ctx->ops->accept_start) {
		rc = req->ctx->ops->accept_start(req, grants, ngrants, c);
		c->handshaking = !rc;
	} else {
		rc = req->ctx->ops->accept_grant(req, grants, ngrants, c);
	}
	if (rc) {
		free(c);
		goto out;
	}
	*out = c;
out:
	free(req);
	*preq = NULL;
	return rc;
}

int rt_accept_grant(struct rt_request **preq, const struct rt_grant *grants,
		    int ngrants, struct rt_conn **out)
{
	return accept_grant(preq, grants, ngrants, out, 0);
}

int rt_accept_grant_start(struct rt_request **preq, const struct rt_grant *grants,
			  int ngrants, struct rt_conn **out)
{
	return accept_grant(preq, grants, ngrants, out, 1);
}

int rt_accept_poll(struct rt_conn *c)
{
	int rc;

	if (!c)
		return RDMAPS_E_INVAL;
	if (!c->handshaking)
		return RDMAPS_OK;
	rc = c->ops->accept_poll(c);
	if (rc != RDMAPS_E_AGAIN)
		c->handshaking = rc ? -1 : 0;   /* -1: failed, stays unusable */
	return rc;
}

int rt_reject(struct rt_request **preq)
{
	return rt_reject_status(preq, RDMAPS_E_REFUSED);
}

int rt_reject_status(struct rt_request **preq, int status)
{
	if (!preq || !*preq)
		return RDMAPS_OK;
	(*preq)->reject_status = status == RDMAPS_E_IN_USE || status == RDMAPS_E_MISMATCH ? status : RDMAPS_E_REFUSED;
	(*preq)->ctx->ops->reject(*preq);
	free(*preq);
	*preq = NULL;
	return RDMAPS_OK;
}

int rt_connect(struct rt_ctx *ctx, const char *host, uint16_t port,
	       const struct rt_hello *hello, const struct rt_grant *grants,
	       int ngrants, int timeout_ms, struct rt_conn **out)
{
	struct rt_conn *c;
	int rc;

	if (!ctx || !host || !hello || !out || ngrants < 0 || ngrants > RT_MAX_GRANTS ||
	    (ngrants && !grants) || timeout_ms < 0)
		return RDMAPS_E_INVAL;
	if (!timeout_ms)
		timeout_ms = ctx->timeout_ms;
	c = calloc(1, sizeof(*c));
	if (!c) {
		RDMAPS_ERR("rt: calloc(conn) failed");
		return RDMAPS_E_NOMEM;
	}
	c->ops = ctx->ops;
	c->ctx = ctx;
	rc = ctx->ops->connect(ctx, host, port, hello, grants, ngrants, timeout_ms, c);
	if (rc) {
		free(c);
		return rc;
	}
	*out = c;
	return RDMAPS_OK;
}

int rt_conn_delete(struct rt_conn **pc)
{
	if (!pc || !*pc)
		return RDMAPS_OK;
	(*pc)->ops->conn_fini(*pc);
	free(*pc);
	*pc = NULL;
	return RDMAPS_OK;
}

const struct rt_remote *rt_conn_remote(const struct rt_conn *c, uint32_t id)
{
	if (!c || id >= RT_MAX_GRANTS || !c->remote_valid[id])
		return NULL;
	return &c->remote[id];
}

unsigned rt_conn_caps(const struct rt_conn *c)
{
	return c && c->ops ? c->ops->caps | (c->ctx ? c->ctx->caps_extra : 0) : 0;
}

unsigned rt_ctx_caps(const struct rt_ctx *ctx)
{
	return ctx && ctx->ops ? ctx->ops->caps | ctx->caps_extra : 0;
}

uint32_t rt_ctx_target_events(const struct rt_ctx *ctx)
{
	return ctx && ctx->ops && ctx->ops->target_events ? ctx->ops->target_events(ctx) : 0;
}

int rt_ctx_wait_target(struct rt_ctx *ctx, uint32_t seen, int timeout_us)
{
	if (!ctx || !ctx->ops || !ctx->ops->wait_target)
		return RDMAPS_E_INVAL;
	return ctx->ops->wait_target(ctx, seen, timeout_us);
}

int rt_ctx_expect_reads(struct rt_ctx *ctx, int n, int budget_us)
{
	if (!ctx || !ctx->ops)
		return RDMAPS_E_INVAL;
	if (n > 0 && budget_us > 0 && ctx->ops->expect_reads)
		ctx->ops->expect_reads(ctx, n, budget_us);
	return RDMAPS_OK;
}

const struct rt_hello *rt_conn_hello(const struct rt_conn *c)
{
	return c ? &c->peer_hello : NULL;
}

const char *rt_conn_errmsg(const struct rt_conn *c)
{
	return c ? c->errmsg : "";
}

/* ---------------------------------------------------------------- operations */

static inline int post(struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
		       uint32_t rid, uint64_t roff, size_t len, uint64_t a, uint64_t b,
		       uint64_t wr_id, unsigned flags)
{
	int rc;

	if (!c || c->handshaking)
		return RDMAPS_E_INVAL;
	rc = rt_check_op(c, op, lid, loff, rid, roff, len);
	if (rc)
		return rc;
	return c->ops->post(c, op, lid, loff, rid, roff, len, a, b, wr_id, flags);
}

int rt_read(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
	    uint64_t roff, size_t len, uint64_t wr_id, unsigned flags)
{
	return post(c, RT_OP_READ, lid, loff, rid, roff, len, 0, 0, wr_id, flags);
}

int rt_write(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
	     uint64_t roff, size_t len, uint64_t wr_id, unsigned flags)
{
	return post(c, RT_OP_WRITE, lid, loff, rid, roff, len, 0, 0, wr_id, flags);
}

int rt_fetch_add(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
		 uint64_t roff, uint64_t add, uint64_t wr_id, unsigned flags)
{
	return post(c, RT_OP_FETCH_ADD, lid, loff, rid, roff, 8, add, 0, wr_id, flags);
}

int rt_cmp_swap(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
		uint64_t roff, uint64_t expect, uint64_t desired,
		uint64_t wr_id, unsigned flags)
{
	return post(c, RT_OP_CMP_SWAP, lid, loff, rid, roff, 8, expect, desired, wr_id,
		    flags);
}

int rt_poll(struct rt_conn *c, struct rt_completion *comps, int max, int timeout_ms)
{
	if (!c || c->handshaking || (!comps && max) || max < 0 || timeout_ms < 0)
		return RDMAPS_E_INVAL;
	return c->ops->poll(c, comps, max, timeout_ms);
}

int rt_flush(struct rt_conn *c, int timeout_ms)
{
	if (!c || c->handshaking || timeout_ms < 0)
		return RDMAPS_E_INVAL;
	return c->ops->flush(c, timeout_ms);
}
