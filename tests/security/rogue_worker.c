/* rogue_worker: a worker that holds legitimate identities (worker indices,
 * the right layout hash and auth token) and then tries to write where a
 * worker must not.  It is a real client of a real ps (`rdmaps --job_name=ps`),
 * started by tests/security/security.sh next to honest workers.
 *
 * The rogue bypasses its OWN transport's argument checks (it edits the
 * descriptor table it learned, through rt_internal.h) so that every forged
 * operation really reaches the ps: what is tested is the ps side (verbs:
 * MR access flags and one protection domain per connection; TCP: the serve
 * thread's bounds and rights check), not the client's politeness.
 *
 * usage: rogue_worker TRANSPORT HOST:PORT NWORKERS FIRST_INDEX [TOKEN_FILE]
 *   Connects as worker indices FIRST_INDEX, FIRST_INDEX+1, FIRST_INDEX+2
 *   (async job, 1 ps, mlp, default hidden units: the layout hash must match
 *   the ps's), announces them finished (done counter, an ATOMIC it has the
 *   right to), then attacks:
 *     A1 conn 0: WRITE the parameter region (granted READ only)
 *     A2 conn 1: WRITE past the end of its own slot (into the neighbour)
 *     A3 conn 2: WRITE another worker's slot: verbs: the address and rkey of
 *        conn 0's slot (a real key of another connection's region);
 *        tcp: a region id the ps never granted to this connection
 *   Each must complete with RDMAPS_E_REMOTE_ACCESS.  Between attacks it READs
 *   the parameter header through a connection that has not attacked yet and
 *   checks that the magic word is intact.  On tcp (where a failed operation
 *   does not break the connection) it also checks that each attacking
 *   connection is still served (a READ succeeds after its failure).
 * Prints "ROGUE <name>: <result>" lines and "ROGUE: all N attacks refused".
 * Exit 0 = every attack refused, 1 = an attack succeeded or a check failed,
 * 77 = no RDMA device (rdma).
 *
 * rogue_worker --free-port: print a free TCP port of 127.0.0.1 (the one
 * launch would pick: rdmaps_pick_ports), for the driver script.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "cli/ports.h"
#include "ps/layout.h"
#include "rdma/rt_internal.h"

#define NCONN 3
#define SPARE_RID 7 /* a region id the ps never grants */

struct rconn {
	struct rt_conn *c;
	uint64_t *mbox;  /* WRITE for the ps (the protocol's mailbox) */
	uint8_t *buf;    /* local: source and sink of the attacks */
	uint32_t index;
};

static size_t buf_len;

static int wait1(struct rt_conn *c, int tmo_ms)
{
	struct rt_completion comp;
	int got = rt_poll(c, &comp, 1, tmo_ms);
	if (got < 0)
		return got;
	if (got == 0)
		return RDMAPS_E_TIMEOUT;
	return comp.status;
}

static int do_read(struct rconn *r, uint32_t rid, uint64_t roff, size_t len)
{
	int rc = rt_read(r->c, 1, 0, rid, roff, len, 21, RT_F_SIGNALED);
	return rc ? rc : wait1(r->c, 20000);
}

/* Post a WRITE that the transport lets through (the rogue already forged its
 * table), and return the completion status. */
static int forged_write(struct rconn *r, uint32_t rid, uint64_t roff, size_t len)
{
	memset(r->buf, 0xa5, len);
	int rc = rt_write(r->c, 1, 0, rid, roff, len, 22, RT_F_SIGNALED);
	if (rc) {
		fprintf(stderr, "ROGUE: rt_write was refused locally (%s): the attack did not reach the ps\n",
			rdmaps_strerror(rc));
		return 1000; /* not a remote verdict */
	}
	return wait1(r->c, 20000);
}

static int magic_intact(struct rconn *r, const char *after)
{
	int rc = do_read(r, G_PS_PARAMS, 0, 8);
	if (rc) {
		printf("ROGUE check after %s: READ of the parameter header failed: %s\n", after,
		       rdmaps_strerror(rc));
		return 0;
	}
	uint64_t m;
	memcpy(&m, r->buf, 8);
	if (m != RDMAPS_MAGIC) {
		printf("ROGUE check after %s: parameter magic is %#llx, expected %#llx: OVERWRITTEN\n", after,
		       (unsigned long long)m, (unsigned long long)RDMAPS_MAGIC);
		return 0;
	}
	printf("ROGUE check after %s: parameter header intact\n", after);
	return 1;
}

static int verdict(const char *name, int rc)
{
	if (rc == RDMAPS_E_REMOTE_ACCESS) {
		printf("ROGUE %s: refused: %s\n", name, rdmaps_strerror(rc));
		return 1;
	}
	printf("ROGUE %s: NOT REFUSED AS EXPECTED: %s\n", name, rc == 1000 ? "refused locally" :
	       rc == 0 ? "the write SUCCEEDED" : rdmaps_strerror(rc));
	return 0;
}

static int free_port(void)
{
	int port;

	if (rdmaps_pick_ports("127.0.0.1", 1, &port)) {
		fprintf(stderr, "rogue_worker: --free-port: no free port on 127.0.0.1\n");
		return 1;
	}
	printf("%d\n", port);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdmaps_job j;
	struct rdmaps_layout L;
	struct rt_ctx *ctx = NULL;
	struct rconn r[NCONN];
	char host[256], token[RT_TOKEN_MAX + 1] = "";
	uint16_t port;
	int rc, ret = 1, ok = 0, nchecks = 0;

	if (argc == 2 && !strcmp(argv[1], "--free-port"))
		return free_port();
	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: %s rdma|tcp HOST:PORT NWORKERS FIRST_INDEX [TOKEN_FILE]\n", argv[0]);
		return 2;
	}
	rdmaps_log_set_tag("rogue");
	memset(r, 0, sizeof(r));
	rdmaps_job_defaults(&j);
	j.nps = 1;
	j.nworkers = atoi(argv[3]);
	int first = atoi(argv[4]);
	if (rt_kind_parse(argv[1], &j.transport) || j.transport == RT_AUTO ||
	    rdmaps_split_hostport(argv[2], host, sizeof(host), &port) || j.nworkers < NCONN ||
	    first < 0 || first + NCONN > j.nworkers) {
		fprintf(stderr, "rogue_worker: bad arguments\n");
		return 2;
	}
	if (argc == 6) {
		char err[160];
		if (rdmaps_read_token_file(argv[5], token, sizeof(token), err, sizeof(err))) {
			fprintf(stderr, "rogue_worker: %s: %s\n", argv[5], err);
			return 2;
		}
	}
	if ((rc = rdmaps_layout_new(&j, 1, &L))) {
		fprintf(stderr, "rogue_worker: layout: %s\n", rdmaps_strerror(rc));
		return 1;
	}
	size_t n = L.place.shard_count[0];
	buf_len = slot_bytes(n) + 4096;
	struct rt_ctx_cfg cc = { .kind = j.transport, .bind_host = host, .timeout_ms = 20000,
				 .auth_token = token, .numa_node = -1 };
	if ((rc = rt_ctx_new(&cc, &ctx))) {
		fprintf(stderr, "rogue_worker: transport %s: %s\n", argv[1], rdmaps_strerror(rc));
		ret = rc == RDMAPS_E_NODEV ? 77 : 1;
		goto out_layout;
	}
	for (int k = 0; k < NCONN; k++) {
		r[k].index = (uint32_t)(first + k);
		r[k].mbox = rt_alloc(ctx, 64);
		r[k].buf = rt_alloc(ctx, buf_len);
		if (!r[k].mbox || !r[k].buf) {
			fprintf(stderr, "rogue_worker: out of memory\n");
			goto out_conn;
		}
		struct rt_grant g[2] = {
			{ G_W_MAILBOX, r[k].mbox, 64, RT_RIGHT_WRITE },
			{ 1, r[k].buf, buf_len, RT_RIGHT_NONE },
		};
		struct rt_hello hello = { .role = RDMAPS_ROLE_WORKER, .index = r[k].index, .layout_hash = rdmaps_hello_hash(&L, 0) };
		double end = rdmaps_now() + 60;
		for (;;) {
			rc = rt_connect(ctx, host, port, &hello, g, 2, 5000, &r[k].c);
			if (!rc)
				break;
			if ((rc != RDMAPS_E_REFUSED && rc != RDMAPS_E_TIMEOUT && rc != RDMAPS_E_UNREACHABLE) ||
			    rdmaps_now() > end) {
				fprintf(stderr, "rogue_worker: connect as worker %u: %s\n", r[k].index,
					rdmaps_strerror(rc));
				goto out_conn;
			}
			usleep(200000);
		}
		printf("ROGUE: connected as worker %u\n", r[k].index);
	}
	/* wait until the chief initialized the parameters: the magic check below
	 * is then made against a live, serving region */
	for (int t = 0;; t++) {
		if ((rc = do_read(&r[2], G_PS_PARAMS, offsetof(struct rdmaps_params_hdr, state), 8))) {
			fprintf(stderr, "rogue_worker: state read: %s\n", rdmaps_strerror(rc));
			goto out_conn;
		}
		uint64_t st;
		memcpy(&st, r[2].buf, 8);
		if (st == PARAMS_STATE_READY)
			break;
		if (t > 600) {
			fprintf(stderr, "rogue_worker: parameters never initialized\n");
			goto out_conn;
		}
		usleep(100000);
	}
	const int tcp = rt_ctx_kind(ctx) == RT_TCP;
	int nattacks = 0;

	/* A1: WRITE the parameter region (READ only) over its magic word. */
	r[0].c->remote[G_PS_PARAMS].rights |= RT_RIGHT_WRITE;
	ok += verdict("A1 write parameters (granted READ only)", forged_write(&r[0], G_PS_PARAMS, 0, 64));
	nattacks++;
	if (tcp)
		ok += magic_intact(&r[0], "A1 (same connection still served)"), nattacks++, nchecks++;
	ok += magic_intact(&r[1], "A1"), nattacks++, nchecks++;

	/* A2: WRITE past the end of my own slot, into whatever lies next. */
	uint64_t slen = r[1].c->remote[G_PS_SLOT].len;
	r[1].c->remote[G_PS_SLOT].len = slen + 2 * 4096 + 64;
	ok += verdict("A2 write past the end of own slot", forged_write(&r[1], G_PS_SLOT, slen, 64));
	nattacks++;
	if (tcp)
		ok += magic_intact(&r[1], "A2 (same connection still served)"), nattacks++, nchecks++;
	ok += magic_intact(&r[2], "A2"), nattacks++, nchecks++;

	/* A3: WRITE another worker's slot. */
	if (tcp) {
		struct rt_remote fake = { SPARE_RID, 0, slen, 0, RT_RIGHT_WRITE };
		r[2].c->remote[SPARE_RID] = fake;
		r[2].c->remote_valid[SPARE_RID] = 1;
		ok += verdict("A3 write a region id never granted to this connection",
			      forged_write(&r[2], SPARE_RID, 0, 64));
		nattacks++;
		ok += magic_intact(&r[2], "A3 (same connection still served)"), nattacks++, nchecks++;
	} else {
		/* the real address and rkey of the slot of worker r[0].index */
		r[2].c->remote[G_PS_SLOT] = r[0].c->remote[G_PS_SLOT];
		r[2].c->remote[G_PS_SLOT].rights = RT_RIGHT_WRITE;
		char name[96];
		snprintf(name, sizeof(name), "A3 write worker %u's slot (its address and rkey) as worker %u",
			 r[0].index, r[2].index);
		ok += verdict(name, forged_write(&r[2], G_PS_SLOT, 0, 64));
		nattacks++;
	}
	if (ok == nattacks) {
		printf("ROGUE: all %d attacks refused, all %d checks passed\n", nattacks - nchecks, nchecks);
		ret = 0;
	} else {
		printf("ROGUE: %d of %d attacks and checks FAILED\n", nattacks - ok, nattacks);
	}
	fflush(stdout);
	/* Only now declare the rogue identities finished (async job: the ps ends
	 * when every worker is done or gone), so the ps serves until the attacks
	 * are over however fast the honest workers are.  A verbs connection that
	 * an attack broke cannot carry the FETCH_ADD: closing it below tells the
	 * ps that worker left, which ends its wait too. */
	for (int k = 0; k < NCONN; k++) {
		rc = rt_fetch_add(r[k].c, 1, 0, G_PS_COUNTERS,
				  counters_done_idx(j.nworkers, (int)r[k].index) * 8, 1, 23, RT_F_SIGNALED);
		if (rc || (rc = wait1(r[k].c, 20000))) {
			if (!tcp)
				continue;
			fprintf(stderr, "rogue_worker: done fetch-add as worker %u: %s\n", r[k].index,
				rdmaps_strerror(rc));
			ret = 1;
		}
	}
out_conn:
	for (int k = 0; k < NCONN; k++) {
		rt_conn_delete(&r[k].c);
		if (r[k].mbox)
			rt_free(ctx, r[k].mbox, 64);
		if (r[k].buf)
			rt_free(ctx, r[k].buf, buf_len);
	}
	rt_ctx_delete(&ctx);
out_layout:
	rdmaps_layout_free(&L);
	return ret;
}
