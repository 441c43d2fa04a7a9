/* tcp_rr: the plain TCP reference for a training step's transport cost.
 *
 *   tcp_rr --req BYTES --resp BYTES [--mode rr|step] [--iters N] [--warmup N]
 *          [--warmup-ms MS] [--gap-us US] [--budget-ms MS] [--json FILE] [--label TEXT]
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
 * --budget-ms MS: the measured samples end after --iters samples or, once
 * 20 are in, after MS ms, whichever comes first (default 0: no time bound);
 * the count taken is in the output.  It bounds a run whose gap is long.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void gap(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	while (us > 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
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

static void usage(FILE *f)
{
	fprintf(f, "usage: tcp_rr --req BYTES --resp BYTES [--mode rr|step] [--iters N] [--warmup N]\n"
		   "              [--warmup-ms MS] [--gap-us US] [--budget-ms MS] [--json FILE] [--label TEXT]\n");
}

int main(int argc, char **argv)
{
	long req = -1, resp = -1, iters = 2000, warm = 50, warm_ms = 200, gap_us = 0, budget_ms = 0;
	const char *json = NULL, *label = "";
	int step = 0;

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
		else if (!strcmp(a, "--json")) json = v;
		else if (!strcmp(a, "--label")) label = v;
		else if (!strcmp(a, "--mode")) {
			if (!strcmp(v, "rr")) step = 0;
			else if (!strcmp(v, "step")) step = 1;
			else {
				fprintf(stderr, "tcp_rr: --mode %s: expected rr or step\n", v);
				return 2;
			}
		}
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
	uint8_t *qb = calloc(1, (size_t)req), *rb = calloc(1, (size_t)resp);
	double *s = malloc((size_t)iters * sizeof(double));
	double *sp = malloc((size_t)iters * sizeof(double)), *spl = malloc((size_t)iters * sizeof(double));
	uint8_t tok[8] = { 0 };
	if (!qb || !rb || !s || !sp || !spl) {
		fprintf(stderr, "tcp_rr: out of memory\n");
		return 1;
	}
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		perror("tcp_rr: listen on 127.0.0.1");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("tcp_rr: fork");
		return 1;
	}
	if (pid == 0) { /* server: read a request, answer it, until the client closes */
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			_exit(1);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (!io_all(fd, qb, (size_t)req, 0)) {
			if (step && (io_all(fd, tok, 8, 1) || io_all(fd, tok, 8, 0)))
				_exit(1);
			if (io_all(fd, rb, (size_t)resp, 1))
				_exit(1);
		}
		_exit(0);
	}
	close(lfd);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("tcp_rr: connect");
		kill(pid, SIGTERM);
		return 1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the system's default congestion control, which both this reference and
	 * the rdmaps tasks get (neither sets one): it moves the pull by up to 2x
	 * here (bbr against cubic, docs/benchmarks.md), so it is reported */
	char cc[32] = "unknown";
	socklen_t ccl = sizeof(cc) - 1; /* room for the '\0' */
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &ccl) == 0)
		cc[ccl] = '\0';
	cc[strcspn(cc, "\"\\")] = '\0'; /* it goes into JSON */
	long dropped = 0;
	double wend = now_us() + warm_ms * 1e3;
	for (; dropped < warm && now_us() < wend; dropped++) {
		if (sample(fd, step, qb, (size_t)req, rb, (size_t)resp, NULL, NULL))
			goto io_err;
		gap(gap_us);
	}
	double bend = now_us() + budget_ms * 1e3;
	long k = 0;
	for (; k < iters && (!budget_ms || k < 20 || now_us() < bend); k++) {
		if (sample(fd, step, qb, (size_t)req, rb, (size_t)resp, &sp[k], &spl[k]))
			goto io_err;
		s[k] = step ? sp[k] + spl[k] : spl[k];
		gap(gap_us);
	}
	iters = k; /* the samples taken */
	close(fd);
	int st;
	waitpid(pid, &st, 0);

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
		       "bytes back); the release in between is not timed; %ld us idle gap after each step; warm-up dropped %ld steps; "
		       "congestion control %s\n"
		       "# push p50 %.2f, pull p50 %.2f\n", gap_us, dropped, cc, pct(sp, iters, 0.5), pct(spl, iters, 0.5));
	else
		printf("# tcp_rr: plain TCP request/response on 127.0.0.1, ROUND TRIP per request (us); "
		       "%ld us idle gap after each request; warm-up dropped %ld requests; congestion control %s\n",
		       gap_us, dropped, cc);
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
			"\"resp_bytes\":%ld,\"gap_us\":%ld,\"budget_ms\":%ld,\"iters\":%ld,\"warmup_dropped\":%ld,\"min_us\":%.3f,\"p50_us\":%.3f,"
			"\"avg_us\":%.3f,\"stdev_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
			"\"push_p50_us\":%.3f,\"pull_p50_us\":%.3f,\"congestion\":\"%s\"}\n",
			label, step ? "step" : "rr", step ? "false" : "true",
			step ? "push + pull: push = send of the req bytes (a local send, no answer waited for), "
			       "pull = round trip of an 8-byte request and the resp bytes; the release between them "
			       "and the gap not timed"
			     : "round trip: send of the req bytes, then the resp bytes received; the gap not timed",
			req, resp, gap_us, budget_ms, iters, dropped, s[0], pct(s, iters, 0.5), avg, sd,
			pct(s, iters, 0.99), pct(s, iters, 0.999), s[iters - 1], pct(sp, iters, 0.5), pct(spl, iters, 0.5), cc);
		fclose(f);
	}
	free(qb); free(rb); free(s); free(sp); free(spl);
	return 0;
io_err:
	perror("tcp_rr: request/response");
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return 1;
}
