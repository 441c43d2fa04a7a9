/* cluster_unit: bool flags, host lists, TF_CONFIG, Slurm environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <netdb.h>
#include <unistd.h>
#include <netinet/in.h>

#include "cli/cluster.h"
#include "common/status.h"

static void test_bool(void **st)
{
	(void)st;
	const char *t[] = { "True", "true", "1", "yes", "TRUE", "Yes", "t", "T" }; /* t, f: absl's */
	const char *f[] = { "False", "false", "0", "no", "NO", "f", "F" };
	const char *bad[] = { "", "2", "y", "truee", "on", " true" };
	int v;
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		v = 0;
		assert_int_equal(rdmaps_parse_bool(t[i], &v), 0);
		assert_int_equal(v, 1);
	}
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		v = 1;
		assert_int_equal(rdmaps_parse_bool(f[i], &v), 0);
		assert_int_equal(v, 0);
	}
	v = 0;
	assert_int_equal(rdmaps_parse_bool(NULL, &v), 0);
	assert_int_equal(v, 1);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = 7;
		assert_int_equal(rdmaps_parse_bool(bad[i], &v), RDMAPS_E_INVAL);
		assert_int_equal(v, 7);
	}
}

static void test_hostport(void **st)
{
	(void)st;
	char h[64];
	uint16_t p;
	assert_int_equal(rdmaps_split_hostport("localhost:2222", h, sizeof h, &p), 0);
	assert_string_equal(h, "localhost");
	assert_int_equal(p, 2222);
	assert_int_equal(rdmaps_split_hostport("[::1]:65535", h, sizeof h, &p), 0);
	assert_string_equal(h, "::1");
	assert_int_equal(p, 65535);
	assert_int_equal(rdmaps_split_hostport("10.0.0.1:1", h, sizeof h, &p), 0);
	assert_int_equal(p, 1);
	const char *bad[] = { "host", "host:", ":22", "host:0", "host:65536", "host:22a",
			      "::1:22", "[::1]22", "[]:22", "host:-1", "ho st:22", "[::1:22", "host:02222" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(rdmaps_split_hostport(bad[i], h, sizeof h, &p), RDMAPS_E_INVAL);
	char tiny[4];
	assert_int_equal(rdmaps_split_hostport("abcd:1", tiny, sizeof tiny, &p), RDMAPS_E_INVAL);
}

static void bad_list(const char *s, const char *msg_part)
{
	char **v = (char **)1;
	int n = 5;
	char err[256] = "";
	assert_int_equal(rdmaps_parse_hostlist(s, &v, &n, err, sizeof err), RDMAPS_E_INVAL);
	assert_null(v);
	assert_int_equal(n, 0);
	if (!strstr(err, msg_part))
		fail_msg("'%s': message '%s' lacks '%s'", s, err, msg_part);
}

static void test_hostlist(void **st)
{
	(void)st;
	char **v;
	int n;
	char err[256];
	assert_int_equal(rdmaps_parse_hostlist("a:1,b:2,[::1]:3", &v, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0], "a:1");
	assert_string_equal(v[1], "b:2");
	assert_string_equal(v[2], "[::1]:3");
	struct rdmaps_cluster c = { .ps_hosts = v, .nps = n };
	rdmaps_cluster_free(&c);
	assert_null(c.ps_hosts);
	rdmaps_cluster_free(&c); /* zeroed struct ok */
	rdmaps_cluster_free(NULL);

	bad_list("", "empty");
	bad_list(NULL, "empty");
	bad_list("a:1,,b:2", "entry 2 is empty");
	bad_list("a:1,", "entry 2 is empty");
	bad_list(",a:1", "entry 1 is empty");
	bad_list("a:1,b", "entry 2 'b': missing ':port'");
	bad_list("a:1,:5", "entry 2 ':5': empty host");
	bad_list("a:0", "entry 1 'a:0': invalid port");
	bad_list("a:1,b:70000", "entry 2 'b:70000': invalid port");
	bad_list("a:1,b:x", "invalid port 'x'");
	bad_list("a:1,b:2,a:1", "entry 3 'a:1' duplicates entry 1");
}

#define TF(c, t) "{\"cluster\":" c ",\"task\":" t "}"
/* the cluster of one ps and one worker */
#define PW1 "{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]}"

static void tf_ok(const char *json, const char *job, int idx, int nps, int nwk)
{
	struct rdmaps_cluster c;
	char err[256] = "";
	int rc = rdmaps_cluster_from_tf_config(json, &c, err, sizeof err);
	if (rc)
		fail_msg("%s: %s", json, err);
	assert_string_equal(c.job_name, job);
	assert_int_equal(c.task_index, idx);
	assert_int_equal(c.nps, nps);
	assert_int_equal(c.nworkers, nwk);
	rdmaps_cluster_free(&c);
}

static void tf_bad(const char *json, const char *msg_part)
{
	struct rdmaps_cluster c;
	char err[256] = "";
	assert_int_equal(rdmaps_cluster_from_tf_config(json, &c, err, sizeof err), RDMAPS_E_INVAL);
	assert_null(c.ps_hosts);
	assert_null(c.worker_hosts);
	if (!strstr(err, msg_part))
		fail_msg("'%s': message '%s' lacks '%s'", json ? json : "(null)", err, msg_part);
}

static void test_tf_config(void **st)
{
	(void)st;
	const char *cl = "{\"ps\":[\"p0:2222\",\"p1:2222\"],\"worker\":[\"w0:2222\",\"w1:2222\"]}";
	const char *clc = "{\"chief\":[\"c0:2222\"],\"ps\":[\"p0:2222\"],"
			  "\"worker\":[\"w0:2222\",\"w1:2222\"],\"evaluator\":[\"e0:1\"]}";
	char buf[512];
	snprintf(buf, sizeof buf, TF("%s", "{\"type\":\"worker\",\"index\":1}"), cl);
	tf_ok(buf, "worker", 1, 2, 2);
	snprintf(buf, sizeof buf, TF("%s", "{\"type\":\"ps\",\"index\":1}"), cl);
	tf_ok(buf, "ps", 1, 2, 2);

	/* chief becomes worker 0, workers shift by one */
	struct rdmaps_cluster c;
	char err[256];
	snprintf(buf, sizeof buf,
		 "{\"cluster\":%s,\"task\":{\"type\":\"chief\",\"index\":0},\"rpc_layer\":\"grpc\"}",
		 clc);
	assert_int_equal(rdmaps_cluster_from_tf_config(buf, &c, err, sizeof err), 0);
	assert_string_equal(c.job_name, "worker");
	assert_int_equal(c.task_index, 0);
	assert_int_equal(c.nworkers, 3);
	assert_string_equal(c.worker_hosts[0], "c0:2222");
	assert_string_equal(c.worker_hosts[1], "w0:2222");
	assert_string_equal(c.worker_hosts[2], "w1:2222");
	assert_string_equal(c.ps_hosts[0], "p0:2222");
	rdmaps_cluster_free(&c);
	snprintf(buf, sizeof buf, TF("%s", "{\"type\":\"worker\",\"index\":1}"), clc);
	tf_ok(buf, "worker", 2, 1, 3);
	snprintf(buf, sizeof buf, TF("%s", "{\"type\":\"worker\",\"index\":2}"), clc);
	tf_bad(buf, "worker:2 out of range");
	/* legacy master */
	tf_ok(TF("{\"master\":[\"m:1\"],\"ps\":[\"p:1\"]}", "{\"type\":\"master\",\"index\":0}"),
	      "worker", 0, 1, 1);
	tf_bad(TF("{\"master\":[\"m:1\"],\"chief\":[\"c:1\"],\"ps\":[\"p:1\"]}",
		  "{\"type\":\"chief\",\"index\":0}"),
	       "both");
	tf_bad(TF("{\"chief\":[\"c:1\",\"d:1\"],\"ps\":[\"p:1\"]}", "{\"type\":\"chief\",\"index\":0}"),
	       "exactly one");
	tf_bad(TF("{\"chief\":[\"c:1\"],\"ps\":[\"p:1\"]}", "{\"type\":\"chief\",\"index\":1}"),
	       "chief:1 out of range");
	tf_bad(TF("{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]}", "{\"type\":\"chief\",\"index\":0}"),
	       "no chief job");

	/* invalid: the document, and what the message must name */
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{ NULL, "empty" },
		{ "", "empty" },
		{ "{\"cluster\":", "not valid JSON" },
		{ "[1,2]", "JSON object" },
		{ "{\"task\":{\"type\":\"ps\",\"index\":0}}", "no \"cluster\"" },
		{ "{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]}}", "no \"task\"" },
		{ TF(PW1, "{\"index\":0}"), "task.type" },
		{ TF(PW1, "{\"type\":3,\"index\":0}"), "task.type" },
		{ TF(PW1, "{\"type\":\"ps\"}"), "task.index" },
		{ TF(PW1, "{\"type\":\"ps\",\"index\":\"0\"}"), "task.index" },
		{ TF(PW1, "{\"type\":\"ps\",\"index\":-1}"), "task.index" },
		{ TF(PW1, "{\"type\":\"ps\",\"index\":0.5}"), "task.index" },
		{ TF(PW1, "{\"type\":\"ps\",\"index\":1}"), "ps:1 out of range" },
		{ TF(PW1, "{\"type\":\"worker\",\"index\":1}"), "worker:1 out of range" },
		{ TF("{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"],\"evaluator\":[\"e:1\"]}",
		     "{\"type\":\"evaluator\",\"index\":0}"),
		  "evaluator" },
		{ TF(PW1, "{\"type\":\"foo\",\"index\":0}"), "unknown" },
		{ TF("{\"worker\":[\"w:1\"]}", "{\"type\":\"worker\",\"index\":0}"), "no \"ps\"" },
		{ TF("{\"ps\":[],\"worker\":[\"w:1\"]}", "{\"type\":\"worker\",\"index\":0}"),
		  "cluster.ps is empty" },
		{ TF("{\"ps\":[\"p:1\"]}", "{\"type\":\"ps\",\"index\":0}"), "no worker" },
		{ TF("{\"ps\":\"p:1\",\"worker\":[\"w:1\"]}", "{\"type\":\"ps\",\"index\":0}"),
		  "must be an array" },
		{ TF("{\"ps\":[1],\"worker\":[\"w:1\"]}", "{\"type\":\"ps\",\"index\":0}"),
		  "cluster.ps[0] is not a string" },
		{ TF("{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",\"w\"]}", "{\"type\":\"ps\",\"index\":0}"),
		  "cluster.worker entry 2 'w': missing ':port'" },
		{ TF("{\"ps\":[\"p:1\"],\"worker\":[\"p:1\"]}", "{\"type\":\"ps\",\"index\":0}"),
		  "used twice" },
		/* a key twice: TF (Python's json) takes the last, cJSON the first */
		{ "{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",\"v:1\"]},\"task\":{\"type\":\"worker\",\"index\":0},"
		  "\"task\":{\"type\":\"worker\",\"index\":1}}", "the key \"task\" twice" },
		{ TF("{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"],\"ps\":[\"q:1\"]}", "{\"type\":\"ps\",\"index\":0}"),
		  "the key \"cluster.ps\" twice" },
		{ TF("{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",\"v:1\"]}", "{\"type\":\"worker\",\"index\":0,\"index\":1}"),
		  "the key \"task.index\" twice" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		tf_bad(bad[i].json, bad[i].msg);
}

/* ---- Slurm ---- */

static void slurm_env(const char *rank, const char *nt, const char *nl, const char *tpn)
{
	const char *vars[] = { "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
			       "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
			       "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE" };
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		unsetenv(vars[i]);
	if (rank)
		setenv("SLURM_PROCID", rank, 1);
	if (nt)
		setenv("SLURM_STEP_NUM_TASKS", nt, 1);
	if (nl)
		setenv("SLURM_STEP_NODELIST", nl, 1);
	if (tpn)
		setenv("SLURM_STEP_TASKS_PER_NODE", tpn, 1);
}

static void expect_nodes(const char *s, const char *const *want, int nwant)
{
	char **v;
	int n;
	char err[256] = "";
	int rc = rdmaps_slurm_expand_nodelist(s, &v, &n, err, sizeof err);
	if (rc)
		fail_msg("%s: %s", s, err);
	assert_int_equal(n, nwant);
	for (int i = 0; i < n; i++) {
		assert_string_equal(v[i], want[i]);
		free(v[i]);
	}
	free(v);
}

static void test_nodelist(void **st)
{
	(void)st;
	const char *a[] = { "n1", "n2", "m5" };
	expect_nodes("n[1-2],m5", a, 3);
	const char *b[] = { "node01", "node02", "node03", "node7" };
	expect_nodes("node[01-03,7]", b, 4);
	const char *c[] = { "r1c1", "r1c2", "r2c1", "r2c2" };
	expect_nodes("r[1-2]c[1-2]", c, 4);
	const char *d[] = { "gpu-a08", "gpu-a09", "gpu-a10", "x" };
	expect_nodes("gpu-a[08-10],x", d, 4);
	const char *e[] = { "single" };
	expect_nodes("single", e, 1);
	const char *f[] = { "a1", "a2", "a3", "b", "c007", "c008" };
	expect_nodes("a[1-3],b,c[007-008]", f, 6);

	const char *bad[] = { "", "n[1-2", "n1-2]", "n[]", "n[2-1]", "n[1,]", "n[a-b]",
			      "a,,b", "n[1-2],n2", "n[[1]]", "n[0-99999]" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char **v = (char **)1;
		int n = 3;
		char err[256] = "";
		assert_int_equal(rdmaps_slurm_expand_nodelist(bad[i], &v, &n, err, sizeof err),
				 RDMAPS_E_INVAL);
		assert_null(v);
		assert_int_equal(n, 0);
		assert_true(err[0] != '\0');
	}
}

static void test_tasks_per_node(void **st)
{
	(void)st;
	int *v, n;
	char err[256];
	assert_int_equal(rdmaps_slurm_expand_tasks_per_node("3(x2),2", &v, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0], 3);
	assert_int_equal(v[1], 3);
	assert_int_equal(v[2], 2);
	free(v);
	assert_int_equal(rdmaps_slurm_expand_tasks_per_node("1,2(x3),10", &v, &n, err, sizeof err), 0);
	int want[] = { 1, 2, 2, 2, 10 };
	assert_int_equal(n, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(v[i], want[i]);
	free(v);
	const char *bad[] = { "", "0", "3(x0)", "3(2)", "3(x2", "x", "3,,2", "3(x)", "-1" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = (int *)1;
		assert_int_equal(rdmaps_slurm_expand_tasks_per_node(bad[i], &v, &n, err, sizeof err),
				 RDMAPS_E_INVAL);
		assert_null(v);
	}
}

static void test_slurm(void **st)
{
	(void)st;
	struct rdmaps_cluster c;
	char err[256] = "";
	/* nodelist order n[1-2],m5 with 3,3,2 tasks; sorted hosts: m5(2) n1(3) n2(3) */
	slurm_env("0", "8", "n[1-2],m5", "3(x2),2");
	assert_int_equal(rdmaps_cluster_from_slurm(2, 8888, &c, err, sizeof err), 0);
	assert_string_equal(c.job_name, "ps");
	assert_int_equal(c.task_index, 0);
	assert_int_equal(c.nps, 2);
	assert_int_equal(c.nworkers, 6);
	assert_string_equal(c.ps_hosts[0], "m5:8888");
	assert_string_equal(c.ps_hosts[1], "m5:8889");
	const char *w[] = { "n1:8888", "n1:8889", "n1:8890", "n2:8888", "n2:8889", "n2:8890" };
	for (int i = 0; i < 6; i++)
		assert_string_equal(c.worker_hosts[i], w[i]);
	rdmaps_cluster_free(&c);

	slurm_env("5", "8", "n[1-2],m5", "3(x2),2");
	assert_int_equal(rdmaps_cluster_from_slurm(2, 8888, &c, err, sizeof err), 0);
	assert_string_equal(c.job_name, "worker");
	assert_int_equal(c.task_index, 3);
	rdmaps_cluster_free(&c);

	/* fallbacks SLURM_NTASKS / SLURM_JOB_NODELIST / SLURM_TASKS_PER_NODE */
	slurm_env("1", NULL, NULL, NULL);
	setenv("SLURM_NTASKS", "4", 1);
	setenv("SLURM_JOB_NODELIST", "node[01-03,7]", 1);
	setenv("SLURM_TASKS_PER_NODE", "1(x4)", 1);
	assert_int_equal(rdmaps_cluster_from_slurm(1, 2222, &c, err, sizeof err), 0);
	assert_string_equal(c.job_name, "worker");
	assert_int_equal(c.task_index, 0);
	assert_string_equal(c.ps_hosts[0], "node01:2222");
	assert_string_equal(c.worker_hosts[0], "node02:2222");
	assert_string_equal(c.worker_hosts[2], "node7:2222");
	rdmaps_cluster_free(&c);

	/* no tasks-per-node: even split */
	slurm_env("3", "4", "b,a", NULL);
	assert_int_equal(rdmaps_cluster_from_slurm(1, 5000, &c, err, sizeof err), 0);
	assert_string_equal(c.ps_hosts[0], "a:5000");
	assert_string_equal(c.worker_hosts[0], "a:5001");
	assert_string_equal(c.worker_hosts[2], "b:5001");
	assert_string_equal(c.job_name, "worker");
	assert_int_equal(c.task_index, 2);
	rdmaps_cluster_free(&c);

	/* errors */
	struct {
		const char *rank, *nt, *nl, *tpn;
		int nps;
		const char *msg;
	} bad[] = {
		{ NULL, "4", "a", "4", 1, "SLURM_PROCID not set" },
		{ "0", NULL, "a", "4", 1, "SLURM_NTASKS not set" },
		{ "0", "4", NULL, "4", 1, "NODELIST not set" },
		{ "x", "4", "a", "4", 1, "not a non-negative integer" },
		{ "4", "4", "a", "4", 1, "out of range" },
		{ "0", "4", "a", "4", 4, "no worker" },
		{ "0", "4", "a", "4", 0, "at least one ps" },
		{ "0", "5", "a,b", "2(x2)", 1, "sum to 4" },
		{ "0", "4", "a,b", "2(x3)", 1, "gives 3 nodes" },
		{ "0", "3", "a,b", NULL, 1, "do not divide" },
		{ "0", "4", "a[1-", "4", 1, "unbalanced" },
		{ "0", "4", "a", "4(y1)", 1, "bad entry" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		slurm_env(bad[i].rank, bad[i].nt, bad[i].nl, bad[i].tpn);
		err[0] = '\0';
		assert_int_equal(rdmaps_cluster_from_slurm(bad[i].nps, 8888, &c, err, sizeof err),
				 RDMAPS_E_INVAL);
		assert_null(c.ps_hosts);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err, bad[i].msg);
	}
	slurm_env("0", "2", "a", "2");
	assert_int_equal(rdmaps_cluster_from_slurm(1, 65535, &c, err, sizeof err), RDMAPS_E_INVAL);
	assert_non_null(strstr(err, "exceeds 65535"));
	slurm_env(NULL, NULL, NULL, NULL);
}

/* rdmaps_local_bind_host: literals and loopback names stay; a name that
 * resolves here to loopback only becomes the wildcard.  The positive case
 * is this machine's own name when its /etc/hosts maps it to 127.x (Debian's
 * 127.0.1.1); tests/train/multihost.sh makes that case on purpose. */
static void test_bind_host(void **st)
{
	(void)st;
	const char *keep[] = { "127.0.1.1", "::1", "0.0.0.0", "10.1.2.3", "localhost", "LocalHost",
			       "ip6-localhost", "a.b.localhost", "no-such-host.invalid", "" };
	char out[256], why[320], me[256];

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		assert_int_equal(rdmaps_local_bind_host(keep[i], out, sizeof(out), why, sizeof(why)), 0);
		assert_string_equal(out, keep[i]);
		assert_string_equal(why, "");
	}
	assert_int_equal(gethostname(me, sizeof(me)), 0);
	me[sizeof(me) - 1] = '\0';
	{
		struct addrinfo h = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
		int lo = -1, all_lo = 1, v4 = 0;

		if (getaddrinfo(me, NULL, &h, &ai) || !ai) {
			print_message("hostname %s does not resolve: case left out\n", me);
			return;
		}
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			const unsigned char *b = a->ai_family == AF_INET
				? (const unsigned char *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
				: ((struct sockaddr_in6 *)a->ai_addr)->sin6_addr.s6_addr;
			static const unsigned char v6lo[16] = { [15] = 1 };

			int l = a->ai_family == AF_INET ? b[0] == 127 : !memcmp(b, v6lo, 16);

			if (lo < 0) { /* the first address decides; the wildcard of its family */
				lo = l;
				v4 = a->ai_family == AF_INET;
			}
			all_lo &= l;
		}
		freeaddrinfo(ai);
		if (!strcmp(me, "localhost"))
			lo = 0;
		assert_int_equal(rdmaps_local_bind_host(me, out, sizeof(out), why, sizeof(why)), lo);
		if (lo) {
			if (v4)
				assert_string_equal(out, "0.0.0.0");
			assert_non_null(strstr(why, all_lo ? "a loopback address only" : " first, a loopback address"));
			assert_true(strncmp(why, me, strlen(me)) == 0);
		} else {
			assert_string_equal(out, me);
		}
		print_message("hostname %s: %s\n", me, lo ? why : "not loopback only: kept");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bool),          cmocka_unit_test(test_hostport),
		cmocka_unit_test(test_hostlist),      cmocka_unit_test(test_tf_config),
		cmocka_unit_test(test_nodelist),      cmocka_unit_test(test_tasks_per_node),
		cmocka_unit_test(test_slurm),         cmocka_unit_test(test_bind_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
