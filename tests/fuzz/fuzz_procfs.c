/* SPDX-License-Identifier: MIT */
/* Fuzz target: the text parsers of what the sampler reads from the system:
 * /proc/PID/maps lines, cgroup paths, perf-map (JIT) files and /proc/kallsyms.
 * The first byte chooses the parser (0-3) or, for any other value, runs all
 * of them in turn on the rest of the input; each result is then used (looked
 * up, added to a process's mappings) as the sampler would. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/proc.h"
#include "sampling/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* Addresses to look up: a few fixed ones and some taken from the input. */
static uint64_t probe(const uint8_t *data, size_t len, unsigned i)
{
	static const uint64_t fixed[] = { 0, 1, 0x1000, 0x7fffffffffffull, 0xffffffff81000000ull, UINT64_MAX };
	uint64_t v = 0;

	if (i < sizeof(fixed) / sizeof(*fixed))
		return fixed[i];
	if (len >= 8) {
		memcpy(&v, data + (i * 7u) % (len - 7), 8);
	}
	return v;
}

/* p's mappings must stay sorted and disjoint */
static void check_sorted(const struct cp_proc *p)
{
	for (size_t i = 1; p && i < p->nmaps; i++)
		if (p->maps[i - 1].end > p->maps[i].start || p->maps[i].start >= p->maps[i].end)
			abort();
}

static void maps_lines(const uint8_t *data, size_t len)
{
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = t ? cp_procs_get(t, 1, true) : NULL;
	char *text = malloc(len + 1), *line, *save = NULL;
	unsigned k = 0;

	if (!p || !text)
		goto out;
	memcpy(text, data, len);
	text[len] = 0;
	/* line by line, as cp_proc_read does; each line also parsed alone with its newline.  Processes
	 * 2 and 3 fork, exec and exit as the lines' first bytes say, so that mappings shared at fork
	 * (copied when one of them changes its own) and paths kept once are driven too */
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), k++) {
		struct cp_maps_line m;
		struct cp_proc *q = cp_procs_get(t, 2 + (unsigned char)line[0] % 2, true);

		switch ((unsigned char)line[0] % 7) {
		case 1: /* a fork of 1 */
			if (q)
				cp_proc_inherit(q, p);
			break;
		case 2: /* an exec */
			if (q)
				cp_proc_drop_maps_before(q, k);
			break;
		case 3: /* an exit */
			if (q)
				cp_procs_remove(t, q->pid, NULL);
			q = NULL;
			break;
		}
		if (cp_parse_maps_line(line, &m) == 0 && m.perms[2] == 'x') {
			cp_proc_add_map(p, m.start, m.end, m.pgoff, m.path, NULL, 0);
			if (q && (unsigned char)line[0] % 7 == 4)
				cp_proc_add_map(q, m.start, m.end, m.pgoff, m.path, NULL, 0);
		}
		check_sorted(cp_procs_get(t, 2, false));
		check_sorted(cp_procs_get(t, 3, false));
	}
	for (unsigned i = 0; i < 12; i++)
		cp_proc_find_map(p, probe(data, len, i));
	check_sorted(p);
	memcpy(text, data, len);
	text[len] = 0;
	{
		struct cp_maps_line m;

		cp_parse_maps_line(text, &m);
	}
out:
	free(text);
	cp_procs_free(t, NULL);
}

static void cgroup_path(const uint8_t *data, size_t len)
{
	char *path = malloc(len + 1), c[128], u[256], pod[64], small[3];

	if (!path)
		return;
	memcpy(path, data, len);
	path[len] = 0;
	cp_cgroup_labels(path, c, sizeof(c), u, sizeof(u), pod, sizeof(pod));
	if (strlen(c) >= sizeof(c) || strlen(u) >= sizeof(u) || strlen(pod) >= sizeof(pod))
		abort();
	cp_cgroup_labels(path, small, sizeof(small), small, 1, NULL, 0);
	{
		struct cp_procs *t = cp_procs_new();
		struct cp_proc *p = t ? cp_procs_get(t, 2, true) : NULL;

		if (p)
			cp_proc_set_cgroup(p, path);
		cp_procs_free(t, NULL);
	}
	free(path);
}

/* The file read in two parts, as a JIT appends to it, gives what reading
 * it whole does (its whole lines). */
static void perf_map_appended(const uint8_t *data, size_t len)
{
	const char *text = (const char *)data;
	struct cp_perfmap whole, parts;
	size_t full = len, cut;
	int64_t a, b;

	while (full > 0 && text[full - 1] != '\n')
		full--;
	cut = len ? data[0] % (full + 1) : 0;
	if (cp_perfmap_parse(text, full, &whole) != 0)
		return;
	memset(&parts, 0, sizeof(parts));
	a = cp_perfmap_append(&parts, text, cut);
	b = a < 0 ? -1 : cp_perfmap_append(&parts, text + a, full - (size_t)a);
	if (a < 0 || b < 0) {
		cp_perfmap_release(&whole);
		cp_perfmap_release(&parts);
		return;
	}
	if ((size_t)(a + b) != full || parts.n != whole.n)
		abort();
	for (size_t i = 0; i < parts.n; i++) {
		uint64_t end = parts.e[i].start + parts.e[i].size;

		if ((i && parts.e[i - 1].start > parts.e[i].start) ||
		    parts.maxend[i] != (i && parts.maxend[i - 1] > end ? parts.maxend[i - 1] : end))
			abort();
	}
	for (size_t i = 0; i < whole.n && i < 16; i++) {
		uint64_t probes[3] = { whole.e[i].start, whole.e[i].start + whole.e[i].size - 1,
				       whole.e[i].start + whole.e[i].size };

		for (int k = 0; k < 3; k++) {
			const char *x = cp_perfmap_find(&whole, probes[k]), *y = cp_perfmap_find(&parts, probes[k]);

			if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
				abort();
		}
	}
	cp_perfmap_release(&whole);
	cp_perfmap_release(&parts);
}

static void perf_map(const uint8_t *data, size_t len)
{
	struct cp_perfmap m;

	/* not NUL-terminated: the parser must keep to len */
	if (cp_perfmap_parse((const char *)data, len, &m) != 0)
		return;
	for (size_t i = 1; i < m.n; i++)
		if (m.e[i - 1].start > m.e[i].start)
			abort();
	for (unsigned i = 0; i < 12; i++)
		cp_perfmap_find(&m, probe(data, len, i));
	for (size_t i = 0; i < m.n && i < 16; i++) {
		cp_perfmap_find(&m, m.e[i].start);
		cp_perfmap_find(&m, m.e[i].start + m.e[i].size - 1);
		cp_perfmap_find(&m, m.e[i].start + m.e[i].size);
	}
	cp_perfmap_release(&m);
	perf_map_appended(data, len);
}

static void kallsyms(const uint8_t *data, size_t len)
{
	struct cp_ksyms *k = cp_ksyms_parse((const char *)data, len);
	const char *mod;

	if (!k)
		return;
	for (unsigned i = 0; i < 12; i++) {
		const char *name = cp_ksyms_find(k, probe(data, len, i), &mod, NULL);

		if (name && (strlen(name) > len || strlen(mod) > len))
			abort();
	}
	cp_ksyms_count(k);
	cp_ksyms_free(k);
}

static void probe_table(const struct cp_ksyms *k, const uint8_t *data, size_t len, size_t limit)
{
	const char *mod;

	for (unsigned i = 0; i < 12; i++) {
		const char *name = cp_ksyms_find(k, probe(data, len, i), &mod, NULL);

		if (name && (strlen(name) > limit || strlen(mod) > limit))
			abort();
	}
}

/* The on-disk cache of the kernel's symbols: the raw input as a cache file
 * (key ""), and a good image of the input's symbols with one byte changed. */
static void kallsyms_cache(const uint8_t *data, size_t len)
{
	struct cp_ksyms *k = cp_ksyms_decode((const char *)data, len, ""), *parsed, *back;
	char *img;
	size_t ilen;

	if (k) {
		probe_table(k, data, len, len);
		cp_ksyms_free(k);
	}
	parsed = cp_ksyms_parse((const char *)data, len);
	if (!parsed)
		return;
	if (cp_ksyms_count(parsed) && cp_ksyms_encode(parsed, "fuzz", &img, &ilen) == 0) {
		if (len >= 2)
			img[(data[0] | (size_t)data[1] << 8) % ilen] ^= (char)(data[len - 1] | 1);
		back = cp_ksyms_decode(img, ilen, "fuzz");
		if (back) {
			probe_table(back, data, len, ilen);
			cp_ksyms_free(back);
		}
		free(img);
	}
	cp_ksyms_free(parsed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static void (*const parsers[])(const uint8_t *, size_t) = { maps_lines, cgroup_path, perf_map, kallsyms,
								    kallsyms_cache };
	const size_t n = sizeof(parsers) / sizeof(*parsers);

	if (len == 0)
		return 0;
	if (data[0] < n) {
		parsers[data[0]](data + 1, len - 1);
	} else {
		for (size_t i = 0; i < n; i++)
			parsers[i](data + 1, len - 1);
	}
	return 0;
}
