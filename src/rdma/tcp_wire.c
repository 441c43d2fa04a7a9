/* TCP backend: frame and hello encoding, socket helpers with deadlines. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "tcp_internal.h"

void tcp_frame_encode(const struct tcp_frame *f, uint8_t out[TCP_FRAME_LEN])
{
	rt_put32(out + 0, TCP_FRAME_MAGIC);
	out[4] = f->op;
	out[5] = f->flags;
	rt_put16(out + 6, f->rid);
	rt_put32(out + 8, f->seq);
	rt_put32(out + 12, (uint32_t)f->status);
	rt_put64(out + 16, f->roff);
	rt_put64(out + 24, f->len);
	rt_put64(out + 32, f->a);
	rt_put64(out + 40, f->b);
}

int tcp_frame_decode(const uint8_t in[TCP_FRAME_LEN], struct tcp_frame *f)
{
	if (rt_get32(in) != TCP_FRAME_MAGIC)
		return RDMAPS_E_PROTO;
	f->op = in[4];
	f->flags = in[5];
	f->rid = rt_get16(in + 6);
	f->seq = rt_get32(in + 8);
	f->status = (int32_t)rt_get32(in + 12);
	f->roff = rt_get64(in + 16);
	f->len = rt_get64(in + 24);
	f->a = rt_get64(in + 32);
	f->b = rt_get64(in + 40);
	return RDMAPS_OK;
}

void tcp_hello_encode(const struct tcp_hello *h, uint8_t out[TCP_HELLO_LEN])
{
	memset(out, 0, TCP_HELLO_LEN);
	rt_put32(out + 0, TCP_HELLO_MAGIC);
	rt_put16(out + 4, TCP_HELLO_VERSION);
	out[6] = h->channel;
	out[7] = h->h.role;
	rt_put32(out + 8, h->h.index);
	rt_put32(out + 12, h->token_len);
	rt_put64(out + 16, h->nonce);
	rt_put64(out + 24, h->h.layout_hash);
	memcpy(out + 32, h->token, RT_TOKEN_MAX);
}

int tcp_hello_decode(const uint8_t in[TCP_HELLO_LEN], struct tcp_hello *h)
{
	if (rt_get32(in) != TCP_HELLO_MAGIC || rt_get16(in + 4) != TCP_HELLO_VERSION ||
	    rt_get64(in + 72) != 0)
		return RDMAPS_E_PROTO;
	h->channel = in[6];
	if (h->channel != TCP_CH_OPS && h->channel != TCP_CH_SERVE)
		return RDMAPS_E_PROTO;
	h->h.role = in[7];
	h->h.index = rt_get32(in + 8);
	h->token_len = rt_get32(in + 12);
	if (h->token_len > RT_TOKEN_MAX)
		return RDMAPS_E_PROTO;
	h->nonce = rt_get64(in + 16);
	h->h.layout_hash = rt_get64(in + 24);
	memcpy(h->token, in + 32, RT_TOKEN_MAX);
	return RDMAPS_OK;
}

int tcp_set_sock_opts(int fd)
{
	int one = 1, fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		RDMAPS_ERR("tcp: fcntl(O_NONBLOCK) failed: %s", strerror(errno));
		return RDMAPS_E_IO;
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		RDMAPS_ERR("tcp: setsockopt(TCP_NODELAY) failed: %s", strerror(errno));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}

int tcp_errno_status(int err)
{
	switch (err) {
	case ECONNREFUSED: return RDMAPS_E_REFUSED;
	case ETIMEDOUT: return RDMAPS_E_TIMEOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EADDRNOTAVAIL: return RDMAPS_E_UNREACHABLE;
	case ECONNRESET:
	case EPIPE:
	case ECONNABORTED: return RDMAPS_E_PEER_GONE;
	case ENOMEM:
	case ENOBUFS: return RDMAPS_E_NOMEM;
	default: return RDMAPS_E_IO;
	}
}

static int wait_fd(int fd, short ev, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int rc;

	for (;;) {
		rc = poll(&p, 1, rt_remaining_ms(deadline));
		if (rc > 0)
			return RDMAPS_OK;
		if (rc == 0)
			return RDMAPS_E_TIMEOUT;
		if (errno != EINTR) {
			RDMAPS_ERR("tcp: poll failed: %s", strerror(errno));
			return RDMAPS_E_IO;
		}
	}
}

int tcp_send_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = wait_fd(fd, POLLOUT, deadline);

			if (rc)
				return rc;
			continue;
		}
		return tcp_errno_status(errno);
	}
	return RDMAPS_OK;
}

int tcp_recv_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return RDMAPS_E_PEER_GONE;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_fd(fd, POLLIN, deadline);

			if (rc)
				return rc;
			continue;
		}
		return tcp_errno_status(errno);
	}
	return RDMAPS_OK;
}

int tcp_token_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

int tcp_status_from_wire(int32_t s)
{
	if (s <= 0 && s >= RDMAPS_E_STATE)
		return s;
	return RDMAPS_E_PROTO;
}
