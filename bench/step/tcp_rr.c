/* tcp_rr: the plain TCP reference for a training step's transport cost.
 *
 *   tcp_rr --req BYTES --resp BYTES [--mode rr|step] [--clients N] [--iters N]
 *          [--warmup N] [--warmup-ms MS] [--gap-us US] [--gap idle|busy]
 *          [--budget-ms MS] [--json FILE] [--label TEXT]
 *
 * Forks a server on 127.0.0.1 (port picked by the kernel) and measures, from
 * the client, the ROUND TRIP of one blocking request/response: the client
 * sends --req bytes (a worker's gradient), the server reads them all and
 * answers --resp bytes (the parameters), the client reads them all.  That is
 * what a plain TCP parameter server would need per step for the same bytes.
 *
 * --mode step: the same bytes in the shape of a one-sided step, as plain TCP.
 * Per sample the client sends --req bytes (the push: timed until send()
 * returns, the data handed to the kernel, nobody waits for an answer); the
 * server reads them all and sends an 8-byte "release" (the barrier: the
 * client waits for it, NOT timed); then the client sends an 8-byte request
 * and reads the --resp bytes the server answers (the pull: a round trip to a
 * server that was asleep in recv()).  Sample = push + pull, which is what
 * rdmaps' pull+push phase times.  The gap to --mode rr is the cost of the
 * shape (an extra round trip whose server side is not overlapped with any
 * transfer), not of any transport code.
 * --gap-us US: after each sample the client sleeps US microseconds, not
 * timed: the step's compute phase, during which a worker sends nothing
 * (default 0: samples back to back).  What an idle gap does to the next
 * push and pull on this machine is what it measures against rdmaps.
 * --gap busy: the client spends the gap computing (a loop on the CPU)
 * instead of asleep, as a worker does; with --clients N > cores the clients
 * then compete for the CPUs as N workers do (--gap idle, the default: asleep).
 * --budget-ms MS: the measured samples end after --iters samples or, once
 * 20 are in, after MS ms, whichever comes first (default 0: no time bound);
 * the count taken is in the output.  It bounds a run whose gap is long.
 * --clients N (default 1): N clients at once, each a process of its own with
 * its own connection, against one server process that serves each connection
 * with a thread of its own: what a plain TCP parameter server meets with N
 * workers.  In step mode the server releases the N clients together, once
 * all N pushes are in (a barrier, as a sync step's release), so their pulls
 * start together as W workers' do; a client that has ended leaves the
 * barrier.  --iters, --warmup and --budget-ms are per client; the figures
 * pool every client's samples.  With N = 1 it is the single client above.
 * TCP_NODELAY on both sides, no pinning (like the rdmaps tasks it is compared
 * with).  Warm-up: --warmup requests (default 50) or --warmup-ms (default
 * 200), whichever ends first; those samples are dropped and counted in the
 * output.  Every later sample is kept; statistics in double.
 * --json FILE: the same figures as one JSON object; "round_trip" is true
 * when a sample is one round trip (--mode rr) and false when it is push +
 * pull (--mode step: a local send plus a round trip), "sample" says its
 * shape in words, push_p50_us / pull_p50_us are its two parts (in rr mode
 * the time to hand the request to the kernel, and the whole round trip). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int io_all(int fd, void *buf, size_t len, int sending)
{
	uint8_t *b = buf;
	while (len) {
		ssize_t r = sending ? send(fd, b, len, MSG_NOSIGNAL) : recv(fd, b, len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		len -= (size_t)r;
	}
	return 0;
}

/* One client sample.  rr: *pull = the whole round trip (*push = time to
 * hand the request to the kernel).  step: *push as in rr, then the
 * untimed wait for the release, then *pull = the 8-byte request and the
 * response. */
static int sample(int fd, int step, uint8_t *qb, size_t req, uint8_t *rb, size_t resp, double *push,
		  double *pull)
{
	uint8_t tok[8] = { 0 };
	double t0 = now_us(), t1, t2;

	if (io_all(fd, qb, req, 1))
		return -1;
	t1 = now_us();
	t2 = t0;
	if (step) {
		if (io_all(fd, tok, 8, 0)) /* the release */
			return -1;
		t2 = now_us();
		if (io_all(fd, tok, 8, 1))
			return -1;
	}
	if (io_all(fd, rb, resp, 0))
		return -1;
	if (push)
		*push = t1 - t0;
	if (pull)
		*pull = now_us() - t2;
	return 0;
}

/* The gap after a sample: asleep, or (busy) computing on the CPU as a
 * worker's compute phase does, so that N clients compete for the cores as
 * N workers do. */
static void gap(long us, int busy)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	if (busy) {
		volatile double x = 1;
		for (double end = now_us() + (double)us; now_us() < end;)
			for (int i = 0; i < 64; i++)
				x = x * 1.0000001 + 1e-9;
		return;
	}
	while (us > 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The step mode's release with N clients: the server's threads wait here
 * until every client still connected has pushed; a thread whose client has
 * ended leaves, so the others are not held by it. */
struct barrier {
	pthread_mutex_t m;
	pthread_cond_t c;
	int active, arrived;
	unsigned gen;
};

static void barrier_open(struct barrier *b)
{
	b->arrived = 0;
	b->gen++;
	pthread_cond_broadcast(&b->c);
}

static void barrier_wait(struct barrier *b)
{
	pthread_mutex_lock(&b->m);
	unsigned g = b->gen;
	if (++b->arrived >= b->active)
		barrier_open(b);
	else
		while (g == b->gen)
			pthread_cond_wait(&b->c, &b->m);
	pthread_mutex_unlock(&b->m);
}

static void barrier_leave(struct barrier *b)
{
	pthread_mutex_lock(&b->m);
	b->active--;
	if (b->arrived && b->arrived >= b->active)
		barrier_open(b);
	pthread_mutex_unlock(&b->m);
}

struct conn {
	int fd, step;
	size_t req, resp;
	struct barrier *bar; /* NULL: one client, or rr mode */
	pthread_t th;
};

/* Serve one connection: read a request, (step: release, read the 8-byte
 * pull request,) answer, until the client closes.  0 when it closed. */
static int serve(struct conn *c)
{
	uint8_t tok[8] = { 0 }, *qb = malloc(c->req), *rb = calloc(1, c->resp);
	int one = 1, rc = -1;

	if (!qb || !rb)
		goto out;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (!io_all(c->fd, qb, c->req, 0)) {
		if (c->step) {
			if (c->bar)
				barrier_wait(c->bar);
			if (io_all(c->fd, tok, 8, 1) || io_all(c->fd, tok, 8, 0))
				goto out;
		}
		if (io_all(c->fd, rb, c->resp, 1))
			goto out;
	}
	rc = 0;
out:
	if (c->bar)
		barrier_leave(c->bar);
	close(c->fd);
	free(qb);
	free(rb);
	return rc;
}

static void *serve_thread(void *arg)
{
	return serve(arg) ? arg : NULL;
}

/* The server process: accept n connections, serve them (n > 1: a thread
 * each), exit 0 when all closed cleanly. */
static void server(int lfd, long n, int step, size_t req, size_t resp)
{
	struct barrier bar = { .active = (int)n };
	struct conn *c = calloc((size_t)n, sizeof(*c));
	int bad = 0;

	if (!c || pthread_mutex_init(&bar.m, NULL) || pthread_cond_init(&bar.c, NULL))
		_exit(1);
	for (long i = 0; i < n; i++) {
		c[i] = (struct conn){ .fd = accept(lfd, NULL, NULL), .step = step, .req = req, .resp = resp,
				      .bar = n > 1 && step ? &bar : NULL };
		if (c[i].fd < 0)
			_exit(1);
	}
	if (n == 1)
		_exit(serve(&c[0]) ? 1 : 0);
	for (long i = 0; i < n; i++)
		if (pthread_create(&c[i].th, NULL, serve_thread, &c[i]))
			_exit(1);
	for (long i = 0; i < n; i++) {
		void *r;
		pthread_join(c[i].th, &r);
		bad |= r != NULL;
	}
	_exit(bad);
}

struct client_args {
	struct sockaddr_in sa;
	int step;
	size_t req, resp;
	long warm, warm_ms, gap_us, iters, budget_ms;
	int busy;
};

/* One client: connect, warm up, take up to a->iters samples into s (the
 * sample), sp and spl (its push and pull parts).  Returns the samples taken
 * (*dropped: the warm-up's), or -1 with a message. */
static long client(const struct client_args *a, double *s, double *sp, double *spl, long *dropped, char *cc,
		   size_t ccsz)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	uint8_t *qb = calloc(1, a->req), *rb = malloc(a->resp);
	long k = -1;

	if (!qb || !rb) {
		fprintf(stderr, "tcp_rr: out of memory\n");
		goto out;
	}
	if (fd < 0 || connect(fd, (const struct sockaddr *)&a->sa, sizeof(a->sa))) {
		perror("tcp_rr: connect");
		goto out;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the system's default congestion control, which both this reference and
	 * the rdmaps tasks get (neither sets one): it moves the pull by up to 2x
	 * here (bbr against cubic, docs/benchmarks.md), so it is reported */
	socklen_t ccl = (socklen_t)ccsz - 1; /* room for the '\0' */
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &ccl) == 0)
		cc[ccl] = '\0';
	cc[strcspn(cc, "\"\\")] = '\0'; /* it goes into JSON */
	double wend = now_us() + a->warm_ms * 1e3;
	for (*dropped = 0; *dropped < a->warm && now_us() < wend; ++*dropped) {
		if (sample(fd, a->step, qb, a->req, rb, a->resp, NULL, NULL))
			goto io_err;
		gap(a->gap_us, a->busy);
	}
	double bend = now_us() + a->budget_ms * 1e3;
	long n = 0;
	for (; n < a->iters && (!a->budget_ms || n < 20 || now_us() < bend); n++) {
		if (sample(fd, a->step, qb, a->req, rb, a->resp, &sp[n], &spl[n]))
			goto io_err;
		s[n] = a->step ? sp[n] + spl[n] : spl[n];
		gap(a->gap_us, a->busy);
	}
	k = n;
	goto out;
io_err:
	perror("tcp_rr: request/response");
out:
	if (fd >= 0)
		close(fd);
	free(qb);
	free(rb);
	return k;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of sorted v */
static double pct(const double *v, long n, double p)
{
	long i = (long)ceil(p * (double)n) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int parse_long(const char *name, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "tcp_rr: %s %s: expected an integer in [%ld, %ld]\n", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* a flag that takes one of two words: *out = 0 for no, 1 for yes */
static int parse_choice(const char *name, const char *s, const char *no, const char *yes, int *out)
{
	if (strcmp(s, no) && strcmp(s, yes)) {
		fprintf(stderr, "tcp_rr: %s %s: expected %s or %s\n", name, s, no, yes);
		return -1;
	}
	*out = !strcmp(s, yes);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tcp_rr --req BYTES --resp BYTES [--mode rr|step] [--clients N] [--iters N]\n"
		   "              [--warmup N] [--warmup-ms MS] [--gap-us US] [--gap idle|busy]\n"
		   "              [--budget-ms MS] [--json FILE] [--label TEXT]\n");
}

int main(int argc, char **argv)
{
	long req = -1, resp = -1, iters = 2000, warm = 50, warm_ms = 200, gap_us = 0, budget_ms = 0, nc = 1;
	const char *json = NULL, *label = "";
	int step = 0, busy = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			fprintf(stderr, "tcp_rr: %s: missing value\n", a);
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--req")) { if (parse_long(a, v, 1, 1L << 30, &req)) return 2; }
		else if (!strcmp(a, "--resp")) { if (parse_long(a, v, 1, 1L << 30, &resp)) return 2; }
		else if (!strcmp(a, "--iters")) { if (parse_long(a, v, 1, 100000000, &iters)) return 2; }
		else if (!strcmp(a, "--warmup")) { if (parse_long(a, v, 0, 100000000, &warm)) return 2; }
		else if (!strcmp(a, "--warmup-ms")) { if (parse_long(a, v, 0, 3600000, &warm_ms)) return 2; }
		else if (!strcmp(a, "--gap-us")) { if (parse_long(a, v, 0, 10000000, &gap_us)) return 2; }
		else if (!strcmp(a, "--budget-ms")) { if (parse_long(a, v, 0, 3600000, &budget_ms)) return 2; }
		else if (!strcmp(a, "--clients")) { if (parse_long(a, v, 1, 64, &nc)) return 2; }
		else if (!strcmp(a, "--gap")) { if (parse_choice(a, v, "idle", "busy", &busy)) return 2; }
		else if (!strcmp(a, "--json")) json = v;
		else if (!strcmp(a, "--label")) label = v;
		else if (!strcmp(a, "--mode")) { if (parse_choice(a, v, "rr", "step", &step)) return 2; }
		else {
			fprintf(stderr, "tcp_rr: unknown flag '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (req < 0 || resp < 0) {
		fprintf(stderr, "tcp_rr: --req and --resp are required\n");
		usage(stderr);
		return 2;
	}
	if ((size_t)iters > SIZE_MAX / sizeof(double) / 3 / (size_t)nc) {
		fprintf(stderr, "tcp_rr: --iters %ld x --clients %ld: too many samples\n", iters, nc);
		return 2;
	}
	/* every client's samples, side by side, in memory the client processes
	 * share with this one: s[c * iters + k], then sp, then spl; per client
	 * the count taken and the warm-up dropped; client 0's congestion
	 * control */
	size_t per = (size_t)nc * (size_t)iters, ccsz = 32,
	       mlen = 3 * per * sizeof(double) + 2 * (size_t)nc * sizeof(long) + ccsz;
	void *mem = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("tcp_rr: mmap");
		return 1;
	}
	double *s = mem, *sp = s + per, *spl = sp + per;
	long *taken = (long *)(spl + per), *dropped = taken + nc;
	char *cc = (char *)(dropped + nc);
	strcpy(cc, "unknown");
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct client_args ca = { .sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
				  .step = step, .req = (size_t)req, .resp = (size_t)resp, .warm = warm,
				  .warm_ms = warm_ms, .gap_us = gap_us, .iters = iters, .budget_ms = budget_ms, .busy = busy };
	socklen_t sl = sizeof(ca.sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ca.sa, sizeof(ca.sa)) || listen(lfd, (int)nc) ||
	    getsockname(lfd, (struct sockaddr *)&ca.sa, &sl)) {
		perror("tcp_rr: listen on 127.0.0.1");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("tcp_rr: fork");
		return 1;
	}
	if (pid == 0)
		server(lfd, nc, step, (size_t)req, (size_t)resp);
	close(lfd);
	int bad = 0;
	if (nc == 1) {
		taken[0] = client(&ca, s, sp, spl, &dropped[0], cc, ccsz);
		bad = taken[0] < 0;
	} else {
		pid_t *kid = calloc((size_t)nc, sizeof(pid_t));
		long started = 0;
		if (!kid) {
			fprintf(stderr, "tcp_rr: out of memory\n");
			bad = 1;
		}
		for (; !bad && started < nc; started++) {
			long c = started;
			kid[c] = fork();
			if (kid[c] < 0) {
				perror("tcp_rr: fork a client");
				bad = 1;
				break;
			}
			if (kid[c] == 0) {
				char other[32] = "unknown";
				taken[c] = client(&ca, s + c * iters, sp + c * iters, spl + c * iters, &dropped[c],
						  c ? other : cc, ccsz);
				_exit(taken[c] < 0);
			}
		}
		for (long c = 0; c < started; c++) {
			int st;
			if (waitpid(kid[c], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
		}
		free(kid);
	}
	if (bad) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return 1;
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "tcp_rr: the server process failed\n");
		return 1;
	}
	/* pool: move every client's samples to the front, in client order */
	long n = 0, drop = 0;
	for (long c = 0; c < nc; c++) {
		memmove(s + n, s + c * iters, (size_t)taken[c] * sizeof(double));
		memmove(sp + n, sp + c * iters, (size_t)taken[c] * sizeof(double));
		memmove(spl + n, spl + c * iters, (size_t)taken[c] * sizeof(double));
		n += taken[c];
		drop += dropped[c];
	}
	iters = n; /* the samples taken */

	if (!iters) {
		fprintf(stderr, "tcp_rr: no sample taken\n");
		return 1;
	}
	double sum = 0, sq = 0;
	for (long k = 0; k < iters; k++)
		sum += s[k];
	double avg = sum / iters;
	for (long k = 0; k < iters; k++)
		sq += (s[k] - avg) * (s[k] - avg);
	double sd = iters > 1 ? sqrt(sq / (iters - 1)) : 0;
	qsort(s, (size_t)iters, sizeof(double), cmp_dbl);
	qsort(sp, (size_t)iters, sizeof(double), cmp_dbl);
	qsort(spl, (size_t)iters, sizeof(double), cmp_dbl);
	if (step)
		printf("# tcp_rr --mode step: plain TCP in the shape of a one-sided step on 127.0.0.1 (us): "
		       "push (send of req bytes, no answer waited for) + pull (ROUND TRIP: 8-byte request, resp "
		       "bytes back); the release in between is not timed; %ld us %s gap after each step; warm-up dropped %ld steps; "
		       "congestion control %s; %ld client(s)%s\n"
		       "# push p50 %.2f, pull p50 %.2f\n", gap_us, busy ? "busy" : "idle", drop, cc, nc,
		       nc > 1 ? " at once, released together, samples pooled" : "", pct(sp, iters, 0.5), pct(spl, iters, 0.5));
	else
		printf("# tcp_rr: plain TCP request/response on 127.0.0.1, ROUND TRIP per request (us); "
		       "%ld us %s gap after each request; warm-up dropped %ld requests; congestion control %s; "
		       "%ld client(s)%s\n",
		       gap_us, busy ? "busy" : "idle", drop, cc, nc, nc > 1 ? " at once, samples pooled" : "");
	printf("%-10s %-10s %8s %9s %9s %9s %9s %9s %9s %9s\n", "req_B", "resp_B", "iters", "min", "p50", "avg",
	       "stdev", "p99", "p99.9", "max");
	printf("%-10ld %-10ld %8ld %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", req, resp, iters, s[0],
	       pct(s, iters, 0.5), avg, sd, pct(s, iters, 0.99), pct(s, iters, 0.999), s[iters - 1]);
	if (json) {
		FILE *f = fopen(json, "w");
		if (!f) {
			fprintf(stderr, "tcp_rr: %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(f,
			"{\"bench\":\"tcp_rr\",\"label\":\"%s\",\"mode\":\"%s\",\"round_trip\":%s,\"sample\":\"%s\",\"req_bytes\":%ld,"
			"\"resp_bytes\":%ld,\"gap_us\":%ld,\"gap\":\"%s\",\"budget_ms\":%ld,\"clients\":%ld,\"iters\":%ld,\"warmup_dropped\":%ld,\"min_us\":%.3f,\"p50_us\":%.3f,"
			"\"avg_us\":%.3f,\"stdev_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
			"\"push_p50_us\":%.3f,\"pull_p50_us\":%.3f,\"congestion\":\"%s\"}\n",
			label, step ? "step" : "rr", step ? "false" : "true",
			step ? "push + pull: push = send of the req bytes (a local send, no answer waited for), "
			       "pull = round trip of an 8-byte request and the resp bytes; the release between them "
			       "and the gap not timed"
			     : "round trip: send of the req bytes, then the resp bytes received; the gap not timed",
			req, resp, gap_us, busy ? "busy" : "idle", budget_ms, nc, iters, drop, s[0], pct(s, iters, 0.5), avg, sd,
			pct(s, iters, 0.99), pct(s, iters, 0.999), s[iters - 1], pct(sp, iters, 0.5), pct(spl, iters, 0.5), cc);
		fclose(f);
	}
	munmap(mem, mlen);
	return 0;
}
