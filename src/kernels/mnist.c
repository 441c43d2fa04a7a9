/* MNIST directory loader: train/validation/test split as TF's read_data_sets. */
#include "kernels/data.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MNIST_VALIDATION 5000

/* Prefer the plain file, fall back to .gz.  Returns 0 when one exists;
 * otherwise RDMAPS_E_IO with err saying neither is there and where MNIST
 * comes from (a missing data directory is the usual first-run mistake). */
static int find_file(const char *dir, const char *base, char *path, size_t len, char *err, size_t errlen)
{
	struct stat st;
	snprintf(path, len, "%s/%s", dir, base);
	if (stat(path, &st) == 0)
		return 0;
	snprintf(path, len, "%s/%s.gz", dir, base);
	if (stat(path, &st) == 0)
		return 0;
	snprintf(path, len, "%s/%s", dir, base);
	if (err && errlen)
		snprintf(err, errlen,
			 "%s: neither %s nor %s.gz is there (scripts/fetch-data.sh fetches MNIST into data/mnist "
			 "and Fashion-MNIST into data/fashion; pass that directory as --data_dir)",
			 dir, base, base);
	return RDMAPS_E_IO;
}

/* A copy of rows [from, from + count) of src, in buffers of its own. */
static int take_rows(const struct rdm_images *src, int from, int count, struct rdm_images *dst)
{
	size_t px = (size_t)src->rows * src->cols;
	memset(dst, 0, sizeof(*dst));
	dst->mem = malloc(count ? (size_t)count * px : 1);
	dst->y = malloc(count ? (size_t)count : 1);
	if (!dst->mem || !dst->y) {
		rdm_images_free(dst);
		return RDMAPS_E_NOMEM;
	}
	memcpy(dst->mem, src->px + (size_t)from * px, (size_t)count * px);
	memcpy(dst->y, src->y + from, (size_t)count);
	dst->px = dst->mem;
	dst->n = count;
	dst->rows = src->rows;
	dst->cols = src->cols;
	return 0;
}

int rdm_mnist_load(const char *data_dir, struct rdm_images *train, struct rdm_images *validation,
		   struct rdm_images *test, char *err, size_t errlen)
{
	if (train)
		memset(train, 0, sizeof(*train));
	if (validation)
		memset(validation, 0, sizeof(*validation));
	if (test)
		memset(test, 0, sizeof(*test));
	if (err && errlen)
		err[0] = '\0';
	if (!data_dir) {
		if (err && errlen)
			snprintf(err, errlen, "rdm_mnist_load: data_dir is NULL");
		return RDMAPS_E_INVAL;
	}
	char ip[4096], lp[4096];
	int rc;
	if (train || validation) {
		struct rdm_images full;
		if ((rc = find_file(data_dir, "train-images-idx3-ubyte", ip, sizeof(ip), err, errlen)) ||
		    (rc = find_file(data_dir, "train-labels-idx1-ubyte", lp, sizeof(lp), err, errlen)))
			return rc;
		rc = rdm_idx_load(ip, lp, &full, err, errlen);
		if (rc)
			return rc;
		if (full.n <= MNIST_VALIDATION) {
			if (err && errlen)
				snprintf(err, errlen, "%s: %d images, need more than %d (validation split)", ip, full.n,
					 MNIST_VALIDATION);
			rdm_images_free(&full);
			return RDMAPS_E_CORRUPT;
		}
		if (validation && (rc = take_rows(&full, 0, MNIST_VALIDATION, validation)) != 0)
			goto nomem;
		if (train) {
			/* The rest of the file's buffer, in place: no copy (the
			 * validation rows before it stay allocated, 3.9 MB for MNIST). */
			size_t px = (size_t)full.rows * full.cols;
			int rest = full.n - MNIST_VALIDATION;
			full.px += (size_t)MNIST_VALIDATION * px;
			memmove(full.y, full.y + MNIST_VALIDATION, (size_t)rest);
			full.n = rest;
			*train = full;
		} else {
			rdm_images_free(&full);
		}
		goto test;
	nomem:
		rdm_images_free(&full);
		if (validation)
			rdm_images_free(validation);
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory splitting validation", ip);
		return RDMAPS_E_NOMEM;
	}
test:
	if (test) {
		rc = find_file(data_dir, "t10k-images-idx3-ubyte", ip, sizeof(ip), err, errlen);
		if (!rc)
			rc = find_file(data_dir, "t10k-labels-idx1-ubyte", lp, sizeof(lp), err, errlen);
		if (!rc)
			rc = rdm_idx_load(ip, lp, test, err, errlen);
		if (rc) {
			if (train)
				rdm_images_free(train);
			if (validation)
				rdm_images_free(validation);
			return rc;
		}
	}
	return 0;
}

int rdm_images_check_28x28(const struct rdm_images *d, const char *what, char *err, size_t errlen)
{
	if (d && d->rows == 28 && d->cols == 28)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "%s: images are %dx%d, the models take 28x28 (MNIST, Fashion-MNIST)",
			 what, d ? d->rows : 0, d ? d->cols : 0);
	return RDMAPS_E_CORRUPT;
}
