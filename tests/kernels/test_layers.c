/* Finite-difference gradient checks for each layer: dense, relu,
 * softmax-CE (sum and mean, including the clipped case); the LSTM cell's
 * forward against a double-precision reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "fd.h"

enum { N = 4, IN = 5, OUT = 3 };

static void fill(struct rdm_rng *r, float *a, size_t n, float lo, float hi)
{
	rdm_init_uniform(r, a, n, lo, hi);
}

/* dense: L = sum r .* (x W + b) */
struct dense_ctx { float x[N * IN], W[IN * OUT], b[OUT], r[N * OUT], y[N * OUT]; };

static double dense_loss(void *vc)
{
	struct dense_ctx *c = vc;
	rdm_dense_fwd(c->x, N, IN, c->W, c->b, OUT, c->y);
	double s = 0;
	for (int i = 0; i < N * OUT; i++)
		s += (double)c->r[i] * c->y[i];
	return s;
}

static void test_dense(void **st)
{
	(void)st;
	struct rdm_rng rng;
	rdm_rng_seed(&rng, 7);
	struct dense_ctx c;
	fill(&rng, c.x, N * IN, -1, 1);
	fill(&rng, c.W, IN * OUT, -1, 1);
	fill(&rng, c.b, OUT, -1, 1);
	fill(&rng, c.r, N * OUT, -1, 1);
	float dW[IN * OUT], db[OUT], dx[N * IN];
	rdm_dense_bwd(c.x, N, IN, c.W, OUT, c.r, dW, db, dx, 0);
	int bad = fd_check("dense dW", dense_loss, &c, c.W, dW, IN * OUT, 1, 1e-2, 1e-4, 1e-3);
	bad += fd_check("dense db", dense_loss, &c, c.b, db, OUT, 1, 1e-2, 1e-4, 1e-3);
	bad += fd_check("dense dx", dense_loss, &c, c.x, dx, N * IN, 1, 1e-2, 1e-4, 1e-3);
	assert_int_equal(bad, 0);
	/* accumulate mode adds */
	float dW2[IN * OUT], db2[OUT];
	memcpy(dW2, dW, sizeof(dW));
	memcpy(db2, db, sizeof(db));
	rdm_dense_bwd(c.x, N, IN, c.W, OUT, c.r, dW2, db2, NULL, 1);
	for (int i = 0; i < IN * OUT; i++)
		assert_float_equal(dW2[i], 2 * dW[i], 1e-5);
	for (int i = 0; i < OUT; i++)
		assert_float_equal(db2[i], 2 * db[i], 1e-5);
}

/* relu: L = sum r .* relu(x), x kept away from the kink */
struct relu_ctx { float x[20], r[20], y[20]; };

static double relu_loss(void *vc)
{
	struct relu_ctx *c = vc;
	memcpy(c->y, c->x, sizeof(c->x));
	rdm_relu_fwd(c->y, 20);
	double s = 0;
	for (int i = 0; i < 20; i++)
		s += (double)c->r[i] * c->y[i];
	return s;
}

static void test_relu(void **st)
{
	(void)st;
	struct rdm_rng rng;
	rdm_rng_seed(&rng, 8);
	struct relu_ctx c;
	for (int i = 0; i < 20; i++) {
		float u = (float)rdm_rng_uniform(&rng);
		c.x[i] = (i & 1 ? 1 : -1) * (0.1f + u);
	}
	fill(&rng, c.r, 20, -1, 1);
	float dx[20];
	relu_loss(&c);
	memcpy(dx, c.r, sizeof(dx));
	rdm_relu_bwd(c.y, dx, 20);
	for (int i = 0; i < 20; i++)
		assert_true(c.x[i] > 0 ? dx[i] == c.r[i] : dx[i] == 0.0f);
	assert_int_equal(fd_check("relu dx", relu_loss, &c, c.x, dx, 20, 1, 1e-2, 1e-4, 1e-3), 0);
}

/* softmax-CE */
struct ce_ctx { float z[N * 10]; uint8_t y[N]; int mean; };

static double ce_loss(void *vc)
{
	struct ce_ctx *c = vc;
	double l;
	rdm_softmax_ce(c->z, N, 10, c->y, c->mean, NULL, &l, NULL);
	return l;
}

static void ce_check(int mean)
{
	struct rdm_rng rng;
	rdm_rng_seed(&rng, 9 + mean);
	struct ce_ctx c;
	c.mean = mean;
	fill(&rng, c.z, N * 10, -3, 3);
	for (int i = 0; i < N; i++)
		c.y[i] = (uint8_t)(rdm_rng_u64(&rng) % 10);
	float dz[N * 10];
	double l;
	int hits = 0;
	rdm_softmax_ce(c.z, N, 10, c.y, mean, dz, &l, &hits);
	/* direct double reference of the loss */
	double ref = 0;
	for (int b = 0; b < N; b++) {
		double mx = -1e30, s = 0;
		for (int j = 0; j < 10; j++)
			mx = fmax(mx, c.z[b * 10 + j]);
		for (int j = 0; j < 10; j++)
			s += exp(c.z[b * 10 + j] - mx);
		ref -= (c.z[b * 10 + c.y[b]] - mx) - log(s);
	}
	if (mean)
		ref /= N;
	assert_float_equal(l, ref, 1e-5 * fabs(ref));
	assert_int_equal(fd_check(mean ? "ce-mean dz" : "ce-sum dz", ce_loss, &c, c.z, dz,
				  N * 10, 1, 1e-2, 1e-4, 2e-3), 0);
}

static void test_ce_sum(void **st) { (void)st; ce_check(0); }
static void test_ce_mean(void **st) { (void)st; ce_check(1); }

static void test_ce_clipped(void **st)
{
	(void)st;
	/* row 0: true class has p ~ e^-50 < 1e-10 -> loss -log(1e-10), zero grad */
	float z[2 * 10] = { 0 };
	z[3] = 50.0f;
	z[10 + 2] = 1.0f;
	uint8_t y[2] = { 0, 2 };
	float dz[20];
	double l;
	int hits = 0;
	rdm_softmax_ce(z, 2, 10, y, 0, dz, &l, &hits);
	for (int j = 0; j < 10; j++)
		assert_true(dz[j] == 0.0f);
	double p2 = exp(1.0) / (exp(1.0) + 9.0);
	assert_float_equal(l, -log(1e-10) - log(p2), 1e-5);
	assert_float_equal(dz[10 + 2], p2 - 1.0, 1e-6);
	assert_int_equal(hits, 1);
}

static void test_init_truncnormal(void **st)
{
	(void)st;
	struct rdm_rng r;
	rdm_rng_seed(&r, 3);
	enum { M = 100000 };
	static float w[M];
	rdm_init_truncnormal(&r, w, M, 0.5f);
	double s = 0, s2 = 0;
	for (int i = 0; i < M; i++) {
		assert_true(fabsf(w[i]) <= 1.0f);
		s += w[i];
		s2 += (double)w[i] * w[i];
	}
	/* std of N(0,1) truncated at +-2 is 0.8796 */
	assert_float_equal(s / M, 0.0, 0.01);
	assert_float_equal(sqrt(s2 / M), 0.5 * 0.8796, 0.01);
}

/* LSTM cell forward against a double-precision reference: the cell's
 * sigmoid and its expf-based tanh (1 - 2/(exp(2x)+1), clamped) must match
 * libm's double functions to 1e-6 absolute, including saturated inputs, on
 * H = 11 (vector body + scalar tail) over 3 rows with a row stride for h. */
static double dsig(double x) { return 1.0 / (1.0 + exp(-x)); }

static void test_lstm_cell_fwd_reference(void **st)
{
	(void)st;
	enum { R = 3, H = 11, G4 = 4 * H, LDH = 16 };
	struct rdm_rng rng;
	rdm_rng_seed(&rng, 17);
	float G[R * G4], G0[R * G4], bias[G4], cp[R * H], cn[R * H], tc[R * H], hn[R * LDH];
	fill(&rng, G0, R * G4, -6.0f, 6.0f);
	fill(&rng, bias, G4, -1.0f, 1.0f);
	fill(&rng, cp, R * H, -3.0f, 3.0f);
	/* saturated pre-activations and cell states */
	G0[0] = 100.0f;
	G0[1] = -100.0f;
	G0[H] = 60.0f;
	G0[H + 1] = -60.0f;
	G0[2 * H] = 1e-4f;
	G0[3 * H + 2] = -95.0f;
	cp[3] = 45.0f;
	cp[4] = -45.0f;
	memcpy(G, G0, sizeof(G));
	rdm_lstm_cell_fwd(R, H, G, bias, cp, cn, tc, hn, LDH);
	double worst = 0.0;
	for (int b = 0; b < R; b++)
		for (int j = 0; j < H; j++) {
			const float *z = G0 + b * G4;
			double i = dsig((double)z[j] + bias[j]);
			double u = tanh((double)z[H + j] + bias[H + j]);
			double f = dsig((double)z[2 * H + j] + bias[2 * H + j]);
			double o = dsig((double)z[3 * H + j] + bias[3 * H + j]);
			double c = f * cp[b * H + j] + i * u;
			double got[6] = { G[b * G4 + j], G[b * G4 + H + j], G[b * G4 + 2 * H + j],
					  G[b * G4 + 3 * H + j], cn[b * H + j], hn[b * LDH + j] };
			double want[6] = { i, u, f, o, c, o * tanh(c) };
			for (int k = 0; k < 6; k++) {
				double e = fabs(got[k] - want[k]);
				worst = e > worst ? e : worst;
				if (e > 1e-6 * (k == 4 ? 1.0 + fabs(want[k]) : 1.0))
					fail_msg("row %d unit %d value %d: got %.9g want %.9g", b, j, k,
						 got[k], want[k]);
			}
			assert_true(fabs(tc[b * H + j] - tanh(c)) <= 1e-6);
		}
	print_message("lstm cell fwd: worst abs error %.3g\n", worst);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_relu),
		cmocka_unit_test(test_ce_sum),
		cmocka_unit_test(test_ce_mean),
		cmocka_unit_test(test_ce_clipped),
		cmocka_unit_test(test_init_truncnormal),
		cmocka_unit_test(test_lstm_cell_fwd_reference),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
