/* kernels/blas_core.h: which OpenBLAS kernel set rdmaps runs with.  Only
 * OpenBLAS's fallback for a CPU it does not know (Prescott) is replaced,
 * by the newest set the CPU's features allow, and never when the user set
 * OPENBLAS_CORETYPE (any value, even empty).  The re-run itself is tested
 * end to end (tests/train/e2e.sh, case cli). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernels/blas_core.h"

static const unsigned ALL = RDM_CPU_AVX | RDM_CPU_AVX2_FMA | RDM_CPU_AVX512;

static void want(const char *got, const char *env, unsigned feats, const char *exp)
{
	const char *r = rdm_blas_core_for(got, env, feats);
	if (!exp ? r != NULL : (!r || strcmp(r, exp)))
		fail_msg("got=%s env=%s feats=%#x: %s, want %s", got ? got : "(null)",
			 env ? env : "(unset)", feats, r ? r : "(keep)", exp ? exp : "(keep)");
}

static void test_fallback_replaced(void **st)
{
	(void)st;
	want("Prescott", NULL, ALL, "SkylakeX");
	want("PRESCOTT", NULL, ALL, "SkylakeX");   /* OpenBLAS's names are case-insensitive */
	want("Prescott", NULL, RDM_CPU_AVX | RDM_CPU_AVX2_FMA, "Haswell");
	want("Prescott", NULL, RDM_CPU_AVX, "Sandybridge");
}

static void test_kept(void **st)
{
	(void)st;
	/* a real Prescott: no AVX */
	want("Prescott", NULL, 0, NULL);
	/* a set OpenBLAS chose for a CPU it knows: kept, even where more is there */
	want("Haswell", NULL, ALL, NULL);
	want("SkylakeX", NULL, ALL, NULL);
	want("Opteron", NULL, ALL, NULL);   /* QEMU's emulated CPU: the VM tier picks (ci/softroce/tier.sh) */
	want("Zen", NULL, RDM_CPU_AVX | RDM_CPU_AVX2_FMA, NULL);
	/* the user's choice, whatever OpenBLAS took */
	want("Prescott", "Prescott", ALL, NULL);
	want("Prescott", "Haswell", ALL, NULL);
	want("Prescott", "", ALL, NULL);
	want(NULL, NULL, ALL, NULL);
}

static void test_feats_consistent(void **st)
{
	(void)st;
	/* what this CPU reports: a CPU with AVX2 and FMA has AVX, one with
	 * AVX-512 (F, BW, DQ, VL) has AVX2 and FMA, on every x86-64 CPU made */
	unsigned f = rdm_cpu_feats();
	if ((f & RDM_CPU_AVX512) && !(f & RDM_CPU_AVX2_FMA))
		fail_msg("AVX-512 without AVX2/FMA: %#x", f);
	if ((f & RDM_CPU_AVX2_FMA) && !(f & RDM_CPU_AVX))
		fail_msg("AVX2/FMA without AVX: %#x", f);
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
	/* built with -march=x86-64-v3 and running: the CPU has them */
	assert_true(f & RDM_CPU_AVX2_FMA);
#endif
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_fallback_replaced),
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_feats_consistent),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
