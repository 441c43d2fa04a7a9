/* rt_bench: transport latency, perftest style.
 *
 *   rt_bench [--transport tcp|rdma] [--addr HOST] [--op read,write,fadd,wpp|all]
 *            [--min-size B] [--max-size B] [--sizes B,..] [--iters N] [--warmup N]
 *            [--warmup-ms MS] [--json FILE] [--raw-tcp] [--no-pin]
 *            [--perftest FILE] [--help]
 *
 * Forks a server on HOST (default 127.0.0.1) and measures, from the client,
 * the ROUND TRIP of one signaled operation (post -> completion polled):
 * READ, WRITE (signaled: completion = target acknowledged), FETCH_ADD (8 B),
 * and with --op wpp WRITE_PP: a WRITE ping-pong like ib_write_lat's (we
 * WRITE, the server polls its memory and WRITEs back, we poll ours).  The
 * server otherwise polls nothing (like perftest's passive side).
 * Sizes are powers of 4 from --min-size (8) to --max-size (1 MiB), plus
 * --max-size itself.  Warm-up: --warmup ops or --warmup-ms, whichever ends
 * first; samples are then reset.  Every sample is kept (no tail dropped);
 * statistics in double.
 *
 * With 2+ CPUs the client is pinned to the first CPU and the servers (all
 * their threads) to the last; --no-pin leaves placement to the scheduler
 * (on a 2-vCPU VM that gives bimodal 15/75 us round trips per process).
 * The rt and raw measurements of one row alternate in blocks of 50 ops so
 * that background load affects both alike.
 * --raw-tcp measures only the reference: a plain blocking TCP request/
 * response moving the same bytes (READ: 16 B request, 16 B + len reply;
 * WRITE: 16 B + len request, 16 B reply; FADD: 16 B each way).  The default
 * TCP run measures both and prints "vs-raw-tcp <op> <bytes> p50_ratio=x".
 *
 * --perftest FILE reads perftest p50s (docs/ci.md: lines "<op> <bytes> <p50_us>",
 * op read|write|atomic; blank lines and '#' comments allowed; anything else is
 * an error, exit 2) and, after an rdma run, prints for every op and size
 * present in both "vs-perftest <op> <bytes> p50_ratio=x" plus both figures.
 * Like for like: ib_read_lat and ib_atomic_lat report full round trips;
 * ib_write_lat reports HALF its ping-pong round trip, so our (round trip)
 * WRITE is divided by 2 x perftest's write figure.  Without rt-rdma rows (a
 * tcp run) no ratio is printed: the file is validated and the lines say so. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "rdma/rt.h"

#define MAXS 32
#define MAX_SIZE ((size_t)1 << 20)
/* [0, MAX_SIZE): READ sink / WRITE target / ping-pong receive area;
 * [SRC_OFF, SRC_OFF + MAX_SIZE): ping-pong source area */
#define SRC_OFF (MAX_SIZE + 4096)
#define BUF_LEN (SRC_OFF + MAX_SIZE)

enum bop { B_READ, B_WRITE, B_FADD, B_WPP, B_N };
static const char *bop_name[B_N] = { "READ", "WRITE", "FETCH_ADD", "WRITE_PP" };

struct opts {
	enum rt_kind kind;
	const char *addr;
	int ops_mask;
	size_t min_size, max_size;
	long iters, warmup, warmup_ms;
	const char *json;
	int raw_only;
	int pin;         /* client on the first CPU, servers on the last */
	const char *perftest; /* perftest_p50.txt (docs/ci.md) or NULL */
	int timer_cycles;     /* rdtsc (default where available) or clock_gettime */
	int spin_us;          /* rt_ctx_cfg.poll_spin_us (-1: busy-poll, like perftest) */
	size_t list[MAXS];    /* --sizes: exact sizes (READ/WRITE/WRITE_PP) */
	int nlist;
};

static const struct opts *g_o;

/* Pin the calling process (threads created later inherit it). */
static void pin_to(int server)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (!g_o || !g_o->pin || n < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(server ? (int)n - 1 : 0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity");
}

struct stats {
	long n;
	double min, p50, avg, stdev, p99, p999, max;
};

struct result {
	const char *impl;
	enum bop op;
	size_t bytes;
	struct stats s;
};

static struct result g_res[2 * B_N * MAXS];
static int g_nres;

static double clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The timer.  perftest times with the cycle counter (rdtsc) and converts
 * with "cpu MHz" from /proc/cpuinfo unless that is more than 2% off the rate
 * it measures, then with the measured rate.  We do the same (own code, same
 * rule), so both report in the same units, and reading the timer costs the
 * same: clock_gettime() is a system call plus an emulated HPET read in the
 * TCG guest (clocksource hpet), several us per op that perftest never pays.
 * --timer clock uses clock_gettime(CLOCK_MONOTONIC) instead. */
static double g_cyc_per_us;      /* 0: clock_gettime */
static double g_mhz_proc, g_mhz_measured;

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static double cycles(void) { return (double)__rdtsc(); }
static int have_cycles(void) { return 1; }
#else
static double cycles(void) { return 0; }
static int have_cycles(void) { return 0; }
#endif

static double proc_cpu_mhz(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	double mhz = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	fclose(f);
	return mhz;
}

static void timer_init(int use_cycles)
{
	double t0, c0, t1, c1;

	if (!use_cycles || !have_cycles())
		return;
	t0 = clock_us();
	c0 = cycles();
	do
		t1 = clock_us();
	while (t1 - t0 < 200000); /* 200 ms: the two reads' cost is noise */
	c1 = cycles();
	g_mhz_measured = (c1 - c0) / (t1 - t0);
	g_mhz_proc = proc_cpu_mhz();
	if (g_mhz_proc > 0 && fabs(g_mhz_proc - g_mhz_measured) / g_mhz_proc <= 0.02)
		g_cyc_per_us = g_mhz_proc;
	else
		g_cyc_per_us = g_mhz_measured;
}

static double now_us(void)
{
	return g_cyc_per_us ? cycles() / g_cyc_per_us : clock_us();
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double p)
{
	long i = (long)ceil(p * (double)n) - 1;

	if (i < 0)
		i = 0;
	if (i >= n)
		i = n - 1;
	return v[i];
}

static void compute(double *v, long n, struct stats *s)
{
	double sum = 0, sq = 0;

	qsort(v, (size_t)n, sizeof(double), cmp_dbl);
	for (long i = 0; i < n; i++)
		sum += v[i];
	s->n = n;
	s->avg = sum / (double)n;
	for (long i = 0; i < n; i++)
		sq += (v[i] - s->avg) * (v[i] - s->avg);
	s->stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	s->min = v[0];
	s->max = v[n - 1];
	s->p50 = pct(v, n, 0.50);
	s->p99 = pct(v, n, 0.99);
	s->p999 = pct(v, n, 0.999);
}

static long iters_for(const struct opts *o, size_t bytes)
{
	long cap = (long)((1u << 30) / bytes); /* at most ~1 GiB per row */

	if (cap < 200)
		cap = 200;
	return o->iters < cap ? o->iters : cap;
}

static void print_header(const char *impl)
{
	printf("\n# %s: round trip latency in microseconds (post -> completion)\n", impl);
	printf("%-10s %9s %8s %9s %9s %9s %9s %9s %9s %9s\n", "op", "bytes", "iters",
	       "t_min", "t_p50", "t_avg", "t_stdev", "t_p99", "t_p99.9", "t_max");
}

static void record(const char *impl, enum bop op, size_t bytes, double *v, long n)
{
	struct result *r = &g_res[g_nres++];

	r->impl = impl;
	r->op = op;
	r->bytes = bytes;
	compute(v, n, &r->s);
}

static int sizes(const struct opts *o, enum bop op, size_t *out)
{
	int n = 0;

	if (op == B_FADD) {
		out[0] = 8;
		return 1;
	}
	if (o->nlist) {
		memcpy(out, o->list, sizeof(size_t) * (size_t)o->nlist);
		return o->nlist;
	}
	for (size_t s = o->min_size; s <= o->max_size && n < MAXS - 1; s *= 4)
		out[n++] = s;
	if (n && out[n - 1] != o->max_size)
		out[n++] = o->max_size;
	return n;
}

/* ------------------------------------------------------------ rt */

/* WRITE ping-pong responder (the target half of ib_write_lat): wait until
 * the last byte of buf[0, len) becomes seq, then WRITE len bytes from
 * buf[SRC_OFF..] (last byte = seq) into the peer's buf[0, len).  Commands
 * come on ctl (u64 len: zero the area, ack on ack_fd, answer pings of that
 * size; EOF: stop).  Returns 0 at EOF. */
static int pp_serve(struct rt_conn *conn, uint8_t *buf, int ctl, int ack_fd)
{
	uint64_t len = 0;
	uint8_t seq = 1;

	for (;;) {
		volatile uint8_t *last;
		unsigned spins = 0;
		ssize_t n = read(ctl, &len, sizeof(len));

		if (n == 0)
			return 0;
		if (n != sizeof(len) || len == 0 || len > MAX_SIZE)
			return 1;
		memset(buf, 0, MAX_SIZE);
		memset(buf + SRC_OFF, 0, MAX_SIZE);
		seq = 1;
		if (write(ack_fd, &len, sizeof(len)) != sizeof(len))
			return 1;
		last = buf + len - 1;
		for (;;) {
			struct pollfd pf = { .fd = ctl, .events = POLLIN };
			int rc;

			if (*last != seq) {
				/* a new command (next row, or EOF) ends this row; the
				 * check is a system call, so only every 65536 spins
				 * (perftest's passive side makes none while it spins) */
				if ((++spins & 65535) == 0 && poll(&pf, 1, 0) > 0)
					break;
				continue;
			}
			buf[SRC_OFF + len - 1] = seq;
			rc = rt_write(conn, 0, SRC_OFF, 0, 0, len, 0, RT_F_INLINE);
			if (rc) {
				fprintf(stderr, "server: ping-pong write: %s\n", rdmaps_strerror(rc));
				return 1;
			}
			seq = (uint8_t)(seq % 255 + 1);
		}
	}
}

/* The target: serves one client's one-sided ops (verbs: the NIC; TCP: the
 * progress thread) without polling anything itself, like perftest's passive
 * side, and answers write ping-pongs when told to (ctl).  Ends at EOF on ctl. */
static int rt_server(const struct opts *o, int port_fd, int ctl, int ack_fd)
{
	struct rt_ctx_cfg cfg = { .kind = o->kind, .bind_host = o->addr, .numa_node = -1,
				  .poll_spin_us = o->spin_us };
	struct rt_ctx *ctx = NULL;
	struct rt_listener *lst = NULL;
	struct rt_request *req = NULL;
	struct rt_conn *conn = NULL;
	uint16_t port;
	void *buf;
	int rc;

	if ((rc = rt_ctx_new(&cfg, &ctx)) || (rc = rt_listen(ctx, o->addr, 0, &lst))) {
		fprintf(stderr, "server: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	buf = rt_alloc(ctx, BUF_LEN);
	port = rt_listener_port(lst);
	if (!buf || write(port_fd, &port, 2) != 2)
		return 1;
	close(port_fd);
	if ((rc = rt_accept(lst, 30000, &req))) {
		fprintf(stderr, "server: accept: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	struct rt_grant g = { 0, buf, BUF_LEN, RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC };
	if ((rc = rt_accept_grant(&req, &g, 1, &conn))) {
		fprintf(stderr, "server: accept_grant: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	rc = pp_serve(conn, buf, ctl, ack_fd);
	rt_flush(conn, 10000);
	rt_conn_delete(&conn);
	rt_listener_delete(&lst);
	rt_free(ctx, buf, BUF_LEN);
	rt_ctx_delete(&ctx);
	return rc;
}

static int rt_one(struct rt_conn *conn, enum bop op, size_t len)
{
	struct rt_completion c;
	int rc, n;

	switch (op) {
	case B_READ: rc = rt_read(conn, 0, 0, 0, 0, len, 1, RT_F_SIGNALED); break;
	case B_WRITE: rc = rt_write(conn, 0, 0, 0, 0, len, 1, RT_F_SIGNALED | RT_F_INLINE); break;
	default: rc = rt_fetch_add(conn, 0, 0, 0, 0, 1, 1, RT_F_SIGNALED); break;
	}
	if (rc)
		return rc;
	do
		n = rt_poll(conn, &c, 1, 10000);
	while (n == 0);
	if (n < 0)
		return n;
	return c.status;
}

struct rt_side {
	struct rt_ctx *ctx;
	struct rt_conn *conn;
	uint8_t *buf;
	pid_t pid;
	const char *impl;
	int ctl, ack;       /* commands to / acks from the server */
	uint8_t seq;        /* ping-pong sequence byte */
};

/* One WRITE ping-pong (ib_write_lat's initiator half): WRITE len bytes
 * (last byte = seq) unsignaled, then spin on our own memory until the
 * server's WRITE of len bytes (last byte = seq) has landed.  The round trip
 * is two one-way WRITEs, each detected by the other side polling memory. */
static int rt_pp_one(struct rt_side *r, size_t len)
{
	volatile uint8_t *last = r->buf + len - 1;
	uint8_t seq = r->seq;
	unsigned spins = 0;
	double t0 = now_us();
	int rc;

	r->buf[SRC_OFF + len - 1] = seq;
	rc = rt_write(r->conn, 0, SRC_OFF, 0, 0, len, 0, RT_F_INLINE);
	if (rc)
		return rc;
	while (*last != seq) {
		if ((++spins & 4095) == 0) {
			struct rt_completion c;
			int n = rt_poll(r->conn, &c, 1, 0); /* unsignaled: only failures */

			if (n < 0)
				return n;
			if (n > 0 && c.status)
				return c.status;
			if (now_us() - t0 > 10e6) /* the timer: no system call */
				return RDMAPS_E_TIMEOUT;
		}
	}
	r->seq = (uint8_t)(seq % 255 + 1);
	return 0;
}

/* Tell the server the next ping-pong size; it zeroes its areas and acks. */
static int rt_pp_start(struct rt_side *r, size_t len)
{
	uint64_t l = len, a = 0;

	memset(r->buf, 0, MAX_SIZE);
	memset(r->buf + SRC_OFF, 0, MAX_SIZE);
	r->seq = 1;
	if (write(r->ctl, &l, sizeof(l)) != sizeof(l) || read(r->ack, &a, sizeof(a)) != sizeof(a) ||
	    a != l) {
		fprintf(stderr, "rt_bench: ping-pong server did not answer\n");
		return -1;
	}
	return 0;
}

static int rt_setup(const struct opts *o, struct rt_side *r)
{
	struct rt_ctx_cfg cfg = { .kind = o->kind, .bind_host = o->addr, .numa_node = -1,
				  .poll_spin_us = o->spin_us };
	struct rt_hello h = { 1, 0, 0 };
	int pp[2], ctl[2], ack[2], rc;
	uint16_t port;

	if (pipe(pp) || pipe(ctl) || pipe(ack))
		return 1;
	r->pid = fork();
	if (r->pid == 0) {
		close(pp[0]);
		close(ctl[1]);
		close(ack[0]);
		pin_to(1);
		_exit(rt_server(o, pp[1], ctl[0], ack[1]));
	}
	close(pp[1]);
	close(ctl[0]);
	close(ack[1]);
	r->ctl = ctl[1];
	r->ack = ack[0];
	if (read(pp[0], &port, 2) != 2) {
		fprintf(stderr, "server did not start\n");
		return 1;
	}
	close(pp[0]);
	if ((rc = rt_ctx_new(&cfg, &r->ctx))) {
		fprintf(stderr, "client: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	r->impl = rt_ctx_kind(r->ctx) == RT_RDMA ? "rt-rdma" : "rt-tcp";
	r->buf = rt_alloc(r->ctx, BUF_LEN);
	/* WRITE: the server's ping-pong answers land here */
	struct rt_grant g = { 0, r->buf, BUF_LEN, RT_RIGHT_WRITE };
	if ((rc = rt_connect(r->ctx, o->addr, port, &h, &g, 1, 10000, &r->conn))) {
		fprintf(stderr, "client: connect: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	return 0;
}

static void rt_teardown(struct rt_side *r)
{
	int st;

	close(r->ctl); /* EOF: the server finishes */
	close(r->ack);
	waitpid(r->pid, &st, 0);
	rt_conn_delete(&r->conn);
	rt_free(r->ctx, r->buf, BUF_LEN);
	rt_ctx_delete(&r->ctx);
}

/* ------------------------------------------------------------ raw TCP */

static int full_io(int fd, void *buf, size_t len, int send_dir)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = send_dir ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

struct raw_hdr {
	uint32_t op, pad;
	uint64_t len;
};

static int raw_server(int lfd)
{
	static uint8_t buf[BUF_LEN];
	int fd = accept(lfd, NULL, NULL), one = 1;
	struct raw_hdr h;
	uint64_t word = 0;

	if (fd < 0)
		return 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (full_io(fd, &h, sizeof(h), 0) == 0) {
		if (h.len > MAX_SIZE)
			return 1;
		/* WRITE_PP reference: receive len bytes, echo them back */
		if (h.op == B_WPP && full_io(fd, buf, h.len, 0))
			return 1;
		if (h.op == B_READ || h.op == B_WPP) {
			struct iovec iov[2] = { { &h, sizeof(h) }, { buf, h.len } };
			struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
			ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);

			if (n < 0)
				return 1;
			if ((size_t)n < sizeof(h) + h.len) {
				size_t off = (size_t)n;

				if (off < sizeof(h) && full_io(fd, (uint8_t *)&h + off,
							       sizeof(h) - off, 1))
					return 1;
				off = off < sizeof(h) ? 0 : off - sizeof(h);
				if (full_io(fd, buf + off, h.len - off, 1))
					return 1;
			}
		} else {
			if (h.op == B_WRITE && full_io(fd, buf, h.len, 0))
				return 1;
			if (h.op == B_FADD)
				h.len = __atomic_fetch_add(&word, 1, __ATOMIC_SEQ_CST);
			if (full_io(fd, &h, sizeof(h), 1))
				return 1;
		}
	}
	close(fd);
	return 0;
}

static int raw_one(int fd, uint8_t *buf, enum bop op, size_t len)
{
	struct raw_hdr h = { (uint32_t)op, 0, op == B_FADD ? 8 : len };

	if (op == B_WRITE || op == B_WPP) {
		struct iovec iov[2] = { { &h, sizeof(h) }, { buf, len } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (n < 0)
			return -1;
		if ((size_t)n < sizeof(h) + len) {
			size_t off = (size_t)n;

			if (off < sizeof(h) && full_io(fd, (uint8_t *)&h + off, sizeof(h) - off, 1))
				return -1;
			off = off < sizeof(h) ? 0 : off - sizeof(h);
			if (full_io(fd, buf + off, len - off, 1))
				return -1;
		}
		if (full_io(fd, &h, sizeof(h), 0))
			return -1;
		return op == B_WPP ? full_io(fd, buf, len, 0) : 0;
	}
	if (full_io(fd, &h, sizeof(h), 1) || full_io(fd, &h, sizeof(h), 0))
		return -1;
	if (op == B_READ)
		return full_io(fd, buf, len, 0);
	return 0;
}

struct raw_side {
	int fd;
	uint8_t *buf;
	pid_t pid;
};

static int raw_setup(const struct opts *o, struct raw_side *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	r->buf = calloc(1, BUF_LEN);
	if (lfd < 0 || !r->buf || inet_pton(AF_INET, o->addr, &sa.sin_addr) != 1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		perror("raw: listen (IPv4 address needed)");
		return 1;
	}
	r->pid = fork();
	if (r->pid == 0) {
		pin_to(1);
		_exit(raw_server(lfd));
	}
	close(lfd);
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (r->fd < 0 || connect(r->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("raw: connect");
		return 1;
	}
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

static void raw_teardown(struct raw_side *r)
{
	int st;

	close(r->fd);
	waitpid(r->pid, &st, 0);
	free(r->buf);
}

/* ------------------------------------------------------------ measurement */

#define BLOCK 50  /* rt and raw alternate in blocks, so load drift hits both */

static int one(struct rt_side *rt, struct raw_side *raw, int which, enum bop op, size_t len)
{
	if (which == 0) {
		int rc = op == B_WPP ? rt_pp_one(rt, len) : rt_one(rt->conn, op, len);

		if (rc)
			fprintf(stderr, "rt op failed: %s\n", rdmaps_strerror(rc));
		return rc;
	}
	if (raw_one(raw->fd, raw->buf, op, len)) {
		fprintf(stderr, "raw: I/O failed\n");
		return -1;
	}
	return 0;
}

static int measure(const struct opts *o, struct rt_side *rt, struct raw_side *raw,
		   double *v[2])
{
	int use[2] = { rt != NULL, raw != NULL };
	const char *impl[2] = { rt ? rt->impl : "", "raw-tcp" };

	for (int op = 0; op < B_N; op++) {
		size_t sz[MAXS];
		int ns;

		if (!(o->ops_mask & (1 << op)))
			continue;
		ns = sizes(o, (enum bop)op, sz);
		for (int k = 0; k < ns; k++) {
			long n = iters_for(o, sz[k]), done[2] = { 0, 0 };

			if (op == B_WPP && use[0] && rt_pp_start(rt, sz[k]))
				return 1;

			for (int w = 0; w < 2; w++) {
				double w0 = now_us();

				for (long i = 0; use[w] && i < o->warmup &&
						 now_us() - w0 < o->warmup_ms * 1e3; i++)
					if (one(rt, raw, w, (enum bop)op, sz[k]))
						return 1;
			}
			while (done[0] < n * use[0] || done[1] < n * use[1]) {
				for (int w = 0; w < 2; w++) {
					for (long i = 0; use[w] && i < BLOCK && done[w] < n; i++) {
						double t0 = now_us();

						if (one(rt, raw, w, (enum bop)op, sz[k]))
							return 1;
						v[w][done[w]++] = now_us() - t0;
					}
				}
			}
			for (int w = 0; w < 2; w++)
				if (use[w])
					record(impl[w], (enum bop)op, sz[k], v[w], n);
		}
	}
	return 0;
}

static void print_all(void)
{
	const char *impls[] = { "rt-tcp", "rt-rdma", "raw-tcp" };

	for (int k = 0; k < 3; k++) {
		int hdr = 0;

		for (int i = 0; i < g_nres; i++) {
			const struct result *r = &g_res[i];

			if (strcmp(r->impl, impls[k]))
				continue;
			if (!hdr++)
				print_header(r->impl);
			printf("%-10s %9zu %8ld %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
			       bop_name[r->op], r->bytes, r->s.n, r->s.min, r->s.p50, r->s.avg,
			       r->s.stdev, r->s.p99, r->s.p999, r->s.max);
		}
	}
}

/* ------------------------------------------------------------ report */

static const struct result *find(const char *impl, enum bop op, size_t bytes)
{
	for (int i = 0; i < g_nres; i++)
		if (!strcmp(g_res[i].impl, impl) && g_res[i].op == op && g_res[i].bytes == bytes)
			return &g_res[i];
	return NULL;
}

static void ratios(FILE *f, int json)
{
	int first = 1;

	for (int i = 0; i < g_nres; i++) {
		const struct result *a = &g_res[i], *b;

		if (strcmp(a->impl, "rt-tcp") || !(b = find("raw-tcp", a->op, a->bytes)))
			continue;
		if (json)
			fprintf(f, "%s\n    {\"op\": \"%s\", \"bytes\": %zu, \"p50_ratio\": %.3f}",
				first ? "" : ",", bop_name[a->op], a->bytes, a->s.p50 / b->s.p50);
		else
			fprintf(f, "vs-raw-tcp %s %zu p50_ratio=%.3f\n", bop_name[a->op], a->bytes,
				a->s.p50 / b->s.p50);
		first = 0;
	}
}

/* ------------------------------------------------------------ perftest */

#define MAXPT 64

struct pt_row {
	const char *op;   /* as in the file: read, write, atomic */
	enum bop bop;
	size_t bytes;
	double p50;       /* as in the file (ib_write_lat: one-way = RTT / 2) */
	double rtt;       /* round trip: p50, or 2 x p50 for write */
};

static struct pt_row g_pt[MAXPT];
static int g_npt;

static int pt_err(const char *path, int ln, const char *why, const char *line)
{
	fprintf(stderr, "rt_bench: --perftest %s:%d: %s%s%s%s\n", path, ln, why,
		line ? ": \"" : "", line ? line : "", line ? "\"" : "");
	fprintf(stderr, "rt_bench: expected lines \"<op> <bytes> <p50_us>\", op read|write|atomic, "
		"bytes a positive integer, p50_us a positive decimal (docs/ci.md)\n");
	return 2;
}

static int all_digits(const char *t, int dot_ok)
{
	int dots = 0, digits = 0;

	for (; *t; t++) {
		if (isdigit((unsigned char)*t))
			digits++;
		else if (*t == '.' && dot_ok && !dots)
			dots++;
		else
			return 0;
	}
	return digits > 0;
}

/* Returns 0, or 2 (message printed) for an unreadable file or a bad line. */
static int pt_parse(const char *path)
{
	static const char *names[B_N] = { "read", "write", "atomic" };
	char line[256], shown[256];
	FILE *f = fopen(path, "r");
	int ln = 0;

	if (!f) {
		fprintf(stderr, "rt_bench: --perftest %s: %s\n", path, strerror(errno));
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char *tok[4], *save = NULL, *end;
		size_t len = strlen(line);
		int nt = 0, k;

		ln++;
		if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f)) {
			fclose(f);
			return pt_err(path, ln, "line too long", NULL);
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		snprintf(shown, sizeof(shown), "%s", line);
		for (char *t = strtok_r(line, " \t", &save); t && nt < 4;
		     t = strtok_r(NULL, " \t", &save))
			tok[nt++] = t;
		if (nt == 0 || tok[0][0] == '#')
			continue;
		if (nt != 3) {
			fclose(f);
			return pt_err(path, ln, nt < 3 ? "too few fields" : "too many fields", shown);
		}
		for (k = 0; k < B_N && strcmp(tok[0], names[k]); k++)
			;
		if (k == B_N) {
			fclose(f);
			return pt_err(path, ln, "unknown op (read, write or atomic)", shown);
		}
		struct pt_row r = { names[k], (enum bop)k, 0, 0, 0 };
		unsigned long long b;

		errno = 0;
		b = all_digits(tok[1], 0) ? strtoull(tok[1], &end, 10) : 0;
		if (!b || errno || b > (1ull << 40)) {
			fclose(f);
			return pt_err(path, ln, "bad bytes (positive integer)", shown);
		}
		r.bytes = (size_t)b;
		r.p50 = all_digits(tok[2], 1) ? strtod(tok[2], &end) : 0;
		if (!(r.p50 > 0) || !isfinite(r.p50)) {
			fclose(f);
			return pt_err(path, ln, "bad p50_us (positive decimal, e.g. 41.02)", shown);
		}
		r.rtt = r.bop == B_WRITE ? 2 * r.p50 : r.p50;
		for (int i = 0; i < g_npt; i++)
			if (g_pt[i].bop == r.bop && g_pt[i].bytes == r.bytes) {
				fclose(f);
				return pt_err(path, ln, "duplicate op and bytes", shown);
			}
		if (g_npt == MAXPT) {
			fclose(f);
			return pt_err(path, ln, "more than 64 measurements", NULL);
		}
		g_pt[g_npt++] = r;
	}
	if (ferror(f)) {
		fprintf(stderr, "rt_bench: --perftest %s: read error\n", path);
		fclose(f);
		return 2;
	}
	fclose(f);
	return 0;
}

static int have_impl(const char *impl)
{
	for (int i = 0; i < g_nres; i++)
		if (!strcmp(g_res[i].impl, impl))
			return 1;
	return 0;
}

static void pt_report(const struct opts *o, FILE *f, int json)
{
	int first = 1;

	if (!have_impl("rt-rdma")) {
		if (!json)
			printf("\n# vs-perftest: NOT computed: %s holds %d perftest (RDMA) p50s, "
			       "but this run has no rt-rdma rows (transport=%s);\n"
			       "# comparing them needs an rdma run: rt_bench --transport rdma "
			       "--perftest %s\n",
			       o->perftest, g_npt, o->raw_only ? "raw-tcp" : rt_kind_name(o->kind),
			       o->perftest);
		return;
	}
	if (!json)
		printf("\n# vs-perftest: p50_ratio = ours / perftest, both ROUND TRIPS (p50, us).\n"
		       "# read, atomic: ib_read_lat, ib_atomic_lat report full round trips: as is.\n"
		       "# write: ib_write_lat reports HALF its ping-pong round trip, so ours is "
		       "compared with\n# 2 x perftest (perftest_file_us = as in the file).  Ours "
		       "= WRITE_PP (the same ping-pong:\n# WRITE, peer polls memory, WRITEs back) "
		       "when measured (--op ...,wpp), else the\n# signaled WRITE (one WRITE + the "
		       "responder's ACK: not the same thing).\n");
	for (int i = 0; i < g_npt; i++) {
		const struct pt_row *p = &g_pt[i];
		const struct result *r = find("rt-rdma", p->bop, p->bytes);
		const char *ours = bop_name[p->bop];

		/* write: our ping-pong measures exactly what ib_write_lat does */
		if (p->bop == B_WRITE && find("rt-rdma", B_WPP, p->bytes)) {
			r = find("rt-rdma", B_WPP, p->bytes);
			ours = bop_name[B_WPP];
		}

		if (!r) {
			if (!json)
				printf("# vs-perftest %s %zu: no rt-rdma row of that op and size in this "
				       "run\n", p->op, p->bytes);
			continue;
		}
		if (json)
			fprintf(f, "%s\n    {\"op\": \"%s\", \"bytes\": %zu, \"p50_ratio\": %.3f, "
				"\"ours_p50_us\": %.3f, \"perftest_rtt_p50_us\": %.3f, "
				"\"perftest_file_us\": %.3f, \"ours\": \"%s\"}",
				first ? "" : ",", p->op, p->bytes, r->s.p50 / p->rtt, r->s.p50, p->rtt,
				p->p50, ours);
		else
			printf("vs-perftest %s %zu p50_ratio=%.3f ours_p50_us=%.2f "
			       "perftest_rtt_p50_us=%.2f perftest_file_us=%.2f ours=%s\n",
			       p->op, p->bytes, r->s.p50 / p->rtt, r->s.p50, p->rtt, p->p50, ours);
		first = 0;
	}
}

static int write_json(const struct opts *o)
{
	FILE *f = fopen(o->json, "w");

	if (!f) {
		perror(o->json);
		return 1;
	}
	fprintf(f, "{\n  \"config\": {\"transport\": \"%s\", \"addr\": \"%s\", \"iters\": %ld, "
		"\"warmup\": %ld, \"warmup_ms\": %ld, \"unit\": \"us\", "
		"\"latency\": \"round trip\", \"pin\": \"%s\", \"timer\": \"%s\", "
		"\"cycles_per_us\": %.3f, \"spin_us\": %d},\n  \"results\": [",
		o->raw_only ? "raw-tcp" : rt_kind_name(o->kind), o->addr, o->iters, o->warmup,
		o->warmup_ms, o->pin && sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? "client:cpu0,servers:last-cpu" : "no",
		g_cyc_per_us ? "cycles" : "clock_gettime", g_cyc_per_us, o->spin_us);
	for (int i = 0; i < g_nres; i++) {
		const struct result *r = &g_res[i];

		fprintf(f, "%s\n    {\"impl\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, "
			"\"iters\": %ld, \"min\": %.3f, \"p50\": %.3f, \"avg\": %.3f, "
			"\"stdev\": %.3f, \"p99\": %.3f, \"p99_9\": %.3f, \"max\": %.3f}",
			i ? "," : "", r->impl, bop_name[r->op], r->bytes, r->s.n, r->s.min, r->s.p50,
			r->s.avg, r->s.stdev, r->s.p99, r->s.p999, r->s.max);
	}
	fprintf(f, "\n  ],\n  \"vs_raw_tcp\": [");
	ratios(f, 1);
	fprintf(f, "\n  ]");
	if (o->perftest) {
		fprintf(f, ",\n  \"vs_perftest\": [");
		pt_report(o, f, 1);
		fprintf(f, "\n  ]");
	}
	fprintf(f, "\n}\n");
	return fclose(f) ? 1 : 0;
}

/* "read,write,fadd,wpp" or "all" (= read,write,fadd) -> bit mask; 0 or -1. */
static int parse_ops(const char *val, int *mask)
{
	static const char *names[B_N] = { "read", "write", "fadd", "wpp" };
	char tmp[128], *save = NULL;

	if (snprintf(tmp, sizeof(tmp), "%s", val) >= (int)sizeof(tmp))
		return -1;
	*mask = 0;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;

		if (!strcmp(t, "all")) {
			*mask |= 7;
			continue;
		}
		for (k = 0; k < B_N && strcmp(t, names[k]); k++)
			;
		if (k == B_N)
			return -1;
		*mask |= 1 << k;
	}
	return *mask ? 0 : -1;
}

static int parse_sizes(const char *val, struct opts *o)
{
	const char *p = val;

	o->nlist = 0;
	while (*p) {
		char *end;
		unsigned long long v;

		if (!isdigit((unsigned char)*p) || o->nlist == MAXS)
			return -1;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || v < 1 || v > MAX_SIZE)
			return -1;
		o->list[o->nlist++] = (size_t)v;
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -1;
	}
	return o->nlist ? 0 : -1;
}

static void usage(FILE *f, const char *p)
{
	fprintf(f,
		"usage: %s [--transport tcp|rdma] [--addr HOST] [--op read,write,fadd,wpp|all]\n"
		"          [--min-size B] [--max-size B] [--sizes B,B,..] [--iters N] [--warmup N]\n"
		"          [--warmup-ms MS] [--timer cycles|clock] [--spin-us N]\n"
		"          [--json FILE] [--raw-tcp] [--no-pin] [--perftest FILE] [--help]\n"
		"  --perftest FILE  perftest p50s, lines \"<op> <bytes> <p50_us>\" (op read|write|\n"
		"                   atomic, docs/ci.md); after an rdma run prints\n"
		"                   \"vs-perftest <op> <bytes> p50_ratio=ours/perftest\", round trip\n"
		"                   vs round trip (ib_write_lat's one-way figure is doubled)\n"
		"  --op wpp         WRITE ping-pong (what ib_write_lat measures): WRITE, the peer\n"
		"                   polls its memory and WRITEs back; table figure = round trip\n"
		"  --sizes LIST     exactly these sizes (instead of powers of 4 from --min-size)\n"
		"  --timer T        cycles (default: rdtsc, converted like perftest) or clock\n"
		"  --spin-us N      rt_ctx_cfg.poll_spin_us: -1 (default) busy-poll like perftest,\n"
		"                   0 the library default (1000 us, then sleep), N us\n", p);
}

int main(int argc, char **argv)
{
	struct opts o = { .kind = RT_TCP, .addr = "127.0.0.1", .ops_mask = 7, .min_size = 8,
			  .max_size = 1u << 20, .iters = 2000, .warmup = 200, .warmup_ms = 500,
			  .pin = 1, .timer_cycles = 1, .spin_us = -1 };
	struct rt_side rt;
	struct raw_side raw;
	double *v[2];
	int rc = 0, want_rt, want_raw;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--raw-tcp")) {
			o.raw_only = 1;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			return 0;
		}
		if (!strcmp(a, "--no-pin")) {
			o.pin = 0;
			continue;
		}
		if (!val) {
			usage(stderr, argv[0]);
			return 2;
		}
		i++;
		if (!strcmp(a, "--transport")) {
			if (rt_kind_parse(val, &o.kind)) {
				usage(stderr, argv[0]);
				return 2;
			}
		} else if (!strcmp(a, "--addr")) {
			o.addr = val;
		} else if (!strcmp(a, "--op")) {
			if (parse_ops(val, &o.ops_mask)) {
				fprintf(stderr, "rt_bench: bad --op \"%s\" (read, write, fadd, wpp, all; "
					"comma-separated)\n", val);
				return 2;
			}
		} else if (!strcmp(a, "--spin-us")) {
			char *end;
			long v;

			errno = 0;
			v = strtol(val, &end, 10);
			if (errno || *end || end == val || v < -1 || v > 10000000) {
				fprintf(stderr, "rt_bench: bad --spin-us \"%s\" (-1, 0 or us)\n", val);
				return 2;
			}
			o.spin_us = (int)v;
		} else if (!strcmp(a, "--timer")) {
			if (strcmp(val, "cycles") && strcmp(val, "clock")) {
				fprintf(stderr, "rt_bench: bad --timer \"%s\" (cycles or clock)\n", val);
				return 2;
			}
			o.timer_cycles = !strcmp(val, "cycles");
		} else if (!strcmp(a, "--sizes")) {
			if (parse_sizes(val, &o)) {
				fprintf(stderr, "rt_bench: bad --sizes \"%s\" (comma-separated byte "
					"counts, 1..%zu, at most %d)\n", val, MAX_SIZE, MAXS);
				return 2;
			}
		} else if (!strcmp(a, "--min-size")) {
			o.min_size = strtoul(val, NULL, 0);
		} else if (!strcmp(a, "--max-size")) {
			o.max_size = strtoul(val, NULL, 0);
		} else if (!strcmp(a, "--iters")) {
			o.iters = strtol(val, NULL, 0);
		} else if (!strcmp(a, "--warmup")) {
			o.warmup = strtol(val, NULL, 0);
		} else if (!strcmp(a, "--warmup-ms")) {
			o.warmup_ms = strtol(val, NULL, 0);
		} else if (!strcmp(a, "--json")) {
			o.json = val;
		} else if (!strcmp(a, "--perftest")) {
			o.perftest = val;
		} else {
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (!o.ops_mask || o.min_size < 1 || o.max_size < o.min_size ||
	    o.max_size > MAX_SIZE || o.iters < 1 || o.warmup < 0 || o.warmup_ms < 0) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (o.perftest && (rc = pt_parse(o.perftest)))
		return rc;
	v[0] = malloc(sizeof(double) * (size_t)o.iters);
	v[1] = malloc(sizeof(double) * (size_t)o.iters);
	if (!v[0] || !v[1])
		return 1;
	printf("# rt_bench transport=%s addr=%s iters<=%ld (<=1 GiB per row, >=200) "
	       "warmup=%ld ops or %ld ms pin=%s spin_us=%d\n# all figures are ROUND TRIPS: READ, FETCH_ADD, "
	       "signaled WRITE completions, WRITE_PP ping-pongs\n",
	       o.raw_only ? "raw-tcp" : rt_kind_name(o.kind), o.addr, o.iters, o.warmup,
	       o.warmup_ms, o.pin ? "client:cpu0,servers:last-cpu" : "no", o.spin_us);
	g_o = &o;
	timer_init(o.timer_cycles);
	if (g_cyc_per_us)
		printf("# timer: cycle counter at %.3f MHz (%s; /proc/cpuinfo cpu MHz %.3f, measured "
		       "%.3f), perftest's rule\n", g_cyc_per_us,
		       g_cyc_per_us == g_mhz_proc ? "/proc/cpuinfo" : "measured: /proc is >2% off",
		       g_mhz_proc, g_mhz_measured);
	else
		printf("# timer: clock_gettime(CLOCK_MONOTONIC)\n");
	pin_to(0);
	want_rt = !o.raw_only;
	want_raw = o.raw_only || o.kind == RT_TCP;
	/* both servers are forked before this process starts any thread */
	if (want_raw && raw_setup(&o, &raw))
		return 1;
	if (want_rt && rt_setup(&o, &rt))
		return 1;
	rc = measure(&o, want_rt ? &rt : NULL, want_raw ? &raw : NULL, v);
	if (want_rt)
		rt_teardown(&rt);
	if (want_raw)
		raw_teardown(&raw);
	if (!rc)
		print_all();
	if (!rc && want_rt && want_raw) {
		printf("\n");
		ratios(stdout, 0);
	}
	if (!rc && o.perftest)
		pt_report(&o, stdout, 0);
	if (!rc && o.json)
		rc = write_json(&o);
	free(v[0]);
	free(v[1]);
	return rc;
}
