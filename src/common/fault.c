/* rdmaps fault injection: "make the Nth fallible call fail" (librpma
 * src/debug.h style), without touching the call sites.
 *
 * Built only with -DRDMAPS_FAULT_INJECTION=ON, into the rdmaps executable,
 * which is then linked with -Wl,--wrap=<f> for every function listed below:
 * each call to <f> from rdmaps' own code (not from libc or shared libraries)
 * goes to __wrap_<f>, which counts it and either fails it the way <f> fails
 * (NULL / -1 with errno) or calls the real <f>.
 *
 * Environment:
 *   RDMAPS_FAULT_N=n      fail the n-th wrapped call of this process (1-based);
 *                         unset or 0: fail nothing, only count.
 *   RDMAPS_FAULT_ONLY=f   count (and fail) only calls to the function f, e.g.
 *                         pthread_create: reproduces one failure of a sweep
 *                         whose call order varies between runs.
 *   RDMAPS_FAULT_REPORT=1 at exit, print "rdmaps-fault: calls #<total>" on stderr
 *                         (scripts/fault-sweep.sh uses it to size the sweep).
 * When the n-th call fails it prints, on stderr:
 *   rdmaps-fault: failing call #n: <function>
 * The counter is process-wide and atomic (threads share it). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned long fault_n;      /* 0 = never */
static unsigned long fault_calls;  /* atomic */
static int fault_report;
static const char *fault_only;     /* NULL = every wrapped function */

ssize_t __real_write(int fd, const void *b, size_t n);

static void fault_msg(const char *what, unsigned long n)
{
	char buf[128];
	int len = snprintf(buf, sizeof(buf), "rdmaps-fault: %s #%lu\n", what, n);
	if (len > 0)
		(void)!__real_write(2, buf, (size_t)len); /* not counted */
}

__attribute__((destructor)) static void fault_fini(void)
{
	if (fault_report)
		fault_msg("calls", __atomic_load_n(&fault_calls, __ATOMIC_RELAXED));
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *s = getenv("RDMAPS_FAULT_N");
	fault_n = s ? strtoul(s, NULL, 10) : 0;
	s = getenv("RDMAPS_FAULT_REPORT");
	fault_report = s && *s && strcmp(s, "0");
	s = getenv("RDMAPS_FAULT_ONLY");
	fault_only = s && *s ? s : NULL;
}

/* 1 if this call is the one to fail (and says so on stderr). */
static int fault_hit(const char *fn)
{
	if (fault_only && strcmp(fault_only, fn))
		return 0;
	unsigned long k = __atomic_add_fetch(&fault_calls, 1, __ATOMIC_RELAXED);
	if (!fault_n || k != fault_n)
		return 0;
	char what[96];
	snprintf(what, sizeof(what), "failing call (%s)", fn);
	fault_msg(what, k);
	return 1;
}

/* allocations */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off);

void *__wrap_malloc(size_t n)
{
	if (fault_hit("malloc")) { errno = ENOMEM; return NULL; }
	return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n)
{
	if (fault_hit("calloc")) { errno = ENOMEM; return NULL; }
	return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n)
{
	if (fault_hit("realloc")) { errno = ENOMEM; return NULL; }
	return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t a, size_t n)
{
	if (fault_hit("aligned_alloc")) { errno = ENOMEM; return NULL; }
	return __real_aligned_alloc(a, n);
}
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	if (fault_hit("posix_memalign")) return ENOMEM;
	return __real_posix_memalign(p, a, n);
}
char *__wrap_strdup(const char *s)
{
	if (fault_hit("strdup")) { errno = ENOMEM; return NULL; }
	return __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n)
{
	if (fault_hit("strndup")) { errno = ENOMEM; return NULL; }
	return __real_strndup(s, n);
}
void *__wrap_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off)
{
	if (fault_hit("mmap")) { errno = ENOMEM; return MAP_FAILED; }
	return __real_mmap(a, n, prot, fl, fd, off);
}

/* sockets, threads */
int __real_socket(int d, int t, int p);
int __real_bind(int fd, const struct sockaddr *a, socklen_t l);
int __real_listen(int fd, int b);
int __real_connect(int fd, const struct sockaddr *a, socklen_t l);
int __real_accept4(int fd, struct sockaddr *a, socklen_t *l, int fl);
int __real_epoll_create1(int fl);
int __real_epoll_ctl(int e, int op, int fd, struct epoll_event *ev);
int __real_getaddrinfo(const char *n, const char *s, const struct addrinfo *h, struct addrinfo **r);
int __real_setsockopt(int fd, int lvl, int opt, const void *v, socklen_t l);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg);

int __wrap_socket(int d, int t, int p)
{
	if (fault_hit("socket")) { errno = EMFILE; return -1; }
	return __real_socket(d, t, p);
}
int __wrap_bind(int fd, const struct sockaddr *a, socklen_t l)
{
	if (fault_hit("bind")) { errno = EADDRINUSE; return -1; }
	return __real_bind(fd, a, l);
}
int __wrap_listen(int fd, int b)
{
	if (fault_hit("listen")) { errno = EADDRINUSE; return -1; }
	return __real_listen(fd, b);
}
int __wrap_connect(int fd, const struct sockaddr *a, socklen_t l)
{
	if (fault_hit("connect")) { errno = ENETUNREACH; return -1; }
	return __real_connect(fd, a, l);
}
int __wrap_accept4(int fd, struct sockaddr *a, socklen_t *l, int fl)
{
	if (fault_hit("accept4")) { errno = EMFILE; return -1; }
	return __real_accept4(fd, a, l, fl);
}
int __wrap_epoll_create1(int fl)
{
	if (fault_hit("epoll_create1")) { errno = EMFILE; return -1; }
	return __real_epoll_create1(fl);
}
int __wrap_epoll_ctl(int e, int op, int fd, struct epoll_event *ev)
{
	if (fault_hit("epoll_ctl")) { errno = ENOMEM; return -1; }
	return __real_epoll_ctl(e, op, fd, ev);
}
int __wrap_getaddrinfo(const char *n, const char *s, const struct addrinfo *h, struct addrinfo **r)
{
	if (fault_hit("getaddrinfo")) return EAI_MEMORY;
	return __real_getaddrinfo(n, s, h, r);
}
int __wrap_setsockopt(int fd, int lvl, int opt, const void *v, socklen_t l)
{
	if (fault_hit("setsockopt")) { errno = ENOMEM; return -1; }
	return __real_setsockopt(fd, lvl, opt, v, l);
}
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg)
{
	if (fault_hit("pthread_create")) return EAGAIN;
	return __real_pthread_create(t, a, f, arg);
}

/* file I/O (data files, checkpoints, metrics) */
FILE *__real_fopen(const char *p, const char *m);
int __real_open(const char *p, int fl, ...);
ssize_t __real_write(int fd, const void *b, size_t n);
int __real_fsync(int fd);
int __real_rename(const char *a, const char *b);
size_t __real_fread(void *b, size_t k, size_t n, FILE *f);
size_t __real_fwrite(const void *b, size_t k, size_t n, FILE *f);

FILE *__wrap_fopen(const char *p, const char *m)
{
	if (fault_hit("fopen")) { errno = EACCES; return NULL; }
	return __real_fopen(p, m);
}
int __wrap_open(const char *p, int fl, ...)
{
	int mode = 0;
	if ((fl & O_CREAT) || (fl & O_TMPFILE) == O_TMPFILE) {
		va_list ap;
		va_start(ap, fl);
		mode = va_arg(ap, int);
		va_end(ap);
	}
	if (fault_hit("open")) { errno = EACCES; return -1; }
	return __real_open(p, fl, mode);
}
ssize_t __wrap_write(int fd, const void *b, size_t n)
{
	if (fault_hit("write")) { errno = EIO; return -1; }
	return __real_write(fd, b, n);
}
int __wrap_fsync(int fd)
{
	if (fault_hit("fsync")) { errno = EIO; return -1; }
	return __real_fsync(fd);
}
int __wrap_rename(const char *a, const char *b)
{
	if (fault_hit("rename")) { errno = EIO; return -1; }
	return __real_rename(a, b);
}
size_t __wrap_fread(void *b, size_t k, size_t n, FILE *f)
{
	if (fault_hit("fread")) { errno = EIO; return 0; }
	return __real_fread(b, k, n, f);
}
size_t __wrap_fwrite(const void *b, size_t k, size_t n, FILE *f)
{
	if (fault_hit("fwrite")) { errno = EIO; return 0; }
	return __real_fwrite(b, k, n, f);
}
