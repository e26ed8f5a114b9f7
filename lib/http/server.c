/* SPDX-License-Identifier: MIT */
/* The HTTP server: libmicrohttpd with a thread per connection (handlers may
 * block, e.g. on the store's group commit), our own listening socket (so a
 * bind error says what went wrong), the body read whole up to a limit, the
 * bearer token, and per-route counters for /metrics.  Each connection is
 * tracked from accept to close: a deadline for its request headers, and room
 * made for a new one past the limit (slow clients cannot fill the server);
 * at stop, the requests under way are finished and answered. */
#include "http/server.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

#define DEFAULT_MAX_BODY (32u << 20)
/* Connections: MAX_CONNS are held; past that, each new connection closes
 * the one that has waited longest without a request under way (see evict),
 * and libmicrohttpd refuses beyond MAX_CONNS + CONN_RESERVE (every slot busy
 * with a request). */
#define MAX_CONNS 512
#define CONN_RESERVE 64
#define IDLE_TIMEOUT 120          /* seconds: keep-alive, and a request's body or answer stalled */
#define DEFAULT_HEADER_TIMEOUT 15 /* seconds from accept (or the request line) to the headers' end */
#define STOP_GRACE 20             /* seconds the requests in flight get at stop, then as long again for handlers */
/* One request's arguments and headers live in libmicrohttpd's per-connection
 * pool: 32 KiB by default, which ~500 query arguments exhausted (the
 * connection was closed with no answer). */
#define CONN_MEMORY (256u << 10)
#define MAX_ARGS 2000
#define MAX_ARGS_S "2000"
/* latency buckets (seconds) of cprof_http_request_duration_seconds */
static const double buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))
#define NCODES 12

struct route_stats {
	uint64_t hist[NBUCKETS + 1]; /* cumulative counts are computed when printed */
	double sum;
	uint64_t count;
	int codes[NCODES];
	uint64_t per_code[NCODES];
};

/* A connection, from accept to close, for the header deadline and eviction. */
enum conn_state {
	CONN_NEW,     /* accepted, no request line yet */
	CONN_HEAD,    /* a request line read, its headers not yet complete */
	CONN_BUSY,    /* a request under way: body, handler or answer */
	CONN_IDLE,    /* between requests (keep-alive) */
	CONN_SHUT,    /* shut down by us, waiting for libmicrohttpd to close it */
};

struct conn {
	struct conn *prev, *next;
	int fd;
	enum conn_state state;
	double since; /* monotonic seconds: when this state's wait began */
};

struct cp_server {
	struct MHD_Daemon *d;
	int fd, port;
	char *token;
	size_t max_body;
	const struct cp_route *routes;
	size_t nroutes;
	void *arg;
	pthread_mutex_t lock; /* the stats */
	struct route_stats *stats; /* nroutes + 1: the last is "other" */
	/* connections and requests in flight, under conn_lock */
	pthread_mutex_t conn_lock;
	pthread_cond_t cwake;    /* the reaper's tick; a request finished (at stop) */
	struct conn *conns;      /* oldest first */
	struct conn *conns_tail;
	unsigned nconns, header_timeout;
	uint64_t n_header_timeout, n_evicted, n_idle; /* connections we closed, by reason */
	int active, running;     /* requests under way; handlers running */
	bool stopping, closing;  /* no new requests; no new handlers either */
	bool reaper_on;
	pthread_t reaper;
};

struct cp_req {
	struct cp_server *s;
	struct MHD_Connection *conn;
	const char *method, *path;
	uint8_t *body;
	size_t len, cap;
	bool too_big, answered, counted;
	long route; /* -1 none */
	int64_t t0; /* cp_mono_ns() when the request came */
	int status;
};

const struct cp_asset *cp_asset_find(const char *name)
{
	const struct cp_asset *a;

	for (a = cp_assets; a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

/* ---- the request, for handlers ---- */

const char *cp_req_method(const struct cp_req *r)
{
	return r->method;
}

const char *cp_req_path(const struct cp_req *r)
{
	return r->path;
}

const char *cp_req_arg(const struct cp_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct args_ctx {
	int (*fn)(void *ctx, const char *name, const char *value);
	int (*fn1)(void *ctx, const char *value);
	const char *name;
	void *ctx;
	int ret;
};

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct args_ctx *a = cls;

	(void)kind;
	a->ret = a->fn(a->ctx, key, value ? value : "");
	return a->ret ? MHD_NO : MHD_YES;
}

int cp_req_args(const struct cp_req *r, int (*fn)(void *ctx, const char *name, const char *value), void *ctx)
{
	struct args_ctx a = { fn, NULL, NULL, ctx, 0 };

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, each_arg, &a);
	return a.ret;
}

const char *cp_req_header(const struct cp_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct args_ctx *a = cls;

	(void)kind;
	if (strcasecmp(key, a->name))
		return MHD_YES;
	a->ret = a->fn1(a->ctx, value ? value : "");
	return a->ret ? MHD_NO : MHD_YES;
}

int cp_req_headers(const struct cp_req *r, const char *name, int (*fn)(void *ctx, const char *value), void *ctx)
{
	struct args_ctx a = { NULL, fn, name, ctx, 0 };

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, each_header, &a);
	return a.ret;
}

const uint8_t *cp_req_body(const struct cp_req *r, size_t *len)
{
	*len = r->len;
	return r->body ? r->body : (const uint8_t *)"";
}

/* A form field is delivered in pieces; they are joined before fn sees it. */
struct form_ctx {
	int (*fn)(void *ctx, const char *name, const char *filename, const uint8_t *data, size_t len);
	void *ctx;
	char *name, *filename;
	uint8_t *data;
	size_t len, cap;
	bool open;
	int ret;
};

static int form_emit(struct form_ctx *f)
{
	int ret = 0;

	if (f->open)
		ret = f->fn(f->ctx, f->name, f->filename, f->data ? f->data : (const uint8_t *)"", f->len);
	free(f->name);
	free(f->filename);
	f->name = f->filename = NULL;
	f->len = 0;
	f->open = false;
	return ret;
}

static enum MHD_Result form_piece(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
				  const char *content_type, const char *transfer_encoding, const char *data,
				  uint64_t off, size_t size)
{
	struct form_ctx *f = cls;

	(void)kind, (void)content_type, (void)transfer_encoding;
	if (!key || !*key) { /* no Content-Disposition name (or an unquoted or empty one) */
		f->ret = cp_error(EINVAL, "a form part has no name (Content-Disposition: form-data; name=\"...\")");
		return MHD_NO;
	}
	if (off == 0 || !f->open || strcmp(f->name, key)) {
		if ((f->ret = form_emit(f)))
			return MHD_NO;
		f->name = strdup(key);
		f->filename = filename ? strdup(filename) : NULL;
		if (!f->name || (filename && !f->filename)) {
			f->ret = -ENOMEM;
			return MHD_NO;
		}
		f->open = true;
	}
	if (f->len + size + 1 > f->cap) {
		size_t cap = (f->len + size + 1) * 2;
		uint8_t *d = realloc(f->data, cap);

		if (!d) {
			f->ret = -ENOMEM;
			return MHD_NO;
		}
		f->data = d;
		f->cap = cap;
	}
	memcpy(f->data + f->len, data, size);
	f->len += size;
	f->data[f->len] = 0;
	return MHD_YES;
}

int cp_req_form(struct cp_req *r,
		int (*fn)(void *ctx, const char *name, const char *filename, const uint8_t *data, size_t len),
		void *ctx)
{
	struct form_ctx f = { fn, ctx, NULL, NULL, NULL, 0, 0, false, 0 };
	struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 64 * 1024, form_piece, &f);
	enum MHD_Result ok;

	if (!pp)
		return cp_error(EINVAL, "the body is not a form (multipart/form-data or urlencoded)");
	ok = MHD_post_process(pp, (const char *)r->body, r->len);
	if (MHD_destroy_post_processor(pp) != MHD_YES && ok == MHD_YES && !f.ret)
		ok = MHD_NO;
	if (!f.ret)
		f.ret = form_emit(&f);
	else
		form_emit(&(struct form_ctx){ .name = f.name, .filename = f.filename });
	free(f.data);
	if (f.ret)
		return f.ret;
	if (ok != MHD_YES)
		return cp_error(EINVAL, "malformed form body");
	return 0;
}

/* ---- responses ---- */

void cp_resp_take(struct cp_resp *out, int status, const char *type, char *body, size_t len)
{
	free(out->body);
	out->status = status;
	out->type = type;
	out->body = body;
	out->len = len;
}

static void resp_vtext(struct cp_resp *out, int status, const char *type, const char *fmt, va_list ap)
{
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);

	if (n < 0)
		cp_resp_take(out, 500, "text/plain", NULL, 0);
	else
		cp_resp_take(out, status, type, s, (size_t)n);
}

void cp_resp_text(struct cp_resp *out, int status, const char *type, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	resp_vtext(out, status, type, fmt, ap);
	va_end(ap);
}

/* a JSON string body, escaped by hand: the message is one line of text */
void cp_resp_error(struct cp_resp *out, int status, const char *fmt, ...)
{
	char msg[CP_ERRMSG_MAX], *esc, *q;
	const unsigned char *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	esc = malloc(strlen(msg) * 6 + 1);
	if (!esc) {
		cp_resp_take(out, 500, "text/plain", NULL, 0);
		return;
	}
	for (p = (const unsigned char *)msg, q = esc; *p; p++) {
		if (*p == '"' || *p == '\\') {
			*q++ = '\\';
			*q++ = (char)*p;
		} else if (*p < 0x20) {
			q += sprintf(q, "\\u%04x", *p);
		} else {
			*q++ = (char)*p;
		}
	}
	*q = 0;
	cp_resp_text(out, status, "application/json", "{\"error\":\"%s\"}\n", esc);
	free(esc);
}

/* ---- metrics ---- */

static void count(struct cp_server *s, long route, int status, double secs)
{
	struct route_stats *st = &s->stats[route < 0 ? (long)s->nroutes : route];
	size_t b, c;

	for (b = 0; b < NBUCKETS && secs > buckets[b]; b++)
		;
	pthread_mutex_lock(&s->lock);
	st->hist[b]++;
	st->sum += secs;
	st->count++;
	for (c = 0; c < NCODES && st->codes[c] && st->codes[c] != status; c++)
		;
	if (c == NCODES)
		c = NCODES - 1; /* more distinct codes than slots: lumped into the last */
	st->codes[c] = st->codes[c] ? st->codes[c] : status;
	st->per_code[c]++;
	pthread_mutex_unlock(&s->lock);
}

int cp_server_metrics(struct cp_server *s, FILE *out)
{
	size_t i, b, c;

	fprintf(out, "# HELP cprof_http_requests_total HTTP requests answered, by handler and status.\n"
		     "# TYPE cprof_http_requests_total counter\n");
	pthread_mutex_lock(&s->lock);
	for (i = 0; i <= s->nroutes; i++) {
		const char *name = i < s->nroutes ? s->routes[i].name : "other";

		for (c = 0; c < NCODES && s->stats[i].codes[c]; c++)
			fprintf(out, "cprof_http_requests_total{handler=\"%s\",code=\"%d\"} %llu\n", name,
				s->stats[i].codes[c], (unsigned long long)s->stats[i].per_code[c]);
	}
	fprintf(out, "# HELP cprof_http_request_duration_seconds Time to answer HTTP requests, by handler.\n"
		     "# TYPE cprof_http_request_duration_seconds histogram\n");
	for (i = 0; i <= s->nroutes; i++) {
		const char *name = i < s->nroutes ? s->routes[i].name : "other";
		uint64_t cum = 0;

		for (b = 0; b < NBUCKETS; b++) {
			cum += s->stats[i].hist[b];
			fprintf(out, "cprof_http_request_duration_seconds_bucket{handler=\"%s\",le=\"%g\"} %llu\n", name,
				buckets[b], (unsigned long long)cum);
		}
		cum += s->stats[i].hist[NBUCKETS];
		fprintf(out, "cprof_http_request_duration_seconds_bucket{handler=\"%s\",le=\"+Inf\"} %llu\n", name,
			(unsigned long long)cum);
		fprintf(out, "cprof_http_request_duration_seconds_sum{handler=\"%s\"} %.6f\n", name, s->stats[i].sum);
		fprintf(out, "cprof_http_request_duration_seconds_count{handler=\"%s\"} %llu\n", name,
			(unsigned long long)s->stats[i].count);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->conn_lock);
	fprintf(out, "# HELP cprof_http_connections Open HTTP connections.\n"
		     "# TYPE cprof_http_connections gauge\n"
		     "cprof_http_connections %u\n"
		     "# HELP cprof_http_connections_closed_total HTTP connections the server closed: headers not sent in "
		     "time, room made for a new one, idle too long.\n"
		     "# TYPE cprof_http_connections_closed_total counter\n"
		     "cprof_http_connections_closed_total{reason=\"header_timeout\"} %llu\n"
		     "cprof_http_connections_closed_total{reason=\"evicted\"} %llu\n"
		     "cprof_http_connections_closed_total{reason=\"idle\"} %llu\n",
		s->nconns, (unsigned long long)s->n_header_timeout, (unsigned long long)s->n_evicted,
		(unsigned long long)s->n_idle);
	pthread_mutex_unlock(&s->conn_lock);
	return 0;
}

/* ---- serving ---- */

static enum MHD_Result reply(struct cp_req *r, struct cp_resp *o)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(o->len, o->body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(o->body);
		return MHD_NO;
	}
	o->body = NULL;
	if (o->type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, o->type);
	if (o->disposition)
		MHD_add_response_header(resp, "Content-Disposition", o->disposition);
	if (o->location)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, o->location);
	if (o->status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"cprof\"");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	pthread_mutex_lock(&r->s->conn_lock);
	if (r->s->stopping) /* no further request on this connection */
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	pthread_mutex_unlock(&r->s->conn_lock);
	ret = MHD_queue_response(r->conn, (unsigned)o->status, resp);
	MHD_destroy_response(resp);
	r->status = o->status;
	r->answered = true;
	return ret;
}

static enum MHD_Result send_error(struct cp_req *r, int status, const char *fmt, const char *detail)
{
	struct cp_resp o = { 0 };

	cp_resp_error(&o, status, fmt, detail);
	return reply(r, &o);
}

static bool token_ok(struct cp_server *s, struct MHD_Connection *c)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *given = NULL;
	size_t i, n, m;
	unsigned char diff = 0;

	if (auth && !strncasecmp(auth, "Bearer ", 7))
		given = auth + 7;
	else
		given = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "cprof_token");
	if (!given)
		return false;
	/* compare in time independent of where they differ */
	n = strlen(given);
	m = strlen(s->token);
	for (i = 0; i < m; i++)
		diff |= (unsigned char)(s->token[i] ^ (i < n ? given[i] : 0));
	return !diff && n == m;
}

/* percent-encoding for a query value */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("-_.~", c))
			fputc(c, f);
		else
			fprintf(f, "%%%02X", c);
	}
}

struct relink {
	FILE *f;
	bool first;
};

static enum MHD_Result put_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct relink *l = cls;

	(void)kind;
	fputs(l->first ? "?" : "&", l->f);
	l->first = false;
	put_escaped(l->f, key);
	if (value) {
		fputc('=', l->f);
		put_escaped(l->f, value);
	}
	return MHD_YES;
}

/* "/login?next=<this path and query, encoded>"; NULL when out of memory */
static char *login_location(struct MHD_Connection *c, const char *path)
{
	char *here = NULL, *loc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&here, &len);
	struct relink l = { f, true };

	if (!f)
		return NULL;
	fputs(path, f);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, put_arg, &l);
	if (fclose(f)) {
		free(here);
		return NULL;
	}
	if ((f = open_memstream(&loc, &len))) {
		fputs("/login?next=", f);
		put_escaped(f, here);
		if (fclose(f)) {
			free(loc);
			loc = NULL;
		}
	}
	free(here);
	return loc;
}

/* A query argument with a NUL (%00) in its name or value: every handler
 * reads arguments as C strings, which would cut them there. */
static enum MHD_Result find_nul(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				const char *value, size_t value_size)
{
	const char **bad = cls;

	(void)kind;
	if (strlen(key) != key_size || (value && strlen(value) != value_size)) {
		*bad = key;
		return MHD_NO;
	}
	return MHD_YES;
}

static long find_route(struct cp_server *s, const char *method, const char *path, bool *other_method)
{
	size_t i, n;

	*other_method = false;
	for (i = 0; i < s->nroutes; i++) {
		const struct cp_route *rt = &s->routes[i];

		n = strlen(rt->path);
		if (rt->path[n - 1] == '/' && n > 1 ? strncmp(path, rt->path, n) : strcmp(path, rt->path))
			continue;
		if (!strcmp(method, rt->method) || (!strcmp(method, "HEAD") && !strcmp(rt->method, "GET")))
			return (long)i;
		*other_method = true;
	}
	return -1;
}

/* ---- connections: the header deadline, eviction near the limit ---- */

static double now_mono(void)
{
	return (double)cp_mono_ns() / 1e9;
}

/* Shut a connection's socket down: its thread in libmicrohttpd reads the end
 * and closes it.  The socket stays open until on_connection(CLOSED), which
 * takes conn_lock first, so the descriptor cannot have been reused. (conn_lock held) */
/* Has the client sent something the server has not read yet?  A request
 * begun (a busy server may not have parsed its first line): not idle. */
static bool bytes_waiting(int fd)
{
	int n = 0;

	return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

static void conn_shut(struct conn *c)
{
	if (c->state == CONN_SHUT)
		return;
	shutdown(c->fd, SHUT_RDWR);
	c->state = CONN_SHUT;
}

/* Make room for a new connection: close the one that has waited longest with
 * no request under way (its headers not sent, or idle between requests), but
 * not the new one (when every other is busy, it takes one of the reserve). A
 * client that sends its request at once (a health check) is never the oldest
 * waiting, so slow connections cannot keep it out. (conn_lock held) */
static void evict(struct cp_server *s, const struct conn *new)
{
	struct conn *c, *old = NULL;

	for (c = s->conns; c; c = c->next)
		if (c != new && (c->state == CONN_NEW || c->state == CONN_HEAD || c->state == CONN_IDLE) &&
		    (!old || c->since < old->since))
			old = c;
	if (old) {
		conn_shut(old);
		s->n_evicted++;
	}
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct cp_server *s = cls;
	struct conn *c = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);

		if (!ci || !(c = calloc(1, sizeof(*c))))
			return; /* not tracked: only the idle timeout applies */
		c->fd = ci->connect_fd;
		c->state = CONN_NEW;
		c->since = now_mono();
		pthread_mutex_lock(&s->conn_lock);
		c->prev = s->conns_tail;
		if (s->conns_tail)
			s->conns_tail->next = c;
		else
			s->conns = c;
		s->conns_tail = c;
		if (++s->nconns > MAX_CONNS)
			evict(s, c);
		pthread_mutex_unlock(&s->conn_lock);
		*socket_context = c;
		return;
	}
	if (!c)
		return;
	pthread_mutex_lock(&s->conn_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		s->conns_tail = c->prev;
	s->nconns--;
	pthread_mutex_unlock(&s->conn_lock);
	free(c);
	*socket_context = NULL;
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* a connection's next state (none once shut down); the header deadline of
 * HEAD runs from accept on a new connection, from the request line on a
 * kept-alive one */
static void conn_to(struct cp_server *s, struct MHD_Connection *mc, enum conn_state to)
{
	struct conn *c = conn_of(mc);

	if (!c)
		return;
	pthread_mutex_lock(&s->conn_lock);
	if (c->state != CONN_SHUT) {
		if (!(to == CONN_HEAD && c->state == CONN_NEW))
			c->since = now_mono();
		c->state = to;
	}
	pthread_mutex_unlock(&s->conn_lock);
}

/* the request line was read (libmicrohttpd's URI log): a request begun */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
	(void)uri;
	conn_to(cls, mc, CONN_HEAD);
	return NULL; /* the request's context: on_request makes it */
}

/* Closes the connections past their deadline, four times a second: headers
 * not complete header_timeout after accept (or after the request line, on a
 * kept-alive connection), or idle IDLE_TIMEOUT after their last answer. */
static void *reaper_main(void *arg)
{
	struct cp_server *s = arg;
	struct timespec t;
	struct conn *c;
	double now;

	pthread_mutex_lock(&s->conn_lock);
	while (s->reaper_on) {
		now = now_mono();
		for (c = s->conns; c; c = c->next)
			if ((c->state == CONN_NEW || c->state == CONN_HEAD) && now - c->since >= s->header_timeout) {
				conn_shut(c);
				s->n_header_timeout++;
			} else if (c->state == CONN_IDLE && now - c->since >= IDLE_TIMEOUT) {
				conn_shut(c);
				s->n_idle++;
			}
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_nsec += 250000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->cwake, &s->conn_lock, &t);
	}
	pthread_mutex_unlock(&s->conn_lock);
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct cp_server *s = cls;
	struct cp_req *r = *con_cls;
	struct cp_resp o = { 0 };
	bool other_method, refuse;

	(void)version;
	if (!r) {
		const char *cl;

		if (!(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		cp_error_clear(); /* this thread's last request failed for its own reasons */
		*con_cls = r;
		r->s = s;
		r->conn = conn;
		r->method = method;
		r->path = url;
		r->status = 500;
		r->t0 = cp_mono_ns();
		r->route = find_route(s, method, url, &other_method);
		conn_to(s, conn, CONN_BUSY);
		pthread_mutex_lock(&s->conn_lock);
		if (!s->stopping)
			s->active++, r->counted = true;
		pthread_mutex_unlock(&s->conn_lock);
		if (!r->counted)
			return send_error(r, 503, "%s", "the server is stopping: send the request again to its successor");
		if (s->token && !(r->route >= 0 && s->routes[r->route].open) && !token_ok(s, conn)) {
			const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);

			if (!strcmp(method, "GET") && accept && strstr(accept, "text/html")) {
				/* back to this page (and its view state) after logging in */
				char *loc = login_location(conn, url);
				enum MHD_Result ret;

				o.location = loc ? loc : "/login";
				cp_resp_text(&o, 303, "text/plain", "see /login\n");
				ret = reply(r, &o);
				free(loc);
				return ret;
			}
			return send_error(r, 401, "%s", "missing or wrong token: send 'Authorization: Bearer TOKEN' (the token of cprof serve --token-file)");
		}
		/* (more than libmicrohttpd's connection memory holds are closed before this, with no answer) */
		if (MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL) > MAX_ARGS)
			return send_error(r, 414, "%s", "too many query arguments (at most " MAX_ARGS_S ")");
		{
			const char *bad = NULL;

			MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, find_nul, &bad);
			if (bad)
				return send_error(r, 400, "query argument '%.64s' holds a NUL byte (%%00): names and values are text", bad);
		}
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		/* both lengths: a proxy in front may read the body by the other one (request smuggling) */
		if (cl && MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
			return send_error(r, 400, "%s", "both Content-Length and Transfer-Encoding: send one (RFC 9112, 6.3)");
		if (cl && strtoull(cl, NULL, 10) > s->max_body) {
			char m[64];

			snprintf(m, sizeof(m), "%zu", s->max_body);
			return send_error(r, 413, "the body is larger than the server takes (%s bytes, cprof serve --max-body)", m);
		}
		return MHD_YES;
	}
	if (r->answered) { /* an early answer: drop the rest of the body */
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (r->too_big || r->len + n > s->max_body) {
			r->too_big = true;
			return MHD_YES;
		}
		if (r->len + n + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 64 * 1024;
			uint8_t *b;

			while (cap < r->len + n + 1)
				cap *= 2;
			if (cap > s->max_body + 1)
				cap = s->max_body + 1;
			if (!(b = realloc(r->body, cap)))
				return MHD_NO;
			r->body = b;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload, n);
		r->len += n;
		return MHD_YES;
	}
	if (r->too_big) {
		char m[64];

		snprintf(m, sizeof(m), "%zu", s->max_body);
		return send_error(r, 413, "the body is larger than the server takes (%s bytes, cprof serve --max-body)", m);
	}
	if (r->route < 0) {
		find_route(s, method, url, &other_method);
		if (other_method)
			return send_error(r, 405, "%s is not allowed here", method);
		return send_error(r, 404, "no such endpoint: %s (docs/API.md lists them)", url);
	}
	/* past the grace period at stop, a request not yet handled is refused
	 * (before it stores anything) rather than cut off */
	pthread_mutex_lock(&s->conn_lock);
	refuse = s->closing;
	if (!refuse)
		s->running++;
	pthread_mutex_unlock(&s->conn_lock);
	if (refuse)
		return send_error(r, 503, "%s", "the server is stopping: send the request again to its successor");
	o.status = 200;
	s->routes[r->route].fn(r, &o, s->arg);
	pthread_mutex_lock(&s->conn_lock);
	s->running--;
	pthread_cond_broadcast(&s->cwake);
	pthread_mutex_unlock(&s->conn_lock);
	if (!o.type)
		o.type = "application/json";
	return reply(r, &o);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct cp_server *s = cls;
	struct cp_req *r = *con_cls;
	if (!r)
		return;
	count(s, r->route, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? r->status : 499,
	      (double)(cp_mono_ns() - r->t0) / 1e9);
	if (r->counted) {
		pthread_mutex_lock(&s->conn_lock);
		s->active--;
		pthread_cond_broadcast(&s->cwake);
		pthread_mutex_unlock(&s->conn_lock);
	}
	conn_to(s, conn, CONN_IDLE);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

static int split_listen(const char *listen, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;

	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');

		if (!end || end[1] != ':' || (size_t)(end - listen) > hlen)
			return -EINVAL;
		snprintf(host, hlen, "%.*s", (int)(end - listen - 1), listen + 1);
		colon = end + 1;
	} else {
		if (!(colon = strrchr(listen, ':')) || (size_t)(colon - listen) >= hlen)
			return -EINVAL;
		snprintf(host, hlen, "%.*s", (int)(colon - listen), listen);
	}
	if (!colon[1] || strlen(colon + 1) >= plen || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    atol(colon + 1) > 65535)
		return -EINVAL;
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

int cp_listen_check(const char *addr)
{
	char host[256], port[16];

	if (split_listen(addr, host, sizeof(host), port, sizeof(port)))
		return cp_error(EINVAL, "--listen '%s': give HOST:PORT, [IPV6]:PORT or :PORT", addr);
	return 0;
}

int cp_listener_open(const char *addr, struct cp_listener *l)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[16];
	int fd, one = 1, err;

	if (split_listen(addr, host, sizeof(host), port, sizeof(port)))
		return cp_error(EINVAL, "--listen '%s': give HOST:PORT, [IPV6]:PORT or :PORT", addr);
	if ((err = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)))
		return cp_error(EINVAL, "--listen '%s': %s", addr, gai_strerror(err));
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		freeaddrinfo(res);
		return cp_error(err, "cannot open a socket: %s", strerror(err));
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 128)) {
		err = errno;
		freeaddrinfo(res);
		close(fd);
		return cp_error(err, "cannot listen on %s: %s%s", addr, strerror(err),
				err == EADDRINUSE ? " (another server has it: pick another --listen)" :
				err == EACCES ? " (ports below 1024 need root)" : "");
	}
	l->v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						   ((struct sockaddr_in *)&ss)->sin_port);
	l->fd = fd;
	return 0;
}

void cp_listener_close(struct cp_listener *l)
{
	if (l && l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
}

struct cp_server *cp_server_start(const struct cp_server_opts *o)
{
	struct cp_server *s = calloc(1, sizeof(*s));
	/* ITC: for MHD_quiesce_daemon at stop */
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC;
	bool v6 = false;
	int err;

	if (!s || !(s->stats = calloc(o->nroutes + 1, sizeof(*s->stats)))) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	pthread_condattr_t ca;

	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->conn_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cwake, &ca);
	pthread_condattr_destroy(&ca);
	s->header_timeout = o->header_timeout ? o->header_timeout : DEFAULT_HEADER_TIMEOUT;
	s->fd = -1;
	s->routes = o->routes;
	s->nroutes = o->nroutes;
	s->arg = o->arg;
	s->max_body = o->max_body ? o->max_body : DEFAULT_MAX_BODY;
	if (o->token && !(s->token = strdup(o->token))) {
		err = -ENOMEM;
		goto fail;
	}
	if (o->listener) {
		s->fd = o->listener->fd;
		s->port = o->listener->port;
		v6 = o->listener->v6;
		o->listener->fd = -1;
	} else {
		struct cp_listener l = { -1, 0, false };

		if ((err = cp_listener_open(o->listen, &l)))
			goto fail;
		s->fd = l.fd;
		s->port = l.port;
		v6 = l.v6;
	}
	if (v6)
		flags |= MHD_USE_IPv6;
	if (o->tls_cert_pem && o->tls_key_pem)
		flags |= MHD_USE_TLS;
	/* the default thread stack: handlers render JSON and parse pprof, and an
	 * idle connection's thread touches only a few pages of it */
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
				s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)IDLE_TIMEOUT, MHD_OPTION_CONNECTION_LIMIT, (unsigned)(MAX_CONNS + CONN_RESERVE),
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
				(flags & MHD_USE_TLS) ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, o->tls_cert_pem,
				MHD_OPTION_HTTPS_MEM_KEY, o->tls_key_pem, MHD_OPTION_END);
	if (!s->d) {
		err = cp_error(EINVAL, "cannot start the HTTP server%s",
			       (flags & MHD_USE_TLS) ? ": the TLS certificate or key was refused (PEM files that belong together?)" : "");
		goto fail;
	}
	s->reaper_on = true;
	if ((err = -pthread_create(&s->reaper, NULL, reaper_main, s))) {
		s->reaper_on = false;
		MHD_stop_daemon(s->d);
		s->fd = -1; /* closed by libmicrohttpd */
		err = cp_error(-err, "cannot start the HTTP server's connection reaper: %s", strerror(-err));
		goto fail;
	}
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	pthread_cond_destroy(&s->cwake);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_mutex_destroy(&s->lock);
	free(s->token);
	free(s->stats);
	free(s);
	errno = -err;
	return NULL;
}

int cp_server_port(const struct cp_server *s)
{
	return s->port;
}

/* wait on cwake until done(s) or the deadline (monotonic seconds); conn_lock held */
static void wait_until(struct cp_server *s, bool (*done)(const struct cp_server *), double deadline)
{
	struct timespec t;

	while (!done(s) && now_mono() < deadline) {
		double d = deadline < now_mono() + 0.25 ? deadline : now_mono() + 0.25;

		t.tv_sec = (time_t)d;
		t.tv_nsec = (long)((d - (double)t.tv_sec) * 1e9);
		pthread_cond_timedwait(&s->cwake, &s->conn_lock, &t);
	}
}

static bool no_requests(const struct cp_server *s)
{
	return !s->active;
}

static bool no_handlers(const struct cp_server *s)
{
	return !s->running;
}

void cp_server_stop(struct cp_server *s)
{
	MHD_socket lfd;
	struct conn *c;

	if (!s)
		return;
	/* a request whose headers end from now on is refused (503); no new
	 * connections (so a refused connect means the stop has begun); the open
	 * ones with no request begun (nothing sent, or nothing since the last
	 * answer) are closed */
	pthread_mutex_lock(&s->conn_lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->conn_lock);
	lfd = MHD_quiesce_daemon(s->d);
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
	pthread_mutex_lock(&s->conn_lock);
	for (c = s->conns; c; c = c->next)
		if ((c->state == CONN_NEW || c->state == CONN_IDLE) && !bytes_waiting(c->fd))
			conn_shut(c);
	/* the requests under way finish and are answered; past the grace period
	 * the ones not yet handled are refused, and the handlers running get as
	 * long again to answer */
	wait_until(s, no_requests, now_mono() + STOP_GRACE);
	s->closing = true;
	wait_until(s, no_handlers, now_mono() + STOP_GRACE);
	s->reaper_on = false;
	pthread_cond_broadcast(&s->cwake);
	pthread_mutex_unlock(&s->conn_lock);
	pthread_join(s->reaper, NULL);
	MHD_stop_daemon(s->d);
	pthread_cond_destroy(&s->cwake);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_mutex_destroy(&s->lock);
	free(s->token);
	free(s->stats);
	free(s);
}
