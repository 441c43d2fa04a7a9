/* Single-process trainer: `rdmaps train --model=mlp|lstm ...`. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "kernels/train.h"

#include "kernels/data.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void rdm_train_opts_defaults(struct rdm_train_opts *o, enum rdm_model_kind k)
{
	memset(o, 0, sizeof(*o));
	o->model = k;
	o->data_dir = "data/mnist";
	o->epochs = k == RDM_MODEL_MLP ? 5 : 10;
	o->batch_size = k == RDM_MODEL_MLP ? 100 : 128;
	o->learning_rate = k == RDM_MODEL_MLP ? 0.01f : 0.001f;
	o->threads = 1;
	o->hidden_units = k == RDM_MODEL_MLP ? 100 : 128;
	o->seed = 1;
	o->optimizer = RDM_OPT_ADAM;
	o->loss_mean = k == RDM_MODEL_MLP ? 0 : 1;
	o->verbose = 0;
}

int rdm_train_run(const struct rdm_train_opts *o, struct rdm_train_result *res)
{
	struct rdm_images tr = {0}, va = {0}, te = {0};
	struct rdm_batcher *bat = NULL;
	struct rdm_model *m = NULL;
	float *w = NULL, *g = NULL, *sm = NULL, *sv = NULL, *bx = NULL;
	uint8_t *by = NULL;
	char err[256] = "";
	int rc;

	rc = rdm_mnist_load(o->data_dir, &tr, &va, &te, err, sizeof(err));
	if (rc) {
		RDMAPS_ERR("loading MNIST from %s: %s", o->data_dir, err[0] ? err : rdmaps_strerror(rc));
		return rc < 0 ? rc : RDMAPS_E_IO;
	}
	if ((rc = rdm_images_check_28x28(&tr, "train-images-idx3-ubyte", err, sizeof(err))) ||
	    (rc = rdm_images_check_28x28(&te, "t10k-images-idx3-ubyte", err, sizeof(err)))) {
		RDMAPS_ERR("%s: %s", o->data_dir, err);
		goto out;
	}
	if (o->batch_size > tr.n) {
		/* an epoch would be 0 steps: nothing trained, loss NaN */
		RDMAPS_ERR("--batch_size=%d is larger than the %d training examples in %s", o->batch_size, tr.n,
			   o->data_dir);
		rc = RDMAPS_E_INVAL;
		goto out;
	}
	struct rdm_model_cfg mc = {
		.kind = o->model, .hidden_units = o->hidden_units,
		.max_batch = o->batch_size, .threads = o->threads,
		.loss_mean = o->loss_mean,
	};
	rc = rdm_model_new(&mc, &m);
	if (rc)
		goto out;
	/* The batcher gets its own stream: seeding it with o->seed as the
	 * initializer is seeded would make the first shuffle and the initial
	 * weights draw the same xoshiro sequence.  Same derivation as worker 0
	 * of a distributed job (rdm_shuffle_seed, kernels/data.h). */
	rc = rdm_batcher_new(&tr, rdm_shuffle_seed(o->seed, 0), &bat);
	if (rc)
		goto out;
	size_t np = rdm_model_nparams(m);
	w = malloc(np * sizeof(float));
	g = malloc(np * sizeof(float));
	sm = malloc(np * sizeof(float));
	sv = malloc(np * sizeof(float));
	bx = malloc((size_t)o->batch_size * RDM_MNIST_PIXELS * sizeof(float));
	by = malloc((size_t)o->batch_size);
	if (!w || !g || !sm || !sv || !bx || !by) {
		rc = RDMAPS_E_NOMEM;
		goto out;
	}
	rdm_model_init(m, w, o->seed);
	struct rdm_opt_cfg oc;
	struct rdm_opt_state os;
	rdm_opt_defaults(&oc, o->optimizer, o->learning_rate);
	rdm_opt_state_init(&os, &oc, sm, sv, np);

	const int tty = o->verbose && isatty(STDOUT_FILENO);
	const long spe = tr.n / o->batch_size;
	double train_s = 0.0;
	long steps = 0;
	if (o->verbose)
		printf("model %s: %zu parameters, %d train / %d validation / %d test, "
		       "%ld steps/epoch, batch %d, lr %g, %d thread(s)\n",
		       o->model == RDM_MODEL_MLP ? "mlp" : "lstm", np, tr.n, va.n, te.n,
		       spe, o->batch_size, o->learning_rate, mc.threads);
	for (int ep = 1; ep <= o->epochs; ep++) {
		double t0 = now_s(), last = t0, lsum = 0.0;
		for (long s = 0; s < spe; s++) {
			double l;
			rdm_batcher_next(bat, o->batch_size, bx, by);
			rc = rdm_model_grad(m, w, bx, by, o->batch_size, g, &l);
			if (rc)
				goto out;
			rdm_opt_apply(&oc, &os, w, w, g, NULL, 1.0f, np);
			lsum += l;
			steps++;
			if (tty) {
				double t = now_s();
				if (t - last > 0.25) {
					last = t;
					printf("\r  epoch %d/%d step %ld/%ld loss %.4f  %.1f steps/s ",
					       ep, o->epochs, s + 1, spe, lsum / (s + 1),
					       (s + 1) / (t - t0));
					fflush(stdout);
				}
			}
		}
		double dt = now_s() - t0;
		train_s += dt;
		if (o->verbose) {
			double vl;
			int vc;
			rdm_model_eval_pixels(m, w, va.px, va.y, va.n, &vl, &vc);
			printf("%sepoch %d/%d: train loss %.4f (batch %s), validation cross "
			       "entropy %g, validation accuracy %.2f%%, %.1f steps/s, %.1f s\n",
			       tty ? "\r" : "", ep, o->epochs, lsum / spe,
			       o->loss_mean ? "mean" : "sum", vl, 100.0 * vc / va.n, spe / dt, dt);
			fflush(stdout);
		}
	}
	double vl;
	int vc, tc;
	rdm_model_eval_pixels(m, w, va.px, va.y, va.n, &vl, &vc);
	rdm_model_eval_pixels(m, w, te.px, te.y, te.n, NULL, &tc);
	res->validation_ce = vl;
	res->validation_acc = va.n ? 100.0 * vc / va.n : 0.0;
	res->test_acc = te.n ? 100.0 * tc / te.n : 0.0;
	res->seconds = train_s;
	res->steps = steps;
	res->steps_per_s = train_s > 0 ? steps / train_s : 0.0;
	rc = 0;
out:
	free(by);
	free(bx);
	free(sv);
	free(sm);
	free(g);
	free(w);
	rdm_batcher_delete(&bat);
	rdm_model_delete(&m);
	rdm_images_free(&te);
	rdm_images_free(&va);
	rdm_images_free(&tr);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaps train [--model=mlp|lstm] [--data_dir=DIR] [--epochs=N]\n"
		"         [--batch_size=B] [--learning_rate=LR] [--threads=T]\n"
		"         [--hidden_units=H] [--seed=S] [--optimizer=adam|sgd|momentum]\n"
		"         [--loss=sum|mean] [--quiet]\n"
		"defaults: mlp: 5 epochs, batch 100, lr 0.01, 100 hidden, summed loss;\n"
		"          lstm: 10 epochs, batch 128, lr 0.001, 128 hidden, mean loss;\n"
		"          data_dir data/mnist, threads 1, seed 1, optimizer adam\n");
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int rdm_train_main(int argc, char **argv)
{
	enum { O_MODEL = 256, O_DATA, O_EPOCHS, O_BATCH, O_LR, O_THREADS, O_HIDDEN,
	       O_SEED, O_OPT, O_LOSS, O_QUIET, O_HELP };
	static const struct option lo[] = {
		{ "model", required_argument, 0, O_MODEL },
		{ "data_dir", required_argument, 0, O_DATA },
		{ "epochs", required_argument, 0, O_EPOCHS },
		{ "batch_size", required_argument, 0, O_BATCH },
		{ "learning_rate", required_argument, 0, O_LR },
		{ "threads", required_argument, 0, O_THREADS },
		{ "hidden_units", required_argument, 0, O_HIDDEN },
		{ "seed", required_argument, 0, O_SEED },
		{ "optimizer", required_argument, 0, O_OPT },
		{ "loss", required_argument, 0, O_LOSS },
		{ "quiet", no_argument, 0, O_QUIET },
		{ "help", no_argument, 0, O_HELP },
		{ 0, 0, 0, 0 },
	};
	/* two passes: the model kind decides the defaults of the other flags.
	 * The first pass is getopt's too, so that --model is read in every
	 * spelling the second accepts (--model lstm, an abbreviation); until
	 * 2026-12-05 a hand scan missed those and trained an mlp. */
	enum rdm_model_kind kind = RDM_MODEL_MLP;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
		if (c == O_MODEL && rdm_model_parse_kind(optarg, &kind)) {
			fprintf(stderr, "rdmaps train: bad --model '%s' (mlp|lstm)\n", optarg);
			return 2;
		}
	struct rdm_train_opts o;
	rdm_train_opts_defaults(&o, kind);
	o.verbose = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		long v;
		char *end;
		switch (c) {
		case O_MODEL:
			break;
		case O_DATA:
			o.data_dir = optarg;
			break;
		case O_EPOCHS:
			if (parse_long(optarg, 0, 100000, &v))
				goto bad;
			o.epochs = (int)v;
			break;
		case O_BATCH:
			if (parse_long(optarg, 1, 1 << 16, &v))
				goto bad;
			o.batch_size = (int)v;
			break;
		case O_LR:
			errno = 0;
			o.learning_rate = strtof(optarg, &end);
			if (errno || end == optarg || *end || !(o.learning_rate > 0.0f) ||
			    !isfinite(o.learning_rate))
				goto bad;
			break;
		case O_THREADS:
			if (parse_long(optarg, 1, 1024, &v))
				goto bad;
			o.threads = (int)v;
			break;
		case O_HIDDEN:
			if (parse_long(optarg, 1, 1 << 16, &v))
				goto bad;
			o.hidden_units = (int)v;
			break;
		case O_SEED: {
			errno = 0;
			unsigned long long s = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-')
				goto bad;
			o.seed = s;
			break;
		}
		case O_OPT:
			if (rdm_opt_parse_kind(optarg, &o.optimizer))
				goto bad;
			break;
		case O_LOSS:
			if (!strcmp(optarg, "sum"))
				o.loss_mean = 0;
			else if (!strcmp(optarg, "mean"))
				o.loss_mean = 1;
			else
				goto bad;
			break;
		case O_QUIET:
			o.verbose = 0;
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "rdmaps train: unknown or incomplete option '%s'\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
		continue;
bad:
		fprintf(stderr, "rdmaps train: bad value '%s' for --%s\n", optarg,
			lo[c - O_MODEL].name);
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "rdmaps train: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	struct rdm_train_result r;
	int rc = rdm_train_run(&o, &r);
	if (rc)
		return rc == RDMAPS_E_INVAL ? 2 : 1;
	printf("Training elapsed time: %f s (%ld steps, %.1f steps/s)\n", r.seconds,
	       r.steps, r.steps_per_s);
	printf("After %d epoch(s), validation cross entropy = %g\n", o.epochs, r.validation_ce);
	printf("test accuracy = %.2f%%\n", r.test_acc);
	return 0;
}
