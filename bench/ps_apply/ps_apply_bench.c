/* ps apply benchmark (issue "Benchmarks", item 4).
 *
 * What the ps CPU does per sync step on one shard (R <= W, src/ps/shard.c):
 * sum R gradient slots where they lie and apply Adam (TF1) in one fused
 * pass, through the ps's own rdm_sum_head: R = 2 is rdm_opt_apply(g1 =
 * slot 0, g2 = slot 1, scale = 1/2); R >= 3 first sums slots 0..R-2 into
 * acc (rdm_vec_sum2, then rdm_vec_add), then rdm_opt_apply(g1 = acc, g2 =
 * last slot, 1/R); each writes the other parameter buffer (double
 * buffering).  Reference, in the same run over the
 * same bytes: the streaming loop a[i] += b[i].
 *
 * Bandwidth = bytes the loop must move / time:
 *   reference a += b        : 12 B per float (read a, read b, write a)
 *   Adam apply (fused)      : 32 B per float (read w_in, g1, g2, m, v; write w_out, m, v);
 *                             sync_step at R = 1 has no g2: 28 B
 *   vec_add acc += slot     : 12 B per float
 * Two references, both a[i] += b[i] in one thread:
 *   stream_add    over the same floats n: moves 12n B, working set 8n B
 *   stream_bytes  over 8n/3 floats: moves the same bytes as the fused
 *                 Adam pass (32n B), working set 21.3n B against Adam's
 *                 24n B (w_in, w_out, g1, g2, m, v)
 * The first is the older reading; it runs from a faster cache level than
 * Adam can at shard size (8n B fits where 24n B does not).  The second is
 * the "over the same bytes", and the one the target is judged by
 * (docs/benchmarks.md "ps apply").  adam_nosqrt is a diagnostic, not an
 * optimizer: the same fused loop with the sqrt and the divide replaced by a
 * multiply, so its distance to adam_apply is what they cost.
 * Prints a table and, per size, `vs-stream` (same floats) and
 * `vs-stream-bytes` (same bytes) lines `<what> <floats> bw_ratio=<ours/ref>`,
 * each the median of 3 alternating measurements of both;
 * --json FILE writes every figure.  Warm-up: 20 iterations or 0.2 s,
 * whichever ends first; then 15 timed blocks; median and min reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/clones.h"
#include "kernels/optim.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The memory-bandwidth reference: same compiler flags as optim.c. */
static void __attribute__((noinline)) stream_add(float *restrict a, const float *restrict b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] += b[i];
}

/* Diagnostic only: optim.c's fused Adam loop (g = scale * (g1 + g2)) with
 * lr_t * m / (sqrt(v) + eps) replaced by lr_t * m * (v + eps).  Same loads
 * and stores, no sqrt, no divide. */
RDM_CLONES __attribute__((noinline))  /* as optim.c's Adam */
static void adam_nosqrt(float *restrict wo, const float *restrict wi, const float *restrict g1,
			const float *restrict g2, float scale, float lr_t, float b1, float b2,
			float eps, float *restrict m, float *restrict v, size_t n)
{
	const float c1 = 1.0f - b1, c2 = 1.0f - b2;
	for (size_t i = 0; i < n; i++) {
		float g = scale * (g1[i] + g2[i]);
		float mi = b1 * m[i] + c1 * g;
		float vi = b2 * v[i] + c2 * g * g;
		m[i] = mi;
		v[i] = vi;
		wo[i] = wi[i] - lr_t * mi * (vi + eps);
	}
}

struct ctx {
	size_t n, nb;                 /* floats; floats of stream_bytes */
	int R;
	float *w[2], *m, *v, *acc, **slot, *ba, *bb;
	struct rdm_opt_cfg cfg;
	struct rdm_opt_state st;
	int cur;
};

enum what { W_STREAM, W_SBYTES, W_ADAM, W_NOSQRT, W_VECADD, W_STEP };
static const char *what_name[] = { "stream_add", "stream_bytes", "adam_apply", "adam_nosqrt",
				   "vec_add", "sync_step" };

static void run_once(struct ctx *c, enum what w)
{
	switch (w) {
	case W_STREAM:
		stream_add(c->acc, c->slot[0], c->n);
		break;
	case W_SBYTES:
		stream_add(c->ba, c->bb, c->nb);
		break;
	case W_NOSQRT:
		adam_nosqrt(c->w[c->cur ^ 1], c->w[c->cur], c->acc, c->slot[0], 0.5f,
			    0.01f, c->cfg.beta1, c->cfg.beta2, c->cfg.eps, c->m, c->v, c->n);
		c->cur ^= 1;
		break;
	case W_ADAM:
		rdm_opt_apply(&c->cfg, &c->st, c->w[c->cur ^ 1], c->w[c->cur], c->acc,
			      c->slot[0], 0.5f, c->n);
		c->cur ^= 1;
		break;
	case W_VECADD:
		rdm_vec_add(c->acc, c->slot[0], c->n);
		break;
	case W_STEP:
		rdm_opt_apply(&c->cfg, &c->st, c->w[c->cur ^ 1], c->w[c->cur],
			      rdm_sum_head(c->acc, (const float *const *)c->slot, c->R, c->n),
			      c->R > 1 ? c->slot[c->R - 1] : NULL, 1.0f / c->R, c->n);
		c->cur ^= 1;
		break;
	}
}

/* bytes moved per float */
static double bytes_per_float(enum what w, int R)
{
	switch (w) {
	case W_STREAM: return 12;
	case W_SBYTES: return 32;     /* per float of n: 12 B x 8n/3 floats */
	case W_ADAM: return 32;
	case W_NOSQRT: return 32;
	case W_VECADD: return 12;
	/* R = 1: rdm_sum_head gives slot 0 and g2 is NULL, so the Adam pass
	 * reads w_in, g1, m, v and writes w_out, m, v: 28 B, not 32 */
	case W_STEP: return (R > 2 ? 12.0 /* sum2 */ + 12.0 * (R - 3) : 0) + (R > 1 ? 32 : 28);
	}
	return 0;
}

static double measure(struct ctx *c, enum what w, double *min_out)
{
	enum { BLOCKS = 15 };
	double t[BLOCKS];
	double t0 = now_s();
	for (int i = 0; i < 20 && now_s() - t0 < 0.2; i++)
		run_once(c, w);
	/* iterations per block: about 20 ms of work */
	double ts = now_s();
	run_once(c, w);
	double one = now_s() - ts;
	int iters = one > 0 ? (int)(0.02 / one) : 1000;
	if (iters < 1)
		iters = 1;
	if (iters > 100000)
		iters = 100000;
	for (int b = 0; b < BLOCKS; b++) {
		double s = now_s();
		for (int i = 0; i < iters; i++)
			run_once(c, w);
		t[b] = (now_s() - s) / iters;
	}
	qsort(t, BLOCKS, sizeof(double), cmp_d);
	*min_out = t[0];
	return t[BLOCKS / 2];
}

static float *falloc(size_t n, float val)
{
	float *p = aligned_alloc(64, ((n * sizeof(float)) + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "ps_apply_bench: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = val + (float)(i % 7) * 1e-3f;
	return p;
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	int R = 2;
	size_t sizes[] = { 79510, 1u << 20, 16u << 20 }; /* mlp shard, 4 MiB, 64 MiB */
	int nsizes = 3;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (!strncmp(argv[i], "--replicas=", 11))
			R = atoi(argv[i] + 11);
		else if (!strcmp(argv[i], "--quick"))
			nsizes = 2;
		else {
			fprintf(stderr, "usage: ps_apply_bench [--replicas=R] [--quick] [--json FILE]\n");
			return 2;
		}
	}
	if (R < 1 || R > 64) {
		fprintf(stderr, "ps_apply_bench: --replicas must be 1..64\n");
		return 2;
	}
	FILE *jf = NULL;
	if (json && !(jf = fopen(json, "w"))) {
		perror(json);
		return 1;
	}
	printf("# ps apply: Adam (TF1) fused with the sum of R=%d slots, vs a[i] += b[i]\n", R);
	printf("# one thread; figures are per call, bandwidth = bytes the loop must move / median time\n");
	printf("%-12s %10s %10s %10s %10s %12s\n", "what", "floats", "bytes", "min_us", "p50_us", "GB/s(p50)");
	for (int s = 0; s < nsizes; s++) {
		struct ctx c = { .n = sizes[s], .nb = (sizes[s] * 8 + 2) / 3, .R = R };
		c.ba = falloc(c.nb, 0.01f);
		c.bb = falloc(c.nb, 0.001f);
		c.w[0] = falloc(c.n, 0.1f);
		c.w[1] = falloc(c.n, 0.1f);
		c.m = falloc(c.n, 0);
		c.v = falloc(c.n, 0);
		c.acc = falloc(c.n, 0.01f);
		c.slot = calloc(R, sizeof(*c.slot));
		for (int r = 0; r < R; r++)
			c.slot[r] = falloc(c.n, 0.001f * (r + 1));
		rdm_opt_defaults(&c.cfg, RDM_OPT_ADAM, 0.01f);
		rdm_opt_state_init(&c.st, &c.cfg, c.m, c.v, c.n);
		double ref_bw = 0, refb_bw = 0;
		for (int w = W_STREAM; w <= W_STEP; w++) {
			double mn, p50 = measure(&c, (enum what)w, &mn);
			double bytes = bytes_per_float((enum what)w, R) * (double)c.n;
			double bw = bytes / p50 / 1e9;
			if (w == W_STREAM)
				ref_bw = bw;
			if (w == W_SBYTES)
				refb_bw = bw;
			printf("%-12s %10zu %10.0f %10.2f %10.2f %12.2f\n", what_name[w],
			       w == W_SBYTES ? c.nb : c.n, bytes, mn * 1e6, p50 * 1e6, bw);
			if (jf)
				fprintf(jf, "{\"what\":\"%s\",\"floats\":%zu,\"loop_floats\":%zu,"
					"\"replicas\":%d,\"bytes\":%.0f,\"min_us\":%.17g,\"p50_us\":%.17g,"
					"\"gbps\":%.17g,\"ref_gbps\":%.17g,\"ref_bytes_gbps\":%.17g}\n",
					what_name[w], c.n, w == W_SBYTES ? c.nb : c.n, R, bytes,
					mn * 1e6, p50 * 1e6, bw, ref_bw,
					/* same-bytes ratio only where the bytes are the same */
					bytes_per_float((enum what)w, R) == 32 ? refb_bw : 0.0);
		}
		/* ratios: 3 rounds alternating Adam and each reference, median */
		double rf[3], rb[3];
		for (int k = 0; k < 3; k++) {
			double mn, t_adam = measure(&c, W_ADAM, &mn);
			double t_ref = measure(&c, W_STREAM, &mn);
			double t_refb = measure(&c, W_SBYTES, &mn);
			double bw_adam = bytes_per_float(W_ADAM, R) / t_adam;
			rf[k] = bw_adam / (bytes_per_float(W_STREAM, R) / t_ref);
			rb[k] = bw_adam / (bytes_per_float(W_SBYTES, R) / t_refb);
		}
		qsort(rf, 3, sizeof(double), cmp_d);
		qsort(rb, 3, sizeof(double), cmp_d);
		printf("vs-stream adam_apply %zu bw_ratio=%.2f (range %.2f..%.2f)\n", c.n, rf[1], rf[0], rf[2]);
		printf("vs-stream-bytes adam_apply %zu bw_ratio=%.2f (range %.2f..%.2f)\n", c.n, rb[1],
		       rb[0], rb[2]);
		/* JSON in full precision (%.17g: the double itself), so that a
		 * reader's %.2f prints what the lines above print; %.3f could
		 * round across a half (1.2449 -> 1.245 -> 1.25) */
		if (jf)
			fprintf(jf, "{\"ratio\":\"adam_apply\",\"floats\":%zu,\"vs_stream\":%.17g,"
				"\"vs_stream_bytes\":%.17g,\"vs_stream_range\":[%.17g,%.17g],"
				"\"vs_stream_bytes_range\":[%.17g,%.17g]}\n",
				c.n, rf[1], rb[1], rf[0], rf[2], rb[0], rb[2]);
		free(c.ba);
		free(c.bb);
		for (int r = 0; r < R; r++)
			free(c.slot[r]);
		free(c.slot);
		free(c.w[0]); free(c.w[1]); free(c.m); free(c.v); free(c.acc);
	}
	if (jf)
		fclose(jf);
	return 0;
}
