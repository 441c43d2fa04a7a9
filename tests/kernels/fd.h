/* Central finite differences, accumulated in double, for the gradient checks. */
#ifndef RDMAPS_TESTS_KERNELS_FD_H
#define RDMAPS_TESTS_KERNELS_FD_H
#include <math.h>
#include <stdio.h>
#include <stddef.h>

typedef double (*fd_loss_fn)(void *ctx);

/* Perturb p[i] by +-eps (in place, restored), compare (L+ - L-)/(2 eps)
 * with an[i].  Returns the number of mismatches (printed). stride: check every
 * stride-th element. */
static inline int fd_check(const char *what, fd_loss_fn f, void *ctx, float *p,
			   const float *an, size_t n, size_t stride, double eps,
			   double atol, double rtol)
{
	int bad = 0;
	double worst = 0.0;
	for (size_t i = 0; i < n; i += stride) {
		float keep = p[i];
		p[i] = (float)(keep + eps);
		double lp = f(ctx);
		p[i] = (float)(keep - eps);
		double lm = f(ctx);
		p[i] = keep;
		double h = (double)(float)(keep + eps) - (double)(float)(keep - eps);
		double num = (lp - lm) / h;
		double err = fabs(num - an[i]);
		double lim = atol + rtol * fabs(num);
		if (err / lim > worst)
			worst = err / lim;
		if (err > lim) {
			if (bad < 5)
				printf("  %s[%zu]: analytic %.6g numeric %.6g\n", what, i,
				       (double)an[i], num);
			bad++;
		}
	}
	printf("  %s: %zu checked, %d mismatches, worst err/tol %.3f\n", what,
	       (n + stride - 1) / stride, bad, worst);
	return bad;
}
#endif
