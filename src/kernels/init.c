/* Seedable initializers: xoshiro256** + TF-style truncated normal. */
#include <math.h>

#include "kernels/kernels.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rdm_rng_seed(struct rdm_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rdm_rng_u64(struct rdm_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double rdm_rng_uniform(struct rdm_rng *r)
{
	return (double)(rdm_rng_u64(r) >> 11) * 0x1.0p-53;
}

double rdm_rng_normal(struct rdm_rng *r)
{
	double u1, u2;
	do
		u1 = rdm_rng_uniform(r);
	while (u1 <= 0.0);
	u2 = rdm_rng_uniform(r);
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void rdm_init_truncnormal(struct rdm_rng *r, float *w, size_t n, float stddev)
{
	for (size_t i = 0; i < n; i++) {
		double z;
		do
			z = rdm_rng_normal(r);
		while (z < -2.0 || z > 2.0);
		w[i] = (float)(z * stddev);
	}
}

void rdm_init_uniform(struct rdm_rng *r, float *w, size_t n, float lo, float hi)
{
	for (size_t i = 0; i < n; i++)
		w[i] = (float)(lo + (hi - lo) * rdm_rng_uniform(r));
}
