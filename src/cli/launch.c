/* rdmaps launch: run a whole local cluster (P ps + W workers) from one
 * command.  Every task is this binary re-executed with TensorFlow's flags;
 * its output lines come back through a pipe with a "[ps0] " / "[worker1] "
 * prefix.  Exits 0 only when every worker exited 0; a failed task, or
 * --timeout, ends the others. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/job.h"
#include "cli/outq.h"
#include "cli/ports.h"
#include "common/exec_self.h"
#include "ps/layout.h"
#include "worker/progress.h"

#define MAX_TASKS 130

struct task {
	char name[16];
	pid_t pid;
	int fd;          /* read end of stdout+stderr */
	char buf[8192];
	size_t len;
	int status, exited, is_worker;
};

/* argv[a] is flag NAME in any spelling parse_flags takes (-NAME, --NAME,
 * with =VALUE or not): 1 = with its value in this word, 2 = the value is
 * the next word, 0 = another word. */
static int flag_word(const char *arg, const char *name)
{
	size_t n = strlen(name);

	if (arg[0] != '-')
		return 0;
	arg += arg[1] == '-' ? 2 : 1;
	if (strncmp(arg, name, n))
		return 0;
	return arg[n] == '=' ? 1 : arg[n] == 0 ? 2 : 0;
}

/* SIGINT, SIGTERM or SIGHUP to the launcher: stop every task, then exit
 * 128 + the signal.  (Without this the tasks outlived a launcher killed by
 * a job scheduler's SIGTERM until they next wrote a line.) */
static volatile sig_atomic_t got_sig, nsig; /* the last signal; how many came */
static void on_sig(int sig) { got_sig = sig; nsig++; }

/* How long stopped tasks get after SIGTERM before SIGKILL: a ps saves its
 * last checkpoint then (--logdir), which for a large shard takes seconds;
 * a second SIGINT / SIGTERM / SIGHUP to the launcher cuts it short. */
#define LAUNCH_STOP_S 30.0

/* On a terminal the workers' per-step lines fold into one live line. */
static struct rdmaps_progress prog;
static int prog_on;

static int is_step_line(const char *s, size_t n)
{
	return memmem(s, n, ": training step ", 16) && memmem(s, n, " done (global step: ", 20);
}

static void emit_line(struct task *t, const char *s, size_t n)
{
	if (prog_on && t->is_worker) {
		size_t tl = strlen(RDMAPS_PROGRESS_TAG);
		if (n > tl && !memcmp(s, RDMAPS_PROGRESS_TAG, tl)) {
			char tmp[64];
			long g;
			double loss;
			snprintf(tmp, sizeof(tmp), "%.*s", (int)(n - tl), s + tl);
			if (sscanf(tmp, "%ld %lf", &g, &loss) == 2)
				rdmaps_progress_update(&prog, g, loss, rdmaps_now());
			return;
		}
		if (is_step_line(s, n))
			return; /* folded into the progress line */
	}
	if (prog_on)
		rdmaps_progress_end(&prog); /* keep its last state above this line */
	printf("[%s] %.*s\n", t->name, (int)n, s);
}

static void flush_lines(struct task *t, int final)
{
	char *start = t->buf, *nl;
	while ((nl = memchr(start, '\n', t->len - (size_t)(start - t->buf)))) {
		emit_line(t, start, (size_t)(nl - start));
		start = nl + 1;
	}
	size_t rest = t->len - (size_t)(start - t->buf);
	if (final && rest) {
		emit_line(t, start, rest);
		rest = 0;
	} else if (rest == sizeof(t->buf)) { /* a very long line: print as is */
		emit_line(t, start, rest);
		rest = 0;
	}
	memmove(t->buf, start, rest);
	t->len = rest;
	fflush(stdout);
}

/* Read what task t printed, if anything, without blocking for long; at EOF
 * its last line goes out and its pipe is closed. */
static void drain_some(struct task *t, int wait_ms)
{
	struct pollfd pf = { .fd = t->fd, .events = POLLIN };
	if (t->fd < 0 || poll(&pf, 1, wait_ms) <= 0)
		return;
	ssize_t r = read(t->fd, t->buf + t->len, sizeof(t->buf) - t->len);
	if (r > 0) {
		t->len += (size_t)r;
		flush_lines(t, 0);
	} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
		flush_lines(t, 1);
		close(t->fd);
		t->fd = -1;
	}
}

/* Start a task; inc > 0: it runs that much nicer than we do (a worker,
 * --worker_nice), set before exec so that every thread it makes has it. */
static pid_t spawn(struct task *t, char **argv, int inc)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t parent = getpid(), pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* a launcher that dies, even by SIGKILL, takes its tasks along */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL); /* the launcher ignores it; a task must not inherit that */
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		errno = 0;
		if (inc > 0 && nice(inc) == -1 && errno) /* raising it is always allowed */
			fprintf(stderr, "rdmaps launch: nice(%d) failed (%s); this task runs at the launcher's priority\n",
				inc, strerror(errno));
		rdmaps_exec_self(argv); /* keeps the name rdmaps */
		fprintf(stderr, "cannot exec /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	close(p[1]);
	t->fd = p[0];
	t->pid = pid;
	return pid;
}

/* The metrics file of worker k of W: FILE itself when W = 1, else FILE
 * with ".worker<k>" before its extension (m.jsonl -> m.worker1.jsonl; no
 * extension: appended). */
static void metrics_path(char *out, size_t len, const char *file, int k, int W)
{
	const char *base = strrchr(file, '/'), *dot;
	base = base ? base + 1 : file;
	dot = strrchr(base, '.');
	if (W == 1)
		snprintf(out, len, "%s", file);
	else if (!dot || dot == base)
		snprintf(out, len, "%s.worker%d", file, k);
	else
		snprintf(out, len, "%.*s.worker%d%s", (int)(dot - file), file, k, dot);
}

int rdmaps_launch(const struct rdmaps_job *j, int argc, char **argv)
{
	int P = j->nps > 0 ? j->nps : 1, W = j->nworkers > 0 ? j->nworkers : 2;
	const char *host = "127.0.0.1";
	const char *env = getenv("RDMAPS_RDMA_ADDR");
	char ps_hosts[4096] = "", wk_hosts[4096] = "";
	struct task tasks[MAX_TASKS];
	int n = 0, rc = 0;

	if (P + W > MAX_TASKS) {
		fprintf(stderr, "rdmaps launch: at most %d tasks\n", MAX_TASKS);
		return 2;
	}
	if (j->transport != RT_TCP && env && *env)
		host = env;
	int ports[MAX_TASKS];

	if (rdmaps_pick_ports(host, P + W, ports)) {
		fprintf(stderr, "rdmaps launch: no free port on %s\n", host);
		return 1;
	}
	for (int k = 0; k < P + W; k++) {
		char *dst = k < P ? ps_hosts : wk_hosts;
		size_t l = strlen(dst);
		snprintf(dst + l, 4096 - l, "%s%s:%d", l ? "," : "", host, ports[k]);
	}
	printf("rdmaps launch: %d ps (%s), %d workers (%s)", P, ps_hosts, W, wk_hosts);
	if (j->worker_nice)
		printf(" at nice +%d", j->worker_nice);
	printf(", %s\n", j->sync ? "sync" : "async");
	if (j->metrics[0] && W > 1) {
		char m0[sizeof(j->metrics) + 32], m1[sizeof(j->metrics) + 32];
		metrics_path(m0, sizeof(m0), j->metrics, 0, W);
		metrics_path(m1, sizeof(m1), j->metrics, W - 1, W);
		printf("rdmaps launch: --metrics: one file per worker, %s .. %s\n", m0, m1);
	}
	fflush(stdout);
	struct sigaction sa = { .sa_handler = on_sig }; /* no SA_RESTART: poll() returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* the tasks' output must never wait for our own reader (outq.h);
	 * a reader gone (EPIPE) ends the output, not the job */
	signal(SIGPIPE, SIG_IGN);
	rdmaps_outq_open(16u << 20);
	prog_on = isatty(STDOUT_FILENO);
	if (prog_on) {
		rdmaps_progress_init(&prog, stdout, j->train_steps);
		setenv(RDMAPS_PROGRESS_ENV, "1", 1);
	}

	/* child argv: the launch flags minus --ps/--workers, plus the cluster */
	char psf[4200], wkf[4200], idx[MAX_TASKS][32], mf[MAX_TASKS][sizeof(j->metrics) + 48];
	snprintf(psf, sizeof(psf), "--ps_hosts=%s", ps_hosts);
	snprintf(wkf, sizeof(wkf), "--worker_hosts=%s", wk_hosts);
	memset(tasks, 0, sizeof(tasks));
	for (int k = 0; k < P + W; k++) {
		char *cargv[256];
		int c = 0;
		int is_ps = k < P, ti = is_ps ? k : k - P;
		cargv[c++] = "rdmaps";
		cargv[c++] = is_ps ? "--job_name=ps" : "--job_name=worker";
		snprintf(idx[k], sizeof(idx[k]), "--task_index=%d", ti);
		cargv[c++] = idx[k];
		cargv[c++] = psf;
		cargv[c++] = wkf;
		for (int a = 0; a < argc && c < 250; a++) {
			int fw;
			/* launch's own flags; "--ps 2" drops the 2 too */
			if ((fw = flag_word(argv[a], "ps")) || (fw = flag_word(argv[a], "workers")) ||
			    (fw = flag_word(argv[a], "worker_nice"))) {
				a += fw == 2;
				continue;
			}
			/* --metrics: one file per worker (they would truncate and
			 * interleave one shared file), named by metrics_path() */
			if ((fw = flag_word(argv[a], "metrics"))) {
				a += fw == 2;
				if (is_ps || !j->metrics[0])
					continue;
				char path[sizeof(j->metrics) + 32];
				metrics_path(path, sizeof(path), j->metrics, ti, W);
				snprintf(mf[k], sizeof(mf[k]), "--metrics=%s", path);
				cargv[c++] = mf[k];
				continue;
			}
			cargv[c++] = argv[a];
		}
		cargv[c] = NULL;
		struct task *t = &tasks[n++];
		snprintf(t->name, sizeof(t->name), "%s%d", is_ps ? "ps" : "worker", ti);
		t->is_worker = !is_ps;
		if (spawn(t, cargv, is_ps ? 0 : j->worker_nice) < 0) {
			fprintf(stderr, "rdmaps launch: cannot start %s: %s\n", t->name, strerror(errno));
			rc = 1;
			n--;
			goto stop;
		}
	}

	/* The safety net for a cluster hung in a way no task's own timeouts
	 * catch: silence.  Any task's output pushes it back, so a long job that
	 * prints (per-step lines, --log_every) runs as long as it trains; until
	 * 2026-12-05 this was a deadline on the whole job (21 min by default). */
	const double quiet_s = j->timeout_s * 10.0 + 60;
	double deadline = rdmaps_now() + quiet_s;
	int open_fds = n, workers_left = W;
	while (open_fds > 0 || workers_left > 0) {
		struct pollfd pf[MAX_TASKS + 1];
		int map[MAX_TASKS], m = 0;
		for (int k = 0; k < n; k++)
			if (tasks[k].fd >= 0) {
				pf[m].fd = tasks[k].fd;
				pf[m].events = POLLIN;
				map[m++] = k;
			}
		if (!got_sig) {
			/* pf[m]: our stdout while output waits (fd -1 otherwise) */
			rdmaps_outq_pollfd(&pf[m]);
			poll(pf, m + 1, m ? 200 : 100);
			rdmaps_outq_pump();
		}
		if (got_sig) {
			if (prog_on)
				rdmaps_progress_end(&prog);
			fprintf(stdout, "rdmaps launch: interrupted (%s); stopping every task\n", strsignal(got_sig));
			rc = 128 + got_sig;
			goto stop;
		}
		for (int q = 0; q < m; q++) {
			struct task *t = &tasks[map[q]];
			if (!(pf[q].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = read(t->fd, t->buf + t->len, sizeof(t->buf) - t->len);
			if (r > 0) {
				t->len += (size_t)r;
				flush_lines(t, 0);
				deadline = rdmaps_now() + quiet_s;
			} else {
				flush_lines(t, 1);
				close(t->fd);
				t->fd = -1;
				open_fds--;
			}
		}
		for (int k = 0; k < n; k++) {
			struct task *t = &tasks[k];
			int st;
			if (t->exited || waitpid(t->pid, &st, WNOHANG) != t->pid)
				continue;
			t->exited = 1;
			t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			if (t->is_worker)
				workers_left--;
			if (t->status) {
				if (prog_on)
					rdmaps_progress_end(&prog);
				fprintf(stdout, "rdmaps launch: %s exited with status %d; stopping the others\n", t->name,
					t->status);
				rc = 1;
				goto stop;
			}
		}
		if (rdmaps_now() > deadline) {
			if (prog_on)
				rdmaps_progress_end(&prog);
			fprintf(stdout, "rdmaps launch: no task printed anything for %.0f s (10 x --timeout + 60); "
				"stopping every task\n", quiet_s);
			rc = 1;
			goto stop;
		}
	}
	/* all workers done: the ps tasks exit by themselves once every worker is done */
stop:
	for (int k = 0; k < n; k++)
		if (!tasks[k].exited && rc)
			kill(tasks[k].pid, SIGTERM);
	/* Wait for every task, printing what they print meanwhile (a ps says
	 * it saves its last checkpoint), for up to LAUNCH_STOP_S; then, or at
	 * a second signal, SIGKILL what is left, each one said. */
	double stop_start = rdmaps_now();
	int nsig0 = nsig, said_wait = 0;
	for (;;) {
		int left = 0;
		for (int k = 0; k < n; k++) {
			struct task *t = &tasks[k];
			int st;
			if (t->exited)
				continue;
			if (waitpid(t->pid, &st, WNOHANG) != t->pid) {
				left++;
				continue;
			}
			t->exited = 1;
			t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			if (t->status && !rc) {
				if (prog_on)
					rdmaps_progress_end(&prog);
				printf("rdmaps launch: %s exited with status %d\n", t->name, t->status);
				rc = 1;
			}
		}
		if (!left)
			break;
		int again = nsig != nsig0, late = rdmaps_now() - stop_start > LAUNCH_STOP_S;
		if (again || late) {
			for (int k = 0; k < n; k++) {
				struct task *t = &tasks[k];
				int st;
				if (t->exited)
					continue;
				printf("rdmaps launch: %s %s: killing it (SIGKILL)\n", t->name,
				       again ? "still runs at a second interrupt" : "did not stop within 30 s of SIGTERM");
				kill(t->pid, SIGKILL);
				waitpid(t->pid, &st, 0);
				t->exited = 1;
				t->status = 128 + SIGKILL;
			}
			if (!rc)
				rc = 1;
			break;
		}
		if (!said_wait && rc && rdmaps_now() - stop_start > 3) {
			printf("rdmaps launch: waiting for %d task(s) to stop (up to %.0f s; interrupt again to kill them "
			       "now)\n", left, LAUNCH_STOP_S);
			said_wait = 1;
		}
		fflush(stdout);
		int polled = 0;
		for (int k = 0; k < n; k++)
			if (tasks[k].fd >= 0) {
				drain_some(&tasks[k], polled++ ? 0 : 50);
			}
		if (!polled)
			usleep(50000);
		rdmaps_outq_pump();
	}
	for (int k = 0; k < n; k++) {
		struct task *t = &tasks[k];
		if (t->fd >= 0) {
			char b[4096];
			ssize_t r;
			while ((r = read(t->fd, b, sizeof(b))) > 0) {
				memcpy(t->buf + t->len, b, (size_t)r < sizeof(t->buf) - t->len ? (size_t)r : sizeof(t->buf) - t->len);
				t->len += (size_t)r < sizeof(t->buf) - t->len ? (size_t)r : 0;
				flush_lines(t, 0);
			}
			flush_lines(t, 1);
			close(t->fd);
		}
	}
	if (prog_on)
		rdmaps_progress_end(&prog);
	printf("rdmaps launch: %s\n", got_sig ? "interrupted" : rc ? "FAILED" : "all workers finished");
	rdmaps_outq_close();
	return rc;
}
