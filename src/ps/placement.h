/* rdmaps placement: which ps shard holds which floats of the flat model vector.
 *
 * Greedy load balancing on bytes, as TensorFlow's GreedyLoadBalancingStrategy
 * (argmin load, lowest index on ties, creation order), plus splitting of tensors
 * larger than the fair share (total/nps) along their flat row-major layout, the way
 * a partitioner would; see docs/placement.md for the exact algorithm.
 * Deterministic: same tensors and nps -> same placement and hash. */
#ifndef RDMAPS_PS_PLACEMENT_H
#define RDMAPS_PS_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/model.h" /* struct rdm_tensor */

/* floats [tensor_off, tensor_off+count) of tensor t[tensor] live on shard ps at
 * float offset shard_off of that shard's contiguous buffer. */
struct rdmaps_piece {
	int tensor;
	size_t tensor_off;
	size_t count;
	int ps;
	size_t shard_off;
};

struct rdmaps_placement {
	int nps;
	int npieces;
	struct rdmaps_piece *pieces; /* sorted by (tensor, tensor_off) */
	size_t *shard_count;         /* floats per shard, nps entries */
};

/* Chunk alignment unit for split points inside a tensor, in floats. */
#define RDMAPS_PLACE_ALIGN 16

/* nt >= 1 tensors (count >= 1, count == product of shape when ndim >= 1),
 * 1 <= nps <= 4096.  Returns 0, RDMAPS_E_INVAL or RDMAPS_E_NOMEM; *out zeroed on
 * failure. */
int rdmaps_place(const struct rdm_tensor *t, int nt, int nps, struct rdmaps_placement *out);
void rdmaps_placement_free(struct rdmaps_placement *p);
/* Human table: tensor, shape, range, ps, bytes; then per-shard totals. */
void rdmaps_placement_print(FILE *f, const struct rdmaps_placement *p, const struct rdm_tensor *t);
/* FNV-1a (64 bit) over nps and every piece's fields (as little-endian u64). */
uint64_t rdmaps_placement_hash(const struct rdmaps_placement *p);

#endif
