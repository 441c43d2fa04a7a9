/* LSTM classifier on MNIST rows: 28 steps of 28 pixels, one LSTM layer
 * (TF BasicLSTMCell semantics, gate order i, j(=g), f, o), last output ->
 * dense 10.  Tensors (flat, in this order):
 *   lstm_w[28+H, 4H]  rows 0..27 multiply x_t, rows 28.. multiply h_{t-1}
 *   lstm_b[4H]        forget-gate slice initialised to 1 (TF forget_bias)
 *   out_w[H, 10], out_b[10]
 * lstm_b directly follows lstm_w, so [lstm_w; lstm_b] is one [28+H+1, 4H]
 * matrix, the weights of the row [x_t, h_{t-1}, 1].
 *
 * Workspace is time-major (all n examples of step t are one block):
 *   XH [T][n][KP]  row = [x_t (28), h_{t-1} (H), 1, pad]; h_{-1} = 0
 *   G  [T][n][4H]  gate pre-activations, then activations (in place)
 *   C  [T+1][n][H] cell states (C[0] = 0), TC [T][n][H] tanh(c_t)
 *   dG [T][n][4H]; HT, dh, dc [n][H]
 * GEMMs: forward per step ONE GEMM [x_t, h_{t-1}] [Wx; Wh] -> G_t (TF
 * BasicLSTMCell's concat form; measured a little faster than one input GEMM
 * over all steps plus per-step h Wh GEMMs: 6.0-6.7 vs 6.3-7.9 ms per batch
 * of 128, throwaway driver); the cell writes h_t straight into XH_{t+1}.
 * Backward per step one dh = dG_t Wh^T GEMM, then ONE GEMM XH^T dG over all
 * n*T rows gives the gradients of lstm_w and lstm_b together (the ones
 * column makes the bias row). */
#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "kernels/model_internal.h"

#define T_STEPS 28
#define T_IN 28

enum { T_W, T_B, T_OW, T_OB };
enum { B_XH, B_G, B_C, B_TC, B_HT, B_DG, B_DH, B_DC };

/* XH row stride: x, h, the ones column, padded to 8 floats (32 bytes). */
static size_t xh_ld(int H) { return ((size_t)T_IN + H + 1 + 7) & ~(size_t)7; }

static void lstm_fwd(struct rdm_model *m, const float *p, const float *x, int n)
{
	const int H = m->cfg.hidden_units, G4 = 4 * H, T = T_STEPS;
	const size_t KP = xh_ld(H), nn = (size_t)n;
	const float *W = p + m->t[T_W].offset, *bias = p + m->t[T_B].offset;
	float *XH = m->buf[B_XH], *G = m->buf[B_G], *C = m->buf[B_C], *TC = m->buf[B_TC];
	float *HT = m->buf[B_HT];

	for (int t = 0; t < T; t++)
		for (int b = 0; b < n; b++) {
			float *row = XH + ((size_t)t * nn + b) * KP;
			memcpy(row, x + ((size_t)b * T + t) * T_IN, sizeof(float) * T_IN);
			if (t == 0)
				memset(row + T_IN, 0, sizeof(float) * H);
			row[T_IN + H] = 1.0f;
		}
	memset(C, 0, sizeof(float) * nn * H);
	for (int t = 0; t < T; t++) {
		float *Gt = G + (size_t)t * nn * G4;
		/* [x_t, h_{t-1}] [Wx; Wh] in one GEMM (h_{-1} = 0: x only) */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, G4, t ? T_IN + H : T_IN,
			    1.0f, XH + (size_t)t * nn * KP, (int)KP, W, G4, 0.0f, Gt, G4);
		float *hn = t < T - 1 ? XH + (size_t)(t + 1) * nn * KP + T_IN : HT;
		rdm_lstm_cell_fwd(n, H, Gt, bias, C + (size_t)t * nn * H,
				  C + (size_t)(t + 1) * nn * H, TC + (size_t)t * nn * H, hn,
				  t < T - 1 ? KP : (size_t)H);
	}
	rdm_dense_fwd(HT, n, H, p + m->t[T_OW].offset, p + m->t[T_OB].offset,
		      RDM_MNIST_CLASSES, m->logits);
	/* lstm_cell.c is built with -ffast-math (libmvec's expf): its clamps
	 * turn a NaN gate into a finite one, so a NaN or Inf in lstm_w / lstm_b
	 * would give finite logits.  The inputs are pixels in [0, 1] and |c_t|
	 * <= t + 1, so only those parameters can carry one in: checked here
	 * (0 * v is NaN for a NaN or Inf v; one pass over 80,384 floats beside the
	 * step's 28 GEMMs, not timed on its own), and the logits
	 * say NaN, as TF's would. */
	float z = 0.0f;
	for (size_t i = 0; i < m->t[T_W].count + m->t[T_B].count; i++)
		z += W[i] * 0.0f;
	if (z != z)
		for (size_t i = 0; i < nn * RDM_MNIST_CLASSES; i++)
			m->logits[i] = NAN;
}

static void lstm_bwd(struct rdm_model *m, const float *p, const float *x, int n, float *grad)
{
	(void)x; /* the inputs are in XH since the forward pass */
	const int H = m->cfg.hidden_units, G4 = 4 * H, T = T_STEPS;
	const size_t KP = xh_ld(H), nn = (size_t)n;
	const float *Wh = p + m->t[T_W].offset + (size_t)T_IN * G4;
	const float *XH = m->buf[B_XH], *G = m->buf[B_G], *C = m->buf[B_C];
	const float *TC = m->buf[B_TC];
	float *HT = m->buf[B_HT], *dG = m->buf[B_DG], *dh = m->buf[B_DH], *dc = m->buf[B_DC];

	rdm_dense_bwd(HT, n, H, p + m->t[T_OW].offset, RDM_MNIST_CLASSES, m->dlogits,
		      grad + m->t[T_OW].offset, grad + m->t[T_OB].offset, dh, 0);
	memset(dc, 0, sizeof(float) * nn * H);
	for (int t = T - 1; t >= 0; t--) {
		float *dGt = dG + (size_t)t * nn * G4;
		rdm_lstm_cell_bwd(n, H, G + (size_t)t * nn * G4, C + (size_t)t * nn * H,
				  TC + (size_t)t * nn * H, dh, dc, dGt);
		if (t > 0)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, H, G4, 1.0f, dGt,
				    G4, Wh, G4, 0.0f, dh, H);
	}
	/* [d lstm_w; d lstm_b] = XH^T dG over all (step, example) rows at once;
	 * lstm_b follows lstm_w (checked in rdm_lstm_setup). */
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T_IN + H + 1, G4, (int)(nn * T),
		    1.0f, XH, (int)KP, dG, G4, 0.0f, grad + m->t[T_W].offset, G4);
}

static void lstm_init(const struct rdm_model *m, float *p, struct rdm_rng *r)
{
	const int H = m->cfg.hidden_units;
	float lim = (float)sqrt(6.0 / (double)(T_IN + H + 4 * H));
	rdm_init_uniform(r, p + m->t[T_W].offset, m->t[T_W].count, -lim, lim);
	float *b = p + m->t[T_B].offset;
	for (int j = 0; j < 4 * H; j++)
		b[j] = (j >= 2 * H && j < 3 * H) ? 1.0f : 0.0f;
	rdm_init_truncnormal(r, p + m->t[T_OW].offset, m->t[T_OW].count,
			     (float)(1.0 / sqrt((double)H)));
}

static const struct rdm_model_ops lstm_ops = { lstm_fwd, lstm_bwd, lstm_init };

int rdm_lstm_setup(struct rdm_model *m)
{
	const int H = m->cfg.hidden_units;
	const size_t n = (size_t)m->cfg.max_batch, T = T_STEPS;
	m->ops = &lstm_ops;
	rdm_model_add_tensor(m, "lstm_w", 2, T_IN + H, 4 * H);
	rdm_model_add_tensor(m, "lstm_b", 1, 4 * H, 0);
	rdm_model_add_tensor(m, "out_w", 2, H, RDM_MNIST_CLASSES);
	rdm_model_add_tensor(m, "out_b", 1, RDM_MNIST_CLASSES, 0);
	/* the backward's single weight+bias GEMM relies on this */
	assert(m->t[T_B].offset == m->t[T_W].offset + m->t[T_W].count);
	const size_t sz[] = {
		[B_XH] = T * n * xh_ld(H), [B_G] = n * T * 4 * H, [B_C] = n * (T + 1) * H,
		[B_TC] = n * T * H,        [B_HT] = n * H,        [B_DG] = n * T * 4 * H,
		[B_DH] = n * H,            [B_DC] = n * H,
	};
	for (int i = 0; i <= B_DC; i++) {
		m->buf[i] = calloc(sz[i], sizeof(float));
		if (!m->buf[i])
			return RDMAPS_E_NOMEM;
	}
	return 0;
}
