/* rdmaps launch's own stdout, as a queue that never blocks the launcher.
 *
 * The launcher reads its tasks' output pipes and prints their lines.  If it
 * blocked on its own stdout (a pager that stopped reading, a terminal
 * paused with Ctrl-S, `| (sleep 60; cat)`), it stopped reading the tasks'
 * pipes, their writes blocked in turn, and a job could fail on its own
 * timeouts (a 25 s pause at --timeout=10 failed the job: the ps gave up).
 * Now stdout (a pipe, FIFO or terminal) is written through a description
 * of its own in non-blocking mode, from a queue that the launcher's loop
 * pumps; what does not fit in the queue is dropped by whole writes, counted,
 * and said once the output flows again.  A reader that is gone (EPIPE: `|
 * head`) ends the output, not the job.  A regular file or a socket is
 * written as before (a file never blocks; a socket is rare). */
#ifndef RDMAPS_CLI_OUTQ_H
#define RDMAPS_CLI_OUTQ_H

#include <poll.h>
#include <stddef.h>

/* Route stdout through the queue (at most cap bytes held).  0, or -1 with
 * stdout left as it was (not a pipe or terminal, or no memory). */
int rdmaps_outq_open(size_t cap);
/* The pollfd to add to the caller's poll(): POLLOUT on stdout while bytes
 * wait; fd -1 otherwise (poll ignores it). */
void rdmaps_outq_pollfd(struct pollfd *pf);
/* Write what stdout takes now, without blocking. */
void rdmaps_outq_pump(void);
/* Write the rest, blocking (the tasks are done), and put stdout back.
 * Returns how many lines were dropped in all. */
unsigned long rdmaps_outq_close(void);

#endif
