/* Elementwise activations. */
#include <math.h>

#include "kernels/kernels.h"

/* max(y, 0) with a NaN passed through, as TF's CPU Relu (Eigen's max(y, 0)):
 * a diverged run must show as a NaN loss, not a finite one (until
 * 2026-12-06 `y > 0 ? y : 0` turned a NaN into 0) */
void rdm_relu_fwd(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] < 0.0f ? 0.0f : y[i];
}

void rdm_relu_bwd(const float *y, float *dy, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

float rdm_sigmoidf(float x)
{
	if (x >= 0.0f) {
		float e = expf(-x);
		return 1.0f / (1.0f + e);
	}
	float e = expf(x);
	return e / (1.0f + e);
}
