/* SIGCONT counter: see resume.h. */
#include <signal.h>
#include <string.h>

#include "common/resume.h"

static volatile sig_atomic_t resumes;

static void on_cont(int sig)
{
	(void)sig;
	resumes++;
}

void rdmaps_resume_watch(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_cont;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCONT, &sa, NULL);
}

unsigned rdmaps_resumes(void)
{
	return (unsigned)resumes;
}
