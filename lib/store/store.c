/* SPDX-License-Identifier: MIT */
/* The cp_store_* calls: each dispatches to the handle's backend
 * (backend.h); and the helpers on series, results and type names that do not
 * depend on a backend. */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"
#include "backend.h"

void cp_store_close(struct cp_store *s)
{
	if (s)
		s->ops->close(s);
}

int cp_store_append(struct cp_store *s, const struct cp_store_append *a, size_t n)
{
	return s->ops->append(s, a, n);
}

int cp_store_retain(struct cp_store *s, int64_t keep_ns)
{
	return s->ops->retain(s, keep_ns);
}

int64_t cp_store_limit(struct cp_store *s, uint64_t max_bytes)
{
	return s->ops->limit(s, max_bytes);
}

int cp_store_size(struct cp_store *s, uint64_t *bytes)
{
	return s->ops->size(s, bytes);
}

int cp_store_series(struct cp_store *s, const struct cp_selector *sel, struct cp_store_series **out, size_t *n)
{
	return s->ops->series(s, sel, out, n);
}

int cp_store_select(struct cp_store *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	return s->ops->select(s, q, out, n);
}

int cp_store_over_time(struct cp_store *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
		       struct cp_buckets *b, char **type)
{
	return s->ops->over_time(s, q, step, totals, b, type);
}

int cp_store_stats(struct cp_store *s, struct cp_store_stats *st)
{
	return s->ops->stats(s, st);
}

/* ---- what does not depend on a backend ---- */

int cp_store_type_name(const struct cp_profile *p, int vidx, const char *name, char *buf, size_t len)
{
	const char *pt = cp_profile_string(p, p->period_type.type), *pu = cp_profile_string(p, p->period_type.unit);
	int n;

	if (!name || !*name) {
		if (!strcmp(pt, "cpu"))
			name = "process_cpu";
		else if (!strcmp(pt, "space"))
			name = "memory";
		else if (*pt)
			name = pt;
		else
			name = "profile";
	}
	n = snprintf(buf, len, "%s:%s:%s:%s:%s%s", name, cp_profile_string(p, p->sample_types[vidx].type),
		     cp_profile_string(p, p->sample_types[vidx].unit), pt, pu, p->duration_nanos ? ":delta" : "");
	return n < 0 || (size_t)n >= len ? cp_error(ENAMETOOLONG, "profile type name too long") : 0;
}

const char *cp_store_type_part(const char *type, int index, char *buf, size_t len)
{
	const char *p = type, *c;
	size_t n;

	for (; index > 0 && p; index--)
		p = (c = strchr(p, ':')) ? c + 1 : NULL;
	if (!p)
		p = "";
	c = strchr(p, ':');
	n = c ? (size_t)(c - p) : strlen(p);
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p);
	return buf;
}

void cp_store_series_release(struct cp_store_series *r)
{
	size_t i;

	for (i = 0; i < r->nlabels; i++) {
		free(r->names[i]);
		free(r->values[i]);
	}
	free(r->names);
	free(r->values);
	free(r->type);
}

void cp_store_series_free(struct cp_store_series *ser, size_t n)
{
	size_t i;

	for (i = 0; ser && i < n; i++)
		cp_store_series_release(&ser[i]);
	free(ser);
}

void cp_store_results_free(struct cp_store_result *r, size_t n)
{
	size_t i;

	for (i = 0; r && i < n; i++) {
		free(r[i].group);
		cp_profile_free(r[i].profile);
	}
	free(r);
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cp_store_distinct(const struct cp_store_series *ser, size_t n, enum cp_store_list what, const char *label,
		      const char ***items, size_t *nitems)
{
	const char **it = NULL;
	size_t cnt = 0, cap = 0, i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < (what == CP_LIST_TYPES ? 1 : ser[i].nlabels); j++) {
			const char *v = what == CP_LIST_TYPES ? ser[i].type :
					what == CP_LIST_LABELS ? ser[i].names[j] :
					!strcmp(ser[i].names[j], label) ? ser[i].values[j] : NULL;

			if (!v)
				continue;
			if (cp_grow((void **)&it, &cap, cnt + 1, sizeof(*it))) {
				free(it);
				return cp_error(ENOMEM, "out of memory listing the store's series");
			}
			it[cnt++] = v;
		}
	}
	cp_qsort(it, cnt, sizeof(*it), str_ptr_cmp);
	for (i = 0, j = 0; i < cnt; i++)
		if (!j || strcmp(it[j - 1], it[i]))
			it[j++] = it[i];
	*items = it;
	*nitems = j;
	return 0;
}
