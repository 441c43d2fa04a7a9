/* Locality: CPU list parsing, the context's cpuset, rt_pin_thread, and the
 * TCP progress thread created on the cpuset when pin_progress is set
 * (checked on the real thread through /proc/self/task/<tid>).  Uses a
 * loopback TCP connection, hence label tcp. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <numa.h>

#include "rdma/rt_internal.h"

static cpu_set_t allowed;
static int last_cpu = -1, first_cpu = -1;

static int setup(void **st)
{
	(void)st;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &allowed)) {
			if (first_cpu < 0)
				first_cpu = c;
			last_cpu = c;
		}
	}
	return 0;
}

static void cpulist_parse_format(void **st)
{
	cpu_set_t s, t;
	char buf[64];
	const char *bad[] = { "", "a", "1,", ",1", "3-1", "1-", "-1", "0,,1", "1 ", "1024",
			      "0-1024", "99999999999999999999", "1;2" };

	(void)st;
	assert_int_equal(rt_cpulist_parse("0-3,8,10-11", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 7);
	assert_true(CPU_ISSET(0, &s) && CPU_ISSET(3, &s) && CPU_ISSET(8, &s) &&
		    CPU_ISSET(11, &s) && !CPU_ISSET(4, &s) && !CPU_ISSET(9, &s));
	assert_int_equal(rt_cpulist_format(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-3,8,10-11");
	assert_int_equal(rt_cpulist_parse("5", &t), 0);
	assert_int_equal(rt_cpulist_format(&t, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "5");
	assert_int_equal(rt_cpulist_parse("1023", &t), 0);
	assert_true(CPU_ISSET(1023, &t));
	/* too small a buffer is an error, not a truncated list */
	assert_int_equal(rt_cpulist_format(&s, buf, 5), RDMAPS_E_INVAL);
	assert_string_equal(buf, "");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rt_cpulist_parse(bad[i], &t) != RDMAPS_E_INVAL)
			fail_msg("cpu list \"%s\" was accepted", bad[i]);
	}
	assert_int_equal(rt_cpulist_parse(NULL, &t), RDMAPS_E_INVAL);
}

static void ctx_cpuset(void **st)
{
	struct rt_ctx_cfg cfg = { .kind = RT_TCP, .numa_node = -1 };
	struct rt_ctx *ctx = NULL;
	cpu_set_t s, one;
	char buf[256], want[256];

	(void)st;
	/* default: this host has one NUMA node and no RDMA device -> every
	 * allowed CPU (with several nodes and a device it would be the device's) */
	assert_int_equal(rt_ctx_new(&cfg, &ctx), 0);
	assert_int_equal(rt_ctx_cpuset(ctx, &s), 0);
	if (numa_available() < 0 || numa_num_configured_nodes() <= 1)
		assert_true(CPU_EQUAL(&s, &allowed));
	assert_int_equal(rt_ctx_cpulist(ctx, buf, sizeof(buf)), 0);
	assert_int_equal(rt_cpulist_format(&s, want, sizeof(want)), 0);
	assert_string_equal(buf, want);
	assert_int_equal(rt_ctx_cpuset(NULL, &s), RDMAPS_E_INVAL);
	assert_int_equal(rt_ctx_cpuset(ctx, NULL), RDMAPS_E_INVAL);
	assert_int_equal(rt_ctx_cpulist(ctx, buf, 0), RDMAPS_E_INVAL);
	rt_ctx_delete(&ctx);

	/* explicit list: intersected with the allowed CPUs */
	snprintf(buf, sizeof(buf), "%d,1023", last_cpu);
	cfg.cpuset = buf;
	assert_int_equal(rt_ctx_new(&cfg, &ctx), 0);
	assert_int_equal(rt_ctx_cpuset(ctx, &s), 0);
	CPU_ZERO(&one);
	CPU_SET(last_cpu, &one);
	if (!CPU_ISSET(1023, &allowed))
		assert_true(CPU_EQUAL(&s, &one));
	rt_ctx_delete(&ctx);

	/* malformed, or no allowed CPU in it: refused at rt_ctx_new */
	cfg.cpuset = "0-x";
	ctx = NULL;
	assert_int_equal(rt_ctx_new(&cfg, &ctx), RDMAPS_E_INVAL);
	assert_null(ctx);
	if (!CPU_ISSET(1023, &allowed)) {
		cfg.cpuset = "1023";
		assert_int_equal(rt_ctx_new(&cfg, &ctx), RDMAPS_E_INVAL);
		assert_null(ctx);
	}
}

/* Wait (up to 5 s) until a joined thread has left /proc/self/task.
 * pthread_join returns when the thread's tid word is cleared, before the
 * kernel unhashes the task; a listing of /proc/self/task that runs while a
 * thread ahead in the list is unhashed ends early and skips the threads
 * after it (proc_task_readdir's next_tid stops at a task no longer alive),
 * so progress_threads() would miss a live thread: 35 of 30000 listings in
 * a stand-alone reproduction, none once the joined tid is waited out. */
static void wait_task_gone(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	for (int i = 0; i < 5000 && access(path, F_OK) == 0; i++)
		usleep(1000);
	assert_int_not_equal(access(path, F_OK), 0);
}

struct pin_arg {
	struct rt_ctx *ctx;
	int rc;
	pid_t tid;
	cpu_set_t after;
};

static void *pin_main(void *p)
{
	struct pin_arg *a = p;

	a->tid = gettid();
	a->rc = rt_pin_thread(a->ctx);
	sched_getaffinity(0, sizeof(a->after), &a->after);
	return NULL;
}

static void pin_thread(void **st)
{
	char list[32];
	struct rt_ctx_cfg cfg = { .kind = RT_TCP, .numa_node = -1, .cpuset = list };
	struct pin_arg a = { 0 };
	pthread_t t;
	cpu_set_t one, mine;

	(void)st;
	snprintf(list, sizeof(list), "%d", last_cpu);
	assert_int_equal(rt_ctx_new(&cfg, &a.ctx), 0);
	assert_int_equal(pthread_create(&t, NULL, pin_main, &a), 0);
	pthread_join(t, NULL);
	wait_task_gone(a.tid);
	assert_int_equal(a.rc, 0);
	CPU_ZERO(&one);
	CPU_SET(last_cpu, &one);
	assert_true(CPU_EQUAL(&a.after, &one));
	/* only the calling thread moved */
	sched_getaffinity(0, sizeof(mine), &mine);
	assert_true(CPU_EQUAL(&mine, &allowed));
	assert_int_equal(rt_pin_thread(NULL), RDMAPS_E_INVAL);
	rt_ctx_delete(&a.ctx);
}

/* ---- progress thread: a real loopback connection between two contexts ---- */

struct cli_arg {
	struct rt_ctx *ctx;
	uint16_t port;
	struct rt_conn *conn;
	int rc;
	pid_t tid;
};

static uint64_t cli_buf[8], srv_buf[8];

static void *cli_main(void *p)
{
	struct cli_arg *a = p;
	struct rt_hello h = { 1, 0, 0 };
	struct rt_grant g = { 0, cli_buf, sizeof(cli_buf), RT_RIGHT_NONE };

	a->tid = gettid();
	a->rc = rt_connect(a->ctx, "127.0.0.1", a->port, &h, &g, 1, 10000, &a->conn);
	return NULL;
}

/* Affinity of every thread of this process named "rt-progress". */
static int progress_threads(cpu_set_t *sets, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) && n < max) {
		char path[288], comm[32] = "";
		FILE *f;
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "rt-progress", 11) == 0 &&
		    sched_getaffinity(tid, sizeof(sets[n]), &sets[n]) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static void pin_progress(void **st)
{
	char list[32];
	struct rt_ctx_cfg scfg = { .kind = RT_TCP, .numa_node = -1, .cpuset = list,
				   .pin_progress = 1 };
	struct rt_ctx_cfg ccfg = { .kind = RT_TCP, .numa_node = -1 };
	struct rt_ctx *sctx = NULL;
	struct rt_listener *lst = NULL;
	struct rt_request *req = NULL;
	struct rt_conn *sconn = NULL;
	struct rt_grant g = { 0, srv_buf, sizeof(srv_buf), RT_RIGHT_READ | RT_RIGHT_ATOMIC };
	struct cli_arg a = { 0 };
	pthread_t t;
	cpu_set_t sets[8], one;
	int n, pinned = 0, free_ = 0;

	(void)st;
	snprintf(list, sizeof(list), "%d", last_cpu);
	assert_int_equal(rt_ctx_new(&scfg, &sctx), 0);
	assert_int_equal(rt_ctx_new(&ccfg, &a.ctx), 0);
	assert_int_equal(progress_threads(sets, 8), 0);
	assert_int_equal(rt_listen(sctx, "127.0.0.1", 0, &lst), 0);
	a.port = rt_listener_port(lst);
	assert_int_equal(pthread_create(&t, NULL, cli_main, &a), 0);
	assert_int_equal(rt_accept(lst, 10000, &req), 0);
	assert_int_equal(rt_accept_grant(&req, &g, 1, &sconn), 0);
	pthread_join(t, NULL);
	wait_task_gone(a.tid); /* else the listing below may skip a thread */
	assert_int_equal(a.rc, 0);
	/* both progress threads exist now (each ctx serves its peer's ops) */
	n = progress_threads(sets, 8);
	assert_int_equal(n, 2);
	CPU_ZERO(&one);
	CPU_SET(last_cpu, &one);
	for (int i = 0; i < n; i++) {
		if (CPU_EQUAL(&sets[i], &one))
			pinned++;
		if (CPU_EQUAL(&sets[i], &allowed))
			free_++;
	}
	if (CPU_COUNT(&allowed) > 1) {
		assert_int_equal(pinned, 1); /* the server ctx's thread */
		assert_int_equal(free_, 1);  /* the client ctx's: not pinned */
	} else {
		assert_int_equal(pinned, 2); /* one CPU: nothing to tell apart */
	}
	/* and the pinned thread serves: a fetch-add through it */
	srv_buf[0] = 40;
	assert_int_equal(rt_fetch_add(a.conn, 0, 0, 0, 0, 2, 7, RT_F_SIGNALED), 0);
	{
		struct rt_completion c;

		assert_int_equal(rt_poll(a.conn, &c, 1, 10000), 1);
		assert_int_equal(c.status, 0);
	}
	assert_int_equal(cli_buf[0], 40);
	assert_int_equal(__atomic_load_n(&srv_buf[0], __ATOMIC_SEQ_CST), 42);
	rt_conn_delete(&a.conn);
	rt_conn_delete(&sconn);
	rt_listener_delete(&lst);
	rt_ctx_delete(&a.ctx);
	rt_ctx_delete(&sctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cpulist_parse_format),
		cmocka_unit_test(ctx_cpuset),
		cmocka_unit_test(pin_thread),
		cmocka_unit_test(pin_progress),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
