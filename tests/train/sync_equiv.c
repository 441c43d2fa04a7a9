/* sync_equiv: the single-process reference for the sync path (test (d)).
 *
 * Usage: sync_equiv DATA_DIR DUMP STEPS SEED [W [TOL]]
 * Recomputes what `rdmaps launch --ps=1 --workers=W --sync_replicas` does
 * (R = W, W default 2) with --seed=SEED --train_steps=STEPS (mlp, hidden
 * 100, batch 100, lr 0.01): worker w draws batches from a batcher seeded
 * SEED*1000003+w, all W gradients are taken on the same version, and one
 * Adam step is applied to their mean, summed as the ps sums them: in worker
 * order, (g0 + g1) + g2 + ..., the last one inside the optimizer pass.  So
 * the result must match bit for bit, whatever order the gradients arrived
 * in.  Compares the result with DUMP (raw floats written by a worker's
 * --dump_params) and exits 0 iff every parameter is within TOL (default
 * 1e-5, the bound; 0 demands equality). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/blas_core.h"
#include "kernels/data.h"
#include "kernels/model.h"
#include "kernels/optim.h"

int main(int argc, char **argv)
{
	/* the kernels the rdmaps tasks it is compared with run (bit for bit
	 * at TOL 0): on a CPU that OpenBLAS does not know they run again with
	 * another set (kernels/blas_core.h), and so must this */
	rdm_blas_fix_core("sync_equiv", argv);
	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: sync_equiv DATA_DIR DUMP STEPS SEED [W [TOL]]\n");
		return 2;
	}
	double tol = argc == 7 ? atof(argv[6]) : 1e-5;
	int W = argc >= 6 ? atoi(argv[5]) : 2;
	if (W < 1 || W > 8) {
		fprintf(stderr, "sync_equiv: W %s: expected 1..8\n", argv[5]);
		return 2;
	}
	int steps = atoi(argv[3]);
	uint64_t seed = strtoull(argv[4], NULL, 10);
	struct rdm_images tr, va;
	char err[256];
	if (rdm_mnist_load(argv[1], &tr, &va, NULL, err, sizeof(err))) {
		fprintf(stderr, "sync_equiv: %s\n", err);
		return 77;
	}
	struct rdm_model_cfg mc = { .kind = RDM_MODEL_MLP, .hidden_units = 100, .max_batch = 1000,
				    .threads = 1, .loss_mean = 0 };
	struct rdm_model *m = NULL;
	if (rdm_model_new(&mc, &m))
		return 1;
	size_t n = rdm_model_nparams(m);
	float *w = calloc(n, 4), *w2 = calloc(n, 4), *g0 = calloc(n, 4), *g1 = calloc(n, 4), *gk = calloc(n, 4);
	float *mm = calloc(n, 4), *vv = calloc(n, 4), *got = calloc(n, 4);
	float *bx = malloc(100 * 784 * sizeof(float));
	uint8_t *by = malloc(100);
	struct rdm_batcher *b[8] = { NULL };
	int ok = 1;
	for (int k = 0; k < W; k++)
		ok &= rdm_batcher_new(&tr, rdm_shuffle_seed(seed, (uint64_t)k), &b[k]) == 0 && b[k];
	if (!w || !w2 || !g0 || !g1 || !gk || !mm || !vv || !got || !bx || !by || !ok)
		return 1;
	struct rdm_opt_cfg oc;
	struct rdm_opt_state os;
	rdm_opt_defaults(&oc, RDM_OPT_ADAM, 0.01f);
	rdm_opt_state_init(&os, &oc, mm, vv, n);
	rdm_model_init(m, w, seed);
	for (int s = 0; s < steps; s++) {
		double loss;
		/* g0 = worker 0's, then += workers 1..W-2's; g1 = worker W-1's */
		rdm_batcher_next(b[0], 100, bx, by);
		rdm_model_grad(m, w, bx, by, 100, g0, &loss);
		for (int k = 1; k < W; k++) {
			rdm_batcher_next(b[k], 100, bx, by);
			rdm_model_grad(m, w, bx, by, 100, k == W - 1 ? g1 : gk, &loss);
			if (k < W - 1)
				rdm_vec_add(g0, gk, n);
		}
		rdm_opt_apply(&oc, &os, w2, w, g0, W > 1 ? g1 : NULL, 1.0f / (float)W, n);
		float *t = w; w = w2; w2 = t;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f || fread(got, 4, n, f) != n) {
		fprintf(stderr, "sync_equiv: cannot read %zu floats from %s\n", n, argv[2]);
		return 1;
	}
	fclose(f);
	double maxd = 0;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)w[i]);
		if (d > maxd || d != d) {
			maxd = d;
			at = i;
		}
	}
	printf("sync_equiv: %d workers, %d steps, %zu params, max |distributed - reference| = %g at %zu (allowed %g)\n",
	       W, steps, n, maxd, at, tol);
	/* freed so that the ASan tier's LeakSanitizer stays quiet */
	free(w); free(w2); free(g0); free(g1); free(gk); free(mm); free(vv); free(got); free(bx); free(by);
	for (int k = 0; k < W; k++)
		rdm_batcher_delete(&b[k]);
	rdm_model_delete(&m);
	rdm_images_free(&tr);
	rdm_images_free(&va);
	return maxd <= tol ? 0 : 1;
}
