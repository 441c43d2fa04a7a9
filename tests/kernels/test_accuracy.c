/* Accuracy test: train MODEL on real MNIST for EPOCHS with the trainer
 * defaults and require test accuracy >= MIN.  Exit 77 (SKIPPED) when the data
 * directory is absent.
 * usage: kern_test_accuracy mlp|lstm DATA_DIR EPOCHS MIN [THREADS [LR]]
 * (LR default: the trainer's, 0.01 mlp / 0.001 lstm). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/status.h"
#include "kernels/train.h"

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s mlp|lstm DATA_DIR EPOCHS MIN_ACC [THREADS [LR]]\n", argv[0]);
		return 2;
	}
	enum rdm_model_kind k;
	if (rdm_model_parse_kind(argv[1], &k))
		return 2;
	struct stat sb;
	if (stat(argv[2], &sb) || !S_ISDIR(sb.st_mode)) {
		printf("SKIPPED: no MNIST data in %s (run scripts/fetch-data.sh)\n", argv[2]);
		return 77;
	}
	struct rdm_train_opts o;
	rdm_train_opts_defaults(&o, k);
	o.data_dir = argv[2];
	o.epochs = atoi(argv[3]);
	o.threads = argc > 5 ? atoi(argv[5]) : 2;
	if (argc > 6)
		o.learning_rate = (float)atof(argv[6]);
	o.verbose = 1;
	double min = atof(argv[4]);
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
	printf("%s %d epochs, lr %g: validation cross entropy = %g, test accuracy = %.2f%% "
	       "(need >= %.2f%%), %.1f steps/s\n", argv[1], o.epochs, o.learning_rate, r.validation_ce,
	       r.test_acc, min, r.steps_per_s);
	return r.test_acc >= min ? 0 : 1;
}
