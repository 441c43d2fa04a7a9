/* progress_unit: the text of the live progress line, its redraw throttle,
 * and that the end shows the newest state, not the last one drawn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "worker/progress.h"

static void test_format(void **st)
{
	(void)st;
	struct rdmaps_progress p;
	char b[160];
	rdmaps_progress_init(&p, stdout, 200);
	p.g_first = 0;
	p.t_first = 10.0;
	p.g = 0;
	p.loss = 233.4;
	rdmaps_progress_format(&p, 10.0, b, sizeof(b));
	assert_string_equal(b, "global step 0/200 | - steps/s | loss 233.4 | ETA -");
	p.g = 100;
	p.loss = 31.25;
	rdmaps_progress_format(&p, 12.0, b, sizeof(b)); /* 100 steps in 2 s */
	assert_string_equal(b, "global step 100/200 | 50.0 steps/s | loss 31.25 | ETA 2.0 s");
	p.g = 200;
	rdmaps_progress_format(&p, 14.0, b, sizeof(b));
	assert_string_equal(b, "global step 200/200 | 50.0 steps/s | loss 31.25 | ETA 0.0 s");
	rdmaps_progress_format(&p, 14.0, b, 8); /* truncates, never overflows */
	assert_int_equal(strlen(b), 7);
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *q = s; (q = strstr(q, needle)); q += strlen(needle))
		n++;
	return n;
}

static void test_throttle_and_end(void **st)
{
	(void)st;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct rdmaps_progress p;
	rdmaps_progress_init(&p, f, 1000);
	/* 50 updates within 49 ms: the first one draws, the rest are throttled */
	for (int k = 0; k < 50; k++)
		rdmaps_progress_update(&p, k, 1.0, 5.0 + k * 0.001);
	fflush(f);
	assert_int_equal(count(buf, "\r\033[K"), 1);
	/* 0.1 s later it redraws */
	rdmaps_progress_update(&p, 60, 1.0, 5.2);
	fflush(f);
	assert_int_equal(count(buf, "\r\033[K"), 2);
	rdmaps_progress_update(&p, 61, 0.5, 5.21); /* throttled, but newest */
	rdmaps_progress_end(&p);
	fflush(f);
	assert_non_null(strstr(buf, "global step 61/1000"));
	assert_int_equal(buf[len - 1], '\n');
	/* reaching the target always draws */
	rdmaps_progress_update(&p, 1000, 0.25, 5.215);
	fflush(f);
	assert_non_null(strstr(buf, "global step 1000/1000"));
	fclose(f);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_throttle_and_end),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
