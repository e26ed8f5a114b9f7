/* SPDX-License-Identifier: MIT */
/* The HTTP client under --remote (and scrape): libcurl, one easy handle per
 * client so that requests to one server reuse its connection (keep-alive).
 * A client is for one thread at a time. */
#ifndef CP_HTTP_CLIENT_H
#define CP_HTTP_CLIENT_H

#include <stddef.h>

struct cp_http_client;

struct cp_http_response {
	long status;        /* the HTTP status */
	char *body;         /* malloc'ed, NUL-terminated (the NUL is not counted in len) */
	size_t len;
	char *content_type; /* malloc'ed, or NULL when the server sent none */
};

/* The largest answer a request takes (more is an error). */
#define CP_HTTP_MAX_RESPONSE ((size_t)1 << 30)

/* A client for base_url ("http://HOST[:PORT][/PREFIX]" or https://; a
 * trailing '/' is dropped); token (may be NULL) goes as "Authorization:
 * Bearer TOKEN"; timeout_ms bounds each request as a whole (0: none).
 * https:// servers are verified against the system's certificate
 * authorities, or those in $CURL_CA_BUNDLE or $SSL_CERT_FILE.
 * NULL + errno, the reason in cp_errmsg() (EINVAL: not an http(s) URL). */
struct cp_http_client *cp_http_client_new(const char *base_url, const char *token, long timeout_ms);
void cp_http_client_free(struct cp_http_client *c);
/* Is url one cp_http_client_new takes? 0 or -EINVAL with the reason. */
int cp_http_check_url(const char *url);
/* Changes the time each request may take (0: none). */
void cp_http_client_set_timeout(struct cp_http_client *c, long timeout_ms);
/* The base URL, as given (without a trailing '/'). */
const char *cp_http_client_url(const struct cp_http_client *c);

/* One request: METHOD base_url + path_and_query, with the extra headers
 * (NULL-terminated "Name: value" strings; may be NULL) and a body (NULL, 0:
 * none).  0 when the server answered, whatever the status (r filled: release
 * it); -errno with a one-line message naming the URL when it could not be
 * reached or the answer was cut (r is then empty). */
int cp_http_request(struct cp_http_client *c, const char *method, const char *path_and_query,
		    const char *const *headers, const void *body, size_t len, struct cp_http_response *r);
void cp_http_response_release(struct cp_http_response *r);

/* s URL-encoded (everything but A-Z a-z 0-9 - . _ ~); malloc'ed, NULL + errno. */
char *cp_http_escape(const char *s);
/* Appends name=value (both escaped) to the query *q (malloc'ed; NULL: empty), with & between:
 * 0 or -ENOMEM with the message. */
int cp_http_query_add(char **q, const char *name, const char *value);

/* For an answer outside 2xx: records the server's {"error": "..."} text (or
 * the start of the body) with the status as the cp_error message and
 * returns -errno for it (400, 422: EINVAL; 401, 403: EACCES; 404: ENOENT;
 * 413: EFBIG; 429, 503: EAGAIN; 5xx: EIO; else EPROTO).  0 for 2xx. */
int cp_http_error_message(const struct cp_http_response *r);

/* Is the status worth trying again later (5xx, 429)? */
int cp_http_status_transient(long status);

/* Reads a token file: the token is its content without surrounding
 * whitespace.  *token is malloc'ed.  0 or -errno with a clear message when
 * the file cannot be read, is empty or holds more than one line. */
int cp_read_token_file(const char *path, char **token);

#endif
