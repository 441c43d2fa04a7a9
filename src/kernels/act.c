/* Elementwise activations. */
#include <math.h>

#include "kernels/kernels.h"

void rdm_relu_fwd(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] > 0.0f ? y[i] : 0.0f;
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
