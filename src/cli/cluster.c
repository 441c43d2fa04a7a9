/* rdmaps cluster description: flags, TF_CONFIG, Slurm.  See cluster.h. */
#include "cluster.h"

#include "common/status.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HOSTS 65536
#define HOSTLEN 256

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return RDMAPS_E_INVAL;
}

static void free_strv(char **v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int rdmaps_read_token_file(const char *path, char *out, size_t outsz, char *err, size_t errlen)
{
	char tb[256];
	FILE *f;
	size_t n;

	if (!path || !out || outsz < 2 || outsz > sizeof(tb) - 2)
		return fail(err, errlen, "bad arguments");
	if (!(f = fopen(path, "r"))) {
		fail(err, errlen, "%s", strerror(errno));
		return RDMAPS_E_IO;
	}
	/* one byte past the limit, and room for a CR LF: a longer token shows */
	n = fread(tb, 1, outsz + 2, f);
	int rerr = ferror(f) ? errno : 0;
	fclose(f);
	if (rerr) {
		fail(err, errlen, "%s", strerror(rerr));
		return RDMAPS_E_IO;
	}
	while (n && (tb[n - 1] == '\n' || tb[n - 1] == '\r'))
		n--;
	if (!n)
		return fail(err, errlen, "empty token");
	if (n > outsz - 1 || memchr(tb, 0, n))
		return fail(err, errlen, "the token must be 1 to %zu bytes without NUL (one line; a trailing newline "
			    "is dropped)", outsz - 1);
	memcpy(out, tb, n);
	out[n] = 0;
	return 0;
}

int rdmaps_parse_bool(const char *s, int *out)
{
	/* absl's BooleanParser takes true/t/1 and false/f/0 in any case */
	static const char *yes[] = { "true", "1", "yes", "t" };
	static const char *no[] = { "false", "0", "no", "f" };
	if (!out)
		return RDMAPS_E_INVAL;
	if (!s) {
		*out = 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return RDMAPS_E_INVAL;
}

/* Strict decimal port 1..65535, no leading zero (a:02222 and a:2222 would
 * pass the duplicate check as two entries and then collide). */
static int parse_port(const char *s, uint16_t *port)
{
	if (!*s || strlen(s) > 5 || s[0] == '0')
		return RDMAPS_E_INVAL;
	unsigned long v = 0;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return RDMAPS_E_INVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return RDMAPS_E_INVAL;
	*port = (uint16_t)v;
	return 0;
}

int rdmaps_split_hostport(const char *hp, char *host, size_t hostlen, uint16_t *port)
{
	const char *hs, *he, *ps;
	if (!hp || !host || !hostlen || !port)
		return RDMAPS_E_INVAL;
	if (hp[0] == '[') {
		hs = hp + 1;
		he = strchr(hs, ']');
		if (!he || he[1] != ':')
			return RDMAPS_E_INVAL;
		ps = he + 2;
	} else {
		hs = hp;
		he = strrchr(hp, ':');
		if (!he)
			return RDMAPS_E_INVAL;
		if (memchr(hp, ':', (size_t)(he - hp))) /* bare IPv6 needs brackets */
			return RDMAPS_E_INVAL;
		ps = he + 1;
	}
	size_t hl = (size_t)(he - hs);
	if (hl == 0 || hl >= hostlen)
		return RDMAPS_E_INVAL;
	for (size_t i = 0; i < hl; i++)
		if (isspace((unsigned char)hs[i]) || hs[i] == ',' || hs[i] == '[' || hs[i] == ']')
			return RDMAPS_E_INVAL;
	uint16_t p;
	if (parse_port(ps, &p))
		return RDMAPS_E_INVAL;
	memcpy(host, hs, hl);
	host[hl] = '\0';
	*port = p;
	return 0;
}

void rdmaps_report_transport_error(const char *who, const char *host, int rc)
{
	fprintf(stderr, "%s: transport: %s\n", who, rdmaps_strerror(rc));
	if (rc == RDMAPS_E_NODEV)
		fprintf(stderr, "%s: no RDMA port serves %s: `rdmaps devices %s` lists them, "
			"--transport=auto falls back to tcp\n", who, host, host);
}

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* localhost and the spellings of it that /etc/hosts and RFC 6761 give: a
 * task named so is meant to be reachable from this host only */
static int loopback_name(const char *h)
{
	static const char *const names[] = { "localhost", "localhost.localdomain",
					     "ip6-localhost", "ip6-loopback" };
	size_t n = strlen(h);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(h, names[i]))
			return 1;
	return n > 10 && !strcasecmp(h + n - 10, ".localhost");
}

int rdmaps_local_bind_host(const char *host, char *out, size_t outlen, char *why, size_t whylen)
{
	struct addrinfo hints, *ai = NULL;
	char first[INET6_ADDRSTRLEN] = "";
	int v4 = 0, all_lo = 1, sub = 0;

	snprintf(out, outlen, "%s", host);
	if (why && whylen)
		why[0] = '\0';
	if (!*host || loopback_name(host))
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, NULL, &hints, &ai) == 0) { /* a literal: meant as written */
		freeaddrinfo(ai);
		return 0;
	}
	hints.ai_flags = 0;
	ai = NULL;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return 0;
	/* the first address is the one a verbs listener binds (verbs_conn.c
	 * takes the first getaddrinfo answer; tcp_setup.c binds each, since
	 * stop 28): a loopback one first means the wildcard, on both */
	if (is_loopback(ai->ai_addr)) {
		getnameinfo(ai->ai_addr, ai->ai_addrlen, first, sizeof(first), NULL, 0, NI_NUMERICHOST);
		for (const struct addrinfo *a = ai; a; a = a->ai_next) {
			all_lo &= is_loopback(a->ai_addr);
			v4 |= a->ai_family == AF_INET;
		}
		/* a name with a real address too: the wildcard of the first one's family */
		snprintf(out, outlen, "%s", ai->ai_family == AF_INET || (all_lo && v4) ? "0.0.0.0" : "::");
		if (why && whylen)
			snprintf(why, whylen, "%s resolves here to %s%s", host, first[0] ? first : "?",
				 all_lo ? ", a loopback address only" : " first, a loopback address");
		sub = 1;
	}
	freeaddrinfo(ai);
	return sub;
}

/* Validate one "host:port" entry; err names it. */
static int check_entry(const char *what, int idx, const char *e, char *err, size_t errlen)
{
	char host[HOSTLEN];
	uint16_t port;
	if (!*e)
		return fail(err, errlen, "%s entry %d is empty", what, idx + 1);
	if (!rdmaps_split_hostport(e, host, sizeof host, &port))
		return 0;
	const char *colon = e[0] == '[' ? strstr(e, "]:") : strrchr(e, ':');
	if (!colon)
		return fail(err, errlen, "%s entry %d '%s': missing ':port'", what, idx + 1, e);
	if (colon == e || (e[0] == '[' && colon == e + 1))
		return fail(err, errlen, "%s entry %d '%s': empty host", what, idx + 1, e);
	const char *ps = colon + (e[0] == '[' ? 2 : 1);
	if (parse_port(ps, &port))
		return fail(err, errlen, "%s entry %d '%s': invalid port '%s' (want 1..65535, no leading zero)",
			    what, idx + 1, e, ps);
	return fail(err, errlen, "%s entry %d '%s': malformed host", what, idx + 1, e);
}

int rdmaps_parse_hostlist(const char *s, char ***hosts, int *n, char *err, size_t errlen)
{
	if (!hosts || !n)
		return RDMAPS_E_INVAL;
	*hosts = NULL;
	*n = 0;
	if (!s || !*s)
		return fail(err, errlen, "host list is empty");
	int cap = 1;
	for (const char *p = s; *p; p++)
		cap += *p == ',';
	if (cap > MAX_HOSTS)
		return fail(err, errlen, "host list has more than %d entries", MAX_HOSTS);
	char **v = calloc((size_t)cap, sizeof *v);
	if (!v) {
		fail(err, errlen, "out of memory");
		return RDMAPS_E_NOMEM;
	}
	int cnt = 0, rc = 0;
	const char *p = s;
	for (;;) {
		const char *q = strchr(p, ',');
		size_t len = q ? (size_t)(q - p) : strlen(p);
		char *e = strndup(p, len);
		if (!e) {
			fail(err, errlen, "out of memory");
			rc = RDMAPS_E_NOMEM;
			goto out;
		}
		v[cnt] = e;
		rc = check_entry("host", cnt, e, err, errlen);
		if (rc) {
			cnt++;
			goto out;
		}
		for (int j = 0; j < cnt; j++)
			if (!strcmp(v[j], e)) {
				rc = fail(err, errlen, "host entry %d '%s' duplicates entry %d",
					  cnt + 1, e, j + 1);
				cnt++;
				goto out;
			}
		cnt++;
		if (!q)
			break;
		p = q + 1;
	}
out:
	if (rc) {
		free_strv(v, cnt);
		return rc;
	}
	*hosts = v;
	*n = cnt;
	return 0;
}

void rdmaps_cluster_free(struct rdmaps_cluster *c)
{
	if (!c)
		return;
	free_strv(c->ps_hosts, c->nps);
	free_strv(c->worker_hosts, c->nworkers);
	memset(c, 0, sizeof *c);
}

/* Hands the host lists *ps (nps entries) and *wk (nwk) over to c, which owns
 * them from now on (rdmaps_cluster_free), and clears the caller's pointers
 * so that its cleanup frees nothing. */
static void cluster_take_hosts(struct rdmaps_cluster *c, char ***ps, int nps, char ***wk,
			       int nwk)
{
	c->ps_hosts = *ps;
	c->nps = nps;
	c->worker_hosts = *wk;
	c->nworkers = nwk;
	*ps = *wk = NULL;
}

/* ---- TF_CONFIG ---------------------------------------------------------- */

/* Copy a JSON array of "host:port" strings into *out (appended at *n). */
static int json_hosts(const cJSON *arr, const char *job, char **out, int *n, char *err,
		      size_t errlen)
{
	if (!cJSON_IsArray(arr))
		return fail(err, errlen, "TF_CONFIG cluster.%s must be an array of \"host:port\"",
			    job);
	int i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr) {
		if (!cJSON_IsString(it))
			return fail(err, errlen, "TF_CONFIG cluster.%s[%d] is not a string", job, i);
		char what[48];
		snprintf(what, sizeof what, "TF_CONFIG cluster.%s", job);
		int rc = check_entry(what, i, it->valuestring, err, errlen);
		if (rc)
			return rc;
		out[*n] = strdup(it->valuestring);
		if (!out[*n])
			return RDMAPS_E_NOMEM;
		(*n)++;
		i++;
	}
	return 0;
}

/* The first key that an object holds twice, or NULL.  Python's json (TF's
 * reader) keeps the last of them, cJSON finds the first: the same
 * TF_CONFIG would name another task here than in TensorFlow. */
static const char *dup_key(const cJSON *o)
{
	for (const cJSON *a = o ? o->child : NULL; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next)
			if (a->string && b->string && !strcmp(a->string, b->string))
				return a->string;
	return NULL;
}

int rdmaps_cluster_from_tf_config(const char *json, struct rdmaps_cluster *c, char *err,
				  size_t errlen)
{
	if (!c)
		return RDMAPS_E_INVAL;
	memset(c, 0, sizeof *c);
	if (!json || !*json)
		return fail(err, errlen, "TF_CONFIG is empty");
	/* require_null_terminated: junk after the object is an error, not ignored */
	cJSON *root = cJSON_ParseWithOpts(json, NULL, 1);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		if (!at || !*at)
			return fail(err, errlen, "TF_CONFIG is not valid JSON (it ends too early: a missing '}' or ']'?)");
		return fail(err, errlen, "TF_CONFIG is not valid JSON (near '%.20s', character %ld)", at,
			    (long)(at - json) + 1);
	}
	int rc = 0;
	char **ps = NULL, **wk = NULL;
	int nps = 0, nwk = 0;
	if (!cJSON_IsObject(root)) {
		rc = fail(err, errlen, "TF_CONFIG must be a JSON object");
		goto out;
	}
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "cluster");
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(root, "task");
	{
		const char *d = dup_key(root), *in = "";

		if (!d && cJSON_IsObject(cl) && (d = dup_key(cl)))
			in = "cluster.";
		if (!d && cJSON_IsObject(task) && (d = dup_key(task)))
			in = "task.";
		if (d) {
			rc = fail(err, errlen, "TF_CONFIG has the key \"%s%s\" twice (TensorFlow would take the "
				  "last one; give it once)", in, d);
			goto out;
		}
	}
	if (!cl || !cJSON_IsObject(cl)) {
		rc = fail(err, errlen, "TF_CONFIG has no \"cluster\" object");
		goto out;
	}
	if (!task || !cJSON_IsObject(task)) {
		rc = fail(err, errlen, "TF_CONFIG has no \"task\" object");
		goto out;
	}
	const cJSON *ttype = cJSON_GetObjectItemCaseSensitive(task, "type");
	const cJSON *tidx = cJSON_GetObjectItemCaseSensitive(task, "index");
	if (!cJSON_IsString(ttype)) {
		rc = fail(err, errlen, "TF_CONFIG task.type missing or not a string");
		goto out;
	}
	if (!tidx || !cJSON_IsNumber(tidx) || tidx->valuedouble != (double)(int)tidx->valuedouble ||
	    tidx->valuedouble < 0) {
		rc = fail(err, errlen, "TF_CONFIG task.index missing or not a non-negative integer");
		goto out;
	}
	const char *type = ttype->valuestring;
	int index = (int)tidx->valuedouble;

	const cJSON *jps = cJSON_GetObjectItemCaseSensitive(cl, "ps");
	const cJSON *jwk = cJSON_GetObjectItemCaseSensitive(cl, "worker");
	const cJSON *jch = cJSON_GetObjectItemCaseSensitive(cl, "chief");
	const cJSON *jma = cJSON_GetObjectItemCaseSensitive(cl, "master");
	if (jch && jma) {
		rc = fail(err, errlen, "TF_CONFIG cluster has both \"chief\" and \"master\"");
		goto out;
	}
	const char *chief_name = jch ? "chief" : "master";
	if (!jch)
		jch = jma;
	if (!jps) {
		rc = fail(err, errlen, "TF_CONFIG cluster has no \"ps\" job");
		goto out;
	}
	int sz_ps = cJSON_IsArray(jps) ? cJSON_GetArraySize(jps) : 0;
	int sz_wk = jwk && cJSON_IsArray(jwk) ? cJSON_GetArraySize(jwk) : 0;
	int sz_ch = jch && cJSON_IsArray(jch) ? cJSON_GetArraySize(jch) : 0;
	if (jch && cJSON_IsArray(jch) && sz_ch != 1) {
		rc = fail(err, errlen, "TF_CONFIG cluster.%s must have exactly one entry (has %d)",
			  chief_name, sz_ch);
		goto out;
	}
	ps = calloc((size_t)sz_ps + 1, sizeof *ps);
	wk = calloc((size_t)sz_wk + (size_t)sz_ch + 1, sizeof *wk);
	if (!ps || !wk) {
		rc = RDMAPS_E_NOMEM;
		goto out;
	}
	if ((rc = json_hosts(jps, "ps", ps, &nps, err, errlen)))
		goto out;
	if (jch && (rc = json_hosts(jch, chief_name, wk, &nwk, err, errlen)))
		goto out;
	if (jwk && (rc = json_hosts(jwk, "worker", wk, &nwk, err, errlen)))
		goto out;
	if (nps < 1) {
		rc = fail(err, errlen, "TF_CONFIG cluster.ps is empty");
		goto out;
	}
	if (nwk < 1) {
		rc = fail(err, errlen, "TF_CONFIG cluster has no worker or chief");
		goto out;
	}
	/* all addresses distinct */
	for (int i = 0; i < nps + nwk; i++)
		for (int j = 0; j < i; j++) {
			const char *a = i < nps ? ps[i] : wk[i - nps];
			const char *b = j < nps ? ps[j] : wk[j - nps];
			if (!strcmp(a, b)) {
				rc = fail(err, errlen, "TF_CONFIG address '%s' is used twice", a);
				goto out;
			}
		}

	int shift = sz_ch ? 1 : 0;
	if (!strcmp(type, "ps")) {
		if (index >= nps) {
			rc = fail(err, errlen, "TF_CONFIG task ps:%d out of range (%d ps tasks)",
				  index, nps);
			goto out;
		}
		strcpy(c->job_name, "ps");
		c->task_index = index;
	} else if (!strcmp(type, "worker")) {
		if (index >= sz_wk) {
			rc = fail(err, errlen, "TF_CONFIG task worker:%d out of range (%d worker tasks)",
				  index, sz_wk);
			goto out;
		}
		strcpy(c->job_name, "worker");
		c->task_index = index + shift;
	} else if (!strcmp(type, "chief") || !strcmp(type, "master")) {
		if (!sz_ch || strcmp(type, chief_name)) {
			rc = fail(err, errlen, "TF_CONFIG task type '%s' but cluster has no %s job",
				  type, type);
			goto out;
		}
		if (index != 0) {
			rc = fail(err, errlen, "TF_CONFIG task %s:%d out of range (1 %s task)", type,
				  index, type);
			goto out;
		}
		strcpy(c->job_name, "worker");
		c->task_index = 0;
	} else if (!strcmp(type, "evaluator")) {
		rc = fail(err, errlen,
			  "TF_CONFIG task type 'evaluator' is not part of the training cluster");
		goto out;
	} else {
		rc = fail(err, errlen, "TF_CONFIG task type '%s' unknown (want ps, worker, chief)",
			  type);
		goto out;
	}
	cluster_take_hosts(c, &ps, nps, &wk, nwk);
out:
	free_strv(ps, nps);
	free_strv(wk, nwk);
	cJSON_Delete(root);
	if (rc)
		memset(c, 0, sizeof *c);
	return rc;
}

/* ---- Slurm -------------------------------------------------------------- */

struct strvec {
	char **v;
	int n, cap;
};

static int sv_push(struct strvec *sv, char *s)
{
	if (!s)
		return RDMAPS_E_NOMEM;
	if (sv->n == sv->cap) {
		int nc = sv->cap ? sv->cap * 2 : 8;
		char **nv = realloc(sv->v, (size_t)nc * sizeof *nv);
		if (!nv) {
			free(s);
			return RDMAPS_E_NOMEM;
		}
		sv->v = nv;
		sv->cap = nc;
	}
	sv->v[sv->n++] = s;
	return 0;
}

static int parse_uint(const char *s, size_t len, long *out)
{
	if (len == 0 || len > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Expand one hostlist item (no top-level commas), e.g. "r[1-2]c[01-03,7]x", by
 * recursion over its bracket groups; prefix holds the text built so far. */
static int expand_item(const char *item, char *prefix, size_t plen, struct strvec *sv,
		       char *err, size_t errlen)
{
	const char *lb = strchr(item, '[');
	if (!lb) {
		size_t il = strlen(item);
		if (plen + il >= HOSTLEN)
			return fail(err, errlen, "nodelist: host name too long");
		if (strchr(item, ']'))
			return fail(err, errlen, "nodelist: unbalanced ']'");
		memcpy(prefix + plen, item, il + 1);
		if (sv->n >= MAX_HOSTS)
			return fail(err, errlen, "nodelist: more than %d hosts", MAX_HOSTS);
		return sv_push(sv, strdup(prefix));
	}
	const char *rb = strchr(lb, ']');
	if (!rb)
		return fail(err, errlen, "nodelist: unbalanced '['");
	size_t pre = (size_t)(lb - item);
	if (memchr(item, ']', pre))
		return fail(err, errlen, "nodelist: unbalanced ']'");
	if (plen + pre >= HOSTLEN)
		return fail(err, errlen, "nodelist: host name too long");
	memcpy(prefix + plen, item, pre);
	size_t base = plen + pre;
	const char *p = lb + 1;
	if (p == rb)
		return fail(err, errlen, "nodelist: empty brackets");
	while (p < rb) {
		const char *comma = memchr(p, ',', (size_t)(rb - p));
		const char *end = comma ? comma : rb;
		const char *dash = memchr(p, '-', (size_t)(end - p));
		long lo, hi;
		size_t width;
		if (dash) {
			if (parse_uint(p, (size_t)(dash - p), &lo) ||
			    parse_uint(dash + 1, (size_t)(end - dash - 1), &hi))
				return fail(err, errlen, "nodelist: bad range '%.*s'",
					    (int)(end - p), p);
			width = (size_t)(dash - p);
		} else {
			if (parse_uint(p, (size_t)(end - p), &lo))
				return fail(err, errlen, "nodelist: bad number '%.*s'",
					    (int)(end - p), p);
			hi = lo;
			width = (size_t)(end - p);
		}
		if (hi < lo)
			return fail(err, errlen, "nodelist: descending range '%.*s'",
				    (int)(end - p), p);
		if (hi - lo >= MAX_HOSTS)
			return fail(err, errlen, "nodelist: more than %d hosts", MAX_HOSTS);
		for (long v = lo; v <= hi; v++) {
			char num[32];
			int nl = snprintf(num, sizeof num, "%0*ld", (int)width, v);
			if (base + (size_t)nl >= HOSTLEN)
				return fail(err, errlen, "nodelist: host name too long");
			memcpy(prefix + base, num, (size_t)nl + 1);
			int rc = expand_item(rb + 1, prefix, base + (size_t)nl, sv, err, errlen);
			if (rc)
				return rc;
		}
		p = comma ? comma + 1 : rb;
		if (comma && comma + 1 == rb)
			return fail(err, errlen, "nodelist: empty entry in brackets");
	}
	return 0;
}

int rdmaps_slurm_expand_nodelist(const char *s, char ***names, int *n, char *err,
				 size_t errlen)
{
	if (!names || !n)
		return RDMAPS_E_INVAL;
	*names = NULL;
	*n = 0;
	if (!s || !*s)
		return fail(err, errlen, "nodelist is empty");
	struct strvec sv = { 0 };
	char prefix[HOSTLEN];
	char item[1024];
	int rc = 0;
	const char *p = s;
	while (!rc) {
		/* find the next top-level comma */
		const char *q = p;
		int depth = 0;
		while (*q && (depth || *q != ',')) {
			if (*q == '[')
				depth++;
			else if (*q == ']')
				depth--;
			if (depth < 0 || depth > 1) {
				rc = fail(err, errlen, "nodelist '%s': unbalanced brackets", s);
				break;
			}
			q++;
		}
		if (rc)
			break;
		size_t len = (size_t)(q - p);
		if (len == 0) {
			rc = fail(err, errlen, "nodelist '%s': empty entry", s);
			break;
		}
		if (len >= sizeof item) {
			rc = fail(err, errlen, "nodelist entry too long");
			break;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		rc = expand_item(item, prefix, 0, &sv, err, errlen);
		if (!*q)
			break;
		p = q + 1;
	}
	if (!rc)
		for (int i = 0; i < sv.n && !rc; i++)
			for (int j = 0; j < i; j++)
				if (!strcmp(sv.v[i], sv.v[j])) {
					rc = fail(err, errlen, "nodelist: host '%s' listed twice",
						  sv.v[i]);
					break;
				}
	if (rc) {
		free_strv(sv.v, sv.n);
		return rc;
	}
	*names = sv.v;
	*n = sv.n;
	return 0;
}

int rdmaps_slurm_expand_tasks_per_node(const char *s, int **counts, int *n, char *err,
				       size_t errlen)
{
	if (!counts || !n)
		return RDMAPS_E_INVAL;
	*counts = NULL;
	*n = 0;
	if (!s || !*s)
		return fail(err, errlen, "tasks-per-node is empty");
	int *v = NULL, cnt = 0, cap = 0;
	const char *p = s;
	for (;;) {
		const char *q = strchr(p, ',');
		size_t len = q ? (size_t)(q - p) : strlen(p);
		const char *paren = memchr(p, '(', len);
		long num, rep = 1;
		size_t nl = paren ? (size_t)(paren - p) : len;
		if (parse_uint(p, nl, &num) || num < 1)
			goto bad;
		if (paren) {
			/* "(xK)" */
			if (len < nl + 4 || paren[1] != 'x' || p[len - 1] != ')' ||
			    parse_uint(paren + 2, len - nl - 3, &rep) || rep < 1)
				goto bad;
		}
		if (cnt + rep > MAX_HOSTS) {
			free(v);
			return fail(err, errlen, "tasks-per-node: more than %d nodes", MAX_HOSTS);
		}
		if (cnt + rep > cap) {
			int nc = (int)(cnt + rep) * 2;
			int *nv = realloc(v, (size_t)nc * sizeof *nv);
			if (!nv) {
				free(v);
				return RDMAPS_E_NOMEM;
			}
			v = nv;
			cap = nc;
		}
		for (long r = 0; r < rep; r++)
			v[cnt++] = (int)num;
		if (!q)
			break;
		p = q + 1;
		continue;
bad:
		free(v);
		return fail(err, errlen, "tasks-per-node '%s': bad entry '%.*s' (want N or N(xK))",
			    s, (int)len, p);
	}
	*counts = v;
	*n = cnt;
	return 0;
}

static const char *env2(const char *a, const char *b)
{
	const char *v = getenv(a);
	if (!v || !*v)
		v = getenv(b);
	return v && *v ? v : NULL;
}

static int env_int(const char *name, const char *v, long *out, char *err, size_t errlen)
{
	if (parse_uint(v, strlen(v), out))
		return fail(err, errlen, "%s='%s' is not a non-negative integer", name, v);
	return 0;
}

struct hostslot {
	const char *name;
	int ntasks;
};

static int cmp_host(const void *a, const void *b)
{
	return strcmp(((const struct hostslot *)a)->name, ((const struct hostslot *)b)->name);
}

int rdmaps_cluster_from_slurm(int nps, int port_base, struct rdmaps_cluster *c, char *err,
			      size_t errlen)
{
	if (!c)
		return RDMAPS_E_INVAL;
	memset(c, 0, sizeof *c);
	if (nps < 1)
		return fail(err, errlen, "slurm: need at least one ps task (nps=%d)", nps);
	if (port_base < 1 || port_base > 65535)
		return fail(err, errlen, "slurm: port_base %d out of range", port_base);

	const char *s_rank = getenv("SLURM_PROCID");
	const char *s_nt = env2("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS");
	const char *s_nl = env2("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
	const char *s_tpn = env2("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
	if (!s_rank || !*s_rank)
		return fail(err, errlen, "slurm: SLURM_PROCID not set (not inside srun?)");
	if (!s_nt)
		return fail(err, errlen, "slurm: SLURM_STEP_NUM_TASKS / SLURM_NTASKS not set");
	if (!s_nl)
		return fail(err, errlen, "slurm: SLURM_STEP_NODELIST / SLURM_JOB_NODELIST not set");
	long rank = 0, ntasks = 0;
	int rc;
	if ((rc = env_int("SLURM_PROCID", s_rank, &rank, err, errlen)))
		return rc;
	if ((rc = env_int("SLURM_STEP_NUM_TASKS", s_nt, &ntasks, err, errlen)))
		return rc;
	if (ntasks < 1 || rank >= ntasks)
		return fail(err, errlen, "slurm: SLURM_PROCID %ld out of range (%ld tasks)", rank,
			    ntasks);
	if (nps >= ntasks)
		return fail(err, errlen, "slurm: %d ps tasks leave no worker among %ld tasks", nps,
			    ntasks);

	char **nodes = NULL;
	int nnodes = 0, *tpn = NULL, ntpn = 0;
	struct hostslot *hs = NULL;
	char **ps = NULL, **wk = NULL;
	int nps_done = 0, nwk_done = 0;
	if ((rc = rdmaps_slurm_expand_nodelist(s_nl, &nodes, &nnodes, err, errlen)))
		goto out;
	if (s_tpn) {
		if ((rc = rdmaps_slurm_expand_tasks_per_node(s_tpn, &tpn, &ntpn, err, errlen)))
			goto out;
		if (ntpn != nnodes) {
			rc = fail(err, errlen,
				  "slurm: tasks-per-node '%s' gives %d nodes, nodelist '%s' has %d",
				  s_tpn, ntpn, s_nl, nnodes);
			goto out;
		}
	} else {
		if (ntasks % nnodes) {
			rc = fail(err, errlen,
				  "slurm: no SLURM_STEP_TASKS_PER_NODE and %ld tasks do not divide over %d nodes",
				  ntasks, nnodes);
			goto out;
		}
		tpn = malloc((size_t)nnodes * sizeof *tpn);
		if (!tpn) {
			rc = RDMAPS_E_NOMEM;
			goto out;
		}
		for (int i = 0; i < nnodes; i++)
			tpn[i] = (int)(ntasks / nnodes);
	}
	long sum = 0;
	for (int i = 0; i < nnodes; i++)
		sum += tpn[i];
	if (sum != ntasks) {
		rc = fail(err, errlen, "slurm: tasks per node sum to %ld but the step has %ld tasks",
			  sum, ntasks);
		goto out;
	}
	hs = malloc((size_t)nnodes * sizeof *hs);
	ps = calloc((size_t)nps, sizeof *ps);
	wk = calloc((size_t)(ntasks - nps), sizeof *wk);
	if (!hs || !ps || !wk) {
		rc = RDMAPS_E_NOMEM;
		goto out;
	}
	for (int i = 0; i < nnodes; i++) {
		hs[i].name = nodes[i];
		hs[i].ntasks = tpn[i];
		if (port_base + tpn[i] - 1 > 65535) {
			rc = fail(err, errlen, "slurm: port_base %d + %d tasks on %s exceeds 65535",
				  port_base, tpn[i], nodes[i]);
			goto out;
		}
	}
	qsort(hs, (size_t)nnodes, sizeof *hs, cmp_host);
	for (int i = 0; i < nnodes; i++)
		for (int k = 0; k < hs[i].ntasks; k++) {
			char buf[HOSTLEN + 16];
			const char *fmt = strchr(hs[i].name, ':') ? "[%s]:%d" : "%s:%d";
			snprintf(buf, sizeof buf, fmt, hs[i].name, port_base + k);
			char *d = strdup(buf);
			if (!d) {
				rc = RDMAPS_E_NOMEM;
				goto out;
			}
			if (nps_done < nps)
				ps[nps_done++] = d;
			else
				wk[nwk_done++] = d;
		}
	if (rank < nps) {
		strcpy(c->job_name, "ps");
		c->task_index = (int)rank;
	} else {
		strcpy(c->job_name, "worker");
		c->task_index = (int)(rank - nps);
	}
	cluster_take_hosts(c, &ps, nps, &wk, nwk_done);
out:
	free_strv(ps, nps_done);
	free_strv(wk, nwk_done);
	free(hs);
	free(tpn);
	free_strv(nodes, nnodes);
	return rc;
}
