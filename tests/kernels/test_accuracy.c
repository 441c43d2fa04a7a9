/* Accuracy test: train MODEL on real MNIST for EPOCHS with the trainer
 * defaults, once per seed 1..NSEEDS, and require every run's test accuracy
 * >= MIN and their mean >= MEAN_MIN.  Exit 77 (SKIPPED) when the data
 * directory is absent, 2 on bad arguments, 1 when a threshold is missed.
 * usage: kern_test_accuracy mlp|lstm DATA_DIR EPOCHS MIN [THREADS [LR [NSEEDS [MEAN_MIN]]]]
 * (THREADS default 2; LR default or "-": the trainer's, 0.01 mlp / 0.001
 * lstm; NSEEDS default 1; MEAN_MIN default MIN). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/status.h"
#include "kernels/blas_core.h"
#include "kernels/train.h"

static int num(const char *s, double lo, double hi, double *out)
{
	char *e;
	errno = 0;
	double v = strtod(s, &e);
	if (errno || e == s || *e || !(v >= lo && v <= hi)) {
		fprintf(stderr, "kern_test_accuracy: bad number '%s' (want %g..%g)\n", s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	/* the kernels `rdmaps train` runs with (kernels/blas_core.h) */
	rdm_blas_fix_core("kern_test_accuracy", argv);
	if (argc < 5 || argc > 9) {
		fprintf(stderr, "usage: %s mlp|lstm DATA_DIR EPOCHS MIN_ACC [THREADS [LR [NSEEDS [MEAN_MIN]]]]\n",
			argv[0]);
		return 2;
	}
	enum rdm_model_kind k;
	if (rdm_model_parse_kind(argv[1], &k)) {
		fprintf(stderr, "kern_test_accuracy: unknown model '%s'\n", argv[1]);
		return 2;
	}
	double epochs, min, threads = 2, lr = -1, nseeds = 1, mean_min;
	if (num(argv[3], 1, 1000, &epochs) || num(argv[4], 0, 100, &min) ||
	    (argc > 5 && num(argv[5], 1, 64, &threads)) ||
	    (argc > 6 && strcmp(argv[6], "-") && num(argv[6], 1e-9, 10, &lr)) ||
	    (argc > 7 && num(argv[7], 1, 100, &nseeds)))
		return 2;
	mean_min = min;
	if (argc > 8 && num(argv[8], 0, 100, &mean_min))
		return 2;
	struct stat sb;
	if (stat(argv[2], &sb) || !S_ISDIR(sb.st_mode)) {
		printf("SKIPPED: no MNIST data in %s (run scripts/fetch-data.sh)\n", argv[2]);
		return 77;
	}
	double sum = 0, lo = 101, hi = -1;
	int n = (int)nseeds, fails = 0;
	for (int s = 1; s <= n; s++) {
		struct rdm_train_opts o;
		rdm_train_opts_defaults(&o, k);
		o.data_dir = argv[2];
		o.epochs = (int)epochs;
		o.threads = (int)threads;
		o.seed = (uint64_t)s;
		if (lr > 0)
			o.learning_rate = (float)lr;
		o.verbose = n == 1;
		struct rdm_train_result r;
		int rc = rdm_train_run(&o, &r);
		if (rc == RDMAPS_E_NOSUPPORT) {
			printf("SKIPPED: built without the MNIST loader\n");
			return 77;
		}
		if (rc) {
			printf("FAILED: training returned %d\n", rc);
			return 1;
		}
		printf("%s seed %d, %d epochs, lr %g, %d thread(s): validation cross entropy = %g, "
		       "test accuracy = %.2f%% (need >= %.2f%%), %.1f steps/s\n",
		       argv[1], s, o.epochs, o.learning_rate, o.threads, r.validation_ce, r.test_acc, min,
		       r.steps_per_s);
		fflush(stdout);
		fails += r.test_acc < min;
		sum += r.test_acc;
		lo = r.test_acc < lo ? r.test_acc : lo;
		hi = r.test_acc > hi ? r.test_acc : hi;
	}
	double mean = sum / n;
	printf("%s: %d seed(s): test accuracy mean %.2f%% (need >= %.2f%%), min %.2f%%, max %.2f%%; "
	       "%d run(s) below %.2f%%\n", argv[1], n, mean, mean_min, lo, hi, fails, min);
	return (fails == 0 && mean >= mean_min) ? 0 : 1;
}
