/* libFuzzer: rdmaps_ckpt_parse on arbitrary bytes; on success every section
 * pointer must lie inside the input and be readable. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ps/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmaps_ckpt_meta md;
	const float *p, *m, *v;
	if (rdmaps_ckpt_parse(data, size, &md, &p, &m, &v) != 0)
		return 0;
	const float *secs[3] = { p, m, v };
	volatile uint32_t sink = 0;
	for (int i = 0; i < 3; i++) {
		if (!secs[i])
			continue;
		const uint8_t *s = (const uint8_t *)secs[i];
		if (s < data || s + md.nfloats * 4 > data + size)
			__builtin_trap();
		uint32_t w;
		memcpy(&w, s + (md.nfloats - 1) * 4, 4);   /* last float readable */
		sink ^= w;
	}
	(void)sink;
	return 0;
}
