/* src/common/lat.c: nearest-rank percentiles, the ring keeping the last
 * cap samples, the maximum over all, and the error cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/lat.h"
#include "common/status.h"

static void test_nearest_rank(void **st)
{
	(void)st;
	struct rdmaps_lat l;
	const double q[5] = { 0.0, 0.5, 0.9, 0.99, 1.0 };
	double out[5];

	assert_int_equal(rdmaps_lat_init(&l, 1000), 0);
	/* 100 samples 100, 99, ..., 1 (added out of order) */
	for (int i = 100; i >= 1; i--)
		rdmaps_lat_add(&l, (double)i);
	assert_int_equal(rdmaps_lat_kept(&l), 100);
	assert_int_equal(rdmaps_lat_pct(&l, q, out, 5), 0);
	assert_true(out[0] == 1.0);  /* q = 0: the smallest */
	assert_true(out[1] == 50.0); /* ceil(0.5 * 100) = 50th */
	assert_true(out[2] == 90.0);
	assert_true(out[3] == 99.0);
	assert_true(out[4] == 100.0);
	assert_true(l.max == 100.0);
	rdmaps_lat_free(&l);
	assert_null(l.v);
}

static void test_one_sample(void **st)
{
	(void)st;
	struct rdmaps_lat l;
	const double q[3] = { 0.0, 0.5, 1.0 };
	double out[3];

	assert_int_equal(rdmaps_lat_init(&l, 4), 0);
	rdmaps_lat_add(&l, 7.5);
	assert_int_equal(rdmaps_lat_pct(&l, q, out, 3), 0);
	assert_true(out[0] == 7.5 && out[1] == 7.5 && out[2] == 7.5);
	rdmaps_lat_free(&l);
}

/* more samples than cap: percentiles over the last cap, max over all */
static void test_ring_keeps_last(void **st)
{
	(void)st;
	struct rdmaps_lat l;
	const double q[2] = { 0.0, 1.0 };
	double out[2];

	assert_int_equal(rdmaps_lat_init(&l, 10), 0);
	rdmaps_lat_add(&l, 1000.0); /* the largest, then overwritten */
	for (int i = 1; i <= 25; i++)
		rdmaps_lat_add(&l, (double)i);
	assert_int_equal(l.total, 26);
	assert_int_equal(rdmaps_lat_kept(&l), 10);
	assert_int_equal(rdmaps_lat_pct(&l, q, out, 2), 0);
	assert_true(out[0] == 16.0); /* the last ten: 16..25 */
	assert_true(out[1] == 25.0);
	assert_true(l.max == 1000.0);
	rdmaps_lat_free(&l);
}

static void test_errors(void **st)
{
	(void)st;
	struct rdmaps_lat l;
	const double bad[1] = { 1.5 }, nan_q[1] = { 0.0 / 0.0 }, ok[1] = { 0.5 };
	double out[1];

	assert_int_equal(rdmaps_lat_init(&l, 0), RDMAPS_E_INVAL);
	assert_null(l.v);
	rdmaps_lat_add(&l, 3.0); /* an unset record takes nothing */
	assert_int_equal(l.total, 0);
	assert_int_equal(rdmaps_lat_init(&l, 8), 0);
	assert_int_equal(rdmaps_lat_pct(&l, ok, out, 1), RDMAPS_E_STATE); /* nothing kept */
	rdmaps_lat_add(&l, 3.0);
	assert_int_equal(rdmaps_lat_pct(&l, bad, out, 1), RDMAPS_E_INVAL);
	assert_int_equal(rdmaps_lat_pct(&l, nan_q, out, 1), RDMAPS_E_INVAL);
	rdmaps_lat_free(&l);
	rdmaps_lat_free(&l); /* twice: harmless */
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_nearest_rank),
		cmocka_unit_test(test_one_sample),
		cmocka_unit_test(test_ring_keeps_last),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
