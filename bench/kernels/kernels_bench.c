/* kernels_bench: training steps/s (forward + backward + Adam apply) of the
 * mlp (batch 100) and lstm (batch 128) models on 1 and 2 OpenBLAS threads.
 *
 * Method: synthetic inputs (uniform [0,1) pixels, uniform labels; a pool of
 * 8 batches cycled so caches see changing data), warm-up until W steps or T
 * seconds (whichever first, at least 1 step), then B timed blocks each sized
 * from the warm-up to last ~block_s seconds; the reported rate is the median
 * block rate.  Optionally runs bench/kernels/torch_ref.py with the same
 * method per configuration and prints vs-pytorch ratios.
 *
 *   kernels_bench [--models=mlp,lstm] [--threads=1,2] [--blocks=7]
 *                 [--block_s=0.3] [--warmup_steps=50] [--warmup_s=1.0]
 *                 [--rounds=1] [--json=FILE] [--torch=SCRIPT] [--python=/usr/bin/python3]
 * --rounds=R repeats (ours, torch) back to back R times per configuration and
 * reports the median of the per-round medians (min/max are over all blocks),
 * plus the min and median over rounds of the per-round ours/torch ratios.
 * Every median of an even count (blocks, rounds, or the rounds where torch
 * ran) is the mean of the two middle values.
 * The OpenBLAS core (kernel set) in use is printed and recorded in the JSON:
 * torch_ref.py inherits the environment, so OPENBLAS_CORETYPE applies to
 * both sides (PyTorch here calls the same system OpenBLAS).  On a CPU that
 * OpenBLAS does not know, the bench first runs itself again with the kernels
 * rdmaps would take (kernels/blas_core.h), so both sides get those.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/blas_core.h"
#include "kernels/model.h"
#include "kernels/optim.h"

extern void openblas_set_num_threads(int);
extern char *openblas_get_corename(void);

#define POOL 8
#define MAXCFG 16

struct result {
	const char *model;
	int threads, batch;
	size_t nparams;
	double median, min, max; /* steps/s over blocks */
	int blocks, steps_per_block, warmup_steps, rounds;
	double cpu_median;       /* steps per second of process CPU time (all threads) */
	double torch_median;     /* <0: not run */
	double torch_cpu;
	char torch_note[128];
	/* per-round ours/torch ratios (rounds where torch ran): min and median */
	int nratio;
	double ratio_min, ratio_med, cpu_ratio_min, cpu_ratio_med;
	/* ours' medians over the same rounds as torch's (the rounds where torch
	 * ran), the numerators of the ratios of medians */
	double median_p, cpu_median_p;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x1234567;
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* median of sorted v[0..n-1], n >= 1: the middle value, or for an even n
 * the mean of the two middle values (v[n / 2] alone would be the upper one:
 * the max of two, e.g. when torch failed in one of 3 rounds) */
static double median_sorted(const double *v, int n)
{
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct opts {
	char models[64], threads[64], json[1024], torch[1024], python[256];
	int blocks, warmup_steps, rounds;
	double block_s, warmup_s;
};

static int run_ours(const struct opts *o, enum rdm_model_kind kind, int threads, struct result *r)
{
	const int batch = kind == RDM_MODEL_MLP ? 100 : 128;
	struct rdm_model_cfg cfg = {.kind = kind, .hidden_units = 0, .max_batch = batch, .threads = threads,
				    .loss_mean = kind == RDM_MODEL_MLP ? 0 : 1};
	struct rdm_model *m = NULL;
	if (rdm_model_new(&cfg, &m)) {
		fprintf(stderr, "kernels_bench: rdm_model_new failed\n");
		return 1;
	}
	openblas_set_num_threads(threads);
	size_t np = rdm_model_nparams(m);
	float *w = malloc(np * sizeof(float)), *g = malloc(np * sizeof(float));
	float *ms = malloc(np * sizeof(float)), *vs = malloc(np * sizeof(float));
	float *x = malloc(sizeof(float) * POOL * batch * RDM_MNIST_PIXELS);
	uint8_t *y = malloc((size_t)POOL * batch);
	if (!w || !g || !ms || !vs || !x || !y) {
		fprintf(stderr, "kernels_bench: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < (size_t)POOL * batch * RDM_MNIST_PIXELS; i++)
		x[i] = (float)(rnd() >> 40) / (float)(1 << 24);
	for (int i = 0; i < POOL * batch; i++)
		y[i] = (uint8_t)(rnd() % 10);
	rdm_model_init(m, w, 1);
	struct rdm_opt_cfg oc;
	struct rdm_opt_state os;
	rdm_opt_defaults(&oc, RDM_OPT_ADAM, kind == RDM_MODEL_MLP ? 0.01f : 0.001f);
	rdm_opt_state_init(&os, &oc, ms, vs, np);

	long step = 0;
	double loss = 0, sink = 0;
#define STEP()                                                                                           \
	do {                                                                                             \
		int k_ = (int)(step++ % POOL);                                                           \
		rdm_model_grad(m, w, x + (size_t)k_ * batch * RDM_MNIST_PIXELS, y + k_ * batch, batch, g, \
			       &loss);                                                                   \
		rdm_opt_apply(&oc, &os, w, w, g, NULL, 1.0f, np);                                        \
		sink += loss;                                                                            \
	} while (0)

	double t0 = now();
	int wsteps = 0;
	do {
		STEP();
		wsteps++;
	} while (wsteps < o->warmup_steps && now() - t0 < o->warmup_s);
	double per = (now() - t0) / wsteps;
	int spb = (int)(o->block_s / per);
	if (spb < 1)
		spb = 1;
	double rates[64], crates[64];
	for (int b = 0; b < o->blocks; b++) {
		double s = now(), c = cpu_now();
		for (int i = 0; i < spb; i++)
			STEP();
		rates[b] = spb / (now() - s);
		crates[b] = spb / (cpu_now() - c);
	}
	qsort(crates, (size_t)o->blocks, sizeof(double), cmpd);
	r->cpu_median = median_sorted(crates, o->blocks);
	qsort(rates, (size_t)o->blocks, sizeof(double), cmpd);
	r->model = kind == RDM_MODEL_MLP ? "mlp" : "lstm";
	r->threads = threads;
	r->batch = batch;
	r->nparams = np;
	r->blocks = o->blocks;
	r->steps_per_block = spb;
	r->warmup_steps = wsteps;
	r->min = rates[0];
	r->max = rates[o->blocks - 1];
	r->median = median_sorted(rates, o->blocks);
	r->torch_median = -1;
	if (!isfinite(sink))
		fprintf(stderr, "kernels_bench: warning: non-finite loss in %s\n", r->model);
	free(w);
	free(g);
	free(ms);
	free(vs);
	free(x);
	free(y);
	rdm_model_delete(&m);
	return 0;
}

/* Runs torch_ref.py for one configuration; parses "RESULT ... steps_per_s=X". */
static void run_torch(const struct opts *o, struct result *r)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s' '%s' --model=%s --threads=%d --blocks=%d --block_s=%g --warmup_steps=%d --warmup_s=%g 2>&1",
		 o->python, o->torch, r->model, r->threads, o->blocks, o->block_s, o->warmup_steps, o->warmup_s);
	FILE *p = popen(cmd, "r");
	if (!p) {
		snprintf(r->torch_note, sizeof(r->torch_note), "popen failed");
		return;
	}
	char line[1024];
	while (fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, "steps_per_s=");
		if (strncmp(line, "RESULT ", 7) == 0 && s) {
			r->torch_median = atof(s + 12);
			const char *c = strstr(line, "cpu_steps_per_s=");
			if (c)
				r->torch_cpu = atof(c + 16);
		}
		else if (strncmp(line, "SKIP", 4) == 0 || strstr(line, "Error")) {
			line[strcspn(line, "\n")] = 0;
			snprintf(r->torch_note, sizeof(r->torch_note), "%.120s", line);
		}
	}
	int st = pclose(p);
	if (r->torch_median < 0 && !r->torch_note[0])
		snprintf(r->torch_note, sizeof(r->torch_note), "torch_ref.py exit status %d", st);
}

static int parse_list(const char *s, char out[][16], int max)
{
	int n = 0;
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok(buf, ","); t && n < max; t = strtok(NULL, ","))
		snprintf(out[n++], 16, "%s", t);
	return n;
}

int main(int argc, char **argv)
{
	rdm_blas_fix_core("kernels_bench", argv);
	struct opts o = {.models = "mlp,lstm", .threads = "1,2", .python = "/usr/bin/python3",
			 .blocks = 7, .warmup_steps = 50, .rounds = 1, .block_s = 0.3, .warmup_s = 1.0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
#define OPT(name) (strncmp(a, "--" name "=", strlen(name) + 3) == 0 ? a + strlen(name) + 3 : NULL)
		const char *v;
		if ((v = OPT("models")))
			snprintf(o.models, sizeof(o.models), "%s", v);
		else if ((v = OPT("threads")))
			snprintf(o.threads, sizeof(o.threads), "%s", v);
		else if ((v = OPT("json")))
			snprintf(o.json, sizeof(o.json), "%s", v);
		else if ((v = OPT("torch")))
			snprintf(o.torch, sizeof(o.torch), "%s", v);
		else if ((v = OPT("python")))
			snprintf(o.python, sizeof(o.python), "%s", v);
		else if ((v = OPT("rounds")))
			o.rounds = atoi(v);
		else if ((v = OPT("blocks")))
			o.blocks = atoi(v);
		else if ((v = OPT("block_s")))
			o.block_s = atof(v);
		else if ((v = OPT("warmup_steps")))
			o.warmup_steps = atoi(v);
		else if ((v = OPT("warmup_s")))
			o.warmup_s = atof(v);
		else {
			fprintf(stderr, "usage: %s [--models=mlp,lstm] [--threads=1,2] [--blocks=7] [--block_s=0.3] [--rounds=1]\n"
					"  [--warmup_steps=50] [--warmup_s=1.0] [--json=FILE] [--torch=torch_ref.py] [--python=/usr/bin/python3]\n",
				argv[0]);
			return 2;
		}
	}
	if (o.rounds < 1 || o.rounds > 15 || o.blocks < 1 || o.blocks > 64 || o.block_s <= 0 || o.warmup_steps < 1) {
		fprintf(stderr, "kernels_bench: bad --blocks (1..64), --block_s or --warmup_steps\n");
		return 2;
	}
	char ml[8][16], tl[8][16];
	int nm = parse_list(o.models, ml, 8), nt = parse_list(o.threads, tl, 8);
	struct result res[MAXCFG];
	int nr = 0;
	for (int i = 0; i < nm; i++) {
		enum rdm_model_kind k;
		if (rdm_model_parse_kind(ml[i], &k)) {
			fprintf(stderr, "kernels_bench: unknown model '%s'\n", ml[i]);
			return 2;
		}
		for (int j = 0; j < nt && nr < MAXCFG; j++) {
			int t = atoi(tl[j]);
			if (t < 1) {
				fprintf(stderr, "kernels_bench: bad thread count '%s'\n", tl[j]);
				return 2;
			}
			/* R rounds of (ours, torch) back to back so both see the same
			 * machine load; report the median over rounds of each. */
			struct result *r = &res[nr];
			double om[16], tm[16], oc[16], tc[16], rr[16], cr[16], omp[16], ocp[16];
			int ntm = 0;
			for (int q = 0; q < o.rounds; q++) {
				struct result rq;
				memset(&rq, 0, sizeof(rq));
				if (run_ours(&o, k, t, &rq))
					return 1;
				if (o.torch[0]) {
					run_torch(&o, &rq);
					if (rq.torch_median > 0) {
						rr[ntm] = rq.median / rq.torch_median;
						cr[ntm] = rq.torch_cpu > 0 ? rq.cpu_median / rq.torch_cpu : 0.0;
						tc[ntm] = rq.torch_cpu;
						omp[ntm] = rq.median;
						ocp[ntm] = rq.cpu_median;
						tm[ntm++] = rq.torch_median;
					}
				}
				om[q] = rq.median;
				oc[q] = rq.cpu_median;
				if (q == 0)
					*r = rq;
				else {
					if (rq.min < r->min)
						r->min = rq.min;
					if (rq.max > r->max)
						r->max = rq.max;
				}
			}
			qsort(om, (size_t)o.rounds, sizeof(double), cmpd);
			r->median = median_sorted(om, o.rounds);
			qsort(oc, (size_t)o.rounds, sizeof(double), cmpd);
			r->cpu_median = median_sorted(oc, o.rounds);
			r->rounds = o.rounds;
			if (ntm) {
				qsort(tm, (size_t)ntm, sizeof(double), cmpd);
				r->torch_median = median_sorted(tm, ntm);
				qsort(tc, (size_t)ntm, sizeof(double), cmpd);
				r->torch_cpu = median_sorted(tc, ntm);
				qsort(rr, (size_t)ntm, sizeof(double), cmpd);
				qsort(cr, (size_t)ntm, sizeof(double), cmpd);
				r->nratio = ntm;
				qsort(omp, (size_t)ntm, sizeof(double), cmpd);
				qsort(ocp, (size_t)ntm, sizeof(double), cmpd);
				r->median_p = median_sorted(omp, ntm);
				r->cpu_median_p = median_sorted(ocp, ntm);
				r->ratio_min = rr[0];
				r->ratio_med = median_sorted(rr, ntm);
				r->cpu_ratio_min = cr[0];
				r->cpu_ratio_med = median_sorted(cr, ntm);
			}
			nr++;
			fprintf(stderr, "kernels_bench: %s threads=%d done\n", r->model, t);
		}
	}
	const char *core = openblas_get_corename(), *core_env = getenv("OPENBLAS_CORETYPE");
	printf("openblas core=%s (OPENBLAS_CORETYPE=%s)\n", core ? core : "?", core_env ? core_env : "unset");
	printf("%-5s %5s %7s %9s %12s %10s %10s %10s %13s %11s %7s %9s\n", "model", "batch", "threads", "params",
	       "steps/s(med)", "min", "max", "cpu-steps/s", "torch steps/s", "torch cpu/s", "ratio", "cpu-ratio");
	for (int i = 0; i < nr; i++) {
		struct result *r = &res[i];
		char ts[32] = "-", rs[32] = "-", tcs[32] = "-", crs[32] = "-";
		if (r->torch_median > 0) {
			snprintf(ts, sizeof(ts), "%.1f", r->torch_median);
			snprintf(rs, sizeof(rs), "%.2f", r->median_p / r->torch_median);
		}
		if (r->torch_cpu > 0) {
			snprintf(tcs, sizeof(tcs), "%.1f", r->torch_cpu);
			snprintf(crs, sizeof(crs), "%.2f", r->cpu_median_p / r->torch_cpu);
		}
		printf("%-5s %5d %7d %9zu %12.1f %10.1f %10.1f %10.1f %13s %11s %7s %9s\n", r->model, r->batch, r->threads,
		       r->nparams, r->median, r->min, r->max, r->cpu_median, ts, tcs, rs, crs);
	}
	for (int i = 0; i < nr; i++) {
		struct result *r = &res[i];
		if (r->torch_median > 0)
			printf("vs-pytorch %s threads=%d steps_ratio=%.2f cpu_steps_ratio=%.2f (ratios of the medians over "
			       "%d of %d rounds) per-round(%d): steps_ratio min %.2f median %.2f, cpu_steps_ratio min %.2f "
			       "median %.2f\n",
			       r->model, r->threads, r->median_p / r->torch_median,
			       r->torch_cpu > 0 ? r->cpu_median_p / r->torch_cpu : 0.0, r->nratio, r->rounds, r->nratio,
			       r->ratio_min, r->ratio_med, r->cpu_ratio_min, r->cpu_ratio_med);
		else if (o.torch[0])
			printf("vs-pytorch %s threads=%d skipped (%s)\n", r->model, r->threads, r->torch_note);
	}
	FILE *jf = NULL;
	if (o.json[0] && !(jf = fopen(o.json, "w"))) {
		perror(o.json);
		return 1;
	}
	FILE *outs[2] = {stdout, jf};
	for (int f = 0; f < 2; f++) {
		FILE *out = outs[f];
		if (!out)
			continue;
		fprintf(out, "{\"bench\":\"kernels\",\"method\":{\"blocks\":%d,\"block_s\":%g,\"warmup_steps\":%d,\"warmup_s\":%g,\"rounds\":%d,"
			     "\"stat\":\"median over rounds of median block steps/s\","
			     "\"steps_ratio\":\"ratio of medians: ours over the rounds torch ran / torch\","
			     "\"steps_ratio_median\":\"median of the per-round ratios\",\"step\":\"grad+adam\",\"openblas_core\":\"%s\"},\"results\":[",
			o.blocks, o.block_s, o.warmup_steps, o.warmup_s, o.rounds, core ? core : "?");
		for (int i = 0; i < nr; i++) {
			struct result *r = &res[i];
			fprintf(out, "%s{\"model\":\"%s\",\"batch\":%d,\"threads\":%d,\"nparams\":%zu,\"steps_per_s\":%.2f,"
				     "\"min\":%.2f,\"max\":%.2f,\"cpu_steps_per_s\":%.2f,\"steps_per_block\":%d,\"warmup_steps\":%d",
				i ? "," : "", r->model, r->batch, r->threads, r->nparams, r->median, r->min, r->max,
				r->cpu_median, r->steps_per_block, r->warmup_steps);
			if (r->torch_median > 0)
				fprintf(out, ",\"torch_steps_per_s\":%.2f,\"steps_ratio\":%.3f,\"torch_cpu_steps_per_s\":%.2f,"
					     "\"round_ratios\":%d,\"steps_ratio_min\":%.3f,\"steps_ratio_median\":%.3f,"
					     "\"cpu_steps_ratio_min\":%.3f,\"cpu_steps_ratio_median\":%.3f",
					r->torch_median, r->median_p / r->torch_median, r->torch_cpu, r->nratio, r->ratio_min,
					r->ratio_med, r->cpu_ratio_min, r->cpu_ratio_med);
			fprintf(out, "}");
		}
		fprintf(out, "]}\n");
	}
	if (jf)
		fclose(jf);
	return 0;
}
