/* rdmaps: the command line.  `rdmaps train ...` (one process), `rdmaps launch
 * ...` (a local cluster), `rdmaps ports N` (free ports for scripts), `rdmaps devices [HOST]` (the RDMA
 * ports and what --transport=auto picks), otherwise
 * a ps or worker task with TensorFlow's flags.  The protocol is in src/ps/shard.c, src/worker/worker.c and
 * docs/protocol.md. */
#include <arpa/inet.h>
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cluster.h"
#include "cli/devices.h"
#include "cli/job.h"
#include "cli/ports.h"
#include "kernels/blas_core.h"
#include "kernels/data.h"
#include "kernels/train.h"
#include "rdmaps_git.h"

/* --version: what a bug report needs: the commit, the build, the BLAS
 * (cmake/version.cmake writes rdmaps_git.h at every build) */
static void version(void)
{
	printf("rdmaps %s (git %s, %s build)\n", RDMAPS_VERSION, RDMAPS_GIT, RDMAPS_BUILD_TYPE);
	printf("transports: rdma (libibverbs, librdmacm), tcp\n");
	const char *ct = getenv("OPENBLAS_CORETYPE");

	printf("openblas: %s (kernels: %s%s%s)\n", openblas_get_config(), openblas_get_corename(),
	       ct ? ", OPENBLAS_CORETYPE=" : "", ct ? ct : "");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaps --job_name=ps|worker --task_index=N --ps_hosts=H:P[,..] --worker_hosts=H:P[,..] [training flags]\n"
		"  (host lists default to mnist_replica's: --ps_hosts=localhost:2222\n"
		"  --worker_hosts=localhost:2223,localhost:2224)\n"
		"       rdmaps launch --ps=P --workers=W [--worker_nice=5] [training flags]\n"
		"         (--worker_nice: the workers run this much nicer than the ps tasks, which serve\n"
		"         every worker and so come first on the cores they share; 0 = the same)\n"
		"       rdmaps train --model=mlp|lstm --data_dir=DIR [--epochs=N ...]\n"
		"       rdmaps ports N [IPV4]   (N distinct free ports on IPV4, default 127.0.0.1, as launch picks them)\n"
		"       rdmaps devices [HOST]   (the RDMA ports here, and what --transport=auto picks for HOST)\n"
		"       rdmaps --version        (the release, the commit and build it was built from, its BLAS)\n"
		"training flags: --sync_replicas[=True|False] --replicas_to_aggregate=R --train_steps=200\n"
		"  --batch_size=100 --learning_rate=0.01 --hidden_units=100 --model=mlp|lstm --data_dir=DIR\n"
		"  --transport=auto|rdma|tcp --seed=S --log_every=N --metrics=FILE --timeout=SECS\n"
		"  --auth_token_file=FILE --dump_params=FILE\n"
		"  --tcp_spin_us=0 (tcp: busy-poll for replies up to N us before sleeping; pays off only when\n"
		"  every busy thread has a core of its own)\n"
		"  --ps_spin_us=0 (ps, tcp: after releasing workers, poll up to N us for their parameter READs\n"
		"  instead of sleeping until they come; pays off only when the ps has a core of its own)\n"
		"  --ps_progress=caller|thread (ps, tcp: who serves the workers' reads and writes: the ps's own\n"
		"  thread while it waits (caller, the default) or a progress thread of its own)\n"
		"  --worker_progress=caller|thread (worker, tcp: who serves the ps's release and liveness writes:\n"
		"  the worker's own thread while it waits, with a watchdog every 50 ms while it computes\n"
		"  (caller, the default), or a progress thread of its own)\n"
		"reliability: --logdir=DIR --save_model_secs=600 --barrier_timeout=30 --recovery_timeout=60\n"
		"cluster from the environment (no --job_name): TF_CONFIG, or Slurm (SLURM_*) with --slurm_num_ps=N\n"
		"  [--port_base=8888]; --num_gpus=N and --existing_servers are accepted and ignored (CPU only;\n"
		"  every task is its own server)\n"
		"--download_only: check that --data_dir holds a complete, valid MNIST and exit 0 (no cluster\n"
		"  flags needed); rdmaps does not download: scripts/fetch-data.sh does\n"
		"benchmark flags (bench/step): --straggler_task=N --straggler_delay_ms=MS (task N, default 0, sleeps MS\n"
		"  per step in its compute phase), --snapshot_file=FILE --snapshot_every=N (the chief appends\n"
		"  its parameters every N local steps: u64 global_step, f64 time, u64 nfloats, floats)\n");
}

static int parse_int(const char *name, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "rdmaps: --%s=%s: expected an integer in [%ld, %ld]\n", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* --ps_progress / --worker_progress: caller | thread */
static int parse_progress(const char *name, const char *s, int *out)
{
	if (!strcmp(s, "caller"))
		*out = RT_PROGRESS_CALLER;
	else if (!strcmp(s, "thread"))
		*out = RT_PROGRESS_THREAD;
	else {
		fprintf(stderr, "rdmaps: --%s=%s: must be caller or thread\n", name, s);
		return -1;
	}
	return 0;
}

static int parse_float(const char *name, const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* as the float it becomes: 1e39 is inf, 1e-50 is 0 */
	if (errno || *end || end == s || !isfinite((float)v) || !((float)v > 0)) {
		fprintf(stderr, "rdmaps: --%s=%s: expected a positive, finite number (as a float)\n", name, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* A path flag into dst[size]: too long is an error, not a silently cut
 * path (which could name another, existing file). */
static int copy_path(const char *name, const char *s, char *dst, size_t size)
{
	if (!*s || strlen(s) >= size) {
		fprintf(stderr, "rdmaps: --%s='%.40s%s': expected a path of 1 to %zu bytes\n", name, s,
			strlen(s) > 40 ? "..." : "", size - 1);
		return -1;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

/* The host list of a repeated --ps_hosts / --worker_hosts: the last one
 * counts, the earlier one is freed. */
static void hostlist_free(char ***h, int *n)
{
	for (int i = 0; *h && i < *n; i++)
		free((*h)[i]);
	free(*h);
	*h = NULL;
	*n = 0;
}

/* getopt takes a unique prefix of a flag's name (--metr=F for --metrics);
 * absl, whose spellings rdmaps follows, does not, and launch, which rewrites
 * --ps, --workers and --metrics for each task, would pass the prefix
 * through unchanged (every worker writing one --metrics file).  After
 * getopt matched option NAME, the word it came from (argv[optind - 1], or
 * argv[optind - 2] when the value was the next word) must spell NAME
 * whole.  Returns 1, or 0 after saying what is wrong. */
static int flag_spelled_whole(int argc, char **argv, const char *name)
{
	int w = optind - 1;
	if (w >= 2 && w < argc && optarg == argv[w])
		w--; /* "--flag value": the value is a word of its own */
	if (w < 1 || w >= argc)
		return 1;
	const char *a = argv[w];
	a += a[0] == '-' ? (a[1] == '-' ? 2 : 1) : 0;
	size_t n = strcspn(a, "=");
	if (n == strlen(name) && !strncmp(a, name, n))
		return 1;
	fprintf(stderr, "rdmaps: unknown flag '%.*s' (did you mean --%s? flags are spelled whole, as absl "
		"spells them)\n", (int)(n + (size_t)(a - argv[w])), argv[w], name);
	return 0;
}

enum {
	O_JOB = 1000, O_TASK, O_PSH, O_WKH, O_SYNC, O_R, O_STEPS, O_BATCH, O_LR, O_HID, O_MODEL,
	O_DATA, O_TRANSPORT, O_SEED, O_LOGEVERY, O_METRICS, O_TIMEOUT, O_PS, O_WORKERS, O_TOKEN,
	O_DUMP, O_LOGDIR, O_SAVESECS, O_BARRIER, O_RECOVERY, O_TCP_SPIN, O_PS_SPIN, O_PS_PROGRESS, O_WORKER_PROGRESS, O_STRAG_TASK, O_STRAG_MS, O_SNAP_FILE, O_SNAP_EVERY, O_WORKER_NICE,
	O_HELP, O_VERSION, O_NUMGPUS, O_SLURM_PS, O_PORTBASE, O_DOWNLOAD_ONLY, O_EXISTING, O_NOSYNC, O_NODOWNLOAD, O_NOEXISTING, O_ASYNC_DUMMY
};

static const struct option long_opts[] = {
	{ "job_name", required_argument, 0, O_JOB },
	{ "task_index", required_argument, 0, O_TASK },
	{ "ps_hosts", required_argument, 0, O_PSH },
	{ "worker_hosts", required_argument, 0, O_WKH },
	{ "sync_replicas", optional_argument, 0, O_SYNC },
	{ "replicas_to_aggregate", required_argument, 0, O_R },
	{ "train_steps", required_argument, 0, O_STEPS },
	{ "batch_size", required_argument, 0, O_BATCH },
	{ "learning_rate", required_argument, 0, O_LR },
	{ "hidden_units", required_argument, 0, O_HID },
	{ "model", required_argument, 0, O_MODEL },
	{ "data_dir", required_argument, 0, O_DATA },
	{ "transport", required_argument, 0, O_TRANSPORT },
	{ "seed", required_argument, 0, O_SEED },
	{ "log_every", required_argument, 0, O_LOGEVERY },
	{ "metrics", required_argument, 0, O_METRICS },
	{ "timeout", required_argument, 0, O_TIMEOUT },
	{ "ps", required_argument, 0, O_PS },
	{ "workers", required_argument, 0, O_WORKERS },
	{ "worker_nice", required_argument, 0, O_WORKER_NICE },
	{ "auth_token_file", required_argument, 0, O_TOKEN },
	{ "dump_params", required_argument, 0, O_DUMP },
	{ "logdir", required_argument, 0, O_LOGDIR },
	{ "save_model_secs", required_argument, 0, O_SAVESECS },
	{ "barrier_timeout", required_argument, 0, O_BARRIER },
	{ "recovery_timeout", required_argument, 0, O_RECOVERY },
	{ "tcp_spin_us", required_argument, 0, O_TCP_SPIN },
	{ "ps_spin_us", required_argument, 0, O_PS_SPIN },
	{ "ps_progress", required_argument, 0, O_PS_PROGRESS },
	{ "worker_progress", required_argument, 0, O_WORKER_PROGRESS },
	{ "straggler_task", required_argument, 0, O_STRAG_TASK },
	{ "straggler_delay_ms", required_argument, 0, O_STRAG_MS },
	{ "snapshot_file", required_argument, 0, O_SNAP_FILE },
	{ "snapshot_every", required_argument, 0, O_SNAP_EVERY },
	{ "num_gpus", required_argument, 0, O_NUMGPUS },
	{ "download_only", optional_argument, 0, O_DOWNLOAD_ONLY },
	{ "existing_servers", optional_argument, 0, O_EXISTING },
	/* TensorFlow's flags (absl, and tf.flags before it) also spell a
	 * false boolean --noNAME */
	{ "nosync_replicas", no_argument, 0, O_NOSYNC },
	{ "nodownload_only", no_argument, 0, O_NODOWNLOAD },
	{ "noexisting_servers", no_argument, 0, O_NOEXISTING },
	{ "slurm_num_ps", required_argument, 0, O_SLURM_PS },
	{ "port_base", required_argument, 0, O_PORTBASE },
	{ "help", no_argument, 0, O_HELP },
	{ "version", no_argument, 0, O_VERSION },
	{ 0, 0, 0, 0 }
};

/* Parse flags into *j.  launch_mode accepts --ps/--workers.  *download_only
 * is set from --download_only; when it is set, nothing after the flags
 * themselves is checked (no cluster is needed).  Returns 0, or 2 after
 * printing what is wrong. */
static int parse_flags(int argc, char **argv, struct rdmaps_job *j, int launch_mode, int *download_only)
{
	long v;
	double d;
	char err[256] = "out of memory"; /* what a parser that ran out of memory left unsaid */
	int slurm_ps = -1, hidden_set = 0;
	long port_base = 8888;

	optind = 1;
	opterr = 0;
	for (;;) {
		/* _only: one dash works too (-job_name=ps), as absl's flags take it */
		int li = -1;
		int o = getopt_long_only(argc, argv, "", long_opts, &li);
		if (o == -1)
			break;
		if (o != '?' && li >= 0 && !flag_spelled_whole(argc, argv, long_opts[li].name))
			return 2;
		switch (o) {
		case O_JOB:
			if (strcmp(optarg, "ps") && strcmp(optarg, "worker")) {
				fprintf(stderr, "rdmaps: --job_name=%s: must be 'ps' or 'worker'\n", optarg);
				return 2;
			}
			snprintf(j->job_name, sizeof(j->job_name), "%s", optarg);
			break;
		case O_TASK:
			if (parse_int("task_index", optarg, 0, 65535, &v)) return 2;
			j->task_index = (int)v;
			break;
		case O_PSH:
			hostlist_free(&j->ps_hosts, &j->nps);
			if (rdmaps_parse_hostlist(optarg, &j->ps_hosts, &j->nps, err, sizeof(err))) {
				fprintf(stderr, "rdmaps: --ps_hosts: %s\n", err);
				return 2;
			}
			break;
		case O_WKH:
			hostlist_free(&j->worker_hosts, &j->nworkers);
			if (rdmaps_parse_hostlist(optarg, &j->worker_hosts, &j->nworkers, err, sizeof(err))) {
				fprintf(stderr, "rdmaps: --worker_hosts: %s\n", err);
				return 2;
			}
			break;
		case O_SYNC: {
			int b;
			if (rdmaps_parse_bool(optarg, &b)) {
				fprintf(stderr, "rdmaps: --sync_replicas=%s: expected True/False/true/false/1/0\n", optarg);
				return 2;
			}
			j->sync = b;
			break;
		}
		case O_NOSYNC: j->sync = 0; break;
		case O_NODOWNLOAD: *download_only = 0; break;
		case O_NOEXISTING: break;
		case O_R: if (parse_int("replicas_to_aggregate", optarg, 1, 4096, &v)) return 2; j->replicas = (int)v; break;
		case O_STEPS: if (parse_int("train_steps", optarg, 1, 1L << 30, &v)) return 2; j->train_steps = v; break;
		case O_BATCH: if (parse_int("batch_size", optarg, 1, 65536, &v)) return 2; j->batch_size = (int)v; break;
		case O_LR: if (parse_float("learning_rate", optarg, &d)) return 2; j->learning_rate = (float)d; break;
		case O_HID: if (parse_int("hidden_units", optarg, 1, 1 << 20, &v)) return 2; j->hidden_units = (int)v; hidden_set = 1; break;
		case O_MODEL:
			if (rdm_model_parse_kind(optarg, &j->model)) {
				fprintf(stderr, "rdmaps: --model=%s: must be 'mlp' or 'lstm'\n", optarg);
				return 2;
			}
			j->model_set = 1;
			break;
		case O_DATA: if (copy_path("data_dir", optarg, j->data_dir, sizeof(j->data_dir))) return 2; break;
		case O_TRANSPORT:
			if (rt_kind_parse(optarg, &j->transport)) {
				fprintf(stderr, "rdmaps: --transport=%s: must be auto, rdma or tcp\n", optarg);
				return 2;
			}
			break;
		case O_SEED: if (parse_int("seed", optarg, 0, 0x7fffffffL, &v)) return 2; j->seed = (uint64_t)v; break;
		case O_LOGEVERY: if (parse_int("log_every", optarg, 1, 1L << 30, &v)) return 2; j->log_every = v; break;
		case O_METRICS: if (copy_path("metrics", optarg, j->metrics, sizeof(j->metrics))) return 2; break;
		case O_TIMEOUT: if (parse_int("timeout", optarg, 1, 86400, &v)) return 2; j->timeout_s = (int)v; break;
		case O_DUMP: if (copy_path("dump_params", optarg, j->dump_params, sizeof(j->dump_params))) return 2; break;
		case O_LOGDIR:
			if (!*optarg || strlen(optarg) >= sizeof(j->logdir) - 64) {
				fprintf(stderr, "rdmaps: --logdir='%s': expected a directory path (at most %zu bytes)\n",
					optarg, sizeof(j->logdir) - 64);
				return 2;
			}
			snprintf(j->logdir, sizeof(j->logdir), "%s", optarg);
			break;
		case O_SAVESECS: if (parse_int("save_model_secs", optarg, 0, 86400 * 365, &v)) return 2; j->save_model_secs = (int)v; break;
		case O_BARRIER: if (parse_int("barrier_timeout", optarg, 1, 86400, &v)) return 2; j->barrier_timeout_s = (int)v; break;
		case O_RECOVERY: if (parse_int("recovery_timeout", optarg, 1, 86400, &v)) return 2; j->recovery_timeout_s = (int)v; break;
		case O_TCP_SPIN: if (parse_int("tcp_spin_us", optarg, 0, 1000000, &v)) return 2; j->tcp_spin_us = (int)v; break;
		case O_PS_SPIN: if (parse_int("ps_spin_us", optarg, 0, 1000000, &v)) return 2; j->ps_spin_us = (int)v; break;
		case O_PS_PROGRESS:
			if (parse_progress("ps_progress", optarg, &j->ps_progress))
				return 2;
			break;
		case O_WORKER_PROGRESS:
			if (parse_progress("worker_progress", optarg, &j->worker_progress))
				return 2;
			break;
		case O_STRAG_TASK: if (parse_int("straggler_task", optarg, 0, 65535, &v)) return 2; j->straggler_task = (int)v; break;
		case O_STRAG_MS: if (parse_int("straggler_delay_ms", optarg, 0, 60000, &v)) return 2; j->straggler_delay_ms = (int)v; break;
		case O_SNAP_FILE: if (copy_path("snapshot_file", optarg, j->snapshot_file, sizeof(j->snapshot_file))) return 2; break;
		case O_SNAP_EVERY: if (parse_int("snapshot_every", optarg, 1, 1L << 30, &v)) return 2; j->snapshot_every = v; break;
		case O_NUMGPUS: if (parse_int("num_gpus", optarg, 0, 1024, &v)) return 2; break; /* CPU only: accepted, ignored */
		case O_DOWNLOAD_ONLY:
		case O_EXISTING: {
			/* --existing_servers: TF connects to a server it did not
			 * create; every rdmaps task is its own server: ignored */
			int b;
			if (rdmaps_parse_bool(optarg, &b)) {
				fprintf(stderr, "rdmaps: --%s=%s: expected True/False/true/false/1/0\n",
					o == O_EXISTING ? "existing_servers" : "download_only", optarg);
				return 2;
			}
			if (o == O_DOWNLOAD_ONLY)
				*download_only = b;
			break;
		}
		case O_SLURM_PS: if (parse_int("slurm_num_ps", optarg, 1, 4096, &v)) return 2; slurm_ps = (int)v; break;
		case O_PORTBASE: if (parse_int("port_base", optarg, 1, 65535, &v)) return 2; port_base = v; break;
		case O_TOKEN:
			if (rdmaps_read_token_file(optarg, j->token, sizeof(j->token), err, sizeof(err))) {
				fprintf(stderr, "rdmaps: --auth_token_file=%s: %s\n", optarg, err);
				return 2;
			}
			break;
		case O_PS:
			if (!launch_mode) goto unknown;
			if (parse_int("ps", optarg, 1, 64, &v)) return 2;
			j->nps = (int)v;
			break;
		case O_WORKERS:
			if (!launch_mode) goto unknown;
			if (parse_int("workers", optarg, 1, 64, &v)) return 2;
			j->nworkers = (int)v;
			break;
		case O_WORKER_NICE:
			if (!launch_mode) goto unknown;
			if (parse_int("worker_nice", optarg, 0, 19, &v)) return 2;
			j->worker_nice = (int)v;
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		case O_VERSION:
			version();
			exit(0);
		default:
		unknown:
			fprintf(stderr, "rdmaps: unknown or malformed flag '%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmaps: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	/* the distributed lstm has the 128 units (layout.c); the flag
	 * sizes the mlp, and was ignored here without a word until 2026-12-06 */
	if (hidden_set && j->model == RDM_MODEL_LSTM && j->hidden_units != 128) {
		fprintf(stderr, "rdmaps: --hidden_units=%d: the distributed lstm has 128 hidden units "
			"(--hidden_units sizes the mlp; rdmaps train takes other lstm sizes)\n", j->hidden_units);
		return 2;
	}
	if (launch_mode && (j->job_name[0] || j->task_index >= 0 || j->ps_hosts || j->worker_hosts)) {
		fprintf(stderr, "rdmaps launch: --%s: launch gives every task its --job_name, --task_index, "
			"--ps_hosts and --worker_hosts itself (from --ps and --workers); drop it\n",
			j->job_name[0] ? "job_name" : j->task_index >= 0 ? "task_index" : j->ps_hosts ? "ps_hosts"
			: "worker_hosts");
		return 2;
	}
	if (launch_mode || *download_only)
		return 0;

	/* --job_name with neither host list, beside a cluster in the
	 * environment: the host lists would be mnist_replica's defaults
	 * (localhost:2222, ...) while TF_CONFIG or Slurm names others; which
	 * one is meant is a guess (it used to be the defaults, silently) */
	const char *env_cluster = getenv("TF_CONFIG") && *getenv("TF_CONFIG") ? "TF_CONFIG"
				  : getenv("SLURM_PROCID") && slurm_ps > 0 ? "Slurm" : NULL;
	if (j->job_name[0] && !j->ps_hosts && !j->worker_hosts && env_cluster) {
		fprintf(stderr, "rdmaps: --job_name conflicts with the cluster from %s; give the whole cluster "
			"(--job_name, --task_index, --ps_hosts, --worker_hosts) on the command line, or none of it\n",
			env_cluster);
		return 2;
	}
	/* Cluster resolvers, as TensorFlow's: TF_CONFIG, then Slurm. */
	if (!j->job_name[0] && !j->ps_hosts) {
		struct rdmaps_cluster c;
		const char *tfc = getenv("TF_CONFIG");
		int have = 0;
		memset(&c, 0, sizeof(c));
		if (tfc && *tfc) {
			if (rdmaps_cluster_from_tf_config(tfc, &c, err, sizeof(err))) {
				fprintf(stderr, "rdmaps: %s\n", err);
				return 2;
			}
			have = 1;
		} else if (getenv("SLURM_PROCID") && slurm_ps > 0) {
			if (rdmaps_cluster_from_slurm(slurm_ps, (int)port_base, &c, err, sizeof(err))) {
				fprintf(stderr, "rdmaps: Slurm: %s\n", err);
				return 2;
			}
			have = 1;
		}
		if (have && (j->task_index >= 0 || j->worker_hosts)) {
			/* half a cluster from flags, half from the environment:
			 * which one is meant is a guess, so neither is taken */
			fprintf(stderr, "rdmaps: --%s conflicts with the cluster from %s; give the whole cluster "
				"(--job_name, --task_index, --ps_hosts, --worker_hosts) on the command line, or none of it\n",
				j->task_index >= 0 ? "task_index" : "worker_hosts", tfc && *tfc ? "TF_CONFIG" : "Slurm");
			rdmaps_cluster_free(&c);
			return 2;
		}
		if (have) {
			snprintf(j->job_name, sizeof(j->job_name), "%s", c.job_name);
			j->task_index = c.task_index;
			j->ps_hosts = c.ps_hosts;
			j->nps = c.nps;
			j->worker_hosts = c.worker_hosts;
			j->nworkers = c.nworkers;
		}
	}
	if (!j->job_name[0]) {
		if (getenv("SLURM_PROCID") && slurm_ps <= 0)
			fprintf(stderr, "rdmaps: must specify --job_name (ps or worker), or TF_CONFIG; under Slurm, "
				"--slurm_num_ps=N makes the first N tasks ps\n");
		else
			fprintf(stderr, "rdmaps: must specify --job_name (ps or worker), or TF_CONFIG\n");
		return 2;
	}
	if (j->task_index < 0) {
		fprintf(stderr, "rdmaps: must specify --task_index\n");
		return 2;
	}
	/* mnist_replica's defaults: one ps and two workers on this host */
	if ((!j->ps_hosts && rdmaps_parse_hostlist("localhost:2222", &j->ps_hosts, &j->nps, err, sizeof(err))) ||
	    (!j->worker_hosts &&
	     rdmaps_parse_hostlist("localhost:2223,localhost:2224", &j->worker_hosts, &j->nworkers, err, sizeof(err)))) {
		fprintf(stderr, "rdmaps: the default host lists: %s\n", err);
		return 2;
	}
	int n = !strcmp(j->job_name, "ps") ? j->nps : j->nworkers;
	if (j->task_index >= n) {
		fprintf(stderr, "rdmaps: --task_index=%d out of range: the %s job has %d task(s)\n",
			j->task_index, j->job_name, n);
		return 2;
	}
	if (j->replicas > 0 && !j->sync)
		fprintf(stderr, "rdmaps: note: --replicas_to_aggregate is ignored without --sync_replicas\n");
	return 0;
}

/* The host lists parse_flags allocated (LeakSanitizer counts them). */
static void job_free(struct rdmaps_job *j)
{
	hostlist_free(&j->ps_hosts, &j->nps);
	hostlist_free(&j->worker_hosts, &j->nworkers);
}

/* `rdmaps ports N [IPV4]`: N distinct ports free on IPV4 now, picked as
 * `rdmaps launch` picks its tasks' ports (below the ephemeral range), one
 * line, space-separated; for scripts that start tasks by hand (the kill
 * tests).  Exit 2 on bad arguments, 1 when no ports could be found. */
static int ports_main(int argc, char **argv)
{
	const char *host = argc > 2 ? argv[2] : "127.0.0.1";
	struct in_addr a;
	int ports[64];
	long n;
	char *end;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "rdmaps: usage: rdmaps ports N [IPV4]\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || n < 1 || n > 64) {
		fprintf(stderr, "rdmaps: ports: N must be an integer from 1 to 64, got '%s'\n", argv[1]);
		return 2;
	}
	if (inet_pton(AF_INET, host, &a) != 1) {
		fprintf(stderr, "rdmaps: ports: '%s' is not an IPv4 address\n", host);
		return 2;
	}
	if (rdmaps_pick_ports(host, (int)n, ports)) {
		fprintf(stderr, "rdmaps: ports: could not find %ld free ports on %s\n", n, host);
		return 1;
	}
	for (long k = 0; k < n; k++)
		printf("%d%c", ports[k], k + 1 < n ? ' ' : '\n');
	return 0;
}

/* --download_only, as mnist_replica's: every task first gets the data,
 * then this flag exits before any cluster work.  rdmaps does not download
 * (scripts/fetch-data.sh fetches and checks MNIST); it loads --data_dir as a
 * worker would, plus the test files, and says whether that works.  Exit 0
 * when it does, 1 when it does not. */
static int download_only_main(const struct rdmaps_job *j)
{
	struct rdm_images tr, va, te;
	char err[512];
	int rc = rdm_mnist_load(j->data_dir, &tr, &va, &te, err, sizeof(err));

	if (!rc && ((rc = rdm_images_check_28x28(&tr, "train-images-idx3-ubyte", err, sizeof(err))) ||
		    (rc = rdm_images_check_28x28(&te, "t10k-images-idx3-ubyte", err, sizeof(err))))) {
		rdm_images_free(&tr);
		rdm_images_free(&va);
		rdm_images_free(&te);
	}
	if (rc) {
		fprintf(stderr, "rdmaps: --download_only: no usable MNIST-format data set in %s: %s\n", j->data_dir,
			err[0] ? err : rdmaps_strerror(rc));
		return 1;
	}
	printf("--download_only: %s holds a complete MNIST-format data set: %d training, %d validation, %d test images; "
	       "nothing to download\n", j->data_dir, tr.n, va.n, te.n);
	rdm_images_free(&tr);
	rdm_images_free(&va);
	rdm_images_free(&te);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdmaps_job j;
	int rc, download_only = 0;

	/* the commands that compute, or start processes that do (not the
	 * helpers ports and devices): on a CPU that OpenBLAS does not know,
	 * run again with the kernels it supports (kernels/blas_core.h) */
	if (!(argc > 1 && (!strcmp(argv[1], "ports") || !strcmp(argv[1], "devices"))))
		rdm_blas_fix_core("rdmaps", argv);
	if (argc > 1 && !strcmp(argv[1], "train"))
		return rdm_train_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "ports"))
		return ports_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "devices"))
		return rdmaps_devices_main(argc - 1, argv + 1);
	rdmaps_job_defaults(&j);
	if (argc > 1 && !strcmp(argv[1], "launch")) {
		rc = parse_flags(argc - 1, argv + 1, &j, 1, &download_only);
		if (!rc)
			rc = download_only ? download_only_main(&j) : rdmaps_launch(&j, argc - 2, argv + 2);
		job_free(&j);
		return rc;
	}
	rc = parse_flags(argc, argv, &j, 0, &download_only);
	if (!rc && download_only) {
		rc = download_only_main(&j);
	} else if (!rc) {
		printf("job name = %s\ntask index = %d\n", j.job_name, j.task_index);
		fflush(stdout);
		rc = !strcmp(j.job_name, "ps") ? rdmaps_ps_main(&j) : rdmaps_worker_main(&j);
	}
	job_free(&j);
	return rc;
}
