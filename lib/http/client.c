/* SPDX-License-Identifier: MIT */
#include "client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../error.h"
#include "../util.h"
#include "config.h"

struct cp_http_client {
	CURL *h;
	char *base;  /* without a trailing '/' */
	char *auth;  /* "Authorization: Bearer TOKEN", or NULL */
	long timeout_ms;
	char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int bad_url(const char *url, const char *why)
{
	return cp_error(EINVAL, "bad server URL '%s': %s (want http://HOST[:PORT] or https://HOST[:PORT])", url, why);
}

/* http(s)://HOST[:PORT][/PATH], nothing else */
int cp_http_check_url(const char *url)
{
	CURLU *u = NULL;
	char *scheme = NULL, *host = NULL, *part = NULL;
	int err = 0;

	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return bad_url(url, "it has spaces or control characters");
	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return bad_url(url, strstr(url, "://") ? "only http and https are supported" : "no http:// or https://");
	if (!(u = curl_url()))
		return cp_error(ENOMEM, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		err = bad_url(url, "it cannot be parsed");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
		err = bad_url(url, "only http and https are supported");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		err = bad_url(url, "no host");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK) {
		err = bad_url(url, "a query ('?...') has no place in it");
		goto out;
	}
	curl_free(part);
	part = NULL;
	if (curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK) {
		err = bad_url(url, "a fragment ('#...') has no place in it");
		goto out;
	}
out:
	curl_free(part);
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return err;
}

struct cp_http_client *cp_http_client_new(const char *base_url, const char *token, long timeout_ms)
{
	struct cp_http_client *c = NULL;
	size_t n;
	int err;

	if (!base_url) {
		err = cp_error(EINVAL, "no server URL");
		goto fail;
	}
	if ((err = cp_http_check_url(base_url)))
		goto fail;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		err = cp_error(EIO, "cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
		goto fail;
	}
	if (token) {
		for (const char *p = token; *p; p++)
			if ((unsigned char)*p < ' ' || *p == 0x7f) {
				err = cp_error(EINVAL, "the token has control characters");
				goto fail;
			}
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->base = strdup(base_url)) || !(c->h = curl_easy_init()) ||
	    (token && *token && asprintf(&c->auth, "Authorization: Bearer %s", token) < 0)) {
		if (c)
			c->auth = NULL;
		err = cp_error(ENOMEM, "out of memory");
		goto fail;
	}
	n = strlen(c->base);
	while (n > 0 && c->base[n - 1] == '/' && c->base[n - 2] != '/')
		c->base[--n] = '\0';
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	return c;
fail:
	cp_http_client_free(c);
	errno = -err;
	return NULL;
}

void cp_http_client_free(struct cp_http_client *c)
{
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	free(c->base);
	free(c->auth);
	free(c);
}

void cp_http_client_set_timeout(struct cp_http_client *c, long timeout_ms)
{
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

const char *cp_http_client_url(const struct cp_http_client *c)
{
	return c->base;
}

struct sink {
	char *buf;
	size_t len, cap;
	bool too_big, nomem;
};

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sink *s = arg;
	size_t n = size * nmemb;

	if (s->len + n + 1 > CP_HTTP_MAX_RESPONSE) {
		s->too_big = true;
		return 0;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 16384;
		char *b;

		while (cap < s->len + n + 1)
			cap *= 2;
		if (!(b = realloc(s->buf, cap))) {
			s->nomem = true;
			return 0;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return n;
}

/* the reason a request got no answer, as a one-line message */
static int transport_error(struct cp_http_client *c, CURLcode rc, const struct sink *s)
{
	const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
	long oserr = 0;

	if (s->too_big)
		return cp_error(EFBIG, "the answer of %s is larger than %zu MiB", c->base, CP_HTTP_MAX_RESPONSE >> 20);
	if (s->nomem || rc == CURLE_OUT_OF_MEMORY)
		return cp_error(ENOMEM, "out of memory reading the answer of %s", c->base);
	curl_easy_getinfo(c->h, CURLINFO_OS_ERRNO, &oserr);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		if (oserr <= 0)
			oserr = ECONNREFUSED;
		return cp_error((int)oserr, "cannot reach %s: %s (is cprof serve running there?)", c->base,
				strerror((int)oserr));
	case CURLE_COULDNT_RESOLVE_HOST:
		return cp_error(EHOSTUNREACH, "cannot reach %s: the host name does not resolve", c->base);
	case CURLE_COULDNT_RESOLVE_PROXY:
		return cp_error(EHOSTUNREACH, "cannot reach %s: the proxy's host name does not resolve (%s)", c->base,
				detail);
	case CURLE_OPERATION_TIMEDOUT:
		return cp_error(ETIMEDOUT, "cannot reach %s: no answer within %.1f s", c->base,
				(double)c->timeout_ms / 1000);
	case CURLE_GOT_NOTHING:
		return cp_error(ECONNRESET, "cannot reach %s: the server closed the connection without an answer",
				c->base);
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
		return cp_error(ECONNRESET, "cannot reach %s: the connection broke (%s)", c->base, detail);
	case CURLE_UNSUPPORTED_PROTOCOL:
		return cp_error(EPROTONOSUPPORT, "cannot reach %s: %s", c->base, detail);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
		return cp_error(EPROTO, "cannot reach %s: TLS failed: %s", c->base, detail);
	default:
		return cp_error(EIO, "cannot reach %s: %s", c->base, detail);
	}
}

int cp_http_request(struct cp_http_client *c, const char *method, const char *path_and_query,
		    const char *const *headers, const void *body, size_t len, struct cp_http_response *r)
{
	struct curl_slist *hl = NULL, *t;
	struct sink s = { NULL, 0, 0, false, false };
	bool has_type = false;
	char *url = NULL, *ct = NULL;
	const char *ca;
	CURLcode rc;
	int err = 0;

	memset(r, 0, sizeof(*r));
	if (asprintf(&url, "%s%s%s", c->base, path_and_query[0] == '/' ? "" : "/", path_and_query) < 0) {
		url = NULL;
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; headers && headers[i]; i++) {
		if (!strncasecmp(headers[i], "Content-Type:", 13))
			has_type = true;
		if (!(t = curl_slist_append(hl, headers[i]))) {
			err = -ENOMEM;
			goto out;
		}
		hl = t;
	}
	if (c->auth) {
		if (!(t = curl_slist_append(hl, c->auth))) {
			err = -ENOMEM;
			goto out;
		}
		hl = t;
	}
	if (!(t = curl_slist_append(hl, "Expect:"))) { /* no 100-continue round trip */
		err = -ENOMEM;
		goto out;
	}
	hl = t;
	if (body && !has_type) {
		if (!(t = curl_slist_append(hl, "Content-Type: application/octet-stream"))) {
			err = -ENOMEM;
			goto out;
		}
		hl = t;
	}
	/* a reset keeps the connection, the DNS and TLS session caches */
	curl_easy_reset(c->h);
	c->errbuf[0] = '\0';
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_USERAGENT, "cprof/" PACKAGE_VERSION);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c->h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c->h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* the certificate authorities of https://: the system's, or a file
	 * named as curl(1) and OpenSSL name it (for a private CA) */
	if ((ca = getenv("CURL_CA_BUNDLE")) && *ca)
		curl_easy_setopt(c->h, CURLOPT_CAINFO, ca);
	else if ((ca = getenv("SSL_CERT_FILE")) && *ca)
		curl_easy_setopt(c->h, CURLOPT_CAINFO, ca);
	if (c->timeout_ms) {
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
		curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
	}
	if (!strcmp(method, "GET")) {
		curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
	} else if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(c->h, CURLOPT_NOBODY, 1L);
	} else {
		if (strcmp(method, "POST"))
			curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(c->h, CURLOPT_POST, 1L);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body ? body : "");
	}
	rc = curl_easy_perform(c->h);
	if (rc != CURLE_OK) {
		err = transport_error(c, rc, &s);
		goto out;
	}
	if (!s.buf && !(s.buf = malloc(1))) {
		err = -ENOMEM;
		goto out;
	}
	s.buf[s.len] = '\0';
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &r->status);
	if (curl_easy_getinfo(c->h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct && !(r->content_type = strdup(ct))) {
		err = -ENOMEM;
		goto out;
	}
	r->body = s.buf;
	r->len = s.len;
	s.buf = NULL;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory");
	if (err)
		cp_http_response_release(r);
	curl_slist_free_all(hl);
	free(s.buf);
	free(url);
	return err;
}

void cp_http_response_release(struct cp_http_response *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->content_type);
	memset(r, 0, sizeof(*r));
}

char *cp_http_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *w = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			*w++ = (char)ch;
		} else {
			*w++ = '%';
			*w++ = hex[ch >> 4];
			*w++ = hex[ch & 15];
		}
	}
	*w = '\0';
	return out;
}

int cp_http_status_transient(long status)
{
	return status >= 500 || status == 429 || status == 408;
}

int cp_http_error_message(const struct cp_http_response *r)
{
	int e = r->status == 400 || r->status == 422 ? EINVAL :
		r->status == 401 || r->status == 403 ? EACCES :
		r->status == 404 ? ENOENT :
		r->status == 413 ? EFBIG :
		r->status == 429 || r->status == 503 ? EAGAIN :
		r->status >= 500 ? EIO : EPROTO;
	json_t *j = NULL, *m;
	char text[512];
	size_t n;

	if (r->status >= 200 && r->status < 300)
		return 0;
	text[0] = '\0';
	if (r->body && r->len && (j = json_loadb(r->body, r->len, 0, NULL)) && json_is_object(j) &&
	    (m = json_object_get(j, "error")) && json_is_string(m)) {
		snprintf(text, sizeof(text), "%s", json_string_value(m));
	} else if (r->body && r->len) {
		/* not our JSON (a proxy, another server): the start of the body */
		snprintf(text, sizeof(text), "%.200s", r->body);
	}
	json_decref(j);
	/* one line: cut at the first line break, trim */
	text[strcspn(text, "\r\n")] = '\0';
	for (n = strlen(text); n && isspace((unsigned char)text[n - 1]); n--)
		text[n - 1] = '\0';
	if (r->status == 401 && !text[0])
		snprintf(text, sizeof(text), "the server wants a token (--token-file)");
	if (!text[0])
		return cp_error(e, "the server answered HTTP %ld", r->status);
	return cp_error(e, "%s (HTTP %ld)", text, r->status);
}

int cp_read_token_file(const char *path, char **token)
{
	uint8_t *data = NULL;
	size_t len = 0, a = 0, b;
	int err = cp_read_file(path, 65536, &data, &len);

	*token = NULL;
	if (err) {
		if (err == -EFBIG)
			return cp_error(EFBIG, "the token file %s is too large for a token", path);
		return cp_error(-err, "cannot read the token file %s: %s", path, strerror(-err));
	}
	b = len;
	while (a < b && isspace(data[a]))
		a++;
	while (b > a && isspace(data[b - 1]))
		b--;
	if (a == b) {
		free(data);
		return cp_error(EINVAL, "the token file %s is empty", path);
	}
	for (size_t i = a; i < b; i++)
		if (data[i] < ' ' || data[i] == 0x7f) {
			free(data);
			return cp_error(EINVAL, "the token file %s holds more than one line (or control characters)", path);
		}
	*token = strndup((const char *)data + a, b - a);
	free(data);
	return *token ? 0 : cp_error(ENOMEM, "out of memory");
}

int cp_http_query_add(char **q, const char *name, const char *value)
{
	char *v = cp_http_escape(value), *n = cp_http_escape(name), *s = NULL;
	int err = 0;

	if (!v || !n || asprintf(&s, "%s%s%s=%s", *q ? *q : "", *q && **q ? "&" : "", n, v) < 0) {
		s = NULL;
		err = cp_error(ENOMEM, "out of memory");
	} else {
		free(*q);
		*q = s;
	}
	free(v);
	free(n);
	return err;
}
