/* TF DataSet.next_batch semantics with a seeded xoshiro256** PRNG. */
#include "kernels/data.h"
#include "kernels/kernels.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

struct rdm_batcher {
	const struct rdm_images *d;
	struct rdm_rng rng; /* xoshiro256** (kernels.h, shared with the initializers) */
	uint32_t *perm;     /* current epoch's permutation */
	int index;          /* position in perm (TF _index_in_epoch) */
	int shuffled;       /* first shuffle done */
	uint64_t epochs;    /* TF _epochs_completed */
};

/* Uniform in [0, bound) without modulo bias (Lemire). */
static uint32_t below(struct rdm_rng *r, uint32_t bound)
{
	uint64_t m = (rdm_rng_u64(r) >> 32) * bound;
	uint32_t l = (uint32_t)m;
	if (l < bound) {
		uint32_t t = (uint32_t)(-bound) % bound;
		while (l < t) {
			m = (rdm_rng_u64(r) >> 32) * bound;
			l = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

/* Fisher-Yates over the identity: each epoch is a fresh permutation of
 * 0..n-1, like numpy.random.shuffle(arange(n)) in TF's DataSet. */
static void reshuffle(struct rdm_batcher *b)
{
	uint32_t n = (uint32_t)b->d->n;
	for (uint32_t i = 0; i < n; i++)
		b->perm[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = below(&b->rng, i + 1);
		uint32_t t = b->perm[i];
		b->perm[i] = b->perm[j];
		b->perm[j] = t;
	}
}

int rdm_batcher_new(const struct rdm_images *d, uint64_t seed, struct rdm_batcher **b)
{
	if (!b)
		return RDMAPS_E_INVAL;
	*b = NULL;
	if (!d || d->n < 1 || d->rows < 1 || d->cols < 1 || !d->px || !d->y)
		return RDMAPS_E_INVAL;
	struct rdm_batcher *p = calloc(1, sizeof(*p));
	if (!p)
		return RDMAPS_E_NOMEM;
	p->perm = malloc((size_t)d->n * sizeof(uint32_t));
	if (!p->perm) {
		free(p);
		return RDMAPS_E_NOMEM;
	}
	p->d = d;
	rdm_rng_seed(&p->rng, seed);
	*b = p;
	return 0;
}

/* TF: shuffle on the first call; when start + n > num_examples, take the rest
 * of this epoch, reshuffle, epochs_completed++, and take the head of the new
 * permutation.  A batch that ends exactly at the epoch end does not reshuffle
 * until the next call (same as TF).  Unlike TF, n > num_examples is allowed
 * (the loop crosses as many epochs as needed). */
void rdm_batcher_next(struct rdm_batcher *b, int n, float *x, uint8_t *y)
{
	if (!b || n <= 0)
		return;
	const struct rdm_images *d = b->d;
	size_t px = (size_t)d->rows * d->cols;
	if (!b->shuffled) {
		reshuffle(b);
		b->shuffled = 1;
		b->index = 0;
	}
	int k = 0;
	while (k < n) {
		if (b->index >= d->n) {
			b->epochs++;
			reshuffle(b);
			b->index = 0;
		}
		int take = d->n - b->index;
		if (take > n - k)
			take = n - k;
		for (int i = 0; i < take; i++) {
			uint32_t src = b->perm[b->index + i];
			if (x)
				rdm_pixels_to_float(d->px + (size_t)src * px, px, x + (size_t)(k + i) * px);
			if (y)
				y[k + i] = d->y[src];
		}
		b->index += take;
		k += take;
	}
}

uint64_t rdm_batcher_epochs(const struct rdm_batcher *b)
{
	return b ? b->epochs : 0;
}

void rdm_batcher_delete(struct rdm_batcher **b)
{
	if (!b || !*b)
		return;
	free((*b)->perm);
	free(*b);
	*b = NULL;
}
