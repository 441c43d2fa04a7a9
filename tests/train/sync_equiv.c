/* sync_equiv: the single-process reference for the sync path (test (d)).
 *
 * Usage: sync_equiv DATA_DIR DUMP STEPS SEED
 * Recomputes what `rdmaps launch --ps=1 --workers=2 --sync_replicas` does
 * with --seed=SEED --train_steps=STEPS (mlp, hidden 100, batch 100, lr 0.01):
 * worker w draws batches from a batcher seeded SEED*1000003+w, both
 * gradients are taken on the same version, and one Adam step is applied to
 * their mean.  Compares the result with DUMP (raw floats written by a worker's
 * --dump_params) and exits 0 iff every parameter is within 1e-5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/data.h"
#include "kernels/model.h"
#include "kernels/optim.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: sync_equiv DATA_DIR DUMP STEPS SEED\n");
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
	float *w = calloc(n, 4), *w2 = calloc(n, 4), *g0 = calloc(n, 4), *g1 = calloc(n, 4);
	float *mm = calloc(n, 4), *vv = calloc(n, 4), *got = calloc(n, 4);
	float *bx = malloc(100 * 784 * sizeof(float));
	uint8_t *by = malloc(100);
	struct rdm_batcher *b[2] = { NULL, NULL };
	rdm_batcher_new(&tr, seed * 1000003u + 0, &b[0]);
	rdm_batcher_new(&tr, seed * 1000003u + 1, &b[1]);
	if (!w || !w2 || !g0 || !g1 || !mm || !vv || !got || !bx || !by || !b[0] || !b[1])
		return 1;
	struct rdm_opt_cfg oc;
	struct rdm_opt_state os;
	rdm_opt_defaults(&oc, RDM_OPT_ADAM, 0.01f);
	rdm_opt_state_init(&os, &oc, mm, vv, n);
	rdm_model_init(m, w, seed);
	for (int s = 0; s < steps; s++) {
		double loss;
		rdm_batcher_next(b[0], 100, bx, by);
		rdm_model_grad(m, w, bx, by, 100, g0, &loss);
		rdm_batcher_next(b[1], 100, bx, by);
		rdm_model_grad(m, w, bx, by, 100, g1, &loss);
		rdm_opt_apply(&oc, &os, w2, w, g0, g1, 0.5f, n);
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
	printf("sync_equiv: %d steps, %zu params, max |distributed - reference| = %g at %zu\n", steps, n, maxd, at);
	/* freed so that the ASan tier's LeakSanitizer stays quiet */
	free(w); free(w2); free(g0); free(g1); free(mm); free(vv); free(got); free(bx); free(by);
	rdm_batcher_delete(&b[0]);
	rdm_batcher_delete(&b[1]);
	rdm_model_delete(&m);
	rdm_images_free(&tr);
	rdm_images_free(&va);
	return maxd <= 1e-5 ? 0 : 1;
}
