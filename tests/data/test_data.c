/* Unit tests: IDX reader, MNIST split, batcher (cmocka). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "kernels/data.h"
#include "common/status.h"

static char g_dir[256];

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* n bytes as one gzip member: a new file (mode "wb") or one more member
 * at its end ("ab") */
static void gz_put(const char *path, const char *mode, const uint8_t *b, size_t n)
{
	gzFile g = gzopen(path, mode);
	assert_non_null(g);
	if (n)
		assert_int_equal(gzwrite(g, b, (unsigned)n), (int)n);
	assert_int_equal(gzclose(g), Z_OK);
}

static void write_bytes(const char *path, const uint8_t *b, size_t n, int gz)
{
	if (gz) {
		gz_put(path, "wb", b, n);
	} else {
		FILE *f = fopen(path, "wb");
		assert_non_null(f);
		if (n)
			assert_int_equal(fwrite(b, 1, n, f), n);
		fclose(f);
	}
}

/* an images file's bytes (header, then pixel p of image i = (i*7 + p) % 256),
 * *len of them, with room for extra > 0 zero bytes after them (calloc'd) */
static uint8_t *image_bytes(uint32_t magic, uint32_t n, uint32_t r, uint32_t c, long extra, size_t *len)
{
	*len = 16 + (size_t)n * r * c;
	uint8_t *b = calloc(1, *len + (extra > 0 ? (size_t)extra : 0) + 1);
	assert_non_null(b);
	put32(b, magic);
	put32(b + 4, n);
	put32(b + 8, r);
	put32(b + 12, c);
	for (size_t i = 0; i < n; i++)
		for (size_t p = 0; p < (size_t)r * c; p++)
			b[16 + i * r * c + p] = (uint8_t)((i * 7 + p) % 256);
	return b;
}

/* images as image_bytes makes them; extra > 0 appends bytes, extra < 0 truncates. */
static void make_images(const char *path, uint32_t magic, uint32_t n, uint32_t r, uint32_t c, long extra, int gz)
{
	size_t len;
	uint8_t *b = image_bytes(magic, n, r, c, extra, &len);
	write_bytes(path, b, (size_t)((long)len + extra), gz);
	free(b);
}

static void make_labels(const char *path, uint32_t magic, uint32_t n, long extra, int gz, int bad_at)
{
	size_t len = 8 + n;
	uint8_t *b = calloc(1, len + (extra > 0 ? (size_t)extra : 0) + 1);
	put32(b, magic);
	put32(b + 4, n);
	for (uint32_t i = 0; i < n; i++)
		b[8 + i] = (uint8_t)(i % 10);
	if (bad_at >= 0)
		b[8 + bad_at] = 10;
	write_bytes(path, b, (size_t)((long)len + extra), gz);
	free(b);
}

static const char *P(const char *name)
{
	static char buf[8][512];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_dir, name);
	return buf[k];
}

static int setup(void **st)
{
	(void)st;
	snprintf(g_dir, sizeof(g_dir), "/tmp/rdmaps_data_test.XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **st)
{
	(void)st;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void check_valid(int gz)
{
	make_images(P("i"), 0x803, 12, 3, 4, 0, gz);
	make_labels(P("l"), 0x801, 12, 0, gz, -1);
	struct rdm_images d;
	char err[512];
	assert_int_equal(rdm_idx_load(P("i"), P("l"), &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 12);
	assert_int_equal(d.rows, 3);
	assert_int_equal(d.cols, 4);
	for (int i = 0; i < 12; i++) {
		assert_int_equal(d.y[i], i % 10);
		for (int p = 0; p < 12; p++)
			assert_int_equal(d.px[i * 12 + p], (i * 7 + p) % 256);
	}
	rdm_images_free(&d);
	assert_null(d.px);
	assert_null(d.mem);
	rdm_images_free(&d); /* idempotent */
}

/* pixel bytes to floats: TF's float32 x * (1/255), 255 exactly 1.0 */
static void t_pixels_to_float(void **st)
{
	(void)st;
	uint8_t px[256];
	float x[256];
	for (int v = 0; v < 256; v++)
		px[v] = (uint8_t)v;
	rdm_pixels_to_float(px, 256, x);
	for (int v = 0; v < 256; v++)
		assert_true(x[v] == (float)v * (1.0f / 255.0f));
	assert_true(x[0] == 0.0f);
	assert_true(x[255] == 1.0f);
}

/* A gzip file of two members (as `cat a.gz b.gz` makes): its trailer's
 * size is the last member's only, so the first buffer is too small and
 * must grow; the content still loads whole. */
static void t_gzip_two_members(void **st)
{
	(void)st;
	const uint32_t n = 3000;
	size_t len;
	uint8_t *b = image_bytes(0x803, n, 28, 28, 0, &len);
	gz_put(P("i2"), "wb", b, len - 100);
	gz_put(P("i2"), "ab", b + len - 100, 100); /* a second member: its ISIZE is 100 */
	make_labels(P("l2"), 0x801, n, 0, 1, -1);
	struct rdm_images d;
	char err[512];
	assert_int_equal(rdm_idx_load(P("i2"), P("l2"), &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, (int)n);
	assert_memory_equal(d.px, b + 16, len - 16);
	rdm_images_free(&d);
	free(b);
}

static void t_valid_plain(void **st) { (void)st; check_valid(0); }
static void t_valid_gzip(void **st) { (void)st; check_valid(1); }

static void expect_fail(const char *ip, const char *lp, int code, const char *must_name, const char *must_say)
{
	struct rdm_images d;
	char err[512];
	memset(&d, 0x5a, sizeof(d));
	int rc = rdm_idx_load(ip, lp, &d, err, sizeof(err));
	print_message("    err: %s\n", err);
	assert_int_equal(rc, code);
	assert_null(d.px);
	assert_null(d.mem);
	assert_int_equal(d.n, 0);
	assert_non_null(strstr(err, must_name));
	if (must_say)
		assert_non_null(strstr(err, must_say));
}

/* A corrupt pair of files: images "i" written by make_images(P("i"), imagic,
 * in, rows, cols, iextra, igz), labels "l" by make_labels(P("l"), lmagic, ln,
 * lextra, lgz, lbad_at).  Loading them must fail with RDMAPS_E_CORRUPT, the
 * message naming the file bad ("i" or "l") and saying says. */
struct corrupt_pair {
	uint32_t imagic, in, rows, cols;
	long iextra;
	int igz;
	uint32_t lmagic, ln;
	long lextra;
	int lgz, lbad_at;
	const char *bad, *says;
};

static void expect_corrupt(const struct corrupt_pair *t, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		make_images(P("i"), t[k].imagic, t[k].in, t[k].rows, t[k].cols, t[k].iextra, t[k].igz);
		make_labels(P("l"), t[k].lmagic, t[k].ln, t[k].lextra, t[k].lgz, t[k].lbad_at);
		expect_fail(P("i"), P("l"), RDMAPS_E_CORRUPT, P(t[k].bad), t[k].says);
	}
}
#define EXPECT_CORRUPT(...)                                                     \
	do {                                                                    \
		static const struct corrupt_pair t_[] = { __VA_ARGS__ };        \
		expect_corrupt(t_, sizeof(t_) / sizeof(t_[0]));                 \
	} while (0)

static void t_truncated(void **st)
{
	(void)st;
	/*               images                  labels               file   says */
	EXPECT_CORRUPT({ 0x803, 12, 3, 4, -5, 0, 0x801, 12, 0, 0, -1, "i", "truncated" },
		       { 0x803, 12, 3, 4, 0, 0, 0x801, 12, -1, 1, -1, "l", "truncated" });
	make_images(P("i"), 0x803, 12, 3, 4, 0, 0);
	write_bytes(P("l"), (const uint8_t *)"\0\0\x08", 3, 0);
	expect_fail(P("i"), P("l"), RDMAPS_E_CORRUPT, P("l"), "header");
}

static void t_truncated_gzip_stream(void **st)
{
	(void)st;
	make_images(P("i.gz"), 0x803, 50, 8, 8, 0, 1);
	make_labels(P("l"), 0x801, 50, 0, 0, -1);
	FILE *f = fopen(P("i.gz"), "rb");
	uint8_t buf[8192];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	write_bytes(P("i.gz"), buf, n - 12, 0); /* cut the gzip trailer and some data */
	expect_fail(P("i.gz"), P("l"), RDMAPS_E_CORRUPT, P("i.gz"), NULL);
}

static void t_bad_magic(void **st)
{
	(void)st;
	EXPECT_CORRUPT({ 0x801, 12, 3, 4, 0, 0, 0x801, 12, 0, 0, -1, "i", "magic" },
		       { 0x803, 12, 3, 4, 0, 1, 0x803, 12, 0, 1, -1, "l", "magic" });
}

static void t_wrong_counts(void **st)
{
	(void)st;
	EXPECT_CORRUPT({ 0x803, 12, 3, 4, 0, 0, 0x801, 11, 0, 0, -1, "l", "11 labels" },
		       { 0x803, 12, 0, 4, 0, 0, 0x801, 12, 0, 0, -1, "i", "dimensions" });
}

static void t_trailing(void **st)
{
	(void)st;
	EXPECT_CORRUPT({ 0x803, 12, 3, 4, 1, 1, 0x801, 12, 0, 0, -1, "i", "trailing" },
		       { 0x803, 12, 3, 4, 0, 0, 0x801, 12, 3, 0, -1, "l", "trailing" });
}

static void t_label_range(void **st)
{
	(void)st;
	EXPECT_CORRUPT({ 0x803, 12, 3, 4, 0, 0, 0x801, 12, 0, 0, 7, "l", "record 7" });
}

static void t_missing(void **st)
{
	(void)st;
	make_labels(P("l"), 0x801, 12, 0, 0, -1);
	expect_fail(P("nope"), P("l"), RDMAPS_E_IO, P("nope"), "cannot open");
	make_images(P("i"), 0x803, 12, 3, 4, 0, 0);
	expect_fail(P("i"), P("nope2"), RDMAPS_E_IO, P("nope2"), "cannot open");
	struct rdm_images d;
	assert_int_equal(rdm_idx_load(NULL, P("l"), &d, NULL, 0), RDMAPS_E_INVAL);
	assert_int_equal(rdm_idx_load(P("i"), P("l"), NULL, NULL, 0), RDMAPS_E_INVAL);
}

static void t_mnist_split(void **st)
{
	(void)st;
	char sub[600];
	snprintf(sub, sizeof(sub), "%s/mn", g_dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	char a[700], b[700];
	/* train gzip (as the TF download), test plain: both forms are found. */
	snprintf(a, sizeof(a), "%s/train-images-idx3-ubyte.gz", sub);
	snprintf(b, sizeof(b), "%s/train-labels-idx1-ubyte.gz", sub);
	make_images(a, 0x803, 5013, 2, 3, 0, 1);
	make_labels(b, 0x801, 5013, 0, 1, -1);
	snprintf(a, sizeof(a), "%s/t10k-images-idx3-ubyte", sub);
	snprintf(b, sizeof(b), "%s/t10k-labels-idx1-ubyte", sub);
	make_images(a, 0x803, 7, 2, 3, 0, 0);
	make_labels(b, 0x801, 7, 0, 0, -1);

	struct rdm_images tr, va, te;
	char err[512];
	assert_int_equal(rdm_mnist_load(sub, &tr, &va, &te, err, sizeof(err)), 0);
	assert_int_equal(tr.n, 13);
	assert_int_equal(va.n, 5000);
	assert_int_equal(te.n, 7);
	assert_int_equal(tr.rows, 2);
	assert_int_equal(va.cols, 3);
	/* validation = first 5000 records, train = records 5000.. */
	assert_int_equal(va.px[1], 1);
	assert_int_equal(va.px[4999 * 6], (4999 * 7) % 256);
	assert_int_equal(tr.px[0], (5000 * 7) % 256);
	assert_int_equal(tr.px[12 * 6 + 5], (5012 * 7 + 5) % 256);
	assert_int_equal(va.y[4999], 9);
	assert_int_equal(tr.y[0], 0);
	assert_int_equal(tr.y[12], 2);
	rdm_images_free(&tr);
	rdm_images_free(&va);
	rdm_images_free(&te);

	/* NULL outputs: test only; train only. */
	assert_int_equal(rdm_mnist_load(sub, NULL, NULL, &te, err, sizeof(err)), 0);
	assert_int_equal(te.n, 7);
	rdm_images_free(&te);
	assert_int_equal(rdm_mnist_load(sub, &tr, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(tr.n, 13);
	rdm_images_free(&tr);

	/* missing t10k labels -> error naming it, outputs cleared */
	assert_int_equal(unlink(b), 0);
	assert_int_equal(rdm_mnist_load(sub, &tr, &va, &te, err, sizeof(err)), RDMAPS_E_IO);
	assert_non_null(strstr(err, "t10k-labels-idx1-ubyte"));
	assert_non_null(strstr(err, "fetch-data.sh")); /* says where MNIST comes from */
	assert_null(tr.px);
	assert_null(va.px);
	/* a directory with no MNIST at all: the same, for the train file */
	assert_int_equal(rdm_mnist_load("/nonexistent-rdmaps-dir", &tr, &va, &te, err, sizeof(err)), RDMAPS_E_IO);
	assert_non_null(strstr(err, "train-images-idx3-ubyte"));
	assert_non_null(strstr(err, "fetch-data.sh"));
	assert_null(tr.px);

	/* too few training images for the 5000 validation split */
	snprintf(a, sizeof(a), "%s/train-images-idx3-ubyte.gz", sub);
	snprintf(b, sizeof(b), "%s/train-labels-idx1-ubyte.gz", sub);
	make_images(a, 0x803, 5000, 2, 3, 0, 1);
	make_labels(b, 0x801, 5000, 0, 1, -1);
	assert_int_equal(rdm_mnist_load(sub, &tr, NULL, NULL, err, sizeof(err)), RDMAPS_E_CORRUPT);
	assert_non_null(strstr(err, "validation"));
}

/* The models' input size: 28x28 passes, anything else is refused by name. */
static void t_check_28x28(void **st)
{
	(void)st;
	struct rdm_images d = { .n = 1, .rows = 28, .cols = 28 };
	char err[256] = "";
	assert_int_equal(rdm_images_check_28x28(&d, "x", err, sizeof(err)), 0);
	d.rows = 40;
	d.cols = 40;
	assert_int_equal(rdm_images_check_28x28(&d, "big", err, sizeof(err)), RDMAPS_E_CORRUPT);
	assert_non_null(strstr(err, "big: images are 40x40"));
	d.rows = 28;
	d.cols = 27;
	assert_int_equal(rdm_images_check_28x28(&d, "x", err, sizeof(err)), RDMAPS_E_CORRUPT);
	assert_int_equal(rdm_images_check_28x28(NULL, "x", err, sizeof(err)), RDMAPS_E_CORRUPT);
}

/* Dataset of 1x2 images where image i holds its index in its two pixels
 * (low byte, high byte) and label i%10. */
static struct rdm_images index_data(int n)
{
	uint8_t *px = malloc(2 * (size_t)n);
	struct rdm_images d = {.n = n, .rows = 1, .cols = 2, .px = px, .y = malloc(n), .mem = px};
	for (int i = 0; i < n; i++) {
		px[2 * i] = (uint8_t)(i & 255);
		px[2 * i + 1] = (uint8_t)(i >> 8);
		d.y[i] = (uint8_t)(i % 10);
	}
	return d;
}

/* The batch's floats are the pixels / 255 (rdm_pixels_to_float): the index
 * comes back from them exactly */
static void draw(struct rdm_batcher *b, int n, int *idx)
{
	float *x = malloc(sizeof(float) * 2 * n);
	uint8_t *y = malloc(n);
	rdm_batcher_next(b, n, x, y);
	for (int i = 0; i < n; i++) {
		int lo = (int)lrintf(x[2 * i] * 255.0f), hi = (int)lrintf(x[2 * i + 1] * 255.0f);
		assert_true(x[2 * i] == (float)lo * (1.0f / 255.0f) && x[2 * i + 1] == (float)hi * (1.0f / 255.0f));
		idx[i] = lo + 256 * hi;
		assert_int_equal(y[i], idx[i] % 10);
	}
	free(x);
	free(y);
}

static void assert_perm(const int *idx, int n)
{
	int *seen = calloc(n, sizeof(int));
	for (int i = 0; i < n; i++) {
		assert_in_range(idx[i], 0, n - 1);
		seen[idx[i]]++;
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(seen[i], 1);
	free(seen);
}

static void t_batch_deterministic(void **st)
{
	(void)st;
	struct rdm_images d = index_data(1000);
	struct rdm_batcher *a, *b, *c;
	assert_int_equal(rdm_batcher_new(&d, 42, &a), 0);
	assert_int_equal(rdm_batcher_new(&d, 42, &b), 0);
	assert_int_equal(rdm_batcher_new(&d, 43, &c), 0);
	int ia[100], ib[100], ic[100];
	int differ = 0, not_identity = 0;
	for (int k = 0; k < 25; k++) {
		draw(a, 100, ia);
		draw(b, 100, ib);
		draw(c, 100, ic);
		assert_memory_equal(ia, ib, sizeof(ia));
		for (int i = 0; i < 100; i++) {
			differ += ia[i] != ic[i];
			not_identity += ia[i] != k * 100 + i;
		}
	}
	assert_true(differ > 1000);       /* other seed, other order */
	assert_true(not_identity > 1000); /* actually shuffled */
	rdm_batcher_delete(&a);
	rdm_batcher_delete(&b);
	rdm_batcher_delete(&c);
	assert_null(a);
	rdm_batcher_delete(&a);
	rdm_images_free(&d);
}

static void t_batch_epoch_permutation(void **st)
{
	(void)st;
	const int n = 550;
	struct rdm_images d = index_data(n);
	struct rdm_batcher *b;
	assert_int_equal(rdm_batcher_new(&d, 7, &b), 0);
	int *stream = malloc(sizeof(int) * n * 5);
	for (int k = 0; k < n * 5 / 50; k++) /* 50 divides 550: no crossing batch */
		draw(b, 50, stream + k * 50);
	for (int e = 0; e < 5; e++)
		assert_perm(stream + e * n, n);
	/* consecutive epochs use different permutations */
	assert_true(memcmp(stream, stream + n, sizeof(int) * n) != 0);
	assert_int_equal(rdm_batcher_epochs(b), 4); /* 5th epoch ended exactly: not counted until next call */
	rdm_batcher_delete(&b);
	free(stream);
	rdm_images_free(&d);
}

static void t_batch_epoch_crossing(void **st)
{
	(void)st;
	const int n = 10;
	struct rdm_images d = index_data(n);
	struct rdm_batcher *b, *ref;
	assert_int_equal(rdm_batcher_new(&d, 99, &b), 0);
	assert_int_equal(rdm_batcher_new(&d, 99, &ref), 0);
	/* ref draws whole epochs: its batches are exactly the permutations. */
	int p1[10], p2[10], p3[10];
	draw(ref, 10, p1);
	draw(ref, 10, p2);
	draw(ref, 10, p3);
	assert_perm(p1, n);
	assert_perm(p2, n);

	int s[3], c[3];
	for (int k = 0; k < 3; k++) {
		draw(b, 3, s);
		assert_memory_equal(s, p1 + 3 * k, sizeof(s));
	}
	assert_int_equal(rdm_batcher_epochs(b), 0);
	/* 4th batch: tail of old permutation (1 example) + head of new one (2). */
	draw(b, 3, c);
	assert_int_equal(rdm_batcher_epochs(b), 1);
	assert_int_equal(c[0], p1[9]);
	assert_int_equal(c[1], p2[0]);
	assert_int_equal(c[2], p2[1]);
	/* then continues in the new permutation */
	draw(b, 3, c);
	assert_memory_equal(c, p2 + 2, sizeof(c));
	/* a batch larger than the data set crosses two boundaries */
	int big[25];
	draw(b, 25, big);
	assert_memory_equal(big, p2 + 5, 5 * sizeof(int));
	assert_memory_equal(big + 5, p3, 10 * sizeof(int));
	assert_perm(big + 15, n);
	assert_int_equal(rdm_batcher_epochs(b), 3);
	/* NULL outputs advance the stream */
	rdm_batcher_next(b, 1, NULL, NULL);
	rdm_batcher_delete(&b);
	rdm_batcher_delete(&ref);
	rdm_images_free(&d);
}

static void t_batch_bad_args(void **st)
{
	(void)st;
	struct rdm_images e = {.n = 0, .rows = 1, .cols = 1};
	struct rdm_batcher *b = (void *)1;
	assert_int_equal(rdm_batcher_new(&e, 1, &b), RDMAPS_E_INVAL);
	assert_null(b);
	assert_int_equal(rdm_batcher_new(NULL, 1, &b), RDMAPS_E_INVAL);
	assert_int_equal(rdm_batcher_new(&e, 1, NULL), RDMAPS_E_INVAL);
}

/* The shuffle's seed never equals the initializer's (the job's seed): for
 * seed 0 on task 0 the formula gave 0 for both; every other seed keeps
 * seed * 1000003 + task (the figures measured with it stay valid) */
static void t_shuffle_seed(void **st)
{
	(void)st;
	for (uint64_t s = 0; s < 50; s++)
		for (uint64_t t = 0; t < 8; t++) {
			assert_true(rdm_shuffle_seed(s, t) != s);
			if (s || t)
				assert_true(rdm_shuffle_seed(s, t) == s * 1000003u + t);
		}
	assert_true(rdm_shuffle_seed(0, 1) != rdm_shuffle_seed(0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_pixels_to_float),
		cmocka_unit_test(t_gzip_two_members),
		cmocka_unit_test(t_valid_plain),
		cmocka_unit_test(t_valid_gzip),
		cmocka_unit_test(t_truncated),
		cmocka_unit_test(t_truncated_gzip_stream),
		cmocka_unit_test(t_bad_magic),
		cmocka_unit_test(t_wrong_counts),
		cmocka_unit_test(t_trailing),
		cmocka_unit_test(t_label_range),
		cmocka_unit_test(t_missing),
		cmocka_unit_test(t_mnist_split),
		cmocka_unit_test(t_check_28x28),
		cmocka_unit_test(t_batch_deterministic),
		cmocka_unit_test(t_batch_epoch_permutation),
		cmocka_unit_test(t_batch_epoch_crossing),
		cmocka_unit_test(t_batch_bad_args),
		cmocka_unit_test(t_shuffle_seed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
