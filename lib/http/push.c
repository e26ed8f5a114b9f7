/* SPDX-License-Identifier: MIT */
#include "push.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"
#include "../selector.h"
#include "../util.h"
#include "client.h"

/* A spool entry is the file DIR/<20-digit time>.push:
 *   "cprof-push 1 <body length>\n" <query> "\n" <body>
 * or, for a push with headers of its own (Content-Type...):
 *   "cprof-push 2 <body length>\n" <query> "\n" (<header> "\n")* "\n" <body>
 * Names sort in the order the pushes were made. */
#define SPOOL_MAGIC "cprof-push 1 "
#define SPOOL_MAGIC2 "cprof-push 2 "
#define ENTRY_HEADERS 4 /* a push's own headers, at most */
#define SPOOL_SUFFIX ".push"
#define BACKOFF_MIN_NS 1000000000LL
#define BACKOFF_MAX_NS 30000000000LL

struct entry {
	char name[32];
	uint64_t size;
};

struct cp_pusher {
	struct cp_http_client *c;
	char *dir; /* NULL: no spool */
	int dir_fd, lock_fd;
	uint64_t max;
	struct entry *e; /* the spool, oldest first: e[head..n) */
	size_t head, n, cap;
	uint64_t last_t;
	int64_t next_try, backoff;
	struct cp_pusher_stats st;
	char *last_error;
	int last_errno;
	char *headers[5]; /* NULL-terminated */
};


static void set_last_error(struct cp_pusher *p, int err)
{
	char *m = strdup(cp_errmsg(err));

	if (m) {
		free(p->last_error);
		p->last_error = m;
	}
	p->last_errno = err;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static bool is_entry_name(const char *name, uint64_t *t)
{
	size_t n = strlen(name), sl = strlen(SPOOL_SUFFIX);
	char *end;

	if (n != 20 + sl || strcmp(name + 20, SPOOL_SUFFIX) || strspn(name, "0123456789") != 20)
		return false;
	*t = strtoull(name, &end, 10);
	return true;
}

static int add_entry(struct cp_pusher *p, const char *name, uint64_t size)
{
	if (p->head && p->head == p->n) {
		p->head = p->n = 0;
	} else if (p->head > 64 && p->head * 2 > p->n) {
		memmove(p->e, p->e + p->head, (p->n - p->head) * sizeof(*p->e));
		p->n -= p->head;
		p->head = 0;
	}
	if (cp_grow((void **)&p->e, &p->cap, p->n + 1, sizeof(*p->e)))
		return cp_error(ENOMEM, "out of memory");
	snprintf(p->e[p->n].name, sizeof(p->e[p->n].name), "%s", name);
	p->e[p->n++].size = size;
	p->st.pending++;
	p->st.pending_bytes += size;
	return 0;
}

/* the oldest entry leaves the spool (sent, dropped or unreadable) */
static void pop_entry(struct cp_pusher *p)
{
	unlinkat(p->dir_fd, p->e[p->head].name, 0);
	p->st.pending--;
	p->st.pending_bytes -= p->e[p->head].size;
	p->head++;
}

static int scan_spool(struct cp_pusher *p)
{
	DIR *d = fdopendir(dup(p->dir_fd));
	struct dirent *de;
	struct stat sb;
	uint64_t t;
	int err = 0;

	if (!d)
		return cp_error(errno, "cannot read the spool directory %s: %s", p->dir, strerror(errno));
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, ".tmp-", 5)) { /* a write that did not finish */
			unlinkat(p->dir_fd, de->d_name, 0);
			continue;
		}
		if (!is_entry_name(de->d_name, &t) || fstatat(p->dir_fd, de->d_name, &sb, 0) < 0 || !S_ISREG(sb.st_mode))
			continue;
		if ((err = add_entry(p, de->d_name, (uint64_t)sb.st_size)))
			break;
		if (t > p->last_t)
			p->last_t = t;
	}
	closedir(d);
	if (!err && p->n > p->head)
		cp_qsort(p->e + p->head, p->n - p->head, sizeof(*p->e), entry_cmp);
	return err;
}

struct cp_pusher *cp_pusher_new(const char *url, const char *token, const char *spool_dir, size_t max_spool_bytes)
{
	struct cp_pusher *p = calloc(1, sizeof(*p));
	char path[4096];
	int err = 0;

	if (!p) {
		errno = ENOMEM;
		cp_error(ENOMEM, "out of memory");
		return NULL;
	}
	p->dir_fd = p->lock_fd = -1;
	p->max = max_spool_bytes;
	p->backoff = BACKOFF_MIN_NS;
	if (!(p->c = cp_http_client_new(url, token, CP_PUSH_TIMEOUT_MS))) {
		err = -errno;
		goto out;
	}
	if (!spool_dir)
		goto out;
	if (!(p->dir = strdup(spool_dir))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	if ((err = cp_mkdirs(spool_dir, 0700))) {
		cp_error_ctx(-err, "the spool");
		goto out;
	}
	p->dir_fd = open(spool_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dir_fd < 0) {
		err = cp_error(errno, "cannot open the spool directory %s: %s", spool_dir, strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/.lock", spool_dir);
	p->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (p->lock_fd < 0) {
		err = cp_error(errno, "cannot create %s: %s", path, strerror(errno));
		goto out;
	}
	if (flock(p->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ?
			      cp_error(EBUSY, "the spool %s is in use by another cprof; give each one its own --spool DIR",
				       spool_dir) :
			      cp_error(errno, "cannot lock %s: %s", path, strerror(errno));
		goto out;
	}
	err = scan_spool(p);
out:
	if (err) {
		cp_pusher_free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

void cp_pusher_free(struct cp_pusher *p)
{
	if (!p)
		return;
	cp_http_client_free(p->c);
	if (p->lock_fd >= 0)
		close(p->lock_fd); /* releases the lock */
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	free(p->e);
	free(p->dir);
	free(p->last_error);
	for (size_t i = 0; p->headers[i]; i++)
		free(p->headers[i]);
	free(p);
}

int cp_pusher_set_headers(struct cp_pusher *p, const char *const *headers, size_t n)
{
	if (n >= sizeof(p->headers) / sizeof(p->headers[0]))
		return cp_error(E2BIG, "at most %zu extra headers", sizeof(p->headers) / sizeof(p->headers[0]) - 1);
	for (size_t i = 0; p->headers[i]; i++) {
		free(p->headers[i]);
		p->headers[i] = NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!(p->headers[i] = strdup(headers[i])))
			return cp_error(ENOMEM, "out of memory");
	return 0;
}

/* 0: stored; 1: try again later (the reason in last_error); -errno: the
 * server refused it (4xx) */
static int send_one(struct cp_pusher *p, const char *query, const char *const *hdrs, const void *body, size_t len)
{
	const char *all[sizeof(p->headers) / sizeof(p->headers[0]) + ENTRY_HEADERS];
	struct cp_http_response r;
	char *path = NULL;
	size_t n = 0;
	int err;

	for (size_t i = 0; p->headers[i]; i++)
		all[n++] = p->headers[i];
	for (size_t i = 0; hdrs && hdrs[i] && i < ENTRY_HEADERS; i++)
		all[n++] = hdrs[i];
	all[n] = NULL;

	if (*query == '/' ? !(path = strdup(query)) : asprintf(&path, "/api/v1/push%s%s", *query ? "?" : "", query) < 0)
		return cp_error(ENOMEM, "out of memory");
	err = cp_http_request(p->c, "POST", path, all, body, len, &r);
	free(path);
	if (err) { /* no answer */
		set_last_error(p, err);
		return 1;
	}
	err = cp_http_error_message(&r);
	if (err && cp_http_status_transient(r.status)) {
		cp_error_ctx(-err, "%s", cp_http_client_url(p->c));
		set_last_error(p, err);
		err = 1;
	}
	cp_http_response_release(&r);
	return err;
}

/* Refusals that are the entry's own (a body or labels the server does not
 * take): dropping it lets the rest through.  Others (401, 403, 404...) are
 * the server's or the configuration's: everything would get them. */
static bool entry_refused(int err)
{
	return err == -EINVAL || err == -EFBIG;
}

static void backoff(struct cp_pusher *p)
{
	p->next_try = cp_mono_ns() + p->backoff;
	p->backoff = p->backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : p->backoff * 2;
}

static void delivered(struct cp_pusher *p)
{
	p->st.sent++;
	p->next_try = 0;
	p->backoff = BACKOFF_MIN_NS;
}

/* the entry's query, headers (NULL-terminated, ENTRY_HEADERS at most) and body, from its file */
static int read_entry(struct cp_pusher *p, const struct entry *e, uint8_t **data, char **query,
		      char *hdrs[ENTRY_HEADERS + 1], uint8_t **body, size_t *blen)
{
	char path[4200], *nl, *end;
	size_t len = 0, ml = strlen(SPOOL_MAGIC), nh = 0;
	unsigned long long want;
	bool v2;
	int err;

	hdrs[0] = NULL;
	snprintf(path, sizeof(path), "%s/%s", p->dir, e->name);
	if ((err = cp_read_file(path, CP_HTTP_MAX_RESPONSE, data, &len)))
		return err;
	if (len < ml || (memcmp(*data, SPOOL_MAGIC, ml) && memcmp(*data, SPOOL_MAGIC2, ml)) ||
	    !(nl = memchr(*data, '\n', len)))
		return cp_error(EBADMSG, "%s is not a spooled push", path);
	v2 = !memcmp(*data, SPOOL_MAGIC2, ml);
	errno = 0;
	want = strtoull((char *)*data + ml, &end, 10);
	if (errno || end != nl)
		return cp_error(EBADMSG, "%s is not a spooled push", path);
	*query = nl + 1;
	if (!(nl = memchr(*query, '\n', len - (size_t)((uint8_t *)*query - *data))))
		return cp_error(EBADMSG, "%s is not a spooled push", path);
	*nl = '\0';
	while (v2) { /* header lines up to an empty one */
		char *h = nl + 1;

		if (!(nl = memchr(h, '\n', len - (size_t)((uint8_t *)h - *data))) || (nl > h && nh == ENTRY_HEADERS))
			return cp_error(EBADMSG, "%s is not a spooled push", path);
		*nl = '\0';
		if (nl == h)
			break;
		hdrs[nh++] = h;
		hdrs[nh] = NULL;
	}
	*body = (uint8_t *)nl + 1;
	*blen = len - (size_t)(*body - *data);
	if (*blen != want)
		return cp_error(EBADMSG, "%s is cut short (%zu of %llu bytes)", path, *blen, want);
	return 0;
}

/* Send the spool, oldest first: 0 when empty, CP_PUSH_SPOOLED when the
 * server failed, -errno when it refuses everything (401, 404...). */
static int drain(struct cp_pusher *p)
{
	while (p->head < p->n) {
		uint8_t *data = NULL, *body = NULL;
		char *query = NULL, *hdrs[ENTRY_HEADERS + 1];
		size_t blen = 0;
		int err = read_entry(p, &p->e[p->head], &data, &query, hdrs, &body, &blen);

		if (err) {
			p->st.corrupt++;
			set_last_error(p, err);
			pop_entry(p);
			free(data);
			continue;
		}
		err = send_one(p, query, (const char *const *)hdrs, body, blen);
		free(data);
		if (err == 1) {
			backoff(p);
			return CP_PUSH_SPOOLED;
		}
		if (err && !entry_refused(err)) {
			set_last_error(p, err);
			return err;
		}
		if (err) {
			p->st.rejected++;
			cp_error_ctx(-err, "the server refused a spooled push (dropped)");
			set_last_error(p, err);
		} else {
			p->st.resent++;
			delivered(p);
		}
		pop_entry(p);
	}
	return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *d = data;

	while (len) {
		ssize_t w = write(fd, d, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		d += w;
		len -= (size_t)w;
	}
	return 0;
}

static int spool(struct cp_pusher *p, const char *query, const char *const *hdrs, const void *body, size_t len)
{
	char hdr[64], tmp[4200], name[32], sz[32];
	size_t qlen = strlen(query), hl = 0;
	int hlen = snprintf(hdr, sizeof(hdr), "%s%zu\n", hdrs && *hdrs ? SPOOL_MAGIC2 : SPOOL_MAGIC, len), fd, err;
	uint64_t size, t;

	for (size_t i = 0; hdrs && hdrs[i]; i++)
		hl += strlen(hdrs[i]) + 1;
	if (hdrs && *hdrs)
		hl++;
	size = (uint64_t)hlen + qlen + 1 + hl + len;

	if (size > p->max) {
		p->st.dropped++;
		p->st.dropped_bytes += size;
		return cp_error(EFBIG, "cannot spool a push of %" PRIu64 " bytes: the spool holds %s at most (dropped it)",
				size, cp_size_str(p->max, sz, sizeof(sz)));
	}
	while (p->head < p->n && p->st.pending_bytes + size > p->max) {
		p->st.dropped++;
		p->st.dropped_bytes += p->e[p->head].size;
		pop_entry(p);
	}
	snprintf(tmp, sizeof(tmp), "%s/.tmp-XXXXXX", p->dir);
	fd = mkstemp(tmp);
	if (fd < 0)
		return cp_error(errno, "cannot spool to %s: %s", p->dir, strerror(errno));
	if ((err = write_all(fd, hdr, (size_t)hlen)) || (err = write_all(fd, query, qlen)) ||
	    (err = write_all(fd, "\n", 1))) {
		close(fd);
		unlink(tmp);
		return cp_error(-err, "cannot spool to %s: %s", p->dir, strerror(-err));
	}
	for (size_t i = 0; hdrs && hdrs[i] && !err; i++)
		if (!(err = write_all(fd, hdrs[i], strlen(hdrs[i]))))
			err = write_all(fd, "\n", 1);
	if (!err && hdrs && *hdrs)
		err = write_all(fd, "\n", 1);
	if (err || (err = write_all(fd, body, len)) || (fsync(fd) < 0 && (err = -errno))) {
		close(fd);
		unlink(tmp);
		return cp_error(-err, "cannot spool to %s: %s", p->dir, strerror(-err));
	}
	if (close(fd) < 0) {
		err = -errno;
		unlink(tmp);
		return cp_error(-err, "cannot spool to %s: %s", p->dir, strerror(-err));
	}
	/* a name after every entry there is, in time order */
	t = (uint64_t)cp_now_ns();
	if (t <= p->last_t)
		t = p->last_t + 1;
	p->last_t = t;
	snprintf(name, sizeof(name), "%020" PRIu64 SPOOL_SUFFIX, t);
	if (renameat(AT_FDCWD, tmp, p->dir_fd, name) < 0) {
		err = -errno;
		unlink(tmp);
		return cp_error(-err, "cannot spool to %s: %s", p->dir, strerror(-err));
	}
	fsync(p->dir_fd); /* the rename itself is durable */
	if ((err = add_entry(p, name, size))) {
		unlinkat(p->dir_fd, name, 0);
		return err;
	}
	p->st.spooled++;
	return CP_PUSH_SPOOLED;
}

int cp_pusher_push(struct cp_pusher *p, const char *query, const void *body, size_t len)
{
	return cp_pusher_push_with(p, query, NULL, body, len);
}

int cp_pusher_push_with(struct cp_pusher *p, const char *query, const char *const *headers, const void *body,
			size_t len)
{
	size_t nh = 0;
	int err;

	if (!query)
		query = "";
	if (strchr(query, '\n') || strchr(query, ' '))
		return cp_error(EINVAL, "a push query must be URL-encoded");
	for (; headers && headers[nh]; nh++)
		if (!*headers[nh] || strpbrk(headers[nh], "\r\n") || nh == ENTRY_HEADERS)
			return cp_error(EINVAL, "a push takes at most %d headers of its own, each one line", ENTRY_HEADERS);
	if (p->dir && p->head < p->n) {
		/* the spool goes first: the server takes pushes in order */
		if (cp_mono_ns() < p->next_try)
			return spool(p, query, headers, body, len);
		err = drain(p);
		if (err < 0)
			return err;
		if (err == CP_PUSH_SPOOLED)
			return spool(p, query, headers, body, len);
	}
	err = send_one(p, query, headers, body, len);
	if (err == 0) {
		delivered(p);
		return 0;
	}
	if (err < 0)
		return err;
	if (!p->dir) /* nowhere to keep it */
		return cp_error(-p->last_errno, "%s", p->last_error ? p->last_error : "the push failed");
	backoff(p);
	return spool(p, query, headers, body, len);
}

int cp_pusher_flush(struct cp_pusher *p)
{
	if (!p->dir)
		return 0;
	return drain(p);
}

int cp_pusher_retry(struct cp_pusher *p)
{
	if (!p->dir || p->head == p->n)
		return 0;
	if (cp_mono_ns() < p->next_try)
		return CP_PUSH_SPOOLED;
	return drain(p);
}

void cp_pusher_stats(const struct cp_pusher *p, struct cp_pusher_stats *st)
{
	*st = p->st;
}

const char *cp_pusher_last_error(const struct cp_pusher *p)
{
	return p->last_error;
}

const char *cp_pusher_url(const struct cp_pusher *p)
{
	return cp_http_client_url(p->c);
}

const char *cp_pusher_spool_dir(const struct cp_pusher *p)
{
	return p->dir;
}
