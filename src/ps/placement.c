/* rdmaps placement: greedy load balancing with splitting of large tensors.
 * Algorithm and guarantees: docs/placement.md. */
#include "placement.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PS 4096

static int cmp_piece(const void *a, const void *b)
{
	const struct rdmaps_piece *x = a, *y = b;
	if (x->tensor != y->tensor)
		return x->tensor < y->tensor ? -1 : 1;
	if (x->tensor_off != y->tensor_off)
		return x->tensor_off < y->tensor_off ? -1 : 1;
	return 0;
}

static void sort_shards(int *idx, int n, const size_t *load)
{
	/* insertion sort by (load, index): deterministic, n is small */
	for (int i = 1; i < n; i++) {
		int v = idx[i], j = i - 1;
		while (j >= 0 && (load[idx[j]] > load[v] || (load[idx[j]] == load[v] && idx[j] > v))) {
			idx[j + 1] = idx[j];
			j--;
		}
		idx[j + 1] = v;
	}
}

static int valid_tensor(const struct rdm_tensor *t)
{
	if (t->count == 0 || t->ndim < 0 || t->ndim > 4)
		return 0;
	if (t->ndim == 0)
		return t->count == 1;
	size_t prod = 1;
	for (int d = 0; d < t->ndim; d++) {
		if (t->shape[d] <= 0)
			return 0;
		if (prod > SIZE_MAX / (size_t)t->shape[d])
			return 0;
		prod *= (size_t)t->shape[d];
	}
	return prod == t->count;
}

int rdmaps_place(const struct rdm_tensor *t, int nt, int nps, struct rdmaps_placement *out)
{
	if (!out)
		return RDMAPS_E_INVAL;
	memset(out, 0, sizeof *out);
	if (!t || nt < 1 || nps < 1 || nps > MAX_PS)
		return RDMAPS_E_INVAL;
	size_t total = 0;
	for (int i = 0; i < nt; i++) {
		if (!valid_tensor(&t[i]) || t[i].count > SIZE_MAX / (4 * MAX_PS) - total)
			return RDMAPS_E_INVAL;
		total += t[i].count;
	}

	size_t cap = (size_t)nt + (size_t)nps + 1;
	struct rdmaps_piece *pc = calloc(cap, sizeof *pc);
	size_t *load = calloc((size_t)nps, sizeof *load);
	size_t *quota = calloc((size_t)nps, sizeof *quota);
	int *order = malloc((size_t)nps * sizeof *order);
	if (!pc || !load || !quota || !order) {
		free(pc);
		free(load);
		free(quota);
		free(order);
		return RDMAPS_E_NOMEM;
	}
	int np = 0;

	/* 1. tensors up to the fair share: greedy argmin(load), creation order. */
	size_t big_total = 0;
	for (int i = 0; i < nt; i++) {
		int big = nps > 1 && t[i].count * (size_t)nps > total;
		if (big) {
			big_total += t[i].count;
			continue;
		}
		int k = 0;
		for (int j = 1; j < nps; j++)
			if (load[j] < load[k])
				k = j;
		pc[np++] = (struct rdmaps_piece){ .tensor = i, .tensor_off = 0,
						  .count = t[i].count, .ps = k };
		load[k] += t[i].count;
	}

	/* 2. large tensors: water-fill the least loaded shards. */
	if (big_total) {
		for (int k = 0; k < nps; k++)
			order[k] = k;
		sort_shards(order, nps, load);
		int m = 1;
		size_t prefix = load[order[0]];
		while (m < nps && big_total + prefix > (size_t)m * load[order[m]]) {
			prefix += load[order[m]];
			m++;
		}
		size_t level_sum = big_total + prefix;
		size_t base = level_sum / (size_t)m, rem = level_sum % (size_t)m;
		/* receivers in shard-index order; the first rem get one extra float */
		int *recv = calloc((size_t)nps, sizeof *recv);
		if (!recv) {
			free(pc);
			free(load);
			free(quota);
			free(order);
			return RDMAPS_E_NOMEM;
		}
		for (int j = 0; j < m; j++)
			recv[order[j]] = 1;
		size_t given = 0;
		for (int k = 0; k < nps; k++) {
			if (!recv[k])
				continue;
			size_t lvl = base + (given < rem ? 1 : 0);
			given++;
			quota[k] = lvl - load[k];
		}
		free(recv);

		/* stream = large tensors concatenated in creation order; cut it at the
		 * cumulative quotas, each cut rounded to a multiple of RDMAPS_PLACE_ALIGN
		 * floats from the start of the tensor it falls in. */
		size_t target = 0, prev = 0;
		int last = -1;
		for (int k = 0; k < nps; k++)
			if (quota[k])
				last = k;
		for (int k = 0; k < nps; k++) {
			if (!quota[k])
				continue;
			target += quota[k];
			size_t cut = target;
			if (k != last) {
				size_t start = 0;
				for (int i = 0; i < nt; i++) {
					if (!(nps > 1 && t[i].count * (size_t)nps > total))
						continue;
					if (cut > start && cut < start + t[i].count) {
						size_t local = cut - start;
						size_t r = (local + RDMAPS_PLACE_ALIGN / 2) /
							   RDMAPS_PLACE_ALIGN * RDMAPS_PLACE_ALIGN;
						if (r > t[i].count)
							r = t[i].count;
						cut = start + r;
						break;
					}
					start += t[i].count;
				}
			} else {
				cut = big_total;
			}
			if (cut < prev)
				cut = prev;
			/* emit pieces of [prev, cut) */
			size_t start = 0;
			for (int i = 0; i < nt && prev < cut; i++) {
				if (!(nps > 1 && t[i].count * (size_t)nps > total))
					continue;
				size_t end = start + t[i].count;
				if (prev < end && cut > start) {
					size_t a = prev > start ? prev : start;
					size_t b = cut < end ? cut : end;
					pc[np++] = (struct rdmaps_piece){ .tensor = i,
									  .tensor_off = a - start,
									  .count = b - a,
									  .ps = k };
					load[k] += b - a;
				}
				start = end;
			}
			prev = cut;
		}
	}

	/* 3. lay every shard out contiguously in (tensor, tensor_off) order. */
	qsort(pc, (size_t)np, sizeof *pc, cmp_piece);
	memset(load, 0, (size_t)nps * sizeof *load);
	for (int i = 0; i < np; i++) {
		pc[i].shard_off = load[pc[i].ps];
		load[pc[i].ps] += pc[i].count;
	}
	free(quota);
	free(order);
	out->nps = nps;
	out->npieces = np;
	out->pieces = pc;
	out->shard_count = load;
	return 0;
}

void rdmaps_placement_free(struct rdmaps_placement *p)
{
	if (!p)
		return;
	free(p->pieces);
	free(p->shard_count);
	memset(p, 0, sizeof *p);
}

static void shape_str(const struct rdm_tensor *t, char *buf, size_t len)
{
	size_t o = 0;
	o += (size_t)snprintf(buf + o, len - o, "[");
	for (int d = 0; d < t->ndim && o < len; d++)
		o += (size_t)snprintf(buf + o, len - o, d ? "x%d" : "%d", t->shape[d]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

void rdmaps_placement_print(FILE *f, const struct rdmaps_placement *p, const struct rdm_tensor *t)
{
	if (!f || !p || !t)
		return;
	fprintf(f, "%-16s %-12s %-22s %4s %10s %10s\n", "tensor", "shape", "floats", "ps",
		"shard_off", "bytes");
	for (int i = 0; i < p->npieces; i++) {
		const struct rdmaps_piece *q = &p->pieces[i];
		const struct rdm_tensor *x = &t[q->tensor];
		char shp[48], rng[48];
		shape_str(x, shp, sizeof shp);
		snprintf(rng, sizeof rng, "[%zu,%zu)%s", q->tensor_off, q->tensor_off + q->count,
			 q->count == x->count ? "" : "*");
		fprintf(f, "%-16s %-12s %-22s %4d %10zu %10zu\n", x->name, shp, rng, q->ps,
			q->shard_off, q->count * sizeof(float));
	}
	size_t tot = 0, mx = 0, mn = (size_t)-1;
	for (int k = 0; k < p->nps; k++) {
		size_t c = p->shard_count[k];
		tot += c;
		if (c > mx)
			mx = c;
		if (c < mn)
			mn = c;
	}
	for (int k = 0; k < p->nps; k++)
		fprintf(f, "ps %-3d %10zu floats %10zu bytes\n", k, p->shard_count[k],
			p->shard_count[k] * sizeof(float));
	fprintf(f, "total  %10zu floats %10zu bytes, %d pieces, max-min %zu floats (* = split)\n",
		tot, tot * sizeof(float), p->npieces, p->nps ? mx - mn : 0);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t rdmaps_placement_hash(const struct rdmaps_placement *p)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	if (!p)
		return h;
	h = fnv_u64(h, (uint64_t)p->nps);
	h = fnv_u64(h, (uint64_t)p->npieces);
	for (int i = 0; i < p->npieces; i++) {
		const struct rdmaps_piece *q = &p->pieces[i];
		h = fnv_u64(h, (uint64_t)q->tensor);
		h = fnv_u64(h, (uint64_t)q->tensor_off);
		h = fnv_u64(h, (uint64_t)q->count);
		h = fnv_u64(h, (uint64_t)q->ps);
		h = fnv_u64(h, (uint64_t)q->shard_off);
	}
	return h;
}
