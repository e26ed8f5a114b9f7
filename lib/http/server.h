/* SPDX-License-Identifier: MIT */
/* The HTTP server under `cprof serve`: libmicrohttpd (a thread per
 * connection, TLS through GnuTLS) behind a small router.  The server reads
 * each request body whole (up to a limit: 413 beyond it), checks the bearer
 * token, calls the route's handler in the connection's thread, and counts
 * requests and their latencies per route for /metrics.  A connection must
 * send its request headers within header_timeout; past 512 connections, each
 * new one closes the one that has waited longest with no request under way
 * (so a health check gets in while slow clients hold the rest); more than
 * 2000 query arguments get 414. */
#ifndef CP_HTTP_SERVER_H
#define CP_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The web view's files, compiled in by tools/embed.sh (lib/http/assets.c). */
struct cp_asset {
	const char *name, *type;
	const unsigned char *data;
	size_t len;
};
extern const struct cp_asset cp_assets[];
const struct cp_asset *cp_asset_find(const char *name);

struct cp_req;

/* The answer a handler fills: status (default 200), a content type, and a
 * body it owns (malloc'ed; freed by the server). */
struct cp_resp {
	int status;
	const char *type;
	char *body;
	size_t len;
	const char *disposition; /* Content-Disposition, or NULL */
	const char *location;    /* Location (redirects), or NULL */
};

typedef void (*cp_handler_fn)(struct cp_req *r, struct cp_resp *out, void *arg);

struct cp_route {
	const char *method; /* "GET", "POST" */
	const char *path;   /* exact, or a prefix when it ends in '/' */
	const char *name;   /* the handler label in metrics */
	cp_handler_fn fn;
	bool open;          /* served without the token (the login page) */
};

/* A bound, listening socket, made before the rest of a server so that a port
 * in use fails before anything else is made (a store, say); cp_server_start
 * takes it over. */
struct cp_listener {
	int fd; /* -1: none */
	int port;
	bool v6;
};
/* Binds and listens on addr (as cp_server_opts.listen).  0 or -errno with
 * a message (EADDRINUSE: another server has it). */
int cp_listener_open(const char *addr, struct cp_listener *l);
/* Closes it unless a server took it over; accepts a closed one. */
void cp_listener_close(struct cp_listener *l);

struct cp_server_opts {
	const char *listen;       /* HOST:PORT, [V6]:PORT or :PORT; port 0 picks one */
	struct cp_listener *listener; /* set: this socket instead of listen (taken over: its fd becomes -1) */
	const char *token;        /* NULL: no authentication */
	const char *tls_cert_pem; /* both set: HTTPS */
	const char *tls_key_pem;
	size_t max_body;          /* bytes; 0: 32 MiB */
	const struct cp_route *routes;
	size_t nroutes;
	void *arg; /* passed to the handlers */
	unsigned header_timeout;  /* seconds a connection has to send its request headers; 0: 15 */
};

struct cp_server;
/* Is addr a listen address (HOST:PORT, [V6]:PORT, :PORT)? 0 or -EINVAL. */
int cp_listen_check(const char *addr);
/* Binds and starts serving. NULL + errno, message in cp_errmsg(). */
struct cp_server *cp_server_start(const struct cp_server_opts *o);
/* The bound port (when the listen address asked for 0). */
int cp_server_port(const struct cp_server *s);
/* Stops accepting and refuses new requests (503); the requests under way
 * finish and are answered (20 s at most, then the ones not yet handled are
 * refused, and running handlers get 20 s more); then closes and frees. */
void cp_server_stop(struct cp_server *s);
/* Requests and latency histograms in Prometheus text format. */
int cp_server_metrics(struct cp_server *s, FILE *out);

/* The request, for handlers. */
const char *cp_req_method(const struct cp_req *r);
const char *cp_req_path(const struct cp_req *r);
/* A query argument (URL-decoded), or NULL. */
const char *cp_req_arg(const struct cp_req *r, const char *name);
/* Each query argument in order; stops early when fn returns nonzero. */
int cp_req_args(const struct cp_req *r, int (*fn)(void *ctx, const char *name, const char *value), void *ctx);
/* A header (case-insensitive name), or NULL. */
const char *cp_req_header(const struct cp_req *r, const char *name);
/* Each header with this name (repeated headers). */
int cp_req_headers(const struct cp_req *r, const char *name, int (*fn)(void *ctx, const char *value), void *ctx);
const uint8_t *cp_req_body(const struct cp_req *r, size_t *len);
/* Fields of a multipart/form-data or urlencoded body: fn gets each field's
 * name, filename (or NULL) and whole value.  -EINVAL when the body is not a
 * form or is malformed. */
int cp_req_form(struct cp_req *r,
		int (*fn)(void *ctx, const char *name, const char *filename, const uint8_t *data, size_t len),
		void *ctx);

/* Response helpers: each sets out and returns nothing. */
void cp_resp_text(struct cp_resp *out, int status, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* {"error": msg} with status */
void cp_resp_error(struct cp_resp *out, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* takes ownership of body */
void cp_resp_take(struct cp_resp *out, int status, const char *type, char *body, size_t len);

#endif
