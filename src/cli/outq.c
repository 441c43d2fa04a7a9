/* rdmaps launch's stdout queue.  See outq.h. */
#include "cli/outq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	FILE *orig;           /* stdout before */
	FILE *q;              /* the stdout now: writes go to the queue */
	int fd;               /* our own non-blocking description of fd 1 */
	char *buf;
	size_t head, len, cap;
	unsigned long dropped, dropped_all; /* lines */
	int gone;             /* the reader went away (EPIPE) */
} oq = { .fd = -1 };

static unsigned long lines_in(const char *b, size_t n)
{
	unsigned long k = 0;

	for (size_t i = 0; i < n; i++)
		k += b[i] == '\n';
	return k ? k : 1;
}

static void put(const char *b, size_t n)
{
	if (oq.head + oq.len + n > oq.cap && oq.head) { /* compact */
		memmove(oq.buf, oq.buf + oq.head, oq.len);
		oq.head = 0;
	}
	memcpy(oq.buf + oq.head + oq.len, b, n);
	oq.len += n;
}

/* fopencookie's write: into the queue, whole or not at all */
static ssize_t q_write(void *c, const char *b, size_t n)
{
	(void)c;
	if (oq.gone)
		return (ssize_t)n;
	/* room for the note about dropped lines, too */
	if (oq.len + n + 200 > oq.cap) {
		unsigned long k = lines_in(b, n);

		oq.dropped += k;
		oq.dropped_all += k;
		return (ssize_t)n;
	}
	put(b, n);
	return (ssize_t)n;
}

int rdmaps_outq_open(size_t cap)
{
	struct stat st;
	cookie_io_functions_t io = { .write = q_write };
	int fd;

	if (oq.q || fstat(STDOUT_FILENO, &st) || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
		return -1;
	/* a description of our own: O_NONBLOCK on fd 1's would be the shell's
	 * terminal's too (and a pipe's other writers') */
	fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	oq.buf = malloc(cap);
	if (!oq.buf)
		goto err_fd;
	oq.q = fopencookie(NULL, "w", io);
	if (!oq.q)
		goto err_buf;
	setvbuf(oq.q, NULL, _IOLBF, 8192);
	fflush(stdout);
	oq.orig = stdout;
	oq.fd = fd;
	oq.cap = cap;
	stdout = oq.q;
	return 0;
err_buf:
	free(oq.buf);
	oq.buf = NULL;
err_fd:
	close(fd);
	return -1;
}

void rdmaps_outq_pollfd(struct pollfd *pf)
{
	if (oq.q)
		fflush(oq.q);
	pf->fd = oq.q && oq.len && !oq.gone ? oq.fd : -1;
	pf->events = POLLOUT;
	pf->revents = 0;
}

void rdmaps_outq_pump(void)
{
	if (!oq.q)
		return;
	fflush(oq.q);
	while (oq.len && !oq.gone) {
		ssize_t w = write(oq.fd, oq.buf + oq.head, oq.len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) { /* EPIPE: nobody reads any more */
				oq.gone = 1;
				oq.len = 0;
			}
			return;
		}
		oq.head += (size_t)w;
		oq.len -= (size_t)w;
	}
	oq.head = 0;
	if (oq.dropped && !oq.gone) {
		char note[200];
		int n = snprintf(note, sizeof(note),
				 "rdmaps launch: %lu line(s) of output dropped: stdout was not read for a while "
				 "(a paused terminal or pager); the job went on\n", oq.dropped);

		oq.dropped = 0;
		put(note, (size_t)n);
	}
}

unsigned long rdmaps_outq_close(void)
{
	if (!oq.q)
		return 0;
	fflush(oq.q);
	rdmaps_outq_pump();
	/* the rest, waiting for the reader: the tasks are done */
	fcntl(oq.fd, F_SETFL, fcntl(oq.fd, F_GETFL) & ~O_NONBLOCK);
	rdmaps_outq_pump();
	stdout = oq.orig;
	fclose(oq.q);
	close(oq.fd);
	free(oq.buf);
	oq.q = NULL;
	oq.fd = -1;
	oq.buf = NULL;
	return oq.dropped_all;
}
