/* IDX file reader (LeCun MNIST format), plain or gzip. */
#include "kernels/data.h"
#include "common/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_MAX_BYTES (1ull << 32) /* refuse anything claiming more than 4 GiB */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* How many bytes path will decompress to, as a first buffer size: a plain
 * file's size; a gzip file's ISIZE trailer (its length mod 2^32), believed
 * only up to deflate's largest ratio (1032:1) over the compressed size, so
 * that a lying trailer cannot make us allocate gigabytes.  A wrong guess only
 * costs growing the buffer.  0 when unknown. */
static size_t size_hint(FILE *f, int gz)
{
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || st.st_size <= 0)
		return 0;
	uint64_t sz = (uint64_t)st.st_size;
	if (!gz)
		return sz < IDX_MAX_BYTES ? (size_t)sz : 0;
	uint8_t t[4];
	if (sz < 18 || fseeko(f, -4, SEEK_END) != 0 || fread(t, 1, 4, f) != 4)
		return 0;
	uint64_t isize = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
	uint64_t most = sz * 1032;
	return isize <= most ? (size_t)isize : 0;
}

/* Reads the whole (decompressed) content of path into one buffer, sized from
 * size_hint so that a well-formed file is read in place, without a copy.
 * gzip is detected by the magic 1f 8b; anything else is read as-is. */
static int read_all(const char *path, uint8_t **buf, size_t *len, int *gz, char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return RDMAPS_E_IO;
	}
	uint8_t m[2] = {0, 0};
	size_t got = fread(m, 1, 2, f);
	*gz = got == 2 && m[0] == 0x1f && m[1] == 0x8b;
	size_t hint = size_hint(f, *gz);
	fclose(f);

	gzFile g = gzopen(path, "rb");
	if (!g) {
		seterr(err, errlen, "%s: cannot open: %s", path, errno ? strerror(errno) : "gzopen failed");
		return RDMAPS_E_IO;
	}
	gzbuffer(g, 1 << 17);
	/* + 1: room for the read that returns 0 at the end, so that an exact
	 * guess never grows the buffer */
	size_t cap = (hint ? hint : 1 << 20) + 1, n = 0;
	uint8_t *b = malloc(cap);
	if (!b) {
		gzclose(g);
		seterr(err, errlen, "%s: out of memory", path);
		return RDMAPS_E_NOMEM;
	}
	for (;;) {
		if (n == cap) {
			if (cap > IDX_MAX_BYTES) {
				free(b);
				gzclose(g);
				seterr(err, errlen, "%s: larger than %llu bytes", path, IDX_MAX_BYTES);
				return RDMAPS_E_CORRUPT;
			}
			size_t ncap = cap * 2 > IDX_MAX_BYTES + 1 ? IDX_MAX_BYTES + 1 : cap * 2;
			uint8_t *nb = realloc(b, ncap);
			if (!nb) {
				free(b);
				gzclose(g);
				seterr(err, errlen, "%s: out of memory", path);
				return RDMAPS_E_NOMEM;
			}
			b = nb;
			cap = ncap;
		}
		unsigned want = (unsigned)((cap - n) > (1u << 30) ? (1u << 30) : (cap - n));
		int r = gzread(g, b + n, want);
		if (r < 0) {
			int zerr = 0;
			const char *msg = gzerror(g, &zerr);
			seterr(err, errlen, "%s: %s: %s", path, *gz ? "gzip stream error (truncated or corrupt)" : "read error",
			       zerr == Z_ERRNO ? strerror(errno) : msg);
			free(b);
			gzclose(g);
			return zerr == Z_ERRNO ? RDMAPS_E_IO : RDMAPS_E_CORRUPT;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	/* gzread reports a truncated gzip stream only via gzerror (Z_BUF_ERROR). */
	int zerr = 0;
	const char *msg = gzerror(g, &zerr);
	if (zerr != Z_OK) {
		seterr(err, errlen, "%s: gzip stream error (truncated or corrupt): %s", path, msg);
		free(b);
		gzclose(g);
		return RDMAPS_E_CORRUPT;
	}
	gzclose(g);
	*buf = b;
	*len = n;
	return 0;
}

int rdm_idx_load(const char *images_path, const char *labels_path, struct rdm_images *out, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out) {
		seterr(err, errlen, "rdm_idx_load: out is NULL");
		return RDMAPS_E_INVAL;
	}
	memset(out, 0, sizeof(*out));
	if (!images_path || !labels_path) {
		seterr(err, errlen, "rdm_idx_load: NULL path");
		return RDMAPS_E_INVAL;
	}
	uint8_t *ib = NULL, *lb = NULL;
	size_t il = 0, ll = 0;
	int igz = 0, lgz = 0;
	int rc = read_all(images_path, &ib, &il, &igz, err, errlen);
	if (rc)
		return rc;
	rc = read_all(labels_path, &lb, &ll, &lgz, err, errlen);
	if (rc) {
		free(ib);
		return rc;
	}
	const char *iw = igz ? " (decompressed)" : "";
	const char *lw = lgz ? " (decompressed)" : "";
	rc = RDMAPS_E_CORRUPT;
	uint8_t *y = NULL;

	if (il < 16) {
		seterr(err, errlen, "%s: truncated header: %zu bytes%s, need 16", images_path, il, iw);
		goto out;
	}
	if (be32(ib) != IDX_IMAGES_MAGIC) {
		seterr(err, errlen, "%s: bad magic 0x%08x, expected 0x%08x (IDX3 unsigned-byte images)", images_path,
		       be32(ib), IDX_IMAGES_MAGIC);
		goto out;
	}
	uint32_t n = be32(ib + 4), rows = be32(ib + 8), cols = be32(ib + 12);
	if (n > INT32_MAX || rows == 0 || cols == 0 || rows > 65535 || cols > 65535) {
		seterr(err, errlen, "%s: bad dimensions %u x %u x %u", images_path, n, rows, cols);
		goto out;
	}
	uint64_t pix = (uint64_t)n * rows * cols;
	if (16 + pix > IDX_MAX_BYTES) {
		seterr(err, errlen, "%s: dimensions %u x %u x %u too large", images_path, n, rows, cols);
		goto out;
	}
	if (il != 16 + pix) {
		seterr(err, errlen, "%s: %s: %zu bytes%s, expected exactly %llu for %u images of %ux%u", images_path,
		       il < 16 + pix ? "truncated" : "trailing bytes", il, iw, (unsigned long long)(16 + pix), n, rows,
		       cols);
		goto out;
	}
	if (ll < 8) {
		seterr(err, errlen, "%s: truncated header: %zu bytes%s, need 8", labels_path, ll, lw);
		goto out;
	}
	if (be32(lb) != IDX_LABELS_MAGIC) {
		seterr(err, errlen, "%s: bad magic 0x%08x, expected 0x%08x (IDX1 unsigned-byte labels)", labels_path,
		       be32(lb), IDX_LABELS_MAGIC);
		goto out;
	}
	uint32_t ln = be32(lb + 4);
	if (ln != n) {
		seterr(err, errlen, "%s: %u labels but %s has %u images", labels_path, ln, images_path, n);
		goto out;
	}
	if (ll != 8 + (uint64_t)ln) {
		seterr(err, errlen, "%s: %s: %zu bytes%s, expected exactly %llu for %u labels", labels_path,
		       ll < 8 + (uint64_t)ln ? "truncated" : "trailing bytes", ll, lw, (unsigned long long)(8 + (uint64_t)ln),
		       ln);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (lb[8 + i] > 9) {
			seterr(err, errlen, "%s: label %u of record %u out of range 0..9", labels_path, lb[8 + i], i);
			goto out;
		}
	}
	y = malloc(n ? n : 1);
	if (!y) {
		seterr(err, errlen, "%s: out of memory for %u labels", labels_path, n);
		rc = RDMAPS_E_NOMEM;
		goto out;
	}
	memcpy(y, lb + 8, n);
	/* the pixels stay where they were read: past the 16-byte header */
	out->n = (int)n;
	out->rows = (int)rows;
	out->cols = (int)cols;
	out->px = ib + 16;
	out->mem = ib;
	out->y = y;
	ib = NULL;
	y = NULL;
	rc = 0;
out:
	free(y);
	free(ib);
	free(lb);
	return rc;
}

void rdm_images_free(struct rdm_images *d)
{
	if (!d)
		return;
	free(d->mem);
	free(d->y);
	memset(d, 0, sizeof(*d));
}
