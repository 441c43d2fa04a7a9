/* RDM_CLONES: build a function twice, an x86-64-v4 (AVX-512) clone and the
 * default (the project's -march), the CPU picking one at load time (GCC
 * target_clones through an ifunc).  Used where a loop gains from AVX-512:
 * the Adam kernels (optim.c), the LSTM cell math (lstm_cell.c), and
 * ps_apply_bench's diagnostic of the Adam loop.  A plain function with
 * clang, off x86-64, and with -DRDMAPS_NO_CLONES (the TSan build: ifunc
 * resolvers crash under TSan). */
#ifndef RDMAPS_KERNELS_CLONES_H
#define RDMAPS_KERNELS_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(RDMAPS_NO_CLONES)
#define RDM_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define RDM_CLONES
#endif

#endif
