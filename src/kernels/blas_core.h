/* OpenBLAS's kernel set on a CPU that OpenBLAS does not know.
 *
 * OpenBLAS (DYNAMIC_ARCH, as Debian builds it) picks its kernels once, when
 * the library loads, from the CPU's family and model.  A model newer than the
 * library (Debian 12's 0.3.21 on a 5th-generation Xeon, family 6 model 0xcf)
 * gets its generic fallback, Prescott (SSE3), whatever the CPU supports:
 * measured on such a Xeon, the models' sgemm shapes ran 5.7x slower than with
 * the SkylakeX kernels (docs/kernels.md).  OpenBLAS reads OPENBLAS_CORETYPE
 * only at load, so the fix is to set it and run the program again. */
#ifndef RDMAPS_KERNELS_BLAS_CORE_H
#define RDMAPS_KERNELS_BLAS_CORE_H

/* CPU features that decide the kernel set (bit mask) */
enum {
	RDM_CPU_AVX = 1u << 0,
	RDM_CPU_AVX2_FMA = 1u << 1,   /* both AVX2 and FMA3 */
	RDM_CPU_AVX512 = 1u << 2,     /* AVX-512 F, BW, DQ and VL, as OpenBLAS's SkylakeX needs */
};

/* The kernel set to run instead of OpenBLAS's own choice `got`, or NULL to
 * keep it: only when OPENBLAS_CORETYPE is not set (`env` NULL; any value,
 * even empty, is the user's choice) and `got` is OpenBLAS's fallback for an
 * unknown CPU (Prescott) while `feats` (RDM_CPU_*) allow a better set.
 * Pure, for the tests. */
const char *rdm_blas_core_for(const char *got, const char *env, unsigned feats);

/* This CPU's RDM_CPU_* features (0 off x86-64). */
unsigned rdm_cpu_feats(void);

/* At the start of main(), before the program starts any thread of its own:
 * where rdm_blas_core_for() names a better set for this process, say so on
 * stderr (`who`: the program's name), set OPENBLAS_CORETYPE and execute the
 * program (its path from /proc/self/exe) again with the same argv, so that
 * OpenBLAS loads anew with that set; processes it starts inherit the
 * variable.  Returns only when nothing was to be done or the exec failed
 * (said on stderr; the variable is then unset again, so that this process
 * and those it starts all keep OpenBLAS's set). */
void rdm_blas_fix_core(const char *who, char **argv);

#endif
