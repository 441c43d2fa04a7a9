/* A fixed-size record of durations (one float each, microseconds) and its
 * percentiles, for a task's own end-of-run report (the ps's sync barrier).
 * Memory is taken once at init; rdmaps_lat_add is a store and a compare
 * (no allocation, no lock: one thread adds).  When more than cap durations
 * were added, the percentiles are over the last cap of them; the count and
 * the maximum are over all. */
#ifndef RDMAPS_LAT_H
#define RDMAPS_LAT_H

#include <stdint.h>

struct rdmaps_lat {
	float *v;        /* ring of the last cap samples */
	uint32_t cap;
	uint64_t total;  /* samples added */
	double max;      /* over all of them */
};

/* 0, RDMAPS_E_INVAL (cap 0) or RDMAPS_E_NOMEM; *l is zeroed first. */
int rdmaps_lat_init(struct rdmaps_lat *l, uint32_t cap);

static inline void rdmaps_lat_add(struct rdmaps_lat *l, double us)
{
	if (!l->v)
		return;
	l->v[l->total % l->cap] = (float)us;
	l->total++;
	if (us > l->max)
		l->max = us;
}

/* The samples kept: min(total, cap). */
static inline uint32_t rdmaps_lat_kept(const struct rdmaps_lat *l)
{
	return l->total < l->cap ? (uint32_t)l->total : l->cap;
}

/* Nearest-rank percentiles (q in [0, 1]: the sample ceil(q * n) of the n
 * kept, sorted) into out[0..k-1].  0; RDMAPS_E_STATE when no sample was
 * kept; RDMAPS_E_INVAL for a q outside [0, 1]; RDMAPS_E_NOMEM. */
int rdmaps_lat_pct(const struct rdmaps_lat *l, const double *q, double *out, int k);

void rdmaps_lat_free(struct rdmaps_lat *l);

#endif
