/* OpenBLAS's kernel set on a CPU that OpenBLAS does not know: see
 * blas_core.h and docs/kernels.md "OpenBLAS on a CPU it does not know". */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/exec_self.h"
#include "kernels/blas_core.h"

const char *rdm_blas_core_for(const char *got, const char *env, unsigned feats)
{
	if (env || !got || strcasecmp(got, "Prescott"))
		return NULL;
	/* a real Prescott (a 2004 Pentium 4) has no AVX: with AVX the CPU is
	 * one that this OpenBLAS does not know */
	if (feats & RDM_CPU_AVX512)
		return "SkylakeX";
	if (feats & RDM_CPU_AVX2_FMA)
		return "Haswell";
	if (feats & RDM_CPU_AVX)
		return "Sandybridge";
	return NULL;
}

unsigned rdm_cpu_feats(void)
{
	unsigned f = 0;
#if defined(__x86_64__) && defined(__GNUC__)
	/* libgcc's checks include the OS's support (XCR0) for the registers */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx"))
		f |= RDM_CPU_AVX;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		f |= RDM_CPU_AVX2_FMA;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		f |= RDM_CPU_AVX512;
#endif
	return f;
}

void rdm_blas_fix_core(const char *who, char **argv)
{
	const char *got = openblas_get_corename();
	const char *want = rdm_blas_core_for(got, getenv("OPENBLAS_CORETYPE"), rdm_cpu_feats());

	if (!want)
		return;
	fprintf(stderr,
		"%s: OpenBLAS does not know this CPU and took its generic %s kernels; running with "
		"OPENBLAS_CORETYPE=%s, the newest set the CPU supports (set OPENBLAS_CORETYPE to choose)\n",
		who, got, want);
	fflush(NULL);
	if (setenv("OPENBLAS_CORETYPE", want, 1)) {
		fprintf(stderr, "%s: setenv OPENBLAS_CORETYPE: %s; going on with %s\n", who,
			strerror(errno), got);
		return;
	}
	rdmaps_exec_self(argv);
	int e = errno;
	/* going on with OpenBLAS's set: so must the processes this one
	 * starts, or a reference and the tasks it is compared with differ */
	unsetenv("OPENBLAS_CORETYPE");
	fprintf(stderr, "%s: could not run itself again (%s); going on with %s\n", who, strerror(e),
		got);
}
