/* rdmaps: the one error enum shared by every layer.
 * Every fallible function returns 0 (RDMAPS_OK) or one of these negative codes.
 * The failing system/verbs call is logged once where it fails (rdmaps_log);
 * callers that only pass a status on do not log again. */
#ifndef RDMAPS_STATUS_H
#define RDMAPS_STATUS_H

enum rdmaps_status {
	RDMAPS_OK = 0,
	RDMAPS_E_INVAL = -1,         /* bad argument or bad input */
	RDMAPS_E_NOMEM = -2,         /* allocation or registration failed */
	RDMAPS_E_NODEV = -3,         /* no (active) RDMA device serves the address */
	RDMAPS_E_UNREACHABLE = -4,   /* no route to the address (or address not local, for a listener) */
	RDMAPS_E_REFUSED = -5,       /* peer refused the connection */
	RDMAPS_E_TIMEOUT = -6,       /* a bounded wait ran out */
	RDMAPS_E_REMOTE_ACCESS = -7, /* remote bounds/rights violation */
	RDMAPS_E_PEER_GONE = -8,     /* peer closed / connection broken */
	RDMAPS_E_PROTO = -9,         /* malformed message from the peer */
	RDMAPS_E_IO = -10,           /* local I/O or verbs failure */
	RDMAPS_E_AUTH = -11,         /* authentication token refused */
	RDMAPS_E_AGAIN = -12,        /* try again (queue full, nothing yet) */
	RDMAPS_E_NOSUPPORT = -13,    /* feature not supported by this backend */
	RDMAPS_E_CORRUPT = -14,      /* file or checkpoint failed validation */
	RDMAPS_E_STATE = -15,        /* object in the wrong state for this call */
	RDMAPS_E_IN_USE = -16,       /* identity (task index) held by another live peer */
	RDMAPS_E_ADDR_IN_USE = -17,  /* listen: host:port already bound by another socket */
	RDMAPS_E_MISMATCH = -18,     /* peer refused us: it runs another job configuration */
	RDMAPS_E_NONAME = -19,       /* host name does not resolve (getaddrinfo failed) */
};

/* Short human-readable text for a status code; never NULL. */
const char *rdmaps_strerror(int status);

/* Logging: one line on stderr, "rdmaps[<tag>] <level>: message". */
enum rdmaps_log_level { RDMAPS_LOG_ERROR, RDMAPS_LOG_WARN, RDMAPS_LOG_INFO, RDMAPS_LOG_DEBUG };
void rdmaps_log(enum rdmaps_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rdmaps_log_set_tag(const char *tag);   /* e.g. "ps0", "worker1" */
void rdmaps_log_set_level(enum rdmaps_log_level lvl);

#define RDMAPS_ERR(...)  rdmaps_log(RDMAPS_LOG_ERROR, __VA_ARGS__)
#define RDMAPS_WARN(...) rdmaps_log(RDMAPS_LOG_WARN, __VA_ARGS__)
#define RDMAPS_INFO(...) rdmaps_log(RDMAPS_LOG_INFO, __VA_ARGS__)
#define RDMAPS_DBG(...)  rdmaps_log(RDMAPS_LOG_DEBUG, __VA_ARGS__)

#endif
