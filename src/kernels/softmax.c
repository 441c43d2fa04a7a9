/* Softmax + clipped cross entropy, as mnist_replica.py:
 *   cross_entropy = -reduce_sum(y_ * log(clip_by_value(y, 1e-10, 1.0)))
 * The clip's gradient is zero where the probability is below 1e-10. */
#include <math.h>

#include "kernels/kernels.h"

void rdm_softmax_ce(const float *z, int n, int k, const uint8_t *y, int mean,
		    float *dz, double *loss, int *correct)
{
	if (k <= 0 || k > 64) { /* p[] below holds 64 classes (callers pass 10) */
		if (loss)
			*loss = NAN;
		if (correct)
			*correct = 0;
		return;
	}
	double total = 0.0;
	int hits = 0;
	const float scale = mean ? 1.0f / (float)n : 1.0f;
	for (int b = 0; b < n; b++) {
		const float *zb = z + (size_t)b * k;
		float p[64];
		float mx = zb[0];
		int arg = 0;
		for (int j = 1; j < k; j++) {
			if (zb[j] > mx) {
				mx = zb[j];
				arg = j;
			}
		}
		double s = 0.0;
		for (int j = 0; j < k; j++) {
			p[j] = expf(zb[j] - mx);
			s += p[j];
		}
		float inv = (float)(1.0 / s);
		for (int j = 0; j < k; j++)
			p[j] *= inv;
		int t = y[b];
		hits += (arg == t);
		float pt = p[t];
		int clipped = pt < 1e-10f;
		total -= log(clipped ? 1e-10 : (pt > 1.0f ? 1.0 : (double)pt));
		if (dz) {
			float *db = dz + (size_t)b * k;
			if (clipped) {
				for (int j = 0; j < k; j++)
					db[j] = 0.0f;
			} else {
				for (int j = 0; j < k; j++)
					db[j] = scale * (p[j] - (j == t ? 1.0f : 0.0f));
			}
		}
	}
	if (loss)
		*loss = mean ? total / n : total;
	if (correct)
		*correct += hits;
}
