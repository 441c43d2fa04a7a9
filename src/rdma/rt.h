/* rdmaps transport API ("rt"): one-sided operations on remote registered
 * regions, over verbs (librdmacm + RC QPs) or TCP, chosen once at set-up.
 *
 * Model
 *  - A process creates one rt_ctx (transport chosen here: auto | rdma | tcp).
 *  - Memory that takes part in operations is described per connection by
 *    grants: {id, addr, len, rights}.  rights == 0 means "local only" (a
 *    source/sink buffer of this side's own operations, never advertised);
 *    RT_RIGHT_READ/WRITE/ATOMIC are what the *peer* may do.  The verbs
 *    backend uses one protection domain per connection, so a region granted
 *    to peer A is not reachable with any key by peer B (least privilege).
 *  - A server listens on host:port; rt_accept() returns a pending request
 *    with the peer's hello (role, index, layout hash); the server answers
 *    with rt_accept_grant() (its grants for that peer) or rt_reject().
 *  - A client rt_connect()s with its hello and its own grants.
 *  - During set-up each side sends the other a table of its advertised
 *    grants as fixed-size little-endian versioned descriptors (rt_desc.h).
 *  - Operations name local memory by (local grant id, offset) and remote
 *    memory by (remote grant id, offset).  They are posted asynchronously;
 *    RT_F_SIGNALED ones produce a completion for rt_poll().  Unsignaled ops
 *    produce a completion only when they fail.  Operations on one connection
 *    are executed at the target in posting order.
 *  - Every wait takes a timeout in milliseconds; nothing blocks forever.
 *
 * Threading: one thread drives a given rt_conn (post + poll).  Different
 * connections may be driven from different threads.  The TCP backend runs one
 * progress thread per rt_ctx that serves peers' operations on our grants.
 * Atomics (FETCH_ADD, CMP_SWAP) on a region are atomic with respect to each
 * other.  With respect to the owner's local __atomic operations on the same
 * 8-byte word only where rt_ctx_caps() has RT_CAP_ATOMIC_GLOBAL (TCP; verbs
 * on a device reporting IBV_ATOMIC_GLOB: most, rxe included, report
 * IBV_ATOMIC_HCA, atomic among the device's own operations only).  rdmaps'
 * ps only loads the words its workers add to.
 */
#ifndef RDMAPS_RT_H
#define RDMAPS_RT_H

#include <sched.h>  /* cpu_set_t (the project builds with _GNU_SOURCE) */
#include <stddef.h>
#include <stdint.h>

#include "../common/status.h"

struct rt_ctx;      /* process-wide transport context */
struct rt_listener; /* a listening endpoint */
struct rt_request;  /* a pending incoming connection */
struct rt_conn;     /* an established connection */

enum rt_kind { RT_AUTO = 0, RT_RDMA = 1, RT_TCP = 2 };

/* What the peer may do with a granted region. */
enum rt_rights {
	RT_RIGHT_NONE = 0, /* local buffer of my own ops only */
	RT_RIGHT_READ = 1u << 0,
	RT_RIGHT_WRITE = 1u << 1,
	RT_RIGHT_ATOMIC = 1u << 2,
};

#define RT_MAX_GRANTS 16      /* ids are 0..RT_MAX_GRANTS-1, per side, per conn */
#define RT_TOKEN_MAX 40       /* auth token bytes carried in the handshake */

struct rt_ctx_cfg {
	enum rt_kind kind;        /* RT_AUTO: verbs if an active device serves bind_host, else TCP */
	const char *bind_host;    /* address used to probe for a device with RT_AUTO (may be NULL) */
	int timeout_ms;           /* default timeout for set-up waits (0 -> 10000) */
	const char *auth_token;   /* NULL or "" = none; at most RT_TOKEN_MAX bytes used */
	int numa_node;            /* -1 = near the RDMA device (hwloc), or local node */
	/* Locality (rt_ctx_cpuset / rt_pin_thread).  NULL or "": the CPUs near
	 * the RDMA device serving bind_host (hwloc), or every CPU this process
	 * may run on when the machine has one NUMA node / no device is known.
	 * Else a Linux CPU list, e.g. "0-3,8" (intersected with the allowed
	 * CPUs; malformed or nothing left -> rt_ctx_new gives RDMAPS_E_INVAL). */
	const char *cpuset;
	int pin_progress;         /* nonzero: the TCP progress thread runs on cpuset */
	/* verbs: how long rt_poll / rt_flush busy-poll the CQ before sleeping on
	 * the completion channel: 0 = default (1000 us), > 0 = that many us,
	 * < 0 = never sleep (spin until the timeout, like perftest).  A wait
	 * longer than the budget pays a wake-up.  TCP: ignored (it blocks in
	 * recv). */
	int poll_spin_us;
	/* TCP: how long the initiator busy-polls its socket for replies
	 * (non-blocking recv) before it blocks in recv(): 0 = not at all (the
	 * default: with fewer cores than busy threads, spinning steals the
	 * core the peer's progress thread needs), > 0 = that many us.  Saves
	 * the wake-up of a sleeping thread when replies come within the
	 * budget.  Verbs: ignored (poll_spin_us). */
	int tcp_spin_us;
	/* RT_CAP_TARGET_WAKE: which peer ops bump the target event counter
	 * (RT_EV_* bits); 0 = all.  A ps that waits for FETCH_ADDs only sets
	 * RT_EV_ATOMIC and is not woken by the gradient WRITEs before them. */
	unsigned target_events;
	/* TCP: who serves the peers' operations on this context's regions.
	 * RT_PROGRESS_THREAD (the default): a progress thread of the context,
	 * started with its first connection; the owner's threads never need
	 * to do anything for it.  RT_PROGRESS_CALLER: no thread; they are
	 * served by whichever thread of ours waits on the context:
	 * inside rt_ctx_wait_target, and inside every wait of rt_poll,
	 * rt_flush and a post that finds its socket full, on any connection
	 * of the context (one thread serves at a time; a second waiter sleeps
	 * or blocks as with a thread).  A peer's WRITE or atomic that the
	 * waiter is waiting for then costs one wake-up instead of two (the
	 * progress thread's, then the waiter's); a READ costs one either way,
	 * of whichever thread serves (docs/benchmarks.md measures both).  The
	 * price: while no thread of ours waits, nothing is served and peers'
	 * operations queue in the sockets, so only an owner that comes back
	 * to wait often (the ps's loop) should choose it.  Verbs: ignored (the
	 * NIC serves). */
	int progress;
};

enum rt_progress { RT_PROGRESS_THREAD = 0, RT_PROGRESS_CALLER = 1 };

#define RT_EV_WRITE  1u        /* a peer WRITE's payload is in our memory */
#define RT_EV_ATOMIC 2u        /* a peer FETCH_ADD / CMP_SWAP executed */

struct rt_grant {
	uint32_t id;              /* < RT_MAX_GRANTS, unique per side of a conn */
	void *addr;
	size_t len;
	unsigned rights;          /* enum rt_rights bits */
};

/* Identity a client announces; the server decides grants from it. */
struct rt_hello {
	uint8_t role;             /* application-defined: e.g. 1 = worker */
	uint32_t index;           /* task index */
	uint64_t layout_hash;     /* application-defined compatibility check */
};

/* A remote region as learned from the peer's descriptor table. */
struct rt_remote {
	uint32_t id;
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	unsigned rights;
};

enum rt_op { RT_OP_READ = 1, RT_OP_WRITE, RT_OP_FETCH_ADD, RT_OP_CMP_SWAP };

struct rt_completion {
	uint64_t wr_id;
	enum rt_op op;
	int status;               /* RDMAPS_OK or negative rdmaps_status */
};

/* The most bytes one READ or WRITE moves: the IB spec and rxe cap a message
 * at 2^31 bytes (a verbs sge length is 32 bits), and the tcp frame at 2 GiB.
 * A longer op is RDMAPS_E_INVAL at the initiator; split it (the worker
 * does, by pieces). */
#define RT_MAX_OP_LEN ((size_t)1 << 30)

/* flags for operations */
#define RT_F_SIGNALED 1u      /* produce a completion */
#define RT_F_INLINE   2u      /* hint: small payload may be inlined */
#define RT_F_FENCE    4u      /* wait for earlier READ/ATOMIC on this conn first */
/* A full send queue returns RDMAPS_E_AGAIN at once (after taking what has
 * completed) instead of waiting for room up to the ctx timeout: for an
 * owner that serves many peers on one thread (the ps).  verbs: the SQ;
 * tcp: its queue of unanswered ops (255).  Without the flag both wait for
 * room up to the ctx timeout, then RDMAPS_E_AGAIN; both return AGAIN at
 * once when only rt_poll can free a slot.  tcp: a send into a full socket
 * still waits, up to the ctx timeout, with the flag too. */
#define RT_F_NOWAIT   8u

/* --- context ----------------------------------------------------------- */

/* Create a context.  Returns RDMAPS_OK and sets *ctx, or RDMAPS_E_NODEV when
 * RT_RDMA is forced and no active device exists, RDMAPS_E_NOMEM, ... */
int rt_ctx_new(const struct rt_ctx_cfg *cfg, struct rt_ctx **ctx);
/* Destroy (connections must be closed first); sets *ctx = NULL; NULL ok. */
int rt_ctx_delete(struct rt_ctx **ctx);
/* The transport actually in use: RT_RDMA or RT_TCP. */
enum rt_kind rt_ctx_kind(const struct rt_ctx *ctx);
const char *rt_kind_name(enum rt_kind k);
/* Parse "auto" | "rdma" | "tcp"; returns RDMAPS_E_INVAL otherwise. */
int rt_kind_parse(const char *s, enum rt_kind *k);

/* One port of an RDMA device, as RT_AUTO sees it (`rdmaps devices`). */
struct rt_port_info {
	char dev[64];    /* device name (rxe0, mlx5_0, ...) */
	int port;        /* 1-based; 0 = the device could not be opened or queried */
	char state[16];  /* DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER, or "unknown" */
	char link[16];   /* InfiniBand, Ethernet, or "unknown" */
	int numa_node;   /* the device's NUMA node, -1 unknown or a single node */
	int serves;      /* active, and host's address is in its GID table (any
			  * address when host is NULL, "" or a wildcard) */
	char atomics[8]; /* the device's atomic_cap: GLOB, HCA, NONE (rdmaps cannot
			  * use it: auto takes tcp), or "?" */
};
/* Lists every port of every RDMA device into out[0..max), in the order
 * RT_AUTO tries them: the device of the first entry with serves = 1 is the
 * one rt_ctx_new would use for host.  Returns the number of ports (may be
 * more than max; 0 when there are none, or the verbs backend is not built),
 * RDMAPS_E_INVAL when host does not resolve or out is NULL with max > 0,
 * RDMAPS_E_IO when libibverbs cannot list devices. */
int rt_list_ports(const char *host, struct rt_port_info *out, int max);

/* The context's locality cpuset (see rt_ctx_cfg.cpuset), resolved once in
 * rt_ctx_new.  RDMAPS_E_INVAL for NULL arguments. */
int rt_ctx_cpuset(const struct rt_ctx *ctx, cpu_set_t *set);
/* The same as a Linux CPU list ("0-3,8"); RDMAPS_E_INVAL if buf is too small. */
int rt_ctx_cpulist(const struct rt_ctx *ctx, char *buf, size_t len);
/* Pin the calling thread to the context's cpuset: for the thread that polls
 * (the verbs backend has no thread of its own).  With one NUMA node and no
 * cfg.cpuset this keeps every allowed CPU, i.e. changes nothing.
 * RDMAPS_OK, RDMAPS_E_INVAL (NULL), RDMAPS_E_IO (logged). */
int rt_pin_thread(const struct rt_ctx *ctx);

/* Memory suitable for registration: page-aligned, zeroed, on the context's
 * NUMA node (near the RDMA device when known).  Free with rt_free(). */
void *rt_alloc(struct rt_ctx *ctx, size_t len);
void rt_free(struct rt_ctx *ctx, void *p, size_t len);

/* --- connection set-up --------------------------------------------------- */

/* Listen on host:port ("0.0.0.0" allowed for TCP; port 0 = ephemeral, see
 * rt_listener_port). */
int rt_listen(struct rt_ctx *ctx, const char *host, uint16_t port,
	      struct rt_listener **lst);
uint16_t rt_listener_port(const struct rt_listener *lst);
int rt_listener_delete(struct rt_listener **lst);

/* Wait up to timeout_ms for a connection request.  The auth token has
 * already been checked on both backends alike: the peer's token must equal
 * ours, and "none" equals only "none" (a wrong, missing or unexpected token
 * is refused with RDMAPS_E_AUTH, logged, and not returned; the wait
 * continues).  RDMAPS_E_TIMEOUT when none arrived. */
int rt_accept(struct rt_listener *lst, int timeout_ms, struct rt_request **req);
const struct rt_hello *rt_request_hello(const struct rt_request *req);
/* Complete the connection, granting the peer these regions. Frees req. */
int rt_accept_grant(struct rt_request **req, const struct rt_grant *grants,
		    int ngrants, struct rt_conn **conn);
/* The same without waiting for the peer's part of the set-up, for a server
 * that serves other peers on the same thread: on RDMAPS_OK *conn exists but
 * may still be completing; call rt_accept_poll until it returns RDMAPS_OK
 * (usable from then on) or an error (delete it with rt_conn_delete).  Until
 * then no operation may be posted or polled on it (RDMAPS_E_INVAL).  The
 * peer's part (tcp: its grants table; verbs: ESTABLISHED, then its table)
 * is awaited for RT_HANDSHAKE_MS (tcp, 2 s) or RT_HANDSHAKE_VERBS_MS (verbs,
 * 10 s) from the start, or the ctx timeout if shorter.  Frees req. */
int rt_accept_grant_start(struct rt_request **req, const struct rt_grant *grants,
			  int ngrants, struct rt_conn **conn);
/* RDMAPS_OK: conn is complete; RDMAPS_E_AGAIN: not yet (poll again); any
 * other status: the set-up failed (the peer went away, sent a malformed or
 * refusing answer, or did not answer within its bound).  Never waits. */
int rt_accept_poll(struct rt_conn *conn);
/* Refuse the connection (peer gets RDMAPS_E_REFUSED). Frees req. */
int rt_reject(struct rt_request **req);
/* Refuse with a reason the peer's rt_connect returns: RDMAPS_E_REFUSED,
 * RDMAPS_E_IN_USE (its identity is held by another live peer) or
 * RDMAPS_E_MISMATCH (its hello's layout hash says it runs another job
 * configuration: retrying cannot help); any other status is sent as
 * RDMAPS_E_REFUSED.  Frees req. */
int rt_reject_status(struct rt_request **req, int status);

/* Connect to host:port, announcing hello and granting the server grants.
 * Errors: RDMAPS_E_NONAME, RDMAPS_E_UNREACHABLE, RDMAPS_E_REFUSED, RDMAPS_E_AUTH,
 * RDMAPS_E_IN_USE, RDMAPS_E_MISMATCH (rt_reject_status), RDMAPS_E_TIMEOUT,
 * RDMAPS_E_NODEV.
 * A failure that a later attempt may cure (rt_connect_retriable: the peer
 * is not up yet, or not any more), and a refusal that says why (AUTH,
 * IN_USE, MISMATCH), is logged at debug level only: the caller decides whether to
 * retry, and reports it (a retry loop would otherwise print one line per
 * attempt).  Every other failure is logged here. */
static inline int rt_connect_retriable(int rc)
{
	/* NONAME too: a host's name may be published after its task starts
	 * (DNS of a scheduler that names hosts as it starts them) */
	return rc == RDMAPS_E_REFUSED || rc == RDMAPS_E_UNREACHABLE || rc == RDMAPS_E_TIMEOUT ||
	       rc == RDMAPS_E_PEER_GONE || rc == RDMAPS_E_NONAME;
}
int rt_connect(struct rt_ctx *ctx, const char *host, uint16_t port,
	       const struct rt_hello *hello, const struct rt_grant *grants,
	       int ngrants, int timeout_ms, struct rt_conn **conn);

/* Close; sets *conn = NULL; NULL ok. */
int rt_conn_delete(struct rt_conn **conn);

/* The region the peer advertised under id, or NULL. */
const struct rt_remote *rt_conn_remote(const struct rt_conn *conn, uint32_t id);
const struct rt_hello *rt_conn_hello(const struct rt_conn *conn); /* server side: peer's hello */

/* --- operations (hot path: no malloc, no lock) ---------------------------- */

/* READ len bytes of remote (rid, roff) into local (lid, loff). */
int rt_read(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
	    uint64_t roff, size_t len, uint64_t wr_id, unsigned flags);
/* WRITE len bytes of local (lid, loff) to remote (rid, roff). */
int rt_write(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
	     uint64_t roff, size_t len, uint64_t wr_id, unsigned flags);
/* 8-byte aligned atomics; the old remote value lands in local (lid, loff). */
int rt_fetch_add(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
		 uint64_t roff, uint64_t add, uint64_t wr_id, unsigned flags);
int rt_cmp_swap(struct rt_conn *c, uint32_t lid, size_t loff, uint32_t rid,
		uint64_t roff, uint64_t expect, uint64_t desired,
		uint64_t wr_id, unsigned flags);

/* Poll up to max completions, waiting up to timeout_ms (0 = do not wait,
 * but take what has arrived: every backend looks once).
 * Returns the number (>= 0) or a negative status (RDMAPS_E_PEER_GONE when
 * the connection broke; pending operations then complete with an error).
 * The status of a failed remote access is RDMAPS_E_REMOTE_ACCESS. */
int rt_poll(struct rt_conn *c, struct rt_completion *comps, int max,
	    int timeout_ms);

/* Convenience: post nothing, wait until every operation posted so far on c
 * (signaled or not) has completed; returns the first error seen, or
 * RDMAPS_E_TIMEOUT (timeout_ms 0: one look at what has arrived). */
int rt_flush(struct rt_conn *c, int timeout_ms);

/* --- capabilities ---------------------------------------------------------- */

/* RT_CAP_ORDERED_PLACEMENT: an operation posted on a connection after a
 * WRITE executes at the target only after every byte of that WRITE has been
 * placed in the target's memory and is visible to the target's CPU (a CPU
 * that sees the effect of the later operation, e.g. a FETCH_ADD result, with
 * an acquire load also sees the WRITE's bytes).  With it, WRITE + FETCH_ADD
 * can be posted back to back and waited for once; without it, the WRITE's
 * completion must be waited for before the FETCH_ADD is posted.
 * TCP: yes (the target's progress thread receives a WRITE's payload into the
 * region before it reads the next request, and executes atomics with
 * __ATOMIC_SEQ_CST).  Verbs: no (docs/protocol.md Q1 says why). */
#define RT_CAP_ORDERED_PLACEMENT 1u

/* RT_CAP_TARGET_WAKE: a thread can sleep until a peer's WRITE or atomic
 * has been executed on this context's memory, instead of spinning on that
 * memory (rt_ctx_wait_target).  TCP: yes (the progress thread executes
 * them and wakes the sleeper).  Verbs: no (the NIC writes memory without
 * telling any CPU: poll the memory). */
#define RT_CAP_TARGET_WAKE 2u

/* RT_CAP_ATOMIC_GLOBAL: peers' FETCH_ADD / CMP_SWAP on this context's memory
 * are atomic with respect to this process's own __atomic operations on the
 * same word, not only with respect to each other.  TCP: yes (the progress
 * thread executes them with __atomic builtins).  Verbs: when the device's
 * atomic_cap is IBV_ATOMIC_GLOB (a device with IBV_ATOMIC_NONE is refused:
 * RDMAPS_E_NOSUPPORT). */
#define RT_CAP_ATOMIC_GLOBAL 4u

/* The capabilities (RT_CAP_* bits) of the connection's / context's
 * transport; 0 for NULL. */
unsigned rt_conn_caps(const struct rt_conn *c);
unsigned rt_ctx_caps(const struct rt_ctx *ctx);

/* Target events (RT_CAP_TARGET_WAKE): a counter of the peers' WRITEs and
 * atomics executed on this context's regions, bumped after the operation's
 * effect is in memory.  Lost-wakeup-free use: read the counter, check the
 * memory, and if nothing changed, rt_ctx_wait_target(ctx, that value, ...).
 * rt_ctx_target_events: the counter (0 without the capability).
 * rt_ctx_wait_target: RDMAPS_OK at once if the counter differs from seen,
 * else sleeps until it does (RDMAPS_OK) or timeout_us passed
 * (RDMAPS_E_TIMEOUT); RDMAPS_E_INVAL without the capability or for NULL.
 * With RT_PROGRESS_CALLER the waiting thread serves the peers' operations
 * meanwhile (READs too, which do not count as events).
 * Any thread; no allocation. */
uint32_t rt_ctx_target_events(const struct rt_ctx *ctx);
int rt_ctx_wait_target(struct rt_ctx *ctx, uint32_t seen, int timeout_us);

/* Expected READs, a latency hint (any thread, no allocation, no lock): n
 * READ requests from peers are about to arrive at this context, e.g. from
 * workers that were just released and will pull.  TCP: the progress thread
 * is woken now, so that its wake-up overlaps the peers' own instead of
 * following their request, and it busy-polls its sockets until n more READ
 * requests arrived or budget_us passed, whichever comes first; then it
 * sleeps again (RT_PROGRESS_CALLER: there is no thread to wake; the next
 * rt_ctx_wait_target polls instead of sleeping, under the same rule).
 * Calls while it polls add to n and move the deadline.  It
 * costs a core for up to budget_us: worth it only where the progress
 * thread has a core of its own.  Verbs: nothing to do (the NIC serves
 * READs without a CPU).  n <= 0 or budget_us <= 0: nothing.
 * RDMAPS_OK, or RDMAPS_E_INVAL for NULL. */
int rt_ctx_expect_reads(struct rt_ctx *ctx, int n, int budget_us);

/* Last error text on this connection (peer-supplied detail for TCP). */
const char *rt_conn_errmsg(const struct rt_conn *c);

#endif
