/* Internal: the ops table each transport backend provides.  rt.c holds the
 * public rt_* functions; each is a thin dispatch through ctx->ops or
 * conn->ops.  The ps and worker never see a backend directly.
 *
 * Every backend object starts with the matching *_base struct so rt.c can
 * reach the ops table and the common fields without knowing the backend. */
#ifndef RDMAPS_RT_INTERNAL_H
#define RDMAPS_RT_INTERNAL_H

#include <netdb.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

struct rt_ops;

struct rt_ctx {
	const struct rt_ops *ops;
	enum rt_kind kind;          /* RT_RDMA or RT_TCP, never RT_AUTO */
	int timeout_ms;
	char token[RT_TOKEN_MAX];   /* zero-padded */
	size_t token_len;
	int numa_node;              /* resolved node, -1 = default policy */
	cpu_set_t cpus;             /* CPUs near the device (locality.c) */
	int pin_progress;           /* TCP: progress thread created with affinity cpus */
	int poll_spin_us;           /* verbs: busy-poll budget, us; < 0 = no sleeping */
	int tcp_spin_us;            /* TCP initiator: busy-poll budget before recv() blocks, us */
	unsigned caps_extra;        /* RT_CAP_* this context adds to its ops' (verbs:
				     * RT_CAP_ATOMIC_GLOBAL when the device says so) */
	void *backend;              /* backend-private state */
};

struct rt_listener {
	struct rt_ctx *ctx;
	uint16_t port;
	void *backend;
	struct rt_request *spare;   /* rt_accept's next request, kept across empty polls */
};

struct rt_request {
	struct rt_ctx *ctx;
	struct rt_hello hello;
	int reject_status;          /* what ops->reject tells the peer: 0 = RDMAPS_E_REFUSED */
	void *backend;
};

/* Local grants are looked up by id in O(1) on the hot path. */
struct rt_local {
	void *addr;
	size_t len;
	unsigned rights;
	uint32_t lkey;              /* verbs only */
	void *mr;                   /* verbs only: struct ibv_mr * */
	int valid;
};

struct rt_conn {
	const struct rt_ops *ops;
	struct rt_ctx *ctx;
	struct rt_hello peer_hello; /* server side: what the client announced */
	struct rt_local local[RT_MAX_GRANTS];
	struct rt_remote remote[RT_MAX_GRANTS];
	int remote_valid[RT_MAX_GRANTS];
	char errmsg[160];
	void *backend;
	/* server side, between rt_accept_grant_start and the rt_accept_poll
	 * that completes it: no operation may use the connection */
	int handshaking;
	void *hs;                   /* the backend's state meanwhile (tcp) */
};

struct rt_ops {
	const char *name;
	unsigned caps;              /* RT_CAP_* bits (rt.h): what the backend guarantees */
	int (*ctx_init)(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg);
	void (*ctx_fini)(struct rt_ctx *ctx);
	int (*listen)(struct rt_ctx *ctx, const char *host, uint16_t port,
		      struct rt_listener *lst);
	void (*listener_fini)(struct rt_listener *lst);
	int (*accept)(struct rt_listener *lst, int timeout_ms, struct rt_request *req);
	int (*accept_grant)(struct rt_request *req, const struct rt_grant *g, int n,
			    struct rt_conn *conn);
	/* Optional (NULL: rt_accept_grant_start calls accept_grant, which
	 * completes the connection before returning): send this side's part
	 * of the set-up and return; accept_poll then completes the connection
	 * without waiting (RDMAPS_OK), says the peer's part has not arrived
	 * yet (RDMAPS_E_AGAIN, within RT_HANDSHAKE_MS of the start), or fails.
	 * conn_fini releases a connection in either state. */
	int (*accept_start)(struct rt_request *req, const struct rt_grant *g, int n,
			    struct rt_conn *conn);
	int (*accept_poll)(struct rt_conn *conn);
	void (*reject)(struct rt_request *req);
	int (*connect)(struct rt_ctx *ctx, const char *host, uint16_t port,
		       const struct rt_hello *hello, const struct rt_grant *g, int n,
		       int timeout_ms, struct rt_conn *conn);
	void (*conn_fini)(struct rt_conn *conn);
	int (*post)(struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
		    uint32_t rid, uint64_t roff, size_t len, uint64_t a, uint64_t b,
		    uint64_t wr_id, unsigned flags);
	int (*poll)(struct rt_conn *c, struct rt_completion *comps, int max, int timeout_ms);
	int (*flush)(struct rt_conn *c, int timeout_ms);
	/* RT_CAP_TARGET_WAKE only (else NULL) */
	uint32_t (*target_events)(const struct rt_ctx *ctx);
	int (*wait_target)(struct rt_ctx *ctx, uint32_t seen, int timeout_us);
	/* rt_ctx_expect_reads; NULL = nothing to do (verbs) */
	void (*expect_reads)(struct rt_ctx *ctx, int n, int budget_us);
};

extern const struct rt_ops rt_tcp_ops;
extern const struct rt_ops rt_verbs_ops;

/* Implemented by the verbs backend: is there an active RDMA device that
 * serves host (NULL = any)?  Used by RT_AUTO. */
int rt_verbs_probe(const char *host);
/* rt_list_ports for the verbs backend (verbs_dev.c). */
struct rt_port_info;
int rt_verbs_list_ports(const char *host, struct rt_port_info *out, int max);

/* rt.c helpers shared by backends */
/* Validate (lid,loff,len) against the local table and (rid,roff,len) against
 * the remote table and the needed right; RDMAPS_E_INVAL / RDMAPS_E_REMOTE_ACCESS. */
int rt_check_op(const struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
		uint32_t rid, uint64_t roff, size_t len);
void rt_conn_set_err(struct rt_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Copy and validate grants into c->local (id < RT_MAX_GRANTS, unique, addr and
 * len nonzero, known rights bits); RDMAPS_E_INVAL otherwise.  (rt.c) */
int rt_grants_to_local(struct rt_conn *c, const struct rt_grant *g, int n);

/* CLOCK_MONOTONIC in microseconds / milliseconds: every backend's timeouts.
 * (clock.c) */
uint64_t rt_now_us(void);
uint64_t rt_now_ms(void);
/* rt_connect failures that its caller reports (rt.h): logged at debug level
 * by the backends, on both */
static inline int rt_connect_caller_reports(int rc)
{
	return rt_connect_retriable(rc) || rc == RDMAPS_E_AUTH || rc == RDMAPS_E_IN_USE ||
	       rc == RDMAPS_E_MISMATCH;
}
/* ms left until deadline (an rt_now_ms() value): >= 0, at most INT_MAX */
int rt_remaining_ms(uint64_t deadline);

/* rt_accept_grant's wait for the client's part of the set-up, once
 * rt_accept returned it (tcp: its grants table; verbs: ESTABLISHED and its
 * table), capped by the ctx timeout; over tcp also how long
 * rt_accept_poll keeps a started set-up.  The server (the ps) serves
 * everyone on one thread, so a client that stops half-way must not hold
 * that thread for the ctx timeout (--timeout: docs/hardening.md, "Hostile
 * TCP peers"); over tcp it holds nothing since the ps polls the set-up
 * (rt_accept_grant_start).  An honest client answers at once: it is
 * blocked in its own set-up, computing nothing, and has one message to
 * send. */
#define RT_HANDSHAKE_MS 2000
/* verbs: an rdma_cm exchange (REP, RTU) before the table, in CI under
 * SoftRoCE in an emulated (TCG) VM with several tasks on 2 vCPUs: more room,
 * still far below --timeout.  Not measured there. */
#define RT_HANDSHAKE_VERBS_MS 10000
/* A resolver failure is said the first time it happens for a host, not at
 * every connect retry (a worker retries for --timeout; the caller reports
 * the status itself): 1 if KEY differs from the last one kept in LAST. */
static inline int rt_first_time(char *last, size_t n, const char *key)
{
	if (!strncmp(last, key, n))
		return 0;
	snprintf(last, n, "%s", key);
	return 1;
}

/* A getaddrinfo failure as a status: the name does not resolve (NONAME,
 * which callers retry), or the resolver itself failed (out of memory, a
 * system error). */
static inline int rt_gai_status(int gai)
{
	switch (gai) {
	case EAI_MEMORY: return RDMAPS_E_NOMEM;
	case EAI_SYSTEM: return RDMAPS_E_IO;
	default: return RDMAPS_E_NONAME; /* NONAME, NODATA, AGAIN, FAIL, ... */
	}
}

static inline uint64_t rt_handshake_deadline(const struct rt_ctx *ctx, int cap_ms)
{
	int ms = ctx->timeout_ms < cap_ms ? ctx->timeout_ms : cap_ms;

	return rt_now_ms() + (uint64_t)ms;
}

/* NUMA node nearest to a verbs device (hwloc), or -1 when unknown or the
 * machine has a single node.  (numa.c) */
struct ibv_device;
int rt_numa_node_of_device(struct ibv_device *dev);

/* locality.c: resolve ctx->cpus / ctx->pin_progress from cfg (see there);
 * RDMAPS_E_INVAL for a bad or unusable cfg->cpuset. */
int rt_locality_init(struct rt_ctx *ctx, const struct rt_ctx_cfg *cfg);
/* Linux CPU list "0-3,8" <-> cpu_set_t; RDMAPS_E_INVAL on a malformed list,
 * a CPU >= CPU_SETSIZE, a reversed range, or a buffer too small. */
int rt_cpulist_parse(const char *s, cpu_set_t *set);
int rt_cpulist_format(const cpu_set_t *set, char *buf, size_t len);
/* hwloc: cpuset of a verbs device; 0, or -1 when unknown. */
int rt_cpuset_of_device(struct ibv_device *dev, cpu_set_t *set);
/* verbs_dev.c: cpuset of the device serving host (NULL = first active);
 * 0, or -1 when no device / unknown. */
int rt_verbs_device_cpuset(const char *host, cpu_set_t *set);

#endif
