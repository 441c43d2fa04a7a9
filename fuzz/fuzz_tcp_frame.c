/* libFuzzer: tcp_frame_decode and tcp_hello_decode (src/rdma/tcp_internal.h).
 * A decoded frame must re-encode to the input bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rdma/tcp_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_frame f;
	if (size >= TCP_FRAME_LEN && tcp_frame_decode(data, &f) == 0) {
		uint8_t out[TCP_FRAME_LEN];
		tcp_frame_encode(&f, out);
		if (memcmp(out, data, TCP_FRAME_LEN) != 0)
			__builtin_trap();
	}
	struct tcp_hello h;
	if (size >= TCP_HELLO_LEN)
		(void)tcp_hello_decode(data, &h);
	return 0;
}
