/* Dense (fully connected) layer on cblas_sgemm. */
#include <cblas.h>
#include <string.h>

#include "kernels/kernels.h"

void rdm_dense_fwd(const float *x, int n, int in, const float *W, const float *b,
		   int out, float *y)
{
	if (b) {
		for (int i = 0; i < n; i++)
			memcpy(y + (size_t)i * out, b, sizeof(float) * out);
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, out, in, 1.0f,
		    x, in, W, out, b ? 1.0f : 0.0f, y, out);
}

void rdm_dense_bwd(const float *x, int n, int in, const float *W, int out,
		   const float *dy, float *dW, float *db, float *dx, int accumulate)
{
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, n, 1.0f,
		    x, in, dy, out, accumulate ? 1.0f : 0.0f, dW, out);
	if (db) {
		if (!accumulate)
			memset(db, 0, sizeof(float) * out);
		for (int i = 0; i < n; i++) {
			const float *r = dy + (size_t)i * out;
			for (int j = 0; j < out; j++)
				db[j] += r[j];
		}
	}
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, in, out, 1.0f,
			    dy, out, W, out, 0.0f, dx, in);
}
