/* The transport's one clock: CLOCK_MONOTONIC, for every backend's
 * deadlines and timeouts (rt_internal.h). */
#include <stdint.h>
#include <time.h>

#include "rt_internal.h"

uint64_t rt_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t rt_now_ms(void)
{
	return rt_now_us() / 1000u;
}

int rt_remaining_ms(uint64_t deadline)
{
	uint64_t now = rt_now_ms();

	if (now >= deadline)
		return 0;
	return deadline - now > 0x7fffffff ? 0x7fffffff : (int)(deadline - now);
}
