/* libFuzzer: rt_desc_decode and rt_desc_table_decode (src/rdma/desc.h).
 * A decoded table must re-encode to exactly the input bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rdma/desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_remote r;
	if (size >= RT_DESC_LEN && rt_desc_decode(data, &r) == 0) {
		uint8_t out[RT_DESC_LEN];
		if (rt_desc_encode(&r, out) != 0 || memcmp(out, data, RT_DESC_LEN) != 0)
			__builtin_trap();
	}
	static struct rt_remote tab[RT_MAX_GRANTS];
	static uint8_t re[RT_TABLE_MAX_LEN];
	int n = 0;
	if (rt_desc_table_decode(data, size, tab, RT_MAX_GRANTS, &n) == 0) {
		size_t len = 0;
		if (n < 0 || n > RT_MAX_GRANTS ||
		    rt_desc_table_encode(tab, n, re, sizeof(re), &len) != 0 || len != size ||
		    memcmp(re, data, size) != 0)
			__builtin_trap();
	}
	return 0;
}
