/* SPDX-License-Identifier: MIT */
#include "selector.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "regex.h"

struct parser {
	const char *s, *p;
};

static int perr(const struct parser *ps, const char *what)
{
	return cp_error(EINVAL, "bad selector at column %zu: %s", (size_t)(ps->p - ps->s) + 1, what);
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n')
		ps->p++;
}

static int is_name_char(int c, bool first)
{
	return c == '_' || isalpha(c) || (!first && isdigit(c));
}

bool cp_label_name_valid(const char *s, size_t n)
{
	size_t i;

	if (!n || !is_name_char((unsigned char)s[0], true))
		return false;
	for (i = 1; i < n; i++)
		if (!is_name_char((unsigned char)s[i], false))
			return false;
	return true;
}

/* a part of a profile type: what a selector's TYPE can name */
static bool is_type_char(unsigned char c)
{
	return is_name_char(c, false) || c == '.' || c == '-';
}

bool cp_type_name_valid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_type_char((unsigned char)*s))
			return false;
	return true;
}

static int parse_string(struct parser *ps, char **out)
{
	char quote = *ps->p, *buf, *w;
	const char *start;

	if (quote != '"' && quote != '\'' && quote != '`')
		return perr(ps, "expected a quoted value");
	start = ++ps->p;
	buf = malloc(strlen(start) + 1);
	if (!buf)
		return cp_error(ENOMEM, "out of memory parsing the selector");
	for (w = buf; *ps->p && *ps->p != quote; ps->p++) {
		if (*ps->p == '\\' && quote != '`') {
			ps->p++;
			switch (*ps->p) {
			case 'n': *w++ = '\n'; break;
			case 't': *w++ = '\t'; break;
			case '\\': case '"': case '\'': *w++ = *ps->p; break;
			default:
				free(buf);
				return perr(ps, "unknown escape in a quoted value (use \\\\, \\\", \\n or \\t)");
			}
			continue;
		}
		*w++ = *ps->p;
	}
	if (*ps->p != quote) {
		free(buf);
		ps->p = start - 1;
		return perr(ps, "unterminated quoted value");
	}
	ps->p++;
	*w = '\0';
	*out = buf;
	return 0;
}

/* ps NULL: a matcher added without text (the message names no column) */
static int compile_re(struct parser *ps, struct cp_selector *sel, struct cp_matcher *m)
{
	char msg[160], buf[256];
	size_t off;
	int err;

	if (!sel->run && !(sel->run = cp_regex_run_new(NULL)))
		return cp_error(ENOMEM, "out of memory compiling the selector's regex");
	m->run = sel->run;
	/* whole values; '$' only at the very end, not before a final newline (as RE2) */
	if ((err = cp_regex_compile(m->value, CP_REGEX_WHOLE, &m->re, msg, sizeof(msg), &off)) == -EINVAL) {
		snprintf(buf, sizeof(buf), "bad regex \"%s\" for label %s: %s", m->value, m->name, msg);
		return ps ? perr(ps, buf) : cp_error(EINVAL, "bad selector: %s", buf);
	}
	return err;
}

static int parse_matcher(struct parser *ps, struct cp_selector *sel, struct cp_matcher *m)
{
	const char *start = ps->p;
	int err;

	if (!is_name_char((unsigned char)*ps->p, true))
		return perr(ps, "expected a label name");
	while (is_name_char((unsigned char)*ps->p, false))
		ps->p++;
	m->name = strndup(start, (size_t)(ps->p - start));
	if (!m->name)
		return cp_error(ENOMEM, "out of memory parsing the selector");
	skip_ws(ps);
	if (!strncmp(ps->p, "=~", 2)) {
		m->op = CP_MATCH_RE;
		ps->p += 2;
	} else if (!strncmp(ps->p, "!~", 2)) {
		m->op = CP_MATCH_NRE;
		ps->p += 2;
	} else if (!strncmp(ps->p, "!=", 2)) {
		m->op = CP_MATCH_NE;
		ps->p += 2;
	} else if (*ps->p == '=') {
		m->op = CP_MATCH_EQ;
		ps->p++;
	} else {
		return perr(ps, "expected =, !=, =~ or !~ after the label name");
	}
	skip_ws(ps);
	err = parse_string(ps, &m->value);
	if (!err && (m->op == CP_MATCH_RE || m->op == CP_MATCH_NRE))
		err = compile_re(ps, sel, m);
	return err;
}

int cp_selector_parse(const char *s, struct cp_selector **out)
{
	struct parser ps = { s, s };
	struct cp_selector *sel = calloc(1, sizeof(*sel));
	const char *start;
	int err = 0;

	if (!sel)
		return cp_error(ENOMEM, "out of memory parsing the selector '%.64s'", s);
	if (!(sel->src = strdup(s))) {
		err = -ENOMEM;
		goto out;
	}
	skip_ws(&ps);
	start = ps.p;
	while (*ps.p && *ps.p != '{' && *ps.p != ' ' && *ps.p != '\t' && *ps.p != '\n') {
		if (!is_type_char((unsigned char)*ps.p) && *ps.p != ':') {
			err = perr(&ps, "unexpected character in the profile type");
			goto out;
		}
		ps.p++;
	}
	if (ps.p > start && !(sel->type = strndup(start, (size_t)(ps.p - start)))) {
		err = -ENOMEM;
		goto out;
	}
	skip_ws(&ps);
	if (*ps.p == '{') {
		ps.p++;
		skip_ws(&ps);
		while (*ps.p != '}') {
			struct cp_matcher *nm;

			if (!*ps.p) {
				err = perr(&ps, "missing '}'");
				goto out;
			}
			nm = realloc(sel->matchers, (sel->n + 1) * sizeof(*nm));
			if (!nm) {
				err = -ENOMEM;
				goto out;
			}
			sel->matchers = nm;
			memset(&nm[sel->n], 0, sizeof(*nm));
			sel->n++;
			if ((err = parse_matcher(&ps, sel, &nm[sel->n - 1])))
				goto out;
			skip_ws(&ps);
			if (*ps.p == ',') {
				ps.p++;
				skip_ws(&ps);
			} else if (*ps.p != '}') {
				err = perr(&ps, *ps.p ? "expected ',' or '}'" : "missing '}'");
				goto out;
			}
		}
		ps.p++;
		skip_ws(&ps);
	}
	if (*ps.p) {
		err = perr(&ps, "unexpected text after the selector");
		goto out;
	}
	*out = sel;
	sel = NULL;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory");
	cp_selector_free(sel);
	return err;
}

static const char *const op_text[] = { "=", "!=", "=~", "!~" };

/* Appends s quoted as parse_string reads it back. */
static int put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
	return 0;
}

/* The text of the selector as it is now: TYPE{name op "value", ...}. */
static int rebuild_src(struct cp_selector *sel)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return cp_error(ENOMEM, "out of memory writing the selector's text");
	fputs(sel->type ? sel->type : "", f);
	fputc('{', f);
	for (size_t i = 0; i < sel->n; i++) {
		fprintf(f, "%s%s%s", i ? ", " : "", sel->matchers[i].name, op_text[sel->matchers[i].op]);
		put_quoted(f, sel->matchers[i].value);
	}
	fputc('}', f);
	if (fclose(f) || !buf) {
		free(buf);
		return cp_error(ENOMEM, "out of memory writing the selector's text");
	}
	free(sel->src);
	sel->src = buf;
	return 0;
}

int cp_selector_add_matcher(struct cp_selector *sel, const char *name, enum cp_match_op op, const char *value)
{
	struct cp_matcher *nm, *m;
	int err;

	if (!cp_label_name_valid(name, strlen(name)))
		return cp_error(EINVAL, "bad selector: '%s' is not a label name", name);
	if ((unsigned)op > CP_MATCH_NRE)
		return cp_error(EINVAL, "bad selector: unknown match operator %d", (int)op);
	if (!(nm = realloc(sel->matchers, (sel->n + 1) * sizeof(*nm))))
		return cp_error(ENOMEM, "out of memory");
	sel->matchers = nm;
	m = &nm[sel->n];
	memset(m, 0, sizeof(*m));
	m->op = op;
	if (!(m->name = strdup(name)) || !(m->value = strdup(value))) {
		err = -ENOMEM;
		goto out;
	}
	if ((op == CP_MATCH_RE || op == CP_MATCH_NRE) && (err = compile_re(NULL, sel, m)))
		goto out;
	sel->n++;
	if ((err = rebuild_src(sel))) {
		sel->n--;
		goto out;
	}
	return 0;
out:
	free(m->name);
	free(m->value);
	cp_regex_free(m->re);
	memset(m, 0, sizeof(*m));
	return err == -ENOMEM ? cp_error(ENOMEM, "out of memory") : err;
}

int cp_selector_add_any(struct cp_selector *sel, const char *name, const char *const *values, size_t n)
{
	char *re = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!n)
		return cp_error(EINVAL, "bad selector: no values for label %s", name);
	if (!(f = open_memstream(&re, &len)))
		return cp_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc('|', f);
		/* each value literally: a backslash before any ASCII punctuation or
		 * space makes it plain in PCRE2 (letters, digits and UTF-8 are) */
		for (const unsigned char *c = (const unsigned char *)values[i]; *c; c++) {
			if (*c < 0x80 && !isalnum(*c))
				fputc('\\', f);
			fputc(*c, f);
		}
	}
	if (fclose(f) || !re) {
		free(re);
		return cp_error(ENOMEM, "out of memory");
	}
	err = cp_selector_add_matcher(sel, name, CP_MATCH_RE, re);
	free(re);
	return err;
}

void cp_selector_free(struct cp_selector *sel)
{
	size_t i;

	if (!sel)
		return;
	for (i = 0; i < sel->n; i++) {
		free(sel->matchers[i].name);
		free(sel->matchers[i].value);
		cp_regex_free(sel->matchers[i].re);
	}
	free(sel->matchers);
	cp_regex_run_free(sel->run);
	free(sel->type);
	free(sel->src);
	free(sel);
}

const char *cp_type_name_canonical(const char *name, size_t *len)
{
	if (*len == 3 && !strncmp(name, "cpu", 3)) {
		*len = strlen("process_cpu");
		return "process_cpu";
	}
	return name;
}

bool cp_selector_match_type(const struct cp_selector *sel, const char *type)
{
	size_t sn, tn, n;
	const char *sname, *tname;

	if (!sel->type)
		return true;
	/* the names, as they stand */
	sn = strcspn(sel->type, ":");
	tn = strcspn(type, ":");
	sname = cp_type_name_canonical(sel->type, &sn);
	tname = cp_type_name_canonical(type, &tn);
	if (sn != tn || strncmp(sname, tname, sn))
		return false;
	/* then the rest, a prefix of whole components */
	sname = sel->type + strcspn(sel->type, ":");
	tname = type + strcspn(type, ":");
	n = strlen(sname);
	return !strncmp(tname, sname, n) && (tname[n] == '\0' || tname[n] == ':');
}

void cp_selector_begin(const struct cp_selector *sel)
{
	if (sel->run)
		cp_regex_run_reset(sel->run);
}

int cp_matcher_match(const struct cp_matcher *m, const char *value)
{
	int hit;

	if (!value)
		value = "";
	switch (m->op) {
	case CP_MATCH_EQ:
		return !strcmp(value, m->value);
	case CP_MATCH_NE:
		return strcmp(value, m->value) != 0;
	default:
		if ((hit = cp_regex_match(m->run, m->re, value, strlen(value))) < 0)
			return hit == -CP_REGEX_ECOST ? cp_error_ctx(CP_REGEX_ECOST, "label %s", m->name) : hit;
		return m->op == CP_MATCH_RE ? hit : !hit;
	}
}

static const char *label_of(const char *name, const char *const *names, const char *const *values, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (!strcmp(names[j], name))
			return values[j];
	return NULL;
}

int cp_selector_match_labels(const struct cp_selector *sel, const char *const *names, const char *const *values,
			     size_t n)
{
	int hit;

	for (size_t i = 0; i < sel->n; i++)
		if ((hit = cp_matcher_match(&sel->matchers[i], label_of(sel->matchers[i].name, names, values, n))) <= 0)
			return hit;
	return 1;
}

int cp_selector_match_series(const struct cp_selector *sel, const char *const *names, const char *const *values,
			     size_t n, uint64_t mask, uint64_t *deferred)
{
	int hit;

	*deferred = 0;
	for (size_t i = 0; i < sel->n; i++) {
		const char *v = label_of(sel->matchers[i].name, names, values, n);

		if (!v && i < 64 && (mask >> i & 1)) {
			*deferred |= (uint64_t)1 << i;
			continue;
		}
		if ((hit = cp_matcher_match(&sel->matchers[i], v)) <= 0)
			return hit;
	}
	return 1;
}

int cp_selector_match_sample(const struct cp_selector *sel, uint64_t mask, const char *const *names,
			     const char *const *values, size_t n)
{
	int hit;

	for (size_t i = 0; i < sel->n && i < 64; i++)
		if ((mask >> i & 1) && (hit = cp_matcher_match(&sel->matchers[i], label_of(sel->matchers[i].name, names, values, n))) <= 0)
			return hit;
	return 1;
}

int cp_parse_duration(const char *s, int64_t *nanos)
{
	static const struct {
		const char *unit;
		int64_t ns;
	} units[] = {
		{ "ms", 1000000LL }, { "s", 1000000000LL }, { "m", 60000000000LL }, { "h", 3600000000000LL },
		{ "d", 86400000000000LL }, { "w", 604800000000000LL }, { "y", 31536000000000000LL },
	};
	const char *p = s;
	int64_t total = 0;

	if (!*p)
		return cp_error(EINVAL, "empty duration (expected e.g. 30s, 15m, 1h30m, 7d)");
	while (*p) {
		char *end;
		unsigned long long v;
		size_t i, best = 0, bestlen = 0;

		if (!isdigit((unsigned char)*p))
			return cp_error(EINVAL, "bad duration '%s' (expected e.g. 30s, 15m, 1h30m, 7d)", s);
		errno = 0;
		v = strtoull(p, &end, 10);
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].unit);

			if (!strncmp(end, units[i].unit, l) && l > bestlen) {
				best = i;
				bestlen = l;
			}
		}
		if (!bestlen)
			return cp_error(EINVAL, "bad duration '%s': a number needs a unit (ms, s, m, h, d, w, y)", s);
		if (errno || v > (unsigned long long)(INT64_MAX / units[best].ns) ||
		    total > INT64_MAX - (int64_t)v * units[best].ns)
			return cp_error(ERANGE, "duration '%s' is too long", s);
		total += (int64_t)v * units[best].ns;
		p = end + bestlen;
	}
	*nanos = total;
	return 0;
}

int64_t cp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* what cp_parse_time() takes: nanoseconds since the epoch in an int64 */
#define RANGE "times go from 1677-09-21 to 2262-04-11"

int cp_parse_time(const char *s, int64_t now_ns, int64_t *ns)
{
	struct tm tm;
	const char *p;
	char *end;
	int64_t d;
	long frac_ns = 0;
	time_t t;
	size_t digits;
	int err = 0;

	if (!strncmp(s, "now", 3)) {
		if (!s[3]) {
			*ns = now_ns;
			return 0;
		}
		if ((s[3] == '-' || s[3] == '+') && (err = cp_parse_duration(s + 4, &d)) == -ERANGE)
			return cp_error(ERANGE, "time '%s' is out of range (%s)", s, RANGE);
		if ((s[3] == '-' || s[3] == '+') && !err) {
			if (s[3] == '-' ? now_ns < INT64_MIN + d : now_ns > INT64_MAX - d)
				return cp_error(ERANGE, "time '%s' is out of range (%s)", s, RANGE);
			*ns = s[3] == '-' ? now_ns - d : now_ns + d;
			return 0;
		}
		return cp_error(EINVAL, "bad time '%s' (expected now, now-30m, RFC 3339 or unix seconds)", s);
	}
	for (digits = 0; isdigit((unsigned char)s[digits]); digits++)
		;
	if (digits && !s[digits]) {
		unsigned long long v;
		int64_t scale = digits <= 10 ? 1000000000LL : digits <= 13 ? 1000000LL : digits <= 16 ? 1000LL : 1;

		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || digits > 19)
			return cp_error(EINVAL, "bad time '%s': too many digits", s);
		if (v > (unsigned long long)(INT64_MAX / scale))
			return cp_error(ERANGE, "time '%s' is out of range (%s)", s, RANGE);
		*ns = (int64_t)v * scale;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		p = strptime(s, "%Y-%m-%dt%H:%M:%S", &tm);
	if (!p)
		p = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (!p) {
		memset(&tm, 0, sizeof(tm));
		p = strptime(s, "%Y-%m-%d", &tm);
		if (p && *p)
			p = NULL;
	}
	if (!p)
		return cp_error(EINVAL, "bad time '%s' (expected RFC 3339 like 2026-11-22T10:00:00Z, unix seconds, or now-30m)", s);
	if (*p == '.') {
		long scale = 100000000;

		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			frac_ns += (*p - '0') * scale;
	}
	t = timegm(&tm);
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
		   p[3] == ':' && isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
		long off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;

		t -= *p == '+' ? off : -off;
		p += 6;
	}
	if (*p)
		return cp_error(EINVAL, "bad time '%s': unexpected '%s' at the end", s, p);
	if (t >= INT64_MAX / 1000000000LL || t <= INT64_MIN / 1000000000LL)
		return cp_error(ERANGE, "time '%s' is out of range (%s)", s, RANGE);
	*ns = (int64_t)t * 1000000000LL + frac_ns;
	return 0;
}

/* floor(a / d) for d > 0 (C division truncates towards zero) */
static int64_t floor_div(int64_t a, int64_t d)
{
	int64_t q = a / d;

	return a % d < 0 ? q - 1 : q;
}

int cp_buckets_align(int64_t from, int64_t to, int64_t step, struct cp_buckets *b)
{
	int64_t qf, qt;
	uint64_t n;

	if (step <= 0)
		return cp_error(EINVAL, "the step must be positive");
	if (to < from)
		return cp_error(EINVAL, "the time range is empty: from is after to");
	qf = floor_div(from, step);
	qt = floor_div(to, step);
	n = (uint64_t)qt - (uint64_t)qf + 1;
	if (n > CP_BUCKETS_MAX)
		return cp_error(EINVAL, "that is more than %d steps: use a larger step", CP_BUCKETS_MAX);
	if (__builtin_mul_overflow(qf, step, &b->start))
		return cp_error(EINVAL, "the time range is out of bounds");
	b->step = step;
	b->n = (size_t)n;
	return 0;
}

int64_t cp_buckets_end(const struct cp_buckets *b)
{
	/* n * step alone may pass INT64_MAX when start is negative */
	__int128 end = (__int128)b->start + (__int128)b->n * b->step;

	return end > INT64_MAX ? INT64_MAX : (int64_t)end;
}

ssize_t cp_buckets_index(const struct cp_buckets *b, int64_t t)
{
	uint64_t k;

	if (t < b->start || b->step <= 0)
		return -1;
	k = ((uint64_t)t - (uint64_t)b->start) / (uint64_t)b->step;
	return k < b->n ? (ssize_t)k : -1;
}

int64_t cp_buckets_default_step(int64_t from, int64_t to)
{
	uint64_t step = to > from ? ((uint64_t)to - (uint64_t)from) / 60 : 0;

	step -= step % 1000000000;
	return step < 1000000000 ? 1000000000 : step > INT64_MAX ? INT64_MAX : (int64_t)step;
}
