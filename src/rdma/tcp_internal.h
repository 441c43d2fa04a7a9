/* TCP backend: private structures.  Files:
 *   tcp_wire.c   frame / hello encoding, socket helpers with deadlines
 *   tcp_setup.c  context, listen / accept / connect handshake, teardown, ops table
 *   tcp_ops.c    initiator: post / poll / flush (hot path)
 *   tcp_serve.c  the per-context progress thread serving peers' requests
 * Each rt_conn has two sockets: "ops" (we are the initiator: we send
 * requests, rt_poll reads the replies) and "serve" (the peer is the
 * initiator; our progress thread executes its requests on our grants).
 * Wire formats are documented in docs/transport.md. */
#ifndef RDMAPS_TCP_INTERNAL_H
#define RDMAPS_TCP_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "desc.h"
#include "rt_internal.h"

/* ---- frame: 48 bytes, little-endian ------------------------------------
 *  0 u32 magic TCP_FRAME_MAGIC   4 u8 op   5 u8 flags   6 u16 rid
 *  8 u32 seq   12 i32 status (replies; 0 in requests)
 * 16 u64 roff  24 u64 len  32 u64 a  40 u64 b
 * Request ops: 1 READ 2 WRITE 3 FETCH_ADD 4 CMP_SWAP 5 NOP; reply = op|0x80.
 * A WRITE request is followed by len payload bytes; a READ reply with
 * status 0 by len payload bytes; nothing else carries payload. */
#define TCP_FRAME_MAGIC 0x46545452u /* "RTTF" */
#define TCP_FRAME_LEN 48
#define TCP_OP_NOP 5
#define TCP_OP_REPLY 0x80
#define TCP_FL_REPLY 1u             /* initiator wants a reply */
#define TCP_MAX_LEN (1ull << 31)    /* largest single op */
/* READ/WRITE bytes one peer's requests may move in one wake-up of the
 * serving thread before it goes back to epoll_wait (srv_rx); each request
 * also costs 1/64 of it, so a turn serves at most 64 requests */
#define TCP_TURN_BYTES (1ull << 20)

struct tcp_frame {
	uint8_t op, flags;
	uint16_t rid;
	uint32_t seq;
	int32_t status;
	uint64_t roff, len, a, b;
};

void tcp_frame_encode(const struct tcp_frame *f, uint8_t out[TCP_FRAME_LEN]);
/* Decode; RDMAPS_E_PROTO on a bad magic. Op/len checks are the caller's. */
int tcp_frame_decode(const uint8_t in[TCP_FRAME_LEN], struct tcp_frame *f);

/* ---- hello: 80 bytes, one per socket, client -> server ----------------
 *  0 u32 magic TCP_HELLO_MAGIC  4 u16 version  6 u8 channel  7 u8 role
 *  8 u32 index  12 u32 token_len  16 u64 nonce  24 u64 layout_hash
 * 32 token[40] zero padded  72 u64 reserved (0) */
#define TCP_HELLO_MAGIC 0x31485452u /* "RTH1" */
#define TCP_HELLO_VERSION 1u
#define TCP_HELLO_LEN 80
enum tcp_channel { TCP_CH_OPS = 1, TCP_CH_SERVE = 2 }; /* as seen by the client */

struct tcp_hello {
	uint8_t channel;
	struct rt_hello h;
	uint64_t nonce;
	uint32_t token_len;
	uint8_t token[RT_TOKEN_MAX];
};

void tcp_hello_encode(const struct tcp_hello *h, uint8_t out[TCP_HELLO_LEN]);
int tcp_hello_decode(const uint8_t in[TCP_HELLO_LEN], struct tcp_hello *h);

/* ---- set-up message: 16-byte header (+ table) ---------------------------
 *  0 u32 magic TCP_SETUP_MAGIC  4 u16 version  6 u16 0  8 i32 status
 * 12 u32 table_len, then table_len bytes of grants table (desc.h). */
#define TCP_SETUP_MAGIC 0x52485452u /* "RTHR" */
#define TCP_SETUP_LEN 16

/* ---- socket helpers (tcp_wire.c) --------------------------------------- */
int tcp_set_sock_opts(int fd);               /* O_NONBLOCK, TCP_NODELAY */
/* Send / receive exactly len bytes on a non-blocking fd before deadline. */
int tcp_send_all(int fd, const void *buf, size_t len, uint64_t deadline);
int tcp_recv_all(int fd, void *buf, size_t len, uint64_t deadline);
int tcp_errno_status(int err);
/* Connect (non-blocking socket, TCP_NODELAY) to the first address of the
 * list that accepts before deadline; *used is that address.  (tcp_setup.c) */
struct addrinfo;
int tcp_connect_any(const struct addrinfo *ai, uint64_t deadline, int *fd,
		    const struct addrinfo **used);
int tcp_token_equal(const uint8_t *a, const uint8_t *b, size_t n);
int tcp_status_from_wire(int32_t s);

/* ---- initiator state ---------------------------------------------------- */
#define TCP_DEPTH 256           /* outstanding ops per connection (ring) */
#define TCP_USER_DEPTH (TCP_DEPTH - 1) /* one slot kept for rt_flush's NOP */
#define TCP_AUTO_ACK 64         /* ask for a reply at least every N posts */

struct tcp_slot {
	uint64_t wr_id;
	uint8_t *dst;           /* READ / atomics: where the result lands */
	uint64_t len;
	int32_t status;
	uint8_t op;             /* enum rt_op or TCP_OP_NOP */
	uint8_t report;         /* user asked for a completion */
	uint8_t want_reply;
	uint8_t internal;       /* flush NOP: never reported */
};

struct tcp_srv;

struct tcp_conn {
	/* hot path */
	int ofd;                  /* ops socket (blocking mode, see tcp_ops.c) */
	int broken;               /* 0 or the fatal status */
	int first_err;            /* first op error not yet returned by rt_flush */
	uint32_t head, acked, tail; /* post / fully done / harvested */
	uint32_t since_reply;     /* posts since the last one wanting a reply */
	int io_timeout_ms;
	int rcvtimeo_ms;          /* SO_RCVTIMEO currently set on ofd (0 = none) */
	int spin_us;              /* busy-poll before blocking (cfg.tcp_spin_us) */
	uint8_t txh[TCP_FRAME_LEN];
	/* receive state machine for replies */
	uint8_t rxh[TCP_FRAME_LEN];
	unsigned rxh_got;
	uint8_t *rx_dst;
	uint64_t rx_left;
	uint32_t rx_seq;
	struct tcp_slot slot[TCP_DEPTH];
	/* serving side */
	struct tcp_srv *srv;
};

/* tcp_ops.c */
int tcp_post(struct rt_conn *c, enum rt_op op, uint32_t lid, size_t loff,
	     uint32_t rid, uint64_t roff, size_t len, uint64_t a, uint64_t b,
	     uint64_t wr_id, unsigned flags);
int tcp_poll(struct rt_conn *c, struct rt_completion *comps, int max, int timeout_ms);
int tcp_flush(struct rt_conn *c, int timeout_ms);
void tcp_conn_break(struct rt_conn *c, int status);

/* ---- serving state (tcp_serve.c) ---------------------------------------- */
struct tcp_srv {
	int fd;
	int dead;                 /* __atomic: set by the thread or by tcp_serve_remove */
	struct rt_conn *conn;     /* our grants: conn->local[] */
	struct tcp_srv *next_dead; /* graveyard link (lock-free stack) */
	/* receive */
	uint8_t rh[TCP_FRAME_LEN];
	unsigned rh_got;
	uint8_t *dst;             /* WRITE payload destination (or scratch) */
	uint64_t left;            /* payload bytes still to receive */
	int discard;
	struct tcp_frame pend;    /* the WRITE whose payload is being received */
	int32_t pend_status;
	uint64_t turn;            /* budget used in this wake-up (srv_rx, TCP_TURN_BYTES) */
	/* transmit (one reply at a time; reads stop while it is pending) */
	uint8_t th[TCP_FRAME_LEN];
	const uint8_t *tdata;
	uint64_t tdata_len;
	uint64_t toff;            /* bytes of header+data already sent */
	int tx_busy;
};

struct tcp_ctx {
	int epfd;
	int evfd;                 /* wakes the thread for shutdown */
	pthread_t thr;
	int started;
	int stop;                 /* __atomic */
	pthread_mutex_t lock;     /* tcp_serve_add callers among themselves (thread start); the
				   * progress thread never takes it */
	/* The progress thread's batch counter (__atomic): odd while it handles
	 * the events of one epoll_wait, even otherwise.  tcp_serve_remove
	 * marks a socket dead, then waits out a batch in progress, so after it
	 * returns the thread no longer touches that socket's connection. */
	uint64_t batch;
	struct tcp_srv *graveyard; /* removed sockets, freed by the thread (__atomic stack) */
	/* target events (RT_CAP_TARGET_WAKE): bumped by the progress thread
	 * after each peer WRITE / atomic; a futex word */
	uint32_t events;
	int waiters;              /* threads in tcp_wait_target */
	unsigned ev_mask;         /* RT_EV_* that count (cfg.target_events, 0 = all) */
	/* rt_ctx_expect_reads (__atomic): READ requests still expected, and
	 * until when (rt_now_us) the thread busy-polls for them */
	int hot_left;
	uint64_t hot_until;
	/* RT_PROGRESS_CALLER: no progress thread; the thread that waits on the
	 * context serves (tcp_wait_target, tcp_poll_serving).  driving
	 * (__atomic) is 1 while one does: the others wait as without it. */
	int caller;
	int driving;
	/* RT_PROGRESS_CALLER's watchdog (tcp_serve.c): a thread that serves
	 * what is ready when nobody waited for a while (an owner computing
	 * for seconds still answers its peers); started with the first
	 * served socket */
	pthread_t wd_thr;
	int wd_started;
	uint8_t scratch[65536];   /* discarded payloads */
};

int tcp_serve_add(struct rt_ctx *ctx, struct rt_conn *conn, int fd);
void tcp_serve_remove(struct rt_ctx *ctx, struct tcp_srv *srv);
void tcp_serve_stop(struct rt_ctx *ctx);
uint32_t tcp_target_events(const struct rt_ctx *ctx);
int tcp_wait_target(struct rt_ctx *ctx, uint32_t seen, int timeout_us);
void tcp_expect_reads(struct rt_ctx *ctx, int n, int budget_us);
/* poll(2) of one fd for up to timeout_ms; with RT_PROGRESS_CALLER the
 * context's serve sockets are served meanwhile (unless another thread
 * serves them already).  Returns as poll() with p->revents set: > 0 when
 * p's fd is ready, 0 on timeout, < 0 with errno. */
int tcp_poll_serving(struct rt_ctx *ctx, struct pollfd *p, int timeout_ms);

#endif
