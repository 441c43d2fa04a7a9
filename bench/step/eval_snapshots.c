/* eval_snapshots: validation cross entropy and accuracy of every parameter
 * snapshot a chief wrote with --snapshot_file (src/worker/worker.c).
 *
 *   eval_snapshots --model mlp|lstm [--hidden_units N] --data_dir DIR FILE
 *
 * FILE holds records: u64 global_step, f64 time (Unix seconds, rdmaps_wall),
 * u64 nfloats, then nfloats floats.  For each record prints one JSON line
 *   {"global_step":G,"t":T,"val_ce":CE,"val_acc":A}
 * where CE is the SUMMED cross entropy over the 5000 validation images
 * (mnist_replica's "validation cross entropy") and A the fraction correct.
 * A record whose nfloats does not match the model, or a truncated record,
 * is an error (message naming the record, exit 2). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blas_core.h"
#include "kernels/data.h"
#include "kernels/model.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: eval_snapshots --model mlp|lstm [--hidden_units N] --data_dir DIR FILE\n");
}

int main(int argc, char **argv)
{
	rdm_blas_fix_core("eval_snapshots", argv); /* the kernels the tasks ran */
	struct rdm_model_cfg mc = { .kind = RDM_MODEL_MLP, .hidden_units = 100, .max_batch = 1000, .threads = 1 };
	const char *data_dir = NULL, *path = NULL;
	struct rdm_images val = { 0 };
	struct rdm_model *m = NULL;
	float *p = NULL;
	char err[512];
	int ret = 2;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--model") && i + 1 < argc) {
			if (rdm_model_parse_kind(argv[++i], &mc.kind)) {
				fprintf(stderr, "eval_snapshots: --model %s: must be mlp or lstm\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--hidden_units") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > (1 << 20)) {
				fprintf(stderr, "eval_snapshots: --hidden_units %s: expected 1..1048576\n", argv[i]);
				return 2;
			}
			mc.hidden_units = (int)v;
		} else if (!strcmp(a, "--data_dir") && i + 1 < argc) {
			data_dir = argv[++i];
		} else if (a[0] != '-' && !path) {
			path = a;
		} else {
			fprintf(stderr, "eval_snapshots: unexpected argument '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!data_dir || !path) {
		usage(stderr);
		return 2;
	}
	if (mc.kind == RDM_MODEL_LSTM)
		mc.hidden_units = 0; /* as src/ps/layout.c: the lstm's own default */
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "eval_snapshots: %s: %s\n", path, strerror(errno));
		return 2;
	}
	if (rdm_mnist_load(data_dir, NULL, &val, NULL, err, sizeof(err))) {
		fprintf(stderr, "eval_snapshots: %s\n", err);
		goto out;
	}
	if (rdm_model_new(&mc, &m)) {
		fprintf(stderr, "eval_snapshots: cannot create the model\n");
		goto out;
	}
	size_t n = rdm_model_nparams(m);
	if (!(p = malloc(n * sizeof(float)))) {
		fprintf(stderr, "eval_snapshots: out of memory\n");
		goto out;
	}
	for (long rec = 0;; rec++) {
		uint64_t hd[3];
		double t;
		size_t got = fread(hd, 1, sizeof(hd), f);
		if (got == 0 && feof(f))
			break;
		if (got != sizeof(hd)) {
			fprintf(stderr, "eval_snapshots: %s: record %ld: truncated header\n", path, rec);
			goto out;
		}
		if (hd[2] != n) {
			fprintf(stderr, "eval_snapshots: %s: record %ld: %llu floats, the model has %zu (wrong --model/--hidden_units?)\n",
				path, rec, (unsigned long long)hd[2], n);
			goto out;
		}
		if (fread(p, sizeof(float), n, f) != n) {
			fprintf(stderr, "eval_snapshots: %s: record %ld: truncated parameters\n", path, rec);
			goto out;
		}
		memcpy(&t, &hd[1], sizeof(t));
		double ce = 0;
		int correct = 0;
		if (rdm_model_eval_pixels(m, p, val.px, val.y, val.n, &ce, &correct)) {
			fprintf(stderr, "eval_snapshots: evaluation failed\n");
			goto out;
		}
		printf("{\"global_step\":%llu,\"t\":%.6f,\"val_ce\":%.6g,\"val_acc\":%.6f}\n", (unsigned long long)hd[0],
		       t, ce, (double)correct / val.n);
	}
	ret = 0;
out:
	free(p);
	rdm_model_delete(&m);
	rdm_images_free(&val);
	fclose(f);
	return ret;
}
