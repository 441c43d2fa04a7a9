/* Loads the real MNIST / Fashion-MNIST from scripts/fetch-data.sh output
 * (RDMAPS_DATA_DIR or <src>/data); exits 77 (skipped) when absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/data.h"

static int check(const char *dir, const char *name)
{
	struct rdm_images tr, va, te;
	char err[1024];
	if (rdm_mnist_load(dir, &tr, &va, &te, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", name, err);
		return 1;
	}
	int ok = tr.n == 55000 && va.n == 5000 && te.n == 10000 && tr.rows == 28 && tr.cols == 28;
	long hist[10] = {0};
	double sum = 0;
	float mx = 0;
	for (int i = 0; i < tr.n; i++)
		hist[tr.y[i]]++;
	float row[784];
	for (int r = 0; r < tr.n; r++) {
		rdm_pixels_to_float(tr.px + (size_t)r * 784, 784, row);
		for (int i = 0; i < 784; i++) {
			sum += row[i];
			if (row[i] > mx)
				mx = row[i];
		}
	}
	printf("%s: train %d validation %d test %d (%dx%d); train mean pixel %.4f max %.3f; first labels val %d train %d test %d; train label counts",
	       name, tr.n, va.n, te.n, tr.rows, tr.cols, sum / ((double)tr.n * 784), mx, va.y[0], tr.y[0], te.y[0]);
	for (int k = 0; k < 10; k++)
		printf(" %ld", hist[k]);
	printf("\n");
	ok = ok && mx == 1.0f;
	rdm_images_free(&tr);
	rdm_images_free(&va);
	rdm_images_free(&te);
	return ok ? 0 : 1;
}

int main(void)
{
	const char *base = getenv("RDMAPS_DATA_DIR");
	if (!base)
		base = RDMAPS_SRC_DIR "/data";
	char m[4096], f[4096];
	snprintf(m, sizeof(m), "%s/mnist", base);
	snprintf(f, sizeof(f), "%s/fashion", base);
	struct stat st;
	if (stat(m, &st) != 0 || stat(f, &st) != 0) {
		printf("SKIP: %s/{mnist,fashion} missing; run scripts/fetch-data.sh\n", base);
		return 77;
	}
	return check(m, "mnist") | check(f, "fashion");
}
