/* Percentiles of a fixed-size duration record (lat.h). */
#include "common/lat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

int rdmaps_lat_init(struct rdmaps_lat *l, uint32_t cap)
{
	memset(l, 0, sizeof(*l));
	if (!cap)
		return RDMAPS_E_INVAL;
	l->v = malloc((size_t)cap * sizeof(float));
	if (!l->v)
		return RDMAPS_E_NOMEM;
	l->cap = cap;
	return 0;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

int rdmaps_lat_pct(const struct rdmaps_lat *l, const double *q, double *out, int k)
{
	uint32_t n = rdmaps_lat_kept(l);
	float *s;

	for (int i = 0; i < k; i++)
		if (!(q[i] >= 0.0 && q[i] <= 1.0))
			return RDMAPS_E_INVAL;
	if (!l->v || n == 0)
		return RDMAPS_E_STATE;
	s = malloc((size_t)n * sizeof(float));
	if (!s)
		return RDMAPS_E_NOMEM;
	memcpy(s, l->v, (size_t)n * sizeof(float));
	qsort(s, n, sizeof(float), cmp_float);
	for (int i = 0; i < k; i++) {
		double r = ceil(q[i] * (double)n);
		uint32_t at = r < 1.0 ? 0 : (uint32_t)r - 1;

		out[i] = s[at < n ? at : n - 1];
	}
	free(s);
	return 0;
}

void rdmaps_lat_free(struct rdmaps_lat *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}
