/* rdmaps: the live progress line shown on a terminal.
 *
 * When stdout is a terminal, the per-step lines of the reference script
 * ("T: Worker N: training step L done (global step: G)") fold into one line
 * that is redrawn in place:
 *
 *   global step 120/200 | 815.3 steps/s | loss 31.2 | ETA 0.1 s
 *
 * Used by a worker run directly on a terminal and by `rdmaps launch` when its
 * own stdout is a terminal (the workers then send it machine lines, see
 * RDMAPS_PROGRESS_ENV).  Not thread-safe; one per output stream. */
#ifndef RDMAPS_PROGRESS_H
#define RDMAPS_PROGRESS_H

#include <stdio.h>

/* Set by `rdmaps launch` in its children's environment when the launcher's
 * stdout is a terminal: workers then also print RDMAPS_PROGRESS_TAG lines. */
#define RDMAPS_PROGRESS_ENV "RDMAPS_PROGRESS_LINES"
/* "@progress <global step> <loss>": parsed and swallowed by the launcher */
#define RDMAPS_PROGRESS_TAG "@progress "

struct rdmaps_progress {
	FILE *out;
	long target;          /* --train_steps */
	double t_first;       /* time of the first update */
	long g_first;         /* global step then */
	double t_draw;        /* last redraw */
	long g;               /* newest global step */
	double loss;
	double t_last;        /* time of the newest update */
	int shown;            /* a line is on screen (not yet ended) */
	int dirty;            /* updated since the last redraw */
};

/* Start a progress line on out (nothing is drawn yet). */
void rdmaps_progress_init(struct rdmaps_progress *p, FILE *out, long target_steps);
/* Record global step g and the last loss at time now (seconds); redraws at
 * most 10 times a second, and always when g reaches the target. */
void rdmaps_progress_update(struct rdmaps_progress *p, long g, double loss, double now);
/* Erase the line before another line is printed (the next update redraws). */
void rdmaps_progress_clear(struct rdmaps_progress *p);
/* Leave the last state on screen and end the line. */
void rdmaps_progress_end(struct rdmaps_progress *p);
/* Format the line's text into buf (no control characters); for tests. */
void rdmaps_progress_format(const struct rdmaps_progress *p, double now, char *buf, size_t len);

#endif
