/* Writes one valid seed input per fuzz target into OUTDIR/<target>/ so the
 * fuzzers start from inputs that pass the magic/CRC checks.
 * Usage: mkseeds OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/status.h"
#include "ps/checkpoint.h"
#include "rdma/desc.h"
#include "rdma/tcp_internal.h"

static void wr(const char *dir, const char *target, const char *name, const void *b, size_t n)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, target);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%s/%s", dir, target, name);
	FILE *f = fopen(p, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
		perror(p);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds OUTDIR\n");
		return 2;
	}
	const char *out = argv[1];
	char d[4096];
	snprintf(d, sizeof(d), "%s/fuzz_ckpt", out);
	mkdir(d, 0755);
	float p[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct rdmaps_ckpt_meta md = { .shard = 0, .nshards = 1, .layout_hash = 7, .global_step = 3,
				       .beta1_power = 0.9, .beta2_power = 0.999, .nfloats = 8, .state_hash = 9 };
	if (rdmaps_ckpt_save(d, &md, p, p, p, 5) != 0)
		return 1;
	md.global_step = 4;
	if (rdmaps_ckpt_save(d, &md, p, NULL, NULL, 5) != 0)
		return 1;

	/* idx mode 0: 2 images of 2x2, plain */
	uint8_t img0[1 + 16 + 8] = { 0, 0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 255 };
	wr(out, "fuzz_idx", "mode0", img0, sizeof(img0));
	/* idx mode 1: images (24 bytes) then labels (10 bytes) */
	uint8_t img1[3 + 24 + 10];
	img1[0] = 1, img1[1] = 24, img1[2] = 0;
	memcpy(img1 + 3, img0 + 1, 24);
	const uint8_t lab[] = { 0, 0, 8, 1, 0, 0, 0, 2, 3, 7 };
	memcpy(img1 + 27, lab, sizeof(lab));
	wr(out, "fuzz_idx", "mode1", img1, sizeof(img1));

	struct rt_remote r[2] = { { .id = 0, .addr = 4096, .len = 64, .rkey = 5, .rights = RT_RIGHT_READ },
				  { .id = 3, .addr = 8192, .len = 8, .rkey = 6, .rights = RT_RIGHTS_ALL } };
	uint8_t tab[RT_TABLE_MAX_LEN];
	size_t tl = 0;
	if (rt_desc_table_encode(r, 2, tab, sizeof(tab), &tl) != 0)
		return 1;
	wr(out, "fuzz_desc", "table2", tab, tl);
	uint8_t one[RT_DESC_LEN];
	if (rt_desc_encode(&r[1], one) != 0)
		return 1;
	wr(out, "fuzz_desc", "desc1", one, sizeof(one));

	struct tcp_frame f = { .op = 2, .flags = 1, .rid = 1, .seq = 9, .roff = 16, .len = 8 };
	uint8_t fb[TCP_HELLO_LEN];
	memset(fb, 0, sizeof(fb));
	tcp_frame_encode(&f, fb);
	wr(out, "fuzz_tcp_frame", "frame", fb, TCP_FRAME_LEN);
	struct tcp_hello h;
	memset(&h, 0, sizeof(h));
	h.channel = TCP_CH_OPS;
	tcp_hello_encode(&h, fb);
	wr(out, "fuzz_tcp_frame", "hello", fb, TCP_HELLO_LEN);
	return 0;
}
