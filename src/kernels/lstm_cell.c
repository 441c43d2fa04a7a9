/* LSTM cell elementwise math, one (example, step) row of H units at a time.
 * Built with -O3 -ffast-math (see CMakeLists.txt) so that expf/tanhf map to
 * glibc's libmvec SIMD variants (_ZGVbN4v_expf/_tanhf) and the loops
 * vectorize; inputs are clamped so expf never overflows.  Gate order i, g, f, o
 * (TF BasicLSTMCell i, j, f, o). */
#include <math.h>

#include "kernels/kernels.h"

static inline float sig(float x)
{
	x = x < -80.0f ? -80.0f : (x > 80.0f ? 80.0f : x);
	return 1.0f / (1.0f + expf(-x));
}

void rdm_lstm_cell_fwd(float *restrict g, const float *restrict cp, float *restrict cn,
		       float *restrict tc, float *restrict hn, int H)
{
	float *restrict gi = g, *restrict gg = g + H, *restrict gf = g + 2 * H,
		*restrict go = g + 3 * H;
	for (int j = 0; j < H; j++) {
		float i = sig(gi[j]);
		float u = tanhf(gg[j]);
		float f = sig(gf[j]);
		float o = sig(go[j]);
		gi[j] = i;
		gg[j] = u;
		gf[j] = f;
		go[j] = o;
		float c = f * cp[j] + i * u;
		float th = tanhf(c);
		cn[j] = c;
		tc[j] = th;
		hn[j] = o * th;
	}
}

void rdm_lstm_cell_bwd(const float *restrict g, const float *restrict cp,
		       const float *restrict tc, const float *restrict dh,
		       float *restrict dc, float *restrict dg, int H)
{
	const float *restrict gi = g, *restrict gg = g + H, *restrict gf = g + 2 * H,
		*restrict go = g + 3 * H;
	float *restrict di = dg, *restrict du = dg + H, *restrict df = dg + 2 * H,
		*restrict dq = dg + 3 * H;
	for (int j = 0; j < H; j++) {
		float i = gi[j], u = gg[j], f = gf[j], o = go[j];
		float th = tc[j], dhv = dh[j];
		float dcv = dc[j] + dhv * o * (1.0f - th * th);
		di[j] = dcv * u * i * (1.0f - i);
		du[j] = dcv * i * (1.0f - u * u);
		df[j] = dcv * cp[j] * f * (1.0f - f);
		dq[j] = dhv * th * o * (1.0f - o);
		dc[j] = dcv * f;
	}
}
