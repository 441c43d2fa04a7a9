/* rdmaps data: IDX reader, MNIST train/validation/test split, TF-style batcher.
 *
 * Semantics follow tensorflow/contrib/learn/python/learn/datasets/mnist.py as
 * used by mnist_replica.py: validation = first 5000 images of the 60k training
 * file, train = the remaining 55000, test = t10k; pixels scaled by 1/255;
 * next_batch shuffles at the first call and at every epoch boundary, and an
 * epoch-crossing batch is the tail of the old permutation followed by the
 * head of the new one.  See docs/data.md. */
#ifndef RDMAPS_KERNELS_DATA_H
#define RDMAPS_KERNELS_DATA_H

#include <stddef.h>
#include <stdint.h>

/* A data set as the IDX file holds it: px = n*rows*cols pixel bytes 0..255
 * (row-major, one image after the other), y = n labels.  Pixels stay bytes
 * until a batch or an evaluation needs them (rdm_pixels_to_float): a worker
 * holds MNIST's 60k images in 47 MB, not 188 MB of floats, and loading is one
 * read into the buffer px points into.  mem owns that buffer (px may point
 * past its start, e.g. past the header or the validation rows); y is its own
 * allocation. */
struct rdm_images {
	int n, rows, cols;
	const uint8_t *px;
	uint8_t *y;
	uint8_t *mem;
};

/* x[i] = px[i] * (1/255.0f), i < count: TF's float32 array times 1.0/255.0
 * (numpy applies it in float32), so 255 gives exactly 1.0. */
static inline void rdm_pixels_to_float(const uint8_t *px, size_t count, float *x)
{
	const float s = 1.0f / 255.0f;
	for (size_t i = 0; i < count; i++)
		x[i] = (float)px[i] * s;
}

/* Load an IDX3 images file + IDX1 labels file, plain or gzip (detected by the
 * magic 1f 8b), validating magic (0x00000803 / 0x00000801), dims, equal
 * counts, exact file sizes (truncated or trailing bytes are errors) and labels
 * 0..9.  Returns 0, RDMAPS_E_IO (cannot open/read), RDMAPS_E_CORRUPT (bad
 * contents), RDMAPS_E_INVAL (bad arguments) or RDMAPS_E_NOMEM.  On error err
 * (if non-NULL) names the file and what is wrong and *out is zeroed. */
int rdm_idx_load(const char *images_path, const char *labels_path, struct rdm_images *out, char *err, size_t errlen);

/* Looks in data_dir for train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
 * t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz] (plain preferred
 * when both exist).  validation = first 5000 of the train file, train = the
 * remaining, test = t10k.  Any of the out pointers may be NULL (the t10k files
 * are then not needed when test is NULL).  The train file must hold more than
 * 5000 images. */
int rdm_mnist_load(const char *data_dir, struct rdm_images *train, struct rdm_images *validation, struct rdm_images *test, char *err, size_t errlen);

/* The models take 28x28 images (784 inputs).  Returns 0, or
 * RDMAPS_E_CORRUPT with err naming `what` and the size it has (a loader
 * that took any size would let a 40x40 file overrun the batch buffers). */
int rdm_images_check_28x28(const struct rdm_images *d, const char *what, char *err, size_t errlen);

/* Frees mem and y and zeroes *d; accepts NULL and already-freed structs. */
void rdm_images_free(struct rdm_images *d);

struct rdm_batcher;
/* d must outlive the batcher and hold n >= 1.  Returns 0, RDMAPS_E_INVAL or RDMAPS_E_NOMEM. */
int rdm_batcher_new(const struct rdm_images *d, uint64_t seed, struct rdm_batcher **b);

/* The batcher's seed for task `task` of a job seeded `seed` (the model's
 * initializer takes `seed` itself): seed * 1000003 + task, a stream of its
 * own per worker.  For seed 0 on task 0 that is 0, the initializer's seed
 * too, so the first shuffle would draw the initial weights' sequence:
 * that one case is moved off it (until 2026-12-06 it was not; every other
 * seed keeps the streams, and the figures, it always had). */
static inline uint64_t rdm_shuffle_seed(uint64_t seed, uint64_t task)
{
	uint64_t s = seed * 1000003u + task;
	return s == seed ? s ^ 0x9e3779b97f4a7c15ull : s;
}
/* Copy n examples (n*rows*cols floats in [0,1] to x, n labels to y; either may be NULL),
 * TF next_batch semantics, permutations from a seeded xoshiro256** PRNG.
 * n may exceed d->n (then several epochs are crossed). */
void rdm_batcher_next(struct rdm_batcher *b, int n, float *x, uint8_t *y);  /* copy n examples, TF next_batch semantics, seeded PRNG (e.g. splitmix64/xoshiro) */
/* Number of completed epochs (for tests / logging). */
uint64_t rdm_batcher_epochs(const struct rdm_batcher *b);
void rdm_batcher_delete(struct rdm_batcher **b);

#endif
