/* Stopped time is not silence.  A task stopped (Ctrl-Z of the job,
 * SIGSTOP) and continued finds every deadline it held passed, and took its
 * peers, stopped with it, for dead: a job paused longer than --timeout
 * failed at `fg`.  rdmaps_resume_watch() counts SIGCONTs; a bounded wait
 * that sees rdmaps_resumes() change restarts its deadline. */
#ifndef RDMAPS_RESUME_H
#define RDMAPS_RESUME_H

void rdmaps_resume_watch(void);   /* installs the SIGCONT handler (once) */
unsigned rdmaps_resumes(void);    /* SIGCONTs received so far */

#endif
