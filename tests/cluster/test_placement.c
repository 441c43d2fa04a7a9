/* cluster_placement: greedy placement with splitting of large tensors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/status.h"
#include "ps/placement.h"

static struct rdm_tensor mk(const char *name, int d0, int d1, size_t *off)
{
	struct rdm_tensor t;
	memset(&t, 0, sizeof t);
	snprintf(t.name, sizeof t.name, "%s", name);
	t.ndim = d1 ? 2 : 1;
	t.shape[0] = d0;
	t.shape[1] = d1;
	t.count = (size_t)d0 * (size_t)(d1 ? d1 : 1);
	t.offset = *off;
	*off += t.count;
	return t;
}

/* A tensor's name and shape (d1 = 0: a vector of d0). */
struct spec {
	const char *name;
	int d0, d1;
};

/* t[0..n) made from spec[0..n), laid out one after the other; returns n */
static int mk_all(struct rdm_tensor *t, const struct spec *spec, int n)
{
	size_t off = 0;
	for (int i = 0; i < n; i++)
		t[i] = mk(spec[i].name, spec[i].d0, spec[i].d1, &off);
	return n;
}

static int mlp(struct rdm_tensor *t)
{
	static const struct spec s[] = {
		{ "hid_w", 784, 100 }, { "hid_b", 100, 0 }, { "sm_w", 100, 10 }, { "sm_b", 10, 0 },
	};
	return mk_all(t, s, 4);
}

static int lstm(struct rdm_tensor *t)
{
	static const struct spec s[] = {
		{ "lstm_w", 28 + 128, 512 }, { "lstm_b", 512, 0 }, { "out_w", 128, 10 }, { "out_b", 10, 0 },
	};
	return mk_all(t, s, 4);
}

/* Every float placed exactly once; shard layouts contiguous and consistent;
 * max-min within the documented bound; returns max-min. */
static size_t check(const struct rdm_tensor *t, int nt, int nps, const struct rdmaps_placement *p)
{
	assert_int_equal(p->nps, nps);
	size_t total = 0;
	for (int i = 0; i < nt; i++)
		total += t[i].count;
	unsigned char *seen = calloc(total, 1);
	unsigned char **shard = calloc((size_t)nps, sizeof *shard);
	assert_non_null(seen);
	for (int k = 0; k < nps; k++) {
		shard[k] = calloc(p->shard_count[k] + 1, 1);
		assert_non_null(shard[k]);
	}
	size_t sum = 0;
	for (int i = 0; i < p->npieces; i++) {
		const struct rdmaps_piece *q = &p->pieces[i];
		assert_true(q->tensor >= 0 && q->tensor < nt);
		assert_true(q->ps >= 0 && q->ps < nps);
		assert_true(q->count > 0);
		assert_true(q->tensor_off + q->count <= t[q->tensor].count);
		assert_true(q->shard_off + q->count <= p->shard_count[q->ps]);
		if (q->count != t[q->tensor].count) /* split: cut points aligned in the tensor */
			assert_int_equal(q->tensor_off % RDMAPS_PLACE_ALIGN, 0);
		if (i > 0) { /* sorted by (tensor, tensor_off) */
			const struct rdmaps_piece *r = &p->pieces[i - 1];
			assert_true(r->tensor < q->tensor ||
				    (r->tensor == q->tensor && r->tensor_off < q->tensor_off));
		}
		for (size_t j = 0; j < q->count; j++) {
			size_t g = t[q->tensor].offset + q->tensor_off + j;
			assert_int_equal(seen[g], 0);
			seen[g] = 1;
			assert_int_equal(shard[q->ps][q->shard_off + j], 0);
			shard[q->ps][q->shard_off + j] = 1;
		}
		sum += q->count;
	}
	assert_int_equal(sum, total);
	size_t mx = 0, mn = (size_t)-1, ssum = 0;
	for (int k = 0; k < nps; k++) {
		for (size_t j = 0; j < p->shard_count[k]; j++)
			assert_int_equal(shard[k][j], 1); /* no holes */
		ssum += p->shard_count[k];
		mx = p->shard_count[k] > mx ? p->shard_count[k] : mx;
		mn = p->shard_count[k] < mn ? p->shard_count[k] : mn;
		free(shard[k]);
	}
	assert_int_equal(ssum, total);
	free(shard);
	free(seen);
	return mx - mn;
}

static void run_model(int (*build)(struct rdm_tensor *), const char *label)
{
	struct rdm_tensor t[8];
	int nt = build(t);
	uint64_t hashes[4] = { 0 };
	for (int nps = 1; nps <= 4; nps++) {
		struct rdmaps_placement p, p2;
		assert_int_equal(rdmaps_place(t, nt, nps, &p), 0);
		size_t spread = check(t, nt, nps, &p);
		if (nps == 1)
			assert_int_equal(p.npieces, nt);
		/* documented bound: each shard within ALIGN of its water level */
		if (spread > 2 * RDMAPS_PLACE_ALIGN + 1)
			fail_msg("%s nps=%d: spread %zu", label, nps, spread);
		/* deterministic */
		assert_int_equal(rdmaps_place(t, nt, nps, &p2), 0);
		assert_true(rdmaps_placement_hash(&p) == rdmaps_placement_hash(&p2));
		assert_int_equal(p.npieces, p2.npieces);
		assert_memory_equal(p.pieces, p2.pieces, (size_t)p.npieces * sizeof *p.pieces);
		hashes[nps - 1] = rdmaps_placement_hash(&p);
		for (int k = 0; k < nps - 1; k++)
			assert_true(hashes[k] != hashes[nps - 1]);
		printf("# %s on %d ps: %d pieces, max-min %zu floats, hash %016llx\n", label, nps,
		       p.npieces, spread, (unsigned long long)hashes[nps - 1]);
		if (getenv("CLUSTER_PRINT"))
			rdmaps_placement_print(stdout, &p, t);
		rdmaps_placement_free(&p);
		rdmaps_placement_free(&p2);
		assert_null(p.pieces);
	}
}

static void test_mlp(void **st)
{
	(void)st;
	run_model(mlp, "mlp");
	/* exact expectations for 2 ps: hid_b->0, sm_w->1, sm_b->0, hid_w split at 39648 */
	struct rdm_tensor t[4];
	mlp(t);
	struct rdmaps_placement p;
	assert_int_equal(rdmaps_place(t, 4, 2, &p), 0);
	assert_int_equal(p.npieces, 5);
	assert_int_equal(p.pieces[0].tensor, 0);
	assert_int_equal(p.pieces[0].ps, 0);
	assert_int_equal(p.pieces[0].count, 39648);
	assert_int_equal(p.pieces[1].tensor_off, 39648);
	assert_int_equal(p.pieces[1].ps, 1);
	assert_int_equal(p.pieces[2].ps, 0); /* hid_b */
	assert_int_equal(p.pieces[3].ps, 1); /* sm_w */
	assert_int_equal(p.pieces[4].ps, 0); /* sm_b */
	assert_int_equal(p.shard_count[0], 39758);
	assert_int_equal(p.shard_count[1], 39752);
	/* shard 0 layout: hid_w[0,39648) then hid_b then sm_b */
	assert_int_equal(p.pieces[2].shard_off, 39648);
	assert_int_equal(p.pieces[4].shard_off, 39748);
	rdmaps_placement_free(&p);
}

static void test_lstm(void **st)
{
	(void)st;
	run_model(lstm, "lstm");
}

static void test_greedy_small(void **st)
{
	(void)st;
	/* no tensor above the fair share: plain greedy argmin in creation order */
	static const struct spec s[] = {
		{ "a", 10, 0 }, { "b", 10, 0 }, { "c", 5, 0 }, { "d", 5, 0 }, { "e", 10, 0 },
	};
	struct rdm_tensor t[5];
	mk_all(t, s, 5);
	struct rdmaps_placement p;
	assert_int_equal(rdmaps_place(t, 5, 2, &p), 0);
	check(t, 5, 2, &p);
	int want[] = { 0, 1, 0, 1, 0 };
	assert_int_equal(p.npieces, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(p.pieces[i].ps, want[i]);
	assert_int_equal(p.shard_count[0], 25);
	assert_int_equal(p.shard_count[1], 15);
	rdmaps_placement_free(&p);

	/* more shards than tensors: empty shards allowed, everything placed once */
	assert_int_equal(rdmaps_place(t, 2, 8, &p), 0);
	check(t, 2, 8, &p);
	rdmaps_placement_free(&p);
}

static void test_many_big(void **st)
{
	(void)st;
	/* several large tensors and odd sizes, up to 7 shards */
	static const struct spec s[] = {
		{ "x", 1001, 37 }, { "y", 3, 0 }, { "z", 999, 41 },
		{ "s", 1, 0 },     { "u", 513, 7 }, { "v", 77, 0 },
	};
	struct rdm_tensor t[6];
	mk_all(t, s, 6);
	for (int nps = 1; nps <= 7; nps++) {
		struct rdmaps_placement p;
		assert_int_equal(rdmaps_place(t, 6, nps, &p), 0);
		size_t spread = check(t, 6, nps, &p);
		assert_true(spread <= 2 * RDMAPS_PLACE_ALIGN + 1);
		rdmaps_placement_free(&p);
	}
}

static void test_invalid(void **st)
{
	(void)st;
	struct rdm_tensor t[4];
	mlp(t);
	struct rdmaps_placement p;
	assert_int_equal(rdmaps_place(t, 4, 0, &p), RDMAPS_E_INVAL);
	assert_null(p.pieces);
	assert_int_equal(rdmaps_place(t, 0, 2, &p), RDMAPS_E_INVAL);
	assert_int_equal(rdmaps_place(NULL, 4, 2, &p), RDMAPS_E_INVAL);
	assert_int_equal(rdmaps_place(t, 4, 2, NULL), RDMAPS_E_INVAL);
	t[1].count = 99; /* does not match shape */
	assert_int_equal(rdmaps_place(t, 4, 2, &p), RDMAPS_E_INVAL);
	mlp(t);
	t[2].ndim = 5;
	assert_int_equal(rdmaps_place(t, 4, 2, &p), RDMAPS_E_INVAL);
	rdmaps_placement_free(&p);
	rdmaps_placement_free(NULL);
}

static void test_print(void **st)
{
	(void)st;
	struct rdm_tensor t[4];
	mlp(t);
	struct rdmaps_placement p;
	assert_int_equal(rdmaps_place(t, 4, 2, &p), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	rdmaps_placement_print(f, &p, t);
	fclose(f);
	assert_non_null(strstr(buf, "hid_w"));
	assert_non_null(strstr(buf, "[784x100]"));
	assert_non_null(strstr(buf, "[0,39648)*"));
	assert_non_null(strstr(buf, "total       79510 floats"));
	free(buf);
	rdmaps_placement_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp),     cmocka_unit_test(test_lstm),
		cmocka_unit_test(test_greedy_small), cmocka_unit_test(test_many_big),
		cmocka_unit_test(test_invalid), cmocka_unit_test(test_print),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
