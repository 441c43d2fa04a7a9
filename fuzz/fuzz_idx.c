/* libFuzzer: rdm_idx_load (src/kernels/idx.c) on fuzzed files, kept in memfds
 * (/proc/self/fd/N) so no disk I/O per run.  data[0] bit 0 picks the mode:
 *   0: data[1..] is the images file, labels are a fixed valid 2-label file;
 *   1: data[1..2] (LE u16) is the images length, the rest split as images
 *      then labels. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/data.h"

static int fd_img = -1, fd_lab = -1;
static char p_img[64], p_lab[64];

static void put(int fd, const uint8_t *b, size_t n)
{
	if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, b, n, 0) != (ssize_t)n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t labels2[] = { 0, 0, 8, 1, 0, 0, 0, 2, 3, 7 };
	if (fd_img < 0) {
		fd_img = memfd_create("fuzz_idx_img", 0);
		fd_lab = memfd_create("fuzz_idx_lab", 0);
		if (fd_img < 0 || fd_lab < 0)
			abort();
		snprintf(p_img, sizeof(p_img), "/proc/self/fd/%d", fd_img);
		snprintf(p_lab, sizeof(p_lab), "/proc/self/fd/%d", fd_lab);
	}
	if (size < 1)
		return 0;
	if ((data[0] & 1) == 0) {
		put(fd_img, data + 1, size - 1);
		put(fd_lab, labels2, sizeof(labels2));
	} else {
		if (size < 3)
			return 0;
		size_t ni = (size_t)data[1] | ((size_t)data[2] << 8);
		size_t rest = size - 3;
		if (ni > rest)
			ni = rest;
		put(fd_img, data + 3, ni);
		put(fd_lab, data + 3 + ni, rest - ni);
	}
	struct rdm_images d;
	char err[256];
	if (rdm_idx_load(p_img, p_lab, &d, err, sizeof(err)) == 0) {
		size_t n = (size_t)d.n * (size_t)d.rows * (size_t)d.cols;
		volatile unsigned s = 0;
		if (n)
			s += d.px[n - 1]; /* the last pixel is inside the buffer */
		if (d.n > 0 && d.y[d.n - 1] > 9)
			__builtin_trap();
		(void)s;
		rdm_images_free(&d);
	}
	return 0;
}
