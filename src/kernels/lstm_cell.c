/* LSTM cell elementwise math over n rows (examples) of H units for one step.
 * Built with -O3 -ffast-math (see CMakeLists.txt) so that expf maps to
 * glibc's libmvec SIMD variant (_ZGVdN8v_expf with -march=x86-64-v3) and
 * the loops vectorize; inputs are clamped so expf never overflows.  tanh is
 * computed from expf too (see th()).  Gate
 * order i, g, f, o (TF BasicLSTMCell i, j, f, o).  Each row function is
 * inlined into its n-row loop, so one call covers a whole time step.
 *
 * Both entry points are built twice (GCC target_clones, picked at load time
 * by cpuid): an x86-64-v4 (AVX-512) clone, whose loops call libmvec's
 * 16-lane expf (_ZGVeN16v_expf), and the default one (the project's
 * -march, AVX2 _ZGVdN8v_expf).  On the 2-vCPU AMD EPYC dev machine (Zen 5,
 * full-width AVX-512) the clone took the cell math of a 28-step batch of 128
 * from 1.23-1.28 to 0.71-0.72 ms forward and from 0.45-0.49 to 0.34 ms
 * backward (throwaway driver calling these two functions, 2 alternating runs
 * each, 2026-12-02); see docs/benchmarks-kernels.md for the whole step. */
#include <math.h>

#include "kernels/clones.h"
#include "kernels/kernels.h"

#define INL static inline __attribute__((always_inline))

INL float sig(float x)
{
	x = x < -80.0f ? -80.0f : (x > 80.0f ? 80.0f : x);
	return 1.0f / (1.0f + expf(-x));
}

/* tanh(x) = 1 - 2 / (exp(2x) + 1): one libmvec expf instead of the libmvec
 * tanhf, whose vector variant costs about 1.5x as much; the whole cell
 * forward went from 2.1-2.7 ms to 1.5-1.6 ms per 28-step batch of 128 (a
 * throwaway driver, 20 reps).  |x| is clamped to 40 (tanh is +-1 in float
 * there); absolute error <= 3.2e-7 vs double tanh, measured on [-4, 4] in
 * steps of 0.004. */
INL float th(float x)
{
	x = x < -40.0f ? -40.0f : (x > 40.0f ? 40.0f : x);
	return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f);
}

INL void fwd_row(float *restrict g, const float *restrict bias, const float *restrict cp,
		 float *restrict cn, float *restrict tc, float *restrict hn, int H)
{
	float *restrict gi = g, *restrict gg = g + H, *restrict gf = g + 2 * H,
		*restrict go = g + 3 * H;
	const float *restrict bi = bias, *restrict bg = bias + H, *restrict bf = bias + 2 * H,
		*restrict bo = bias + 3 * H;
	for (int j = 0; j < H; j++) {
		float i = sig(gi[j] + bi[j]);
		float u = th(gg[j] + bg[j]);
		float f = sig(gf[j] + bf[j]);
		float o = sig(go[j] + bo[j]);
		gi[j] = i;
		gg[j] = u;
		gf[j] = f;
		go[j] = o;
		float c = f * cp[j] + i * u;
		float tcv = th(c);
		cn[j] = c;
		tc[j] = tcv;
		hn[j] = o * tcv;
	}
}

RDM_CLONES
void rdm_lstm_cell_fwd(int n, int H, float *G, const float *bias, const float *cp, float *cn,
		       float *tc, float *hn, size_t ldh)
{
	const size_t G4 = 4 * (size_t)H;
	for (int b = 0; b < n; b++)
		fwd_row(G + b * G4, bias, cp + (size_t)b * H, cn + (size_t)b * H,
			tc + (size_t)b * H, hn + b * ldh, H);
}

INL void bwd_row(const float *restrict g, const float *restrict cp, const float *restrict tc,
		 const float *restrict dh, float *restrict dc, float *restrict dg, int H)
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

RDM_CLONES
void rdm_lstm_cell_bwd(int n, int H, const float *G, const float *cp, const float *tc,
		       const float *dh, float *dc, float *dG)
{
	const size_t G4 = 4 * (size_t)H;
	for (int b = 0; b < n; b++)
		bwd_row(G + b * G4, cp + (size_t)b * H, tc + (size_t)b * H, dh + (size_t)b * H,
			dc + (size_t)b * H, dG + b * G4, H);
}
