/* unit_layout_hash: which flags the job hash (a worker's hello) and the
 * layout hash (checkpoints) depend on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ps/layout.h"

struct hashes {
	uint64_t layout, job;
};

static struct hashes hash_of(int sync, int replicas, float lr)
{
	struct rdmaps_job j;
	struct rdmaps_layout L;
	struct hashes h;
	rdmaps_job_defaults(&j);
	j.nps = 1;
	j.nworkers = 3;
	j.sync = sync;
	j.replicas = replicas;
	j.learning_rate = lr;
	assert_int_equal(rdmaps_layout_new(&j, 1, &L), 0);
	h.layout = L.hash;
	h.job = L.job_hash;
	rdmaps_layout_free(&L);
	return h;
}

/* sync: R is part of both hashes (a worker aggregating otherwise is refused) */
static void sync_replicas_count(void **st)
{
	(void)st;
	struct hashes a = hash_of(1, 2, 0.01f), b = hash_of(1, 3, 0.01f), d = hash_of(1, 0, 0.01f);
	assert_true(a.layout != b.layout);
	assert_true(a.job != b.job);
	/* R defaults to W = 3 */
	assert_true(b.layout == d.layout && b.job == d.job);
}

/* async ignores --replicas_to_aggregate: an async ps given it must accept a
 * worker without it (found by a review, 2026-12-06: refused as "another
 * job configuration"), and its checkpoints must not depend on it */
static void async_ignores_replicas(void **st)
{
	(void)st;
	struct hashes a = hash_of(0, 0, 0.01f), b = hash_of(0, 2, 0.01f), c = hash_of(0, 7, 0.01f);
	assert_true(a.layout == b.layout && a.layout == c.layout);
	assert_true(a.job == b.job && a.job == c.job);
	assert_true(a.layout != hash_of(1, 0, 0.01f).layout); /* the mode itself counts */
}

/* the learning rate: in the job hash only (a restart may resume at a new rate) */
static void learning_rate_in_job_hash_only(void **st)
{
	(void)st;
	struct hashes a = hash_of(1, 0, 0.01f), b = hash_of(1, 0, 0.001f);
	assert_true(a.layout == b.layout);
	assert_true(a.job != b.job);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(sync_replicas_count),
		cmocka_unit_test(async_ignores_replicas),
		cmocka_unit_test(learning_rate_in_job_hash_only),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
