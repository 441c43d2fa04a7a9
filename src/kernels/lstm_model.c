/* LSTM classifier on MNIST rows: 28 steps of 28 pixels, one LSTM layer
 * (TF BasicLSTMCell semantics, gate order i, j(=g), f, o), last output ->
 * dense 10.  Tensors (flat, in this order):
 *   lstm_w[28+H, 4H]  rows 0..27 multiply x_t, rows 28.. multiply h_{t-1}
 *   lstm_b[4H]        forget-gate slice initialised to 1 (TF forget_bias)
 *   out_w[H, 10], out_b[10]
 * Per step ONE fused gate GEMM h_{t-1}[n,H] x W_h[H,4H]; the input GEMM of
 * all 28 steps is one GEMM up front (x viewed as [n*28, 28]). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "kernels/model_internal.h"

#define T_STEPS 28
#define T_IN 28

enum { T_W, T_B, T_OW, T_OB };
enum { B_G, B_C, B_TC, B_HP, B_HT, B_DG, B_DH, B_DC };

static void lstm_fwd(struct rdm_model *m, const float *p, const float *x, int n)
{
	const int H = m->cfg.hidden_units, G4 = 4 * H, T = T_STEPS;
	const float *W = p + m->t[T_W].offset, *bias = p + m->t[T_B].offset;
	const float *Wh = W + (size_t)T_IN * G4;
	float *G = m->buf[B_G], *C = m->buf[B_C], *TC = m->buf[B_TC];
	float *HP = m->buf[B_HP], *HT = m->buf[B_HT];
	const size_t rows = (size_t)n * T;

	for (size_t r = 0; r < rows; r++)
		memcpy(G + r * G4, bias, sizeof(float) * G4);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, G4, T_IN,
		    1.0f, x, T_IN, W, G4, 1.0f, G, G4);
	for (int b = 0; b < n; b++) {
		memset(HP + (size_t)b * T * H, 0, sizeof(float) * H);
		memset(C + (size_t)b * (T + 1) * H, 0, sizeof(float) * H);
	}
	for (int t = 0; t < T; t++) {
		if (t > 0)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, G4, H,
				    1.0f, HP + (size_t)t * H, T * H, Wh, G4, 1.0f,
				    G + (size_t)t * G4, T * G4);
		for (int b = 0; b < n; b++) {
			float *g = G + ((size_t)b * T + t) * G4;
			const float *cp = C + ((size_t)b * (T + 1) + t) * H;
			float *cn = C + ((size_t)b * (T + 1) + t + 1) * H;
			float *tc = TC + ((size_t)b * T + t) * H;
			float *hn = t < T - 1 ? HP + ((size_t)b * T + t + 1) * H
					      : HT + (size_t)b * H;
			rdm_lstm_cell_fwd(g, cp, cn, tc, hn, H);
		}
	}
	rdm_dense_fwd(HT, n, H, p + m->t[T_OW].offset, p + m->t[T_OB].offset,
		      RDM_MNIST_CLASSES, m->logits);
}

static void lstm_bwd(struct rdm_model *m, const float *p, const float *x, int n, float *grad)
{
	const int H = m->cfg.hidden_units, G4 = 4 * H, T = T_STEPS;
	const float *W = p + m->t[T_W].offset;
	const float *Wh = W + (size_t)T_IN * G4;
	const float *G = m->buf[B_G], *C = m->buf[B_C], *TC = m->buf[B_TC];
	float *HP = m->buf[B_HP], *HT = m->buf[B_HT], *dG = m->buf[B_DG];
	float *dh = m->buf[B_DH], *dc = m->buf[B_DC];
	float *gW = grad + m->t[T_W].offset, *gb = grad + m->t[T_B].offset;
	const size_t rows = (size_t)n * T;

	rdm_dense_bwd(HT, n, H, p + m->t[T_OW].offset, RDM_MNIST_CLASSES, m->dlogits,
		      grad + m->t[T_OW].offset, grad + m->t[T_OB].offset, dh, 0);
	memset(dc, 0, sizeof(float) * (size_t)n * H);
	for (int t = T - 1; t >= 0; t--) {
		for (int b = 0; b < n; b++) {
			const float *g = G + ((size_t)b * T + t) * G4;
			const float *cp = C + ((size_t)b * (T + 1) + t) * H;
			const float *tc = TC + ((size_t)b * T + t) * H;
			float *dg = dG + ((size_t)b * T + t) * G4;
			float *dhb = dh + (size_t)b * H, *dcb = dc + (size_t)b * H;
			rdm_lstm_cell_bwd(g, cp, tc, dhb, dcb, dg, H);
		}
		if (t > 0)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, H, G4, 1.0f,
				    dG + (size_t)t * G4, T * G4, Wh, G4, 0.0f, dh, H);
	}
	/* weight gradients over all (example, step) rows at once */
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T_IN, G4, (int)rows, 1.0f,
		    x, T_IN, dG, G4, 0.0f, gW, G4);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, G4, (int)rows, 1.0f,
		    HP, H, dG, G4, 0.0f, gW + (size_t)T_IN * G4, G4);
	memset(gb, 0, sizeof(float) * G4);
	for (size_t r = 0; r < rows; r++) {
		const float *d = dG + r * G4;
		for (int j = 0; j < G4; j++)
			gb[j] += d[j];
	}
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
	const size_t sz[] = {
		[B_G] = n * T * 4 * H, [B_C] = n * (T + 1) * H, [B_TC] = n * T * H,
		[B_HP] = n * T * H,    [B_HT] = n * H,          [B_DG] = n * T * 4 * H,
		[B_DH] = n * H,        [B_DC] = n * H,
	};
	for (int i = 0; i <= B_DC; i++) {
		m->buf[i] = calloc(sz[i], sizeof(float));
		if (!m->buf[i])
			return RDMAPS_E_NOMEM;
	}
	return 0;
}
