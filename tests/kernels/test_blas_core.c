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
#include <stdio.h>
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

/* does the flags line of /proc/cpuinfo hold the word w? */
static int has_flag(const char *flags, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = flags; (p = strstr(p, w)); p += n)
		if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return 1;
	return 0;
}

static void test_feats_match_cpuinfo(void **st)
{
	(void)st;
#if defined(__x86_64__) && defined(__GNUC__)
	/* what libgcc reports, against what the kernel reports */
	static char line[1 << 14];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "flags", 5)) {
				found = 1;
				break;
			}
		fclose(f);
	}
	if (!found)
		skip();
	unsigned want = 0;
	if (has_flag(line, "avx"))
		want |= RDM_CPU_AVX;
	if (has_flag(line, "avx2") && has_flag(line, "fma"))
		want |= RDM_CPU_AVX2_FMA;
	if (has_flag(line, "avx512f") && has_flag(line, "avx512bw") && has_flag(line, "avx512dq") &&
	    has_flag(line, "avx512vl"))
		want |= RDM_CPU_AVX512;
	unsigned got = rdm_cpu_feats();
	if (got != want)
		fail_msg("rdm_cpu_feats %#x, /proc/cpuinfo's flags say %#x", got, want);
	assert_false(has_flag("avx2 fma", "avx")); /* a word, not a prefix */
#else
	assert_int_equal(rdm_cpu_feats(), 0);
#endif
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_fallback_replaced),
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_feats_match_cpuinfo),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
