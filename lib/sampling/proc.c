/* SPDX-License-Identifier: MIT */
#include "proc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"
#include "../index.h"
#include "../util.h"

struct node {
	struct cp_proc p;
	struct node *next;
};

#define NBUCKETS 4096
#define PATH_BUCKETS 1024

struct map_path;

struct cp_procs {
	struct node *b[NBUCKETS];
	size_t n;
	struct map_path *paths[PATH_BUCKETS]; /* the mappings' paths (path_new) */
};

struct cp_procs *cp_procs_new(void)
{
	return calloc(1, sizeof(struct cp_procs));
}

static void maps_release(struct cp_proc *p);

static void proc_release(struct cp_proc *p)
{
	maps_release(p);
	free(p->exe);
	free(p->container);
	free(p->unit);
	free(p->pod);
	if (p->jit) {
		cp_perfmap_release(p->jit);
		free(p->jit);
	}
}

void cp_procs_free(struct cp_procs *t, void (*free_user)(void *))
{
	if (!t)
		return;
	for (size_t i = 0; i < NBUCKETS; i++) {
		struct node *n = t->b[i], *next;

		for (; n; n = next) {
			next = n->next;
			if (free_user && n->p.user)
				free_user(n->p.user);
			proc_release(&n->p);
			free(n);
		}
	}
	free(t);
}

struct cp_proc *cp_procs_get(struct cp_procs *t, uint32_t pid, bool create)
{
	struct node **b = &t->b[pid % NBUCKETS], *n;

	for (n = *b; n; n = n->next)
		if (n->p.pid == pid)
			return &n->p;
	if (!create) {
		errno = ENOENT;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->p.pid = pid;
	n->p.table = t;
	n->next = *b;
	*b = n;
	t->n++;
	return &n->p;
}

void cp_procs_remove(struct cp_procs *t, uint32_t pid, void (*free_user)(void *))
{
	struct node **b = &t->b[pid % NBUCKETS], *n;

	for (; (n = *b); b = &n->next) {
		if (n->p.pid == pid) {
			*b = n->next;
			if (free_user && n->p.user)
				free_user(n->p.user);
			proc_release(&n->p);
			free(n);
			t->n--;
			return;
		}
	}
}

void cp_procs_each(struct cp_procs *t, void (*fn)(struct cp_proc *, void *), void *arg)
{
	for (size_t i = 0; i < NBUCKETS; i++) {
		struct node *n = t->b[i], *next;

		for (; n; n = next) {
			next = n->next;
			fn(&n->p, arg);
		}
	}
}

size_t cp_procs_count(const struct cp_procs *t)
{
	return t->n;
}

/* A mapping's path, one copy per table, counted: a storm maps the same
 * few dozen files (ld.so, libc, ...) into every program it execs, and a fork
 * shares its parent's.  Only this file makes and lets go of them. */
struct map_path {
	uint32_t refs;
	uint32_t hash;
	struct map_path *next; /* in the table's bucket */
	char s[];
};

static char *path_new(struct cp_procs *t, const char *s)
{
	size_t n = strlen(s) + 1;
	uint32_t h = (uint32_t)cp_hash_bytes(s, n, 0x70617468);
	struct map_path **b = t ? &t->paths[h % PATH_BUCKETS] : NULL, *m;

	for (m = b ? *b : NULL; m; m = m->next)
		if (m->hash == h && !memcmp(m->s, s, n)) {
			m->refs++;
			return m->s;
		}
	if (!(m = malloc(sizeof(*m) + n)))
		return NULL;
	m->refs = 1;
	m->hash = h;
	m->next = NULL;
	memcpy(m->s, s, n);
	if (b) {
		m->next = *b;
		*b = m;
	}
	return m->s;
}

static struct map_path *path_of(char *s)
{
	return (struct map_path *)(void *)(s - offsetof(struct map_path, s));
}

static char *path_ref(char *s)
{
	path_of(s)->refs++;
	return s;
}

/* (t: the table path_new was given) */
static void path_unref(struct cp_procs *t, char *s)
{
	struct map_path *m = s ? path_of(s) : NULL, **b;

	if (!m || --m->refs)
		return;
	for (b = t ? &t->paths[m->hash % PATH_BUCKETS] : NULL; b && *b; b = &(*b)->next)
		if (*b == m) {
			*b = m->next;
			break;
		}
	free(m);
}

/* A process's mappings are in a block that counts the processes holding it:
 * a fork shares its parent's (a storm forks thousands of children, most of
 * which exec or exit before they are sampled), and whoever changes shared
 * mappings first takes a copy of its own (maps_own).  What lookups cache in
 * a shared mapping (the unwinder's and symbolizer's keys, the build id, the
 * profile's mapping, checked against its serial) holds for every holder:
 * the same file at the same addresses. */
struct maps_block {
	uint64_t refs;
	struct cp_map v[];
};

static struct maps_block *block_of(const struct cp_proc *p)
{
	return p->maps ? (struct maps_block *)(void *)((char *)p->maps - offsetof(struct maps_block, v)) : NULL;
}

/* lets go of p's block (and of its paths and memory, when p held it last) */
static void maps_release(struct cp_proc *p)
{
	struct maps_block *b = block_of(p);

	if (b && --b->refs == 0) {
		for (size_t i = 0; i < p->nmaps; i++)
			path_unref(p->table, p->maps[i].path);
		free(b);
	}
	p->maps = NULL;
	p->nmaps = p->mapcap = 0;
}

/* p's mappings in a block of its own (a copy when shared) with room for n:
 * false when out of memory (nothing changed) */
static bool maps_own(struct cp_proc *p, size_t n)
{
	struct maps_block *b = block_of(p), *c;
	bool mine = b && b->refs == 1;
	size_t cap;

	if (mine && n <= p->mapcap)
		return true;
	cap = n < 16 ? 16 : n; /* (a program maps a dozen or two) */
	if (mine && cap < 2 * p->mapcap)
		cap = 2 * p->mapcap;
	if (cap > (SIZE_MAX - sizeof(*b)) / sizeof(struct cp_map))
		return false;
	if (mine) {
		if (!(c = realloc(b, sizeof(*b) + cap * sizeof(struct cp_map))))
			return false;
	} else {
		if (!(c = malloc(sizeof(*c) + cap * sizeof(struct cp_map))))
			return false;
		c->refs = 1;
		if (b) {
			memcpy(c->v, p->maps, p->nmaps * sizeof(*p->maps));
			for (size_t i = 0; i < p->nmaps; i++)
				path_ref(c->v[i].path);
			b->refs--;
		}
	}
	p->maps = c->v;
	p->mapcap = cap;
	return true;
}

void cp_proc_clear_maps(struct cp_proc *p)
{
	struct maps_block *b = block_of(p);

	if (b && b->refs == 1) { /* the block is kept for what comes next */
		for (size_t i = 0; i < p->nmaps; i++)
			path_unref(p->table, p->maps[i].path);
		p->nmaps = 0;
	} else {
		maps_release(p);
	}
	p->maps_gen++;
}

void cp_proc_drop_maps_before(struct cp_proc *p, uint64_t t)
{
	size_t k = 0, keep = 0;

	for (size_t i = 0; i < p->nmaps; i++)
		keep += p->maps[i].time && p->maps[i].time >= t;
	if (!keep || !maps_own(p, p->nmaps)) { /* (out of memory: all go, /proc is read again) */
		cp_proc_clear_maps(p);
		return;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		if (p->maps[i].time && p->maps[i].time >= t)
			p->maps[k++] = p->maps[i];
		else
			path_unref(p->table, p->maps[i].path);
	}
	p->nmaps = k;
	p->maps_gen++;
}

int cp_proc_add_map(struct cp_proc *p, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
		    const uint8_t *build_id, size_t build_id_len)
{
	struct cp_map m;
	size_t i, j;

	if (end <= start)
		return 0;
	/* (room for a split and the new one) */
	if (!maps_own(p, p->nmaps + 2))
		return cp_error(ENOMEM, "out of memory adding a mapping of %s", path ? path : "[anon]");
	memset(&m, 0, sizeof(m));
	m.start = start;
	m.end = end;
	m.pgoff = pgoff;
	m.path = path_new(p->table, path ? path : "");
	if (!m.path)
		return cp_error(ENOMEM, "out of memory adding a mapping of %s", path ? path : "[anon]");
	if (build_id && build_id_len && build_id_len <= sizeof(m.build_id)) {
		memcpy(m.build_id, build_id, build_id_len);
		m.build_id_len = (uint8_t)build_id_len;
		m.build_id_read = true;
	}
	/* cut out what the new mapping overlaps: trim or split */
	for (i = 0; i < p->nmaps; i++) {
		struct cp_map *o = &p->maps[i];

		if (o->end <= start || o->start >= end)
			continue;
		o->pmap_serial = 0; /* cut: not the mapping a profile has for it */
		if (o->start < start && o->end > end) {
			/* split: keep [o.start, start) and [end, o.end) */
			struct cp_map tail = *o;

			tail.path = path_ref(o->path);
			tail.pgoff += end - o->start;
			tail.start = end;
			o->end = start;
			memmove(&p->maps[i + 2], &p->maps[i + 1], (p->nmaps - i - 1) * sizeof(*p->maps));
			p->maps[i + 1] = tail;
			p->nmaps++;
			i++;
		} else if (o->start < start) {
			o->end = start;
		} else if (o->end > end) {
			o->pgoff += end - o->start;
			o->start = end;
		} else {
			path_unref(p->table, o->path);
			memmove(o, o + 1, (p->nmaps - i - 1) * sizeof(*p->maps));
			p->nmaps--;
			i--;
		}
	}
	for (j = 0; j < p->nmaps && p->maps[j].start < start; j++)
		;
	memmove(&p->maps[j + 1], &p->maps[j], (p->nmaps - j) * sizeof(*p->maps));
	p->maps[j] = m;
	p->nmaps++;
	p->have_maps = true;
	p->maps_gen++;
	return 0;
}

int cp_proc_inherit(struct cp_proc *child, const struct cp_proc *parent)
{
	cp_proc_clear_maps(child);
	if (parent->nmaps) { /* shared until one of them changes its own (maps_own) */
		maps_release(child);
		block_of(parent)->refs++;
		child->maps = parent->maps;
		child->nmaps = parent->nmaps;
		child->mapcap = parent->mapcap;
		child->maps_gen++;
	}
	child->have_maps = parent->have_maps;
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	if (parent->exe && !child->exe)
		child->exe = strdup(parent->exe);
	child->cgroup_id = parent->cgroup_id;
	if (parent->container && !child->container)
		child->container = strdup(parent->container);
	if (parent->unit && !child->unit)
		child->unit = strdup(parent->unit);
	if (parent->pod && !child->pod)
		child->pod = strdup(parent->pod);
	child->meta_read = parent->meta_read;
	return 0;
}

const struct cp_map *cp_proc_find_map(const struct cp_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

int cp_parse_maps_line(char *line, struct cp_maps_line *out)
{
	char *p = line, *e;
	int i;

	memset(out, 0, sizeof(*out));
	out->start = strtoull(p, &e, 16);
	if (e == p || *e != '-')
		return -EINVAL;
	p = e + 1;
	out->end = strtoull(p, &e, 16);
	if (e == p || *e != ' ' || out->end < out->start)
		return -EINVAL;
	p = e + 1;
	for (i = 0; i < 4 && p[i] && p[i] != ' '; i++)
		out->perms[i] = p[i];
	if (i != 4 || p[4] != ' ')
		return -EINVAL;
	p += 5;
	out->pgoff = strtoull(p, &e, 16);
	if (e == p || *e != ' ')
		return -EINVAL;
	p = e + 1;
	/* dev and inode */
	for (i = 0; i < 2; i++) {
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
	}
	e = strchr(p, '\n');
	if (e)
		*e = 0;
	out->path = p;
	return 0;
}

static char *read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s && *s ? strdup(s) : NULL;
}

void cp_proc_set_cgroup(struct cp_proc *p, const char *path)
{
	char c[128], u[256], pod[64];

	cp_cgroup_labels(path, c, sizeof(c), u, sizeof(u), pod, sizeof(pod));
	set_str(&p->container, c);
	set_str(&p->unit, u);
	set_str(&p->pod, pod);
}

void cp_proc_read_meta(struct cp_proc *p)
{
	char path[64], buf[4096], *s;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", p->pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		set_str(&p->exe, buf);
	}
	if (!p->comm[0]) {
		snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
		if ((s = read_small(path, buf, sizeof(buf)))) {
			size_t n = strcspn(s, "\n");

			if (n >= sizeof(p->comm))
				n = sizeof(p->comm) - 1;
			memcpy(p->comm, s, n);
			p->comm[n] = 0;
		}
	}
	snprintf(path, sizeof(path), "/proc/%u/cgroup", p->pid);
	if ((s = read_small(path, buf, sizeof(buf)))) {
		/* cgroup v2: "0::/path" */
		char *l = strstr(s, "0::");

		if (l && (l == s || l[-1] == '\n')) {
			l += 3;
			l[strcspn(l, "\n")] = 0;
			cp_proc_set_cgroup(p, l);
		}
	}
	p->meta_read = true;
}

static bool same_maps(const struct cp_proc *a, const struct cp_proc *b)
{
	if (a->nmaps != b->nmaps)
		return false;
	for (size_t i = 0; i < a->nmaps; i++) {
		const struct cp_map *x = &a->maps[i], *y = &b->maps[i];

		if (x->start != y->start || x->end != y->end || x->pgoff != y->pgoff || strcmp(x->path, y->path))
			return false;
	}
	return true;
}

int cp_proc_read(struct cp_proc *p)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	struct cp_proc fresh;
	FILE *f;

	if (p->proc_read)
		return p->have_maps ? 0 : -ESRCH;
	p->proc_read = true;
	if (!p->meta_read)
		cp_proc_read_meta(p);
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(&fresh, 0, sizeof(fresh));
	fresh.table = p->table;
	while (getline(&line, &cap, f) > 0) {
		struct cp_maps_line m;

		if (cp_parse_maps_line(line, &m) || m.perms[2] != 'x')
			continue;
		if (cp_proc_add_map(&fresh, m.start, m.end, m.pgoff, m.path, NULL, 0)) {
			free(line);
			fclose(f);
			maps_release(&fresh);
			return cp_error(ENOMEM, "out of memory reading /proc/%d/maps", (int)p->pid);
		}
	}
	free(line);
	fclose(f);
	/* unchanged: keep what we have (and the unwinder's session on it) */
	if (p->have_maps && same_maps(p, &fresh)) {
		maps_release(&fresh);
		return 0;
	}
	/* keep build ids the kernel gave for mappings that are still there */
	for (size_t i = 0; i < fresh.nmaps; i++) {
		const struct cp_map *o = cp_proc_find_map(p, fresh.maps[i].start);

		if (o && o->start == fresh.maps[i].start && o->build_id_len && !strcmp(o->path, fresh.maps[i].path)) {
			memcpy(fresh.maps[i].build_id, o->build_id, o->build_id_len);
			fresh.maps[i].build_id_len = o->build_id_len;
			fresh.maps[i].build_id_read = true;
		}
	}
	maps_release(p);
	p->maps = fresh.maps;
	p->nmaps = fresh.nmaps;
	p->mapcap = fresh.mapcap;
	p->maps_gen++;
	p->have_maps = true;
	return 0;
}

int cp_proc_refresh(struct cp_proc *p, uint64_t addr)
{
	uint64_t now;

	if (p->dead || addr < 4096 || addr >= (1ull << 47))
		return -ENOENT;
	now = (uint64_t)cp_mono_ns();
	if (p->reread_ns && now - p->reread_ns < 1000000000u)
		return -EAGAIN;
	p->reread_ns = now;
	p->proc_read = false;
	return cp_proc_read(p);
}

/* Is s (length n) all hex digits? */
static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return n > 0;
}

static void copy_span(char *dst, size_t cap, const char *s, size_t n)
{
	if (!cap)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = 0;
}

void cp_cgroup_labels(const char *path, char *container, size_t clen, char *unit, size_t ulen, char *pod,
		      size_t plen)
{
	const char *p = path ? path : "";

	if (clen)
		container[0] = 0;
	if (ulen)
		unit[0] = 0;
	if (plen)
		pod[0] = 0;
	while (*p) {
		const char *seg, *end;
		size_t n;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		end = p;
		n = (size_t)(end - seg);
		if (!n)
			break;
		/* systemd unit: the innermost name with a unit suffix */
		{
			static const char *const suffixes[] = { ".service", ".scope", ".socket", ".mount", ".swap",
								 ".timer" };
			for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
				size_t sl = strlen(suffixes[i]);

				if (n > sl && memcmp(end - sl, suffixes[i], sl) == 0)
					copy_span(unit, ulen, seg, n);
			}
		}
		/* container ids: 64 hex digits, alone or as docker-ID.scope,
		 * cri-containerd-ID.scope, crio-ID.scope, libpod-ID.scope */
		{
			const char *s = seg, *e = end;
			const char *dash;

			if (n > 6 && memcmp(e - 6, ".scope", 6) == 0)
				e -= 6;
			dash = NULL;
			for (const char *q = s; q < e; q++)
				if (*q == '-')
					dash = q;
			if (dash && e - dash - 1 == 64)
				s = dash + 1;
			if (e - s == 64 && all_hex(s, 64))
				copy_span(container, clen, s, 64);
		}
		/* Kubernetes pods: pod<uid> (cgroupfs driver) or
		 * kubepods-...-pod<uid with _>.slice (systemd driver) */
		{
			const char *q = seg;

			for (; q + 3 < end; q++) {
				if (memcmp(q, "pod", 3) == 0 && (q == seg || q[-1] == '-')) {
					const char *u = q + 3, *ue = end;
					char buf[64];
					size_t k;

					if (ue - u > 6 && memcmp(ue - 6, ".slice", 6) == 0)
						ue -= 6;
					if (ue - u != 36)
						continue;
					for (k = 0; k < 36; k++) {
						char ch = u[k] == '_' ? '-' : u[k];
						bool dashpos = k == 8 || k == 13 || k == 18 || k == 23;

						if (dashpos ? ch != '-' : !isxdigit((unsigned char)ch))
							break;
						buf[k] = ch;
					}
					if (k == 36)
						copy_span(pod, plen, buf, 36);
				}
			}
		}
	}
}

void cp_perfmap_release(struct cp_perfmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].name);
	free(m->e);
	free(m->maxend);
	m->e = NULL;
	m->maxend = NULL;
	m->n = 0;
	m->cap = 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cp_perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Adds the lines of text to m (a JIT appends to its file: the new lines are
 * sorted and merged with the old ones, which are sorted already).  With
 * whole_lines, a last line without its '\n' is left (it is being written).
 * The bytes used, or -ENOMEM (m keeps its old entries). */
static int64_t perfmap_add(struct cp_perfmap *m, const char *text, size_t len, bool whole_lines)
{
	const char *p = text, *end = text + len;
	size_t old = m->n, cap = m->cap, first;
	struct cp_perfmap_entry *merged;
	uint64_t *maxend;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		char line[1024], *q, *e;
		uint64_t start, size;
		size_t n;

		if (!eol && whole_lines)
			break;
		if (!eol)
			eol = end;
		n = (size_t)(eol - p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = 0;
		p = eol + 1;
		q = line;
		errno = 0;
		start = strtoull(q, &e, 16);
		if (e == q || *e != ' ' || errno)
			continue;
		q = e + 1;
		size = strtoull(q, &e, 16);
		if (e == q || *e != ' ' || errno || size == 0 || start + size < start)
			continue;
		q = e + 1;
		q[strcspn(q, "\r")] = 0;
		if (!*q)
			continue;
		if (cp_grow((void **)&m->e, &cap, m->n + 1, sizeof(*m->e)))
			goto nomem;
		m->cap = cap;
		m->e[m->n].start = start;
		m->e[m->n].size = size;
		m->e[m->n].line = m->n;
		m->e[m->n].name = strdup(q);
		if (!m->e[m->n].name)
			goto nomem;
		m->n++;
	}
	if (m->n == old)
		return p > end ? (int64_t)len : (int64_t)(p - text);
	maxend = realloc(m->maxend, m->n * sizeof(*m->maxend));
	if (!maxend)
		goto nomem;
	m->maxend = maxend;
	cp_qsort(m->e + old, m->n - old, sizeof(*m->e), entry_cmp);
	first = old;
	if (old && entry_cmp(&m->e[old - 1], &m->e[old]) > 0) {
		size_t i = 0, j = old, k = 0;

		/* the old entries starting at or below the least new one stay */
		first = cp_upper_bound_u64(m->e, old, sizeof(*m->e), m->e[old].start);
		merged = malloc(m->cap * sizeof(*merged));
		if (!merged)
			goto nomem;
		while (i < old || j < m->n)
			merged[k++] = j == m->n || (i < old && entry_cmp(&m->e[i], &m->e[j]) <= 0) ? m->e[i++] : m->e[j++];
		free(m->e);
		m->e = merged;
	}
	/* from the first place the merge may have changed */
	for (size_t i = first; i < m->n; i++) {
		uint64_t e = m->e[i].start + m->e[i].size;

		m->maxend[i] = i && m->maxend[i - 1] > e ? m->maxend[i - 1] : e;
	}
	return p > end ? (int64_t)len : (int64_t)(p - text);
nomem:
	while (m->n > old)
		free(m->e[--m->n].name);
	return cp_error(ENOMEM, "out of memory reading a perf map");
}

int cp_perfmap_parse(const char *text, size_t len, struct cp_perfmap *out)
{
	memset(out, 0, sizeof(*out));
	if (perfmap_add(out, text, len, false) < 0) {
		cp_perfmap_release(out);
		return cp_error(ENOMEM, "out of memory reading a perf map");
	}
	return 0;
}

int64_t cp_perfmap_append(struct cp_perfmap *m, const char *text, size_t len)
{
	return perfmap_add(m, text, len, true);
}

const char *cp_perfmap_find(const struct cp_perfmap *m, uint64_t addr)
{
	const struct cp_perfmap_entry *best = NULL;
	size_t lo;

	/* entries starting at or below addr; walk back while one of them can
	 * still reach addr; of those holding it, the latest line wins (a JIT
	 * reuses addresses and appends) */
	_Static_assert(offsetof(struct cp_perfmap_entry, start) == 0, "the key leads");
	lo = cp_upper_bound_u64(m->e, m->n, sizeof(*m->e), addr);
	while (lo > 0 && m->maxend[lo - 1] > addr) {
		const struct cp_perfmap_entry *e = &m->e[--lo];

		if (addr - e->start < e->size && (!best || e->line > best->line))
			best = e;
	}
	return best ? best->name : NULL;
}

/* When process pid started, in CLOCK_REALTIME ns; 0 when unknown. */
static int64_t proc_start_ns(uint32_t pid)
{
	static long long btime = -1; /* boot time, in seconds since the epoch */
	char path[64], buf[1024], *q;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);

	if (btime < 0) {
		FILE *f = fopen("/proc/stat", "re");
		char line[256];

		btime = 0;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "btime %lld", &btime) == 1)
				break;
		if (f)
			fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	/* "PID (COMM) STATE ..." with starttime the 22nd field (the 20th after
	 * the comm, which may hold spaces and parentheses) */
	if (btime <= 0 || hz <= 0 || !read_small(path, buf, sizeof(buf)) || !(q = strrchr(buf, ')')))
		return 0;
	if (sscanf(q + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
		   &ticks) != 1)
		return 0;
	return (int64_t)btime * 1000000000 + (int64_t)(ticks * (1000000000ull / (unsigned long long)hz));
}

/* Reads what was added to the perf map at path since m last read it (all of
 * it when the file is new or was rewritten); process pid's. */
static void perfmap_update(struct cp_perfmap *m, uint32_t pid, const char *path)
{
	struct stat st;
	int64_t mtime;
	int fd;
	char *buf;
	size_t len, got = 0;
	int64_t used;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return; /* none (yet), or gone: what was read stays */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	if (!m->owner_read) { /* the process's, read once its file is there (most have none) */
		char proc[32];
		struct stat ps;
		/* runtimes leave their files behind, and pids are reused: one
		 * older than the process is not its own (2 s: the boot time
		 * it is counted from is in whole seconds) */
		int64_t start = proc_start_ns(pid);

		m->not_before_ns = start > 2000000000 ? start - 2000000000 : 0;
		snprintf(proc, sizeof(proc), "/proc/%u", pid);
		m->owner = stat(proc, &ps) == 0 ? (int64_t)ps.st_uid : -1;
		m->owner_read = true;
	}
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	/* as perf does: the file of the process's user or root only (another
	 * user may not name its frames); and not an earlier process's with
	 * this pid */
	if ((m->owner >= 0 && st.st_uid != (uid_t)m->owner && st.st_uid != 0) || mtime < m->not_before_ns) {
		close(fd);
		return;
	}
	if (st.st_ino != m->ino || st.st_dev != m->dev || (uint64_t)st.st_size < m->used) {
		/* another file (a new process with this pid), or rewritten */
		cp_perfmap_release(m);
		m->ino = st.st_ino;
		m->dev = st.st_dev;
		m->used = 0;
	}
	m->size = st.st_size;
	m->mtime_ns = mtime;
	if ((uint64_t)st.st_size <= m->used || (uint64_t)st.st_size > (256u << 20)) {
		close(fd);
		return;
	}
	len = (size_t)((uint64_t)st.st_size - m->used);
	buf = malloc(len);
	while (buf && got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)(m->used + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (buf && (used = perfmap_add(m, buf, got, true)) > 0)
		m->used += (uint64_t)used;
	free(buf);
}

const char *cp_proc_jit_symbol(struct cp_proc *p, uint64_t addr)
{
	char path[64];
	const char *name = NULL;
	uint64_t now = (uint64_t)cp_mono_ns();

	if (!p->jit && !(p->jit = calloc(1, sizeof(*p->jit))))
		return NULL;
	if (p->jit->n)
		name = cp_perfmap_find(p->jit, addr);
	/* The file is kept after the process exits, and a JIT appends to it
	 * before it runs new code: an address not in it yet has it read again
	 * (its new lines; at most every millisecond), a name found is trusted
	 * for a second (a JIT may reuse an address for other code). */
	if (p->jit->checked_ns && now - p->jit->checked_ns < (name ? 1000000000u : 1000000u))
		return name;
	p->jit->checked_ns = now;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->pid);
	perfmap_update(p->jit, p->pid, path);
	return p->jit->n ? cp_perfmap_find(p->jit, addr) : NULL;
}

/* Reads the build id of the ELF file open at fd, and closes fd. */
static int elf_build_id_fd(int fd, uint8_t *out, size_t cap)
{
	int ret = 0;
	Elf *elf = NULL;
	size_t nph;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0) {
		ret = -ENOEXEC;
		goto out;
	}
	for (size_t i = 0; i < nph && ret == 0; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0 && nh.n_descsz <= cap && nh.n_descsz) {
				memcpy(out, (char *)d->d_buf + doff, nh.n_descsz);
				ret = (int)nh.n_descsz;
				break;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

const char *cp_map_key(struct cp_map *m, const struct cp_proc *p, char *buf, size_t len)
{
	size_t n;
	const uint8_t *b = cp_map_build_id(m, p, &n);

	return b && cp_hex(b, n, buf, len) ? buf : m->path;
}

int cp_map_open(const struct cp_proc *p, const struct cp_map *m, int vdso_fd)
{
	char path[4200];
	int fd = -1;

	if (m->path[0] == '/') {
		char mapped[64];
		struct stat a, b;

		snprintf(mapped, sizeof(mapped), "/proc/%u/map_files/%llx-%llx", p->pid, (unsigned long long)m->start,
			 (unsigned long long)m->end);
		snprintf(path, sizeof(path), "/proc/%u/root%s", p->pid, m->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = open(m->path, O_RDONLY | O_CLOEXEC);
		/* the path may now name another file (an upgrade replaced it):
		 * then the mapped one, while the process lives */
		if (fd >= 0 && stat(mapped, &b) == 0 && fstat(fd, &a) == 0 && (a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
			close(fd);
			fd = -1;
		}
		if (fd < 0) /* deleted or replaced */
			fd = open(mapped, O_RDONLY | O_CLOEXEC);
	} else if (!strcmp(m->path, "[vdso]") && vdso_fd >= 0) {
		fd = fcntl(vdso_fd, F_DUPFD_CLOEXEC, 0);
	}
	return fd;
}

bool cp_map_no_file(const char *path)
{
	if (!path[0] || !strcmp(path, "//anon"))
		return true;
	return path[0] == '[' && strcmp(path, "[vdso]") != 0;
}

const uint8_t *cp_map_build_id(struct cp_map *m, const struct cp_proc *p, size_t *len)
{
	if (!m->build_id_read && cp_map_no_file(m->path)) {
		m->build_id_read = true;
		m->build_id_len = 0;
	}
	if (!m->build_id_read) {
		int fd = cp_map_open(p, m, -1), n = fd >= 0 ? elf_build_id_fd(fd, m->build_id, sizeof(m->build_id)) : -ENOENT;

		m->build_id_read = true;
		m->build_id_len = n > 0 ? (uint8_t)n : 0;
	}
	*len = m->build_id_len;
	return m->build_id_len ? m->build_id : NULL;
}
