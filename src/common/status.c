#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char log_tag[32]; /* empty: a process that named no task */
static enum rdmaps_log_level log_level = RDMAPS_LOG_INFO;

const char *rdmaps_strerror(int s)
{
	switch (s) {
	case RDMAPS_OK: return "success";
	case RDMAPS_E_INVAL: return "invalid argument or input";
	case RDMAPS_E_NOMEM: return "out of memory or registration failed";
	case RDMAPS_E_NODEV: return "no active RDMA device for this address";
	case RDMAPS_E_UNREACHABLE: return "address unreachable";
	case RDMAPS_E_REFUSED: return "connection refused";
	case RDMAPS_E_TIMEOUT: return "timed out";
	case RDMAPS_E_REMOTE_ACCESS: return "remote access error (bounds or rights)";
	case RDMAPS_E_PEER_GONE: return "peer gone";
	case RDMAPS_E_PROTO: return "protocol error (malformed message)";
	case RDMAPS_E_IO: return "I/O error";
	case RDMAPS_E_AUTH: return "authentication refused";
	case RDMAPS_E_AGAIN: return "resource temporarily unavailable";
	case RDMAPS_E_NOSUPPORT: return "not supported";
	case RDMAPS_E_CORRUPT: return "corrupt or mismatched data";
	case RDMAPS_E_STATE: return "wrong state";
	case RDMAPS_E_IN_USE: return "task index already in use by a live peer";
	case RDMAPS_E_MISMATCH: return "the peer runs another job configuration";
	case RDMAPS_E_NONAME: return "host name does not resolve";
	case RDMAPS_E_ADDR_IN_USE: return "address already in use (another process listens on this host:port?)";
	default: return "unknown error";
	}
}

void rdmaps_log_set_tag(const char *tag)
{
	snprintf(log_tag, sizeof(log_tag), "%s", tag ? tag : "");
}

void rdmaps_log_set_level(enum rdmaps_log_level lvl) { log_level = lvl; }

void rdmaps_log(enum rdmaps_log_level lvl, const char *fmt, ...)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	char buf[1024];
	va_list ap;

	if (lvl > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_tag[0])
		fprintf(stderr, "rdmaps[%s] %s: %s\n", log_tag, names[lvl], buf);
	else
		fprintf(stderr, "rdmaps: %s: %s\n", names[lvl], buf);
}
