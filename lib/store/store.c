/* SPDX-License-Identifier: MIT */
/* The cp_store_* calls: each dispatches to the handle's backend
 * (backend.h); and the helpers on series, results and type names that do not
 * depend on a backend. */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cumulative.h"
#include "../error.h"
#include "../selector.h"
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

size_t cp_store_memory(struct cp_store *s)
{
	return s->ops->memory ? s->ops->memory(s) : 0;
}

int cp_store_flush(struct cp_store *s, bool now)
{
	return s->ops->flush ? s->ops->flush(s, now) : 0;
}

bool cp_store_pending(struct cp_store *s, struct cp_pusher_stats *st)
{
	if (!s->ops->pending)
		return false;
	s->ops->pending(s, st);
	return true;
}

const char *cp_store_push_error(struct cp_store *s)
{
	return s->ops->push_error ? s->ops->push_error(s) : NULL;
}

const char *cp_store_location(const struct cp_store *s)
{
	return s->ops->location ? s->ops->location(s) : NULL;
}

bool cp_store_downsamples(const struct cp_store *s)
{
	return s->ops->compact != NULL;
}

void cp_store_limit_memory(struct cp_store *s, size_t bytes)
{
	if (s->ops->limit_memory)
		s->ops->limit_memory(s, bytes);
}

int cp_store_retain(struct cp_store *s, int64_t keep_ns)
{
	return s->ops->retain(s, keep_ns);
}

int64_t cp_store_limit(struct cp_store *s, uint64_t max_bytes)
{
	return s->ops->limit(s, max_bytes);
}

int cp_store_compact(struct cp_store *s, const struct cp_downsample *p, int64_t now, int max_days,
		     struct cp_compact_stats *st)
{
	if (!s->ops->compact)
		return cp_error(EOPNOTSUPP, "downsampling is for the local store: a server downsamples its own");
	return s->ops->compact(s, p, now, max_days, st);
}


int cp_downsample_parse(const char *text, struct cp_downsample *p)
{
	char buf[256], *tok, *save = NULL, *eq;
	int err;

	memset(p, 0, sizeof(*p));
	if (!strcmp(text, "off") || !strcmp(text, "none"))
		return 0;
	if (strlen(text) >= sizeof(buf))
		return cp_error(EINVAL, "downsampling policy '%s' is too long", text);
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int64_t step = 0, keep = 0;
		size_t i = p->n;

		if (i == CP_DOWNSAMPLE_MAX)
			return cp_error(EINVAL, "downsampling policy '%s': at most %d steps", text, CP_DOWNSAMPLE_MAX);
		if (i && !p->keep[i - 1])
			return cp_error(EINVAL, "downsampling policy '%s': only the last step goes without =AGE", text);
		if ((eq = strchr(tok, '=')))
			*eq = '\0';
		if (strcmp(tok, "raw") && ((err = cp_parse_duration(tok, &step)) || step <= 0))
			return cp_error(EINVAL, "downsampling policy '%s': bad step '%s': want raw or a duration (1m, 10m)",
					text, tok);
		if (step % 1000000000 || CP_DAY_NS % (step ? step : 1))
			return cp_error(EINVAL, "downsampling policy '%s': the step %s does not divide a day in whole seconds",
					text, tok);
		if (i && step <= p->step[i - 1])
			return cp_error(EINVAL, "downsampling policy '%s': each step must be coarser than the one before", text);
		if (eq && ((err = cp_parse_duration(eq + 1, &keep)) || keep <= 0 || (i && keep <= p->keep[i - 1])))
			return cp_error(EINVAL, "downsampling policy '%s': bad age '%s': want a duration longer than the"
						" one before (2d, 14d)", text, eq + 1);
		p->step[i] = step;
		p->keep[i] = keep;
		p->n++;
	}
	if (!p->n)
		return cp_error(EINVAL, "empty downsampling policy: want e.g. %s, or off", CP_DOWNSAMPLE_DEFAULT);
	if (p->n == 1 && !p->step[0] && !p->keep[0]) /* "raw": off */
		p->n = 0;
	return 0;
}

const char *cp_downsample_text(const struct cp_downsample *p, char *buf, size_t len)
{
	size_t i, o = 0;
	char a[32], b[32];

	snprintf(buf, len, "off");
	for (i = 0; i < p->n && o < len; i++) {
		int w = snprintf(buf + o, len - o, "%s%s%s%s", i ? "," : "", cp_resolution_text(p->step[i], a, sizeof(a)),
				 p->keep[i] ? "=" : "", p->keep[i] ? cp_duration_text(p->keep[i], b, sizeof(b)) : "");

		o += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

int64_t cp_downsample_step(const struct cp_downsample *p, int64_t age)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!p->keep[i] || age < p->keep[i])
			return p->step[i];
	return p->n ? p->step[p->n - 1] : 0;
}

const char *cp_resolution_text(int64_t step, char *buf, size_t len)
{
	return step > 0 ? cp_duration_text(step, buf, len) : (snprintf(buf, len, "raw"), buf);
}

int cp_store_size(struct cp_store *s, uint64_t *bytes)
{
	return s->ops->size(s, bytes);
}

int cp_store_series(struct cp_store *s, const struct cp_selector *sel, struct cp_store_series **out, size_t *n)
{
	return s->ops->series(s, sel, INT64_MIN, INT64_MAX, out, n);
}

int cp_store_series_in(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
		       struct cp_store_series **out, size_t *n)
{
	return s->ops->series(s, sel, from, to, out, n);
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

int cp_store_over_time_build(struct cp_store *s, const struct cp_store_query *q, int64_t step,
			     struct cp_over_time *ot)
{
	int64_t res = -1, *resp = q->resolution ? q->resolution : &res; /* a remote store does not say */
	struct cp_store_query qq = *q;
	struct cp_buckets b;
	int err;

	memset(ot, 0, sizeof(*ot));
	qq.resolution = resp;
	if ((err = cp_store_over_time(s, &qq, step ? step : cp_buckets_default_step(q->from, q->to),
				      &ot->totals_buf, &b, &ot->type_buf)))
		return err;
	ot->type = ot->type_buf;
	ot->unit = cp_store_type_part(ot->type_buf, 2, ot->unit_buf, sizeof(ot->unit_buf));
	ot->from = b.start;
	ot->to = cp_buckets_end(&b);
	ot->step = b.step;
	ot->resolution = *resp > 0 ? cp_resolution_text(*resp, ot->res_buf, sizeof(ot->res_buf)) : NULL;
	ot->totals = ot->totals_buf;
	ot->n = b.n;
	return 0;
}

void cp_over_time_release(struct cp_over_time *ot)
{
	free(ot->type_buf);
	free(ot->totals_buf);
	ot->type_buf = NULL;
	ot->totals_buf = NULL;
	ot->type = NULL;
	ot->totals = NULL;
}

void cp_store_group_totals_free(struct cp_store_group_totals *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++) {
		free(g[i].group);
		free(g[i].totals);
	}
	free(g);
}

/* The group called name in g[0..*n), made (with b->n zero totals) when new;
 * NULL when out of memory. */
static struct cp_store_group_totals *totals_of(struct cp_store_group_totals **g, size_t *n, size_t *cap,
					       const char *name, const struct cp_buckets *b)
{
	struct cp_store_group_totals *x;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*g)[i].group, name))
			return &(*g)[i];
	if (cp_grow((void **)g, cap, *n + 1, sizeof(**g)))
		return NULL;
	x = &(*g)[*n];
	x->group = strdup(name);
	x->totals = calloc(b->n + 1, sizeof(*x->totals));
	if (!x->group || !x->totals) {
		free(x->group);
		free(x->totals);
		return NULL;
	}
	(*n)++;
	return x;
}

/* For a backend without its own: the buckets of the totals over time, then
 * a selection by group of each bucket that holds samples. */
static int over_time_by_select(struct cp_store *s, const struct cp_store_query *q, int64_t step,
			       struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b)
{
	struct cp_store_query sq = *q;
	int64_t *all = NULL;
	char *type = NULL;
	size_t cap = 0;
	int err;

	if ((err = cp_store_over_time(s, q, step, &all, b, &type)))
		return err;
	free(type);
	if (!q->group_by) { /* one group: the totals themselves */
		if (!(*out = calloc(1, sizeof(**out))) || !((*out)[0].group = strdup(""))) {
			free(*out);
			*out = NULL;
			free(all);
			return cp_error(ENOMEM, "out of memory reading totals over time");
		}
		(*out)[0].totals = all;
		*n = 1;
		return 0;
	}
	for (size_t k = 0; !err && k < b->n; k++) {
		struct cp_store_result *res = NULL;
		size_t nr = 0;

		if (!all[k])
			continue;
		sq.from = b->start + (int64_t)k * b->step; /* whole buckets, as cp_store_over_time's */
		sq.to = sq.from + b->step;
		if ((err = cp_store_select(s, &sq, &res, &nr)))
			break;
		for (size_t i = 0; i < nr; i++) {
			struct cp_store_group_totals *g;

			if (!res[i].profile || !res[i].profile->nsamples)
				continue;
			if (!(g = totals_of(out, n, &cap, res[i].group ? res[i].group : "", b))) {
				err = cp_error(ENOMEM, "out of memory reading totals over time");
				break;
			}
			g->totals[k] = cp_add_sat(g->totals[k], cp_profile_total(res[i].profile, 0));
		}
		cp_store_results_free(res, nr);
	}
	free(all);
	if (err) {
		cp_store_group_totals_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return err;
}

int cp_store_over_time_groups(struct cp_store *s, const struct cp_store_query *q, int64_t step,
			      struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b)
{
	*out = NULL;
	*n = 0;
	if (s->ops->over_time_groups)
		return s->ops->over_time_groups(s, q, step, out, n, b);
	return over_time_by_select(s, q, step, out, n, b);
}

/* A group's cut: its span [from, to) (empty: no samples) in steps aligned
 * to multiples of step, the first starting at t0 */
struct cut {
	int64_t from, to, step, t0;
	size_t nsteps;
};

static void cut_span(struct cut *c, const struct cp_buckets *b, const int64_t *totals, const struct cp_store_query *q,
		     int64_t min_step, size_t max_intervals)
{
	memset(c, 0, sizeof(*c));
	c->from = INT64_MAX;
	c->to = INT64_MIN;
	for (size_t k = 0; k < b->n; k++) {
		if (!totals[k])
			continue;
		if (c->from == INT64_MAX)
			c->from = b->start + (int64_t)k * b->step;
		c->to = b->start + (int64_t)(k + 1) * b->step;
	}
	if (c->from < q->from)
		c->from = q->from;
	if (c->to > q->to)
		c->to = q->to;
	if (c->from >= c->to)
		return;
	c->step = (c->to - c->from + (int64_t)max_intervals - 1) / (int64_t)max_intervals;
	if (c->step < min_step)
		c->step = min_step;
	c->step = (c->step + min_step - 1) / min_step * min_step;
	c->t0 = c->from / c->step * c->step;
	c->nsteps = (size_t)((c->to - c->t0 + c->step - 1) / c->step);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

void cp_store_intervals_free(struct cp_store_intervals *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++) {
		for (size_t k = 0; g[i].iv && k < g[i].n; k++)
			cp_profile_free(g[i].iv[k]);
		free(g[i].iv);
		free(g[i].group);
	}
	free(g);
}

/* piece p of a selection into its group's step (merged into what the step
 * has; p is taken) */
static int add_piece(struct cp_store_intervals *g, const struct cut *c, int64_t from, struct cp_profile **p)
{
	size_t k = (size_t)((from - c->t0) / c->step);
	int err;

	if (k >= c->nsteps)
		return 0;
	if (!g->iv[k]) {
		g->iv[k] = *p;
		*p = NULL;
		return 0;
	}
	err = cp_profile_merge(g->iv[k], *p, NULL);
	return err;
}

int cp_store_select_intervals(struct cp_store *s, const struct cp_store_query *q, int64_t min_step,
			      size_t max_intervals, struct cp_store_intervals **out, size_t *n)
{
	struct cp_store_group_totals *gt = NULL;
	struct cp_store_intervals *g = NULL;
	struct cut *cuts = NULL;
	struct cp_buckets b;
	int64_t coarse, *edges = NULL;
	size_t ng = 0, nedges = 0, kept = 0;
	int err;

	*out = NULL;
	*n = 0;
	if (min_step <= 0 || !max_intervals || q->from >= q->to)
		return cp_error(EINVAL, "no time range to cut into intervals");
	/* where each group's samples are, in about a thousand coarse steps */
	coarse = (q->to - q->from) / 1000;
	if (coarse < min_step)
		coarse = min_step;
	if ((err = cp_store_over_time_groups(s, q, coarse, &gt, &ng, &b)))
		return err;
	if (!(g = calloc(ng + 1, sizeof(*g))) || !(cuts = calloc(ng + 1, sizeof(*cuts))))
		goto nomem;
	for (size_t i = 0; i < ng; i++) {
		cut_span(&cuts[i], &b, gt[i].totals, q, min_step, max_intervals);
		g[i].group = gt[i].group;
		gt[i].group = NULL;
		g[i].step = cuts[i].step;
		if (cuts[i].from < cuts[i].to && !(g[i].iv = calloc(cuts[i].nsteps, sizeof(*g[i].iv))))
			goto nomem;
		nedges += cuts[i].from < cuts[i].to ? cuts[i].nsteps + 1 : 0;
	}
	/* the pieces between the groups' step boundaries: one selection each,
	 * whose groups go to the step that holds the piece */
	if (nedges && !(edges = malloc(nedges * sizeof(*edges))))
		goto nomem;
	nedges = 0;
	for (size_t i = 0; i < ng; i++) {
		const struct cut *c = &cuts[i];

		if (c->from >= c->to)
			continue;
		edges[nedges++] = c->from;
		for (size_t k = 1; k < c->nsteps; k++)
			edges[nedges++] = c->t0 + (int64_t)k * c->step;
		edges[nedges++] = c->to;
	}
	cp_qsort(edges, nedges, sizeof(*edges), cmp_i64);
	for (size_t e = 0; e + 1 < nedges; e++) {
		struct cp_store_query sq = *q;
		struct cp_store_result *res = NULL;
		size_t nr = 0;
		bool wanted = false;

		if (edges[e] == edges[e + 1])
			continue;
		for (size_t i = 0; i < ng && !wanted; i++)
			wanted = cuts[i].from <= edges[e] && edges[e + 1] <= cuts[i].to;
		if (!wanted)
			continue; /* between the groups' spans */
		sq.from = edges[e];
		sq.to = edges[e + 1];
		if ((err = cp_store_select(s, &sq, &res, &nr)))
			goto out;
		for (size_t r = 0; !err && r < nr; r++) {
			const char *name = res[r].group ? res[r].group : "";
			size_t i = 0;

			if (!res[r].profile || !res[r].profile->nsamples)
				continue;
			while (q->group_by && i < ng && strcmp(g[i].group, name))
				i++;
			if (i < ng && cuts[i].from <= sq.from && sq.to <= cuts[i].to)
				err = add_piece(&g[i], &cuts[i], sq.from, &res[r].profile);
		}
		cp_store_results_free(res, nr);
		if (err)
			goto out;
	}
	/* the groups with samples, and their steps that hold them */
	for (size_t i = 0; i < ng; i++) {
		size_t m = 0;

		for (size_t k = 0; k < cuts[i].nsteps; k++)
			if (g[i].iv[k])
				g[i].iv[m++] = g[i].iv[k];
		g[i].n = m;
		if (!m) {
			free(g[i].iv);
			free(g[i].group);
			continue;
		}
		g[kept++] = g[i];
	}
	*out = g;
	*n = kept;
	g = NULL;
	goto out;
nomem:
	err = cp_error(ENOMEM, "out of memory cutting the range into intervals");
out:
	if (g) {
		for (size_t i = 0; i < ng; i++)
			g[i].n = cuts && g[i].iv ? cuts[i].nsteps : 0;
		cp_store_intervals_free(g, ng);
	}
	cp_store_group_totals_free(gt, ng);
	free(cuts);
	free(edges);
	return err;
}

int cp_store_stats(struct cp_store *s, struct cp_store_stats *st)
{
	return s->ops->stats(s, st);
}

int cp_store_extent(struct cp_store *s, int64_t *oldest, int64_t *newest)
{
	*oldest = *newest = 0;
	if (!s->ops->extent)
		return cp_error(EOPNOTSUPP, "the %s store cannot tell the times it holds", s->ops->name);
	return s->ops->extent(s, oldest, newest);
}

/* ---- what does not depend on a backend ---- */

int cp_store_type_name(const struct cp_profile *p, int vidx, const char *name, char *buf, size_t len)
{
	const char *pt = cp_profile_string(p, p->period_type.type), *pu = cp_profile_string(p, p->period_type.unit);
	int n;

	/* one name for one kind of data, however it arrived: cpu (cprof record's name before it took
	 * Pyroscope's, and a push's) is process_cpu */
	if (name && !strcmp(name, "cpu"))
		name = "process_cpu";
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
		     cp_profile_string(p, p->sample_types[vidx].unit), pt, pu,
		     /* a gauge is a value at a time, whatever interval its profile covers (cumulative.h) */
		     p->duration_nanos && cp_value_kind(cp_profile_string(p, p->sample_types[vidx].type)) != CP_VALUE_GAUGE ?
			     ":delta" : "");
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

int cp_store_sample_values(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
			   const char *label, char ***values, size_t *n)
{
	struct cp_store_series *ser = NULL;
	const char **types = NULL;
	char **v = NULL;
	size_t nser = 0, ntypes = 0, cnt = 0, cap = 0, i, j;
	int err;

	*values = NULL;
	*n = 0;
	if ((err = cp_store_series(s, sel, &ser, &nser)) ||
	    (err = cp_store_distinct(ser, nser, CP_LIST_TYPES, NULL, &types, &ntypes)))
		goto out;
	/* one selection per type (a selection is of one type), grouped by the label: its groups are the values */
	for (i = 0; i < ntypes && !err; i++) {
		const char *braces = sel && sel->src ? strchr(sel->src, '{') : NULL;
		struct cp_selector *typed = NULL;
		struct cp_store_query q = { NULL, from, to, label, NULL, false };
		struct cp_store_result *r = NULL;
		size_t nr = 0;
		char *text = NULL;

		/* the selector again with this type (as text, which a remote store is sent) */
		if (asprintf(&text, "%s%s", types[i], braces ? braces : "") < 0) {
			err = cp_error(ENOMEM, "out of memory listing the values of %s", label);
			break;
		}
		err = cp_selector_parse(text, &typed);
		free(text);
		q.sel = typed;
		if (err || (err = cp_store_select(s, &q, &r, &nr))) {
			cp_selector_free(typed);
			break;
		}
		cp_selector_free(typed);
		for (j = 0; j < nr && !err; j++) {
			if (!*r[j].group || !r[j].profile || !r[j].profile->nsamples)
				continue;
			if (cp_grow((void **)&v, &cap, cnt + 1, sizeof(*v)) || !(v[cnt] = strdup(r[j].group)))
				err = cp_error(ENOMEM, "out of memory listing the values of %s", label);
			else
				cnt++;
		}
		cp_store_results_free(r, nr);
	}
	if (!err)
		cnt = cp_strs_sort_unique(v, cnt);
out:
	free(types);
	cp_store_series_free(ser, nser);
	if (err) {
		cp_store_values_free(v, cnt);
		return err;
	}
	*values = v;
	*n = cnt;
	return 0;
}

void cp_store_values_free(char **values, size_t n)
{
	for (size_t i = 0; values && i < n; i++)
		free(values[i]);
	free(values);
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
