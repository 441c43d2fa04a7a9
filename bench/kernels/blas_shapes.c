/* blas_shapes: the time of the models' cblas_sgemm shapes under the OpenBLAS
 * kernel set (core) in use, one thread.  The SoftRoCE VM's tier runs it once
 * per candidate core (OPENBLAS_CORETYPE=...) to pick the fastest for the
 * emulated CPU, which OpenBLAS does not recognise (ci/softroce/tier.sh,
 * docs/ci.md).
 *
 *   blas_shapes [--reps=N]    (default 2)
 *
 * Shapes: the work the rdma tier spends its time on, scaled to 4-24 M
 * multiply-adds each (~81 M in all, one to two seconds per core under TCG):
 *   mlp:  forward [100 x 784] [784 x 100]; backward dW = x^T dy (k = 100);
 *         each 3 times, so that the mlp has 58% of the multiply-adds, about
 *         its tests' share of the rdma tier's time (60% in the CI of
 *         099c14e; the lstm test has the rest)
 *   lstm: one step's [x_t, h, 1] [Wx; Wh; b] at the evaluation's chunk
 *         (here 200 rows of 157) and at training batch 16 (x4); backward
 *         dh = dG Wh^T (batch 16, x4) and dW = XH^T dG over 112 rows
 * A's pixel columns are zero in 80.9% of entries, as MNIST's pixels: under
 * TCG that decides the ranking (fill_a).  Prints `blas_shapes
 * core=<name> ms=<sum of the best of --reps per shape>` and the per-shape
 * times; exit 0.  The result is not checked (only timed).
 */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void openblas_set_num_threads(int);
extern char *openblas_get_corename(void);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct shape {
	const char *name;
	int ta, tb, m, n, k, times;
	int input_cols; /* columns of A's storage that hold pixels (the rest dense) */
};

static const struct shape shapes[] = {
	{ "mlp_fwd", 0, 0, 100, 100, 784, 3, 784 },
	{ "mlp_dw", 1, 0, 784, 100, 100, 3, 784 },
	{ "lstm_step_eval", 0, 0, 200, 512, 157, 1, 28 },
	{ "lstm_step_b16", 0, 0, 16, 512, 157, 4, 28 },
	{ "lstm_dh_b16", 0, 1, 16, 128, 512, 4, 0 },
	{ "lstm_dw", 1, 0, 157, 512, 112, 1, 28 },
};

/* A's storage (rows x cols): pixel columns zero in 80.9% of entries, as
 * MNIST's training pixels are (80.9%), else (1..255)/255; other columns
 * dense.  Under TCG a multiply by zero whose sum is not zero leaves
 * QEMU's fast host-FPU path, so the zeros change which kernels win. */
static void fill_a(float *a, int rows, int cols, int input_cols)
{
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++) {
			uint32_t h = (uint32_t)(r * 7919 + c) * 2654435761u;
			float v = (float)((h >> 8) % 255 + 1) / 255.0f;
			a[(size_t)r * cols + c] = c < input_cols && (h >> 12) % 1000 < 809 ? 0.0f : v * 0.5f;
		}
}

int main(int argc, char **argv)
{
	int reps = 2;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--reps=", 7) == 0) {
			char *e;
			long r = strtol(argv[i] + 7, &e, 10);
			if (*e || r < 1 || r > 100) {
				fprintf(stderr, "blas_shapes: --reps must be 1..100, not '%s'\n", argv[i] + 7);
				return 2;
			}
			reps = (int)r;
		} else {
			fprintf(stderr, "usage: blas_shapes [--reps=N]\n");
			return 2;
		}
	}
	openblas_set_num_threads(1);
	size_t big = 784 * 100 + 200 * 512;
	float *a = malloc(big * sizeof(float)), *b = malloc(big * sizeof(float)), *c = calloc(big, sizeof(float));
	if (!a || !b || !c) {
		fprintf(stderr, "blas_shapes: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < big; i++)
		b[i] = (float)(i % 7) * 0.02f - 0.05f + 0.001f;
	double total = 0;
	char line[512] = "";
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct shape *p = &shapes[s];
		int arows = p->ta ? p->k : p->m, acols = p->ta ? p->m : p->k;
		fill_a(a, arows, acols, p->input_cols);
		double best = 1e30;
		for (int r = 0; r < reps; r++) {
			double t0 = now();
			for (int t = 0; t < p->times; t++)
				cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
					    p->tb ? CblasTrans : CblasNoTrans, p->m, p->n, p->k, 1.0f, a, acols, b,
					    p->tb ? p->k : p->n, 0.0f, c, p->n);
			double dt = now() - t0;
			if (dt < best)
				best = dt;
		}
		total += best;
		size_t l = strlen(line);
		snprintf(line + l, sizeof(line) - l, " %s=%.1f", p->name, best * 1e3);
	}
	printf("blas_shapes core=%s ms=%.1f%s\n", openblas_get_corename(), total * 1e3, line);
	free(a);
	free(b);
	free(c);
	return 0;
}
