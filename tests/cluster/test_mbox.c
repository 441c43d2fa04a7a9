/* The ps -> worker mailbox message (src/ps/layout.h): a 16-byte WRITE of a
 * value and its complement.  A reader that catches the WRITE half-done must
 * see "not whole" (mbox_read 0) or one of the two whole messages, never a
 * mix: here the copy orders a transport uses (memcpy / rep movsb forward,
 * backward, the second word first) are stopped after every byte.  A copy
 * that interleaved the two words byte by byte would defeat the check (the
 * value and its complement would change together): no memcpy, rep movsb
 * or single-TLP DMA does that, and the last case shows the check does not
 * claim it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ps/layout.h"

static const uint64_t pairs[][2] = {
	{ 0, (1ull << 32) | 1 },                                   /* first release */
	{ (41ull << 32) | 0xff, (42ull << 32) | 0x100 },           /* carries in both halves */
	{ (0xffull << 32) | 7, (0x100ull << 32) | 8 },
	{ (0xffffffffull << 32) | 0xffffffff, 0 },                 /* every byte changes */
	{ (5ull << 32) | 9, (5ull << 32) | 9 },                    /* a re-sent equal message */
	{ (9ull << 32) | 3, (10ull << 32) | 3 },                   /* stale drop: version only */
};

/* copy `upto` bytes of src into dst in the byte order given by ord[] */
static void partial(uint8_t *dst, const uint8_t *src, const int *ord, int upto)
{
	for (int k = 0; k < upto; k++)
		dst[ord[k]] = src[ord[k]];
}

static void test_no_torn_message_passes(void **st)
{
	(void)st;
	int ords[3][16];
	for (int k = 0; k < 16; k++) {
		ords[0][k] = k;                         /* forward (rep movsb) */
		ords[1][k] = 15 - k;                    /* backward */
		ords[2][k] = k < 8 ? 8 + k : k - 8;     /* second word first */
	}
	for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++)
		for (int o = 0; o < 3; o++)
			for (int upto = 0; upto <= 16; upto++) {
				uint64_t m[2], nw[2], v = 0;
				mbox_pack(m, pairs[p][0]);
				mbox_pack(nw, pairs[p][1]);
				partial((uint8_t *)m, (const uint8_t *)nw, ords[o], upto);
				if (mbox_read(m, &v))
					assert_true(v == pairs[p][0] || v == pairs[p][1]);
				if (upto == 0)
					assert_true(mbox_read(m, &v) && v == pairs[p][0]);
				if (upto == 16)
					assert_true(mbox_read(m, &v) && v == pairs[p][1]);
			}
}

/* Interleaving the words byte by byte can produce a whole-looking mix:
 * the limit of the scheme, stated by a test so that nobody relies on more. */
static void test_interleaved_copy_is_not_covered(void **st)
{
	(void)st;
	uint64_t m[2], nw[2], v = 0;
	mbox_pack(m, 0);
	mbox_pack(nw, (1ull << 32) | 1);
	((uint8_t *)m)[0] = ((uint8_t *)nw)[0];  /* a0, then b0 */
	((uint8_t *)m)[8] = ((uint8_t *)nw)[8];
	assert_true(mbox_read(m, &v));
	assert_int_equal(v, 1); /* token 1 with version 0: a mix */
}

static void test_fields(void **st)
{
	(void)st;
	uint64_t m[2], v;
	mbox_pack(m, (123ull << 32) | 45);
	assert_true(mbox_read(m, &v));
	assert_int_equal(MBOX_VERSION(v), 123);
	assert_int_equal(MBOX_TOKEN(v), 45);
	m[1] ^= 1; /* one bit off: not whole */
	assert_false(mbox_read(m, &v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_torn_message_passes),
		cmocka_unit_test(test_interleaved_copy_is_not_covered),
		cmocka_unit_test(test_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
