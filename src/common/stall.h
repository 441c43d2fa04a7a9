/* Stopped time is not silence.  A task stopped (Ctrl-Z of the job, SIGSTOP)
 * and continued finds every deadline it held passed, and would take its
 * peers, stopped with it, for dead: a job paused longer than --timeout
 * failed at `fg`.  A bounded wait loop calls rdmaps_stalled() once per
 * pass: a pass that took more than RDMAPS_STALL_S (its own sleeps are far
 * shorter) means this process did not run meanwhile, and the wait starts
 * its deadline again.  (A SIGCONT handler was tried first: the kernel may
 * run it on another thread after the waiting one has already seen the
 * deadline pass; CI of fedc346.) */
#ifndef RDMAPS_STALL_H
#define RDMAPS_STALL_H

#define RDMAPS_STALL_S 1.0

/* 1 when more than RDMAPS_STALL_S passed since *last; *last = now. */
static inline int rdmaps_stalled(double *last, double now)
{
	int s = now - *last > RDMAPS_STALL_S;
	*last = now;
	return s;
}

#endif
