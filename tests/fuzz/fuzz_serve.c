/* SPDX-License-Identifier: MIT */
/* Fuzz target: cprof serve end to end, in-process.  The server the command
 * runs (lib/http/server.c with the routes of lib/http/api.c over a shared
 * store, lib/store/shared.c, in a temporary directory) listens on
 * 127.0.0.1:0; each input is one or more raw HTTP requests, separated by a
 * line "#NEXT", each sent on its own connection (then the write side is
 * shut, so a short body ends the request).  So pushes (native, Pyroscope
 * with multipart forms, Parca writeraw) go through decoding, the group
 * commit and the store, and queries through the store and every renderer.
 * A crash or sanitizer report in any of it stops the fuzzer; an answer that
 * never comes within 30 s (a hang) aborts.  Every 200 inputs (or
 * $FUZZ_SERVE_RESTART) the server and store are started afresh, so the store
 * does not grow for the whole run. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "error.h"
#include "http/api.h"
#include "http/server.h"
#include "log.h"
#include "store/shared.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static char dir[64];
static struct cp_shared *store;
static struct cp_api *api;
static struct cp_server *http;
static int port;
static unsigned inputs;

static void stop(void)
{
	char cmd[128];

	cp_server_stop(http);
	cp_api_free(api);
	cp_shared_close(store);
	http = NULL;
	api = NULL;
	store = NULL;
	if (*dir) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "fuzz_serve: cannot remove %s\n", dir);
		*dir = 0;
	}
}

static void start(void)
{
	struct cp_server_opts so = { 0 };

	snprintf(dir, sizeof(dir), "/tmp/cprof-fuzz-serve.XXXXXX");
	if (!mkdtemp(dir) || !(store = cp_shared_open(dir, NULL)) || !(api = cp_api_new(store))) {
		fprintf(stderr, "fuzz_serve: cannot open a store in %s: %s\n", dir, cp_errmsg(errno));
		abort();
	}
	so.listen = "127.0.0.1:0";
	so.max_body = 4u << 20;
	so.routes = cp_api_routes(&so.nroutes);
	so.arg = api;
	if (!(http = cp_server_start(&so))) {
		fprintf(stderr, "fuzz_serve: cannot start the server: %s\n", cp_errmsg(errno));
		abort();
	}
	cp_api_set_server(api, http);
	port = cp_server_port(http);
}

/* Did fd's connect, interrupted, go through?  (errno: why not) */
static bool connected(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t sl = sizeof(int);
	int r, err = 0;

	while ((r = poll(&p, 1, 30000)) < 0 && errno == EINTR)
		;
	if (r <= 0) {
		errno = r == 0 ? ETIMEDOUT : errno;
		return false;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) || err) {
		errno = err ? err : errno;
		return false;
	}
	return true;
}

/* one request on its own connection; the answer is read and dropped */
static void request(const uint8_t *data, size_t len)
{
	static uint32_t nreq;
	struct sockaddr_in a = { 0 }, src = { 0 };
	struct timeval tv = { 30, 0 };
	char buf[65536];
	size_t off = 0;
	ssize_t k;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		abort();
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* from 127.0.0.2 and up, one address after another: the client ends
	 * each connection first (shutdown), so each leaves a TIME_WAIT for 60 s
	 * on its side, about a thousand a second here; from one address they
	 * would use up its 28,000 ports (connect: EADDRNOTAVAIL) */
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(0x7f000002u + (++nreq % 0xfffff0u));
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)))
		fprintf(stderr, "fuzz_serve: binding to a loopback address: %s\n", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* libFuzzer's timer (SIGALRM, every -timeout/2 s, no SA_RESTART)
	 * interrupts these calls, and a socket with a timeout is never
	 * restarted: EINTR is waited out, not taken for a refused connection */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) && !(errno == EINTR && connected(fd))) {
		fprintf(stderr, "fuzz_serve: the server does not take connections: %s\n", strerror(errno));
		abort();
	}
	while (off < len && ((k = send(fd, data + off, len - off, MSG_NOSIGNAL)) > 0 || (k < 0 && errno == EINTR)))
		off += k > 0 ? (size_t)k : 0;
	shutdown(fd, SHUT_WR);
	while ((k = recv(fd, buf, sizeof(buf), 0)) > 0 || (k < 0 && errno == EINTR))
		;
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		fprintf(stderr, "fuzz_serve: no answer within 30 s (a hang)\n");
		abort();
	}
	close(fd);
}

/* inputs between fresh stores ($FUZZ_SERVE_RESTART, default 200) */
static unsigned restart_every(void)
{
	static unsigned n;
	const char *e;

	if (!n)
		n = (e = getenv("FUZZ_SERVE_RESTART")) && atoi(e) > 0 ? (unsigned)atoi(e) : 200;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char sep[] = "\n#NEXT\n";
	const uint8_t *p = data, *end = data + len;

	if (!http) {
		signal(SIGPIPE, SIG_IGN);
		cp_log_level = CP_LOG_ERROR; /* the log of rejected pushes would flood */
		start();
		atexit(stop);
	} else if (++inputs % restart_every() == 0) {
		stop();
		start();
	}
	while (p <= end) {
		const uint8_t *next = memmem(p, (size_t)(end - p), sep, sizeof(sep) - 1);
		size_t n = next ? (size_t)(next - p) : (size_t)(end - p);

		request(p, n);
		if (!next)
			break;
		p = next + sizeof(sep) - 1;
	}
	return 0;
}
