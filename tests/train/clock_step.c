/* LD_PRELOAD test library: the wall clock steps while a job runs, as NTP
 * (chrony's makestep, ntpdate) or an administrator's `date -s` steps it.
 *
 * RDMAPS_TEST_CLOCK_STEP=PERIOD,OFFSET (seconds, OFFSET may be negative):
 * every PERIOD seconds (at least 0.001) of real time since this process
 * loaded the library, CLOCK_REALTIME (and its _COARSE twin) jumps by OFFSET
 * more.  The monotonic clocks are left alone.  A process that times its waits by the
 * wall clock takes a forward step for a deadline passed; one that times
 * them by CLOCK_MONOTONIC does not notice (tests/train/e2e.sh clock_step).
 * Without the variable, or with a malformed one, clocks are untouched and
 * the library says so once on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*gettime_fn)(clockid_t, struct timespec *);

static gettime_fn real_gettime;
static long long period_ns, offset_ns, start_ns;
static int active;

static long long mono_ns(void)
{
	struct timespec m;
	if (real_gettime(CLOCK_MONOTONIC, &m))
		return 0;
	return m.tv_sec * 1000000000LL + m.tv_nsec;
}

/* At load, before the program's threads: nothing here races. */
__attribute__((constructor)) static void setup(void)
{
	real_gettime = (gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
	const char *e = getenv("RDMAPS_TEST_CLOCK_STEP");
	char *end = NULL;
	if (e && real_gettime) {
		double p = strtod(e, &end);
		if (end != e && *end == ',') {
			const char *o = end + 1;
			double off = strtod(o, &end);
			if (end != o && *end == '\0' && p >= 0.001 && off > -1e9 && off < 1e9) {
				period_ns = (long long)(p * 1e9);
				offset_ns = (long long)(off * 1e9);
				start_ns = mono_ns();
				active = 1;
			}
		}
	}
	if (!active)
		fprintf(stderr, "clock_step: RDMAPS_TEST_CLOCK_STEP='%s' is not PERIOD,OFFSET: clocks untouched\n",
			e ? e : "");
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (!real_gettime) /* called before the constructor (another library's) */
		real_gettime = (gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
	if (!real_gettime)
		return -1;
	int rc = real_gettime(id, ts);
	if (rc || !active || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
		return rc;
	long long t = ts->tv_sec * 1000000000LL + ts->tv_nsec + (mono_ns() - start_ns) / period_ns * offset_ns;
	ts->tv_sec = (time_t)(t / 1000000000LL);
	ts->tv_nsec = (long)(t % 1000000000LL);
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000L;
		ts->tv_sec--;
	}
	return rc;
}
