/* rdmaps cluster description: who is ps/worker, and where everybody listens.
 *
 * Three sources, mirroring TensorFlow 1.x conventions:
 *   - flags (--ps_hosts/--worker_hosts/--job_name/--task_index): the caller fills
 *     the struct with rdmaps_parse_hostlist();
 *   - TF_CONFIG JSON (Estimator/TFConfigClusterResolver): rdmaps_cluster_from_tf_config();
 *   - Slurm step environment (SlurmClusterResolver): rdmaps_cluster_from_slurm().
 *
 * All functions return 0 or a negative RDMAPS_E_* code (from common/status.h);
 * where an err buffer is taken it receives a one-line human message on failure
 * (err may be NULL / errlen 0).  Nothing is logged. */
#ifndef RDMAPS_CLI_CLUSTER_H
#define RDMAPS_CLI_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

struct rdmaps_cluster {
	char job_name[16];   /* "ps" or "worker" */
	int task_index;
	int nps, nworkers;
	char **ps_hosts;     /* nps "host:port" strings, malloc'd */
	char **worker_hosts; /* nworkers "host:port" strings, malloc'd */
};

/* --auth_token_file: read the token in PATH into out[outsz] (at most outsz - 1
 * bytes; callers pass RT_TOKEN_MAX + 1).  One trailing run of newlines is
 * dropped; an empty token, a longer one (refused, never cut: two tokens
 * alike in their first bytes would match) or one with a NUL byte is an
 * error.  Returns 0, or RDMAPS_E_IO / RDMAPS_E_INVAL with err saying why
 * (what follows "PATH: " in a message). */
int rdmaps_read_token_file(const char *path, char *out, size_t outsz, char *err, size_t errlen);

/* True/true/t/1/yes/False/false/f/0/no (letters case-insensitive); s == NULL (a bare
 * flag) means true.  Anything else: RDMAPS_E_INVAL, *out untouched. */
int rdmaps_parse_bool(const char *s, int *out);

/* "h:p,h:p,..." -> *hosts (malloc'd array of *n malloc'd strings, free with
 * free() each + free(array), or let rdmaps_cluster_free do it).  Rejects an empty
 * list, empty entries, empty host, missing/invalid port (1..65535) and duplicate
 * entries; err names the offending entry (1-based) and text.  On failure *hosts =
 * NULL, *n = 0. */
int rdmaps_parse_hostlist(const char *s, char ***hosts, int *n, char *err, size_t errlen);

/* "host:port" or "[v6addr]:port" -> host (without brackets) and port (1..65535).
 * RDMAPS_E_INVAL on a malformed string or a host that does not fit hostlen. */
int rdmaps_split_hostport(const char *hp, char *host, size_t hostlen, uint16_t *port);

/* The address a task listens on and looks for its RDMA port at, for its own
 * entry's host (a ps's --ps_hosts entry, a worker's --worker_hosts one).
 * Normally host itself.  But a host NAME whose first address here is a
 * loopback one (Debian's installer maps a machine's own name to 127.0.1.1
 * in /etc/hosts, alone or before its real address; Slurm node names hit it
 * too), other than localhost and its
 * spellings, would have the task listen where no other host reaches it, and
 * --transport=auto find no RDMA port: then out is the wildcard address of
 * that family ("0.0.0.0", or "::" for IPv6 only), where a TensorFlow server
 * listens too, and why says what was found ("NAME resolves here to
 * 127.0.1.1, a loopback address only", or "... 127.0.1.1 first, a loopback
 * address").  Returns 1 when it substituted, 0 when out is host (a literal
 * address, a loopback name, a name whose first address is not loopback, one
 * that does not resolve: the caller's own use of
 * it reports that).  out needs outlen >= strlen(host) + 1 and >= 8. */
int rdmaps_local_bind_host(const char *host, char *out, size_t outlen, char *why, size_t whylen);

/* A task (who: "ps 0", "Worker 1") whose transport did not start on host
 * (rt_ctx_new returned rc): says so on stderr, and for RDMAPS_E_NODEV also
 * which address no RDMA port serves and the command that lists them. */
void rdmaps_report_transport_error(const char *who, const char *host, int rc);

/* TF_CONFIG: {"cluster": {"ps": [...], "worker": [...], "chief": [one]},
 *             "task": {"type": "worker", "index": 1}}.
 * "chief" (or legacy "master", not both) becomes worker 0 and the workers shift by
 * one (task chief:0 -> worker:0, worker:i -> worker:i+1), so worker 0 is always the
 * chief as in mnist_replica's is_chief.  Other cluster keys ("evaluator", ...) are
 * ignored; task.type "evaluator" is refused (not part of the training cluster).
 * Requires at least one ps and one worker(+chief); all addresses distinct. */
int rdmaps_cluster_from_tf_config(const char *json, struct rdmaps_cluster *c, char *err,
				  size_t errlen);

/* Slurm step: SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS),
 * SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST), SLURM_STEP_TASKS_PER_NODE (else
 * SLURM_TASKS_PER_NODE; if neither, ntasks must divide evenly over the nodes).
 * Nodes are paired with their task counts in nodelist order, then sorted by name;
 * the k-th task slot on a host listens on port_base+k; the global slot list is cut
 * "ps" first (nps tasks), then "worker" (the rest, at least one). */
int rdmaps_cluster_from_slurm(int nps, int port_base, struct rdmaps_cluster *c, char *err,
			      size_t errlen);

/* Expand a Slurm hostlist ("n[1-2],m5", "node[01-03,7]", "r[1-2]c[1-2]") into
 * *n malloc'd names in list order.  Exposed for tests and tools. */
int rdmaps_slurm_expand_nodelist(const char *s, char ***names, int *n, char *err,
				 size_t errlen);
/* Expand "3(x2),2" into *n counts (malloc'd). */
int rdmaps_slurm_expand_tasks_per_node(const char *s, int **counts, int *n, char *err,
				       size_t errlen);

/* Free the host arrays and zero *c; accepts a zeroed struct and NULL. */
void rdmaps_cluster_free(struct rdmaps_cluster *c);

#endif
