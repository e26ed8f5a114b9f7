/* SPDX-License-Identifier: MIT */
/* Pyroscope's query API (docs/API.md "Grafana"): the methods of querier.v1.QuerierService that
 * Grafana's Pyroscope data source calls, as Connect unary RPCs (lib/http/connect.h), over the
 * store.  Pyroscope's view of a series: its profile type id is the first five parts of cprof's type
 * (name:sample_type:sample_unit:period_type:period_unit, without :delta); its labels are cprof's,
 * with service_name (when a series has none: its job, else its comm, else "cprof", as `cprof push`
 * names it) and Pyroscope's private labels (__profile_type__, __name__, __type__, __unit__,
 * __period_type__, __period_unit__).  A selection of a service_name is read as up to four store
 * selections, one for each label it can come from, merged. */
#include "http/api_impl.h"
#include "http/api_querier.h"
#include "http/connect.h"
#include "render/tree.h"
#include "render/trim.h"

#include "google/v1/profile.pb-c.h"
#include "querier/v1/querier.pb-c.h"
#include "settings/v1/setting.pb-c.h"
#include "types/v1/types.pb-c.h"

#define SERVICE_NAME "service_name"
#define SERVICE_DEFAULT "cprof"
/* max_nodes when a request gives none (Pyroscope's default of max-flamegraph-nodes-default) */
#define MAX_NODES_DEFAULT 8192
/* the milliseconds whose nanoseconds an int64 holds */
#define MS_MAX (INT64_MAX / 1000000 - 1)

/* where service_name comes from, in turn; the last: none (SERVICE_DEFAULT) */
static const char *const svc_src[] = { "service_name", "job", "comm", NULL };
#define NSRC (sizeof(svc_src) / sizeof(svc_src[0]))

/* the private labels, from the type's parts (0..4) and its id (-1) */
static const struct {
	const char *name;
	int part;
} private_labels[] = {
	{ "__profile_type__", -1 }, { "__name__", 0 },	      { "__type__", 1 },
	{ "__unit__", 2 },	    { "__period_type__", 3 }, { "__period_unit__", 4 },
};
#define NPRIV (sizeof(private_labels) / sizeof(private_labels[0]))

/* a type's Pyroscope parts and id */
struct ptype {
	char parts[5][128];
	char id[5 * 128 + 8];
};

static void ptype_of(const char *type, struct ptype *t)
{
	t->id[0] = 0;
	for (int k = 0; k < 5; k++) {
		cp_store_type_part(type, k, t->parts[k], sizeof(t->parts[k]));
		if (k)
			strcat(t->id, ":");
		strcat(t->id, t->parts[k]);
	}
}

static const char *ptype_label(const struct ptype *t, size_t i)
{
	return private_labels[i].part < 0 ? t->id : t->parts[private_labels[i].part];
}

/* a series as Pyroscope shows it: its labels (service_name added when missing), then the private ones */
struct view {
	struct ptype t;
	size_t n, nvisible;
	const char **names, **values;
	int src; /* the svc_src service_name comes from */
};

static const char *series_label(const struct cp_store_series *s, const char *name)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->names[i], name))
			return s->values[i];
	return NULL;
}

static int view_make(const struct cp_store_series *s, struct view *v)
{
	const char *svc = NULL;
	size_t n = 0;

	v->names = malloc((s->nlabels + 1 + NPRIV) * sizeof(*v->names));
	v->values = malloc((s->nlabels + 1 + NPRIV) * sizeof(*v->values));
	if (!v->names || !v->values) {
		free(v->names);
		free(v->values);
		return cp_error(ENOMEM, "out of memory");
	}
	ptype_of(s->type, &v->t);
	for (v->src = 0; svc_src[v->src]; v->src++)
		if ((svc = series_label(s, svc_src[v->src])) && *svc)
			break;
	for (size_t i = 0; i < s->nlabels; i++) {
		v->names[n] = s->names[i];
		v->values[n++] = s->values[i];
	}
	if (v->src) {
		v->names[n] = SERVICE_NAME;
		v->values[n++] = svc_src[v->src] ? svc : SERVICE_DEFAULT;
	}
	v->nvisible = n;
	for (size_t i = 0; i < NPRIV; i++) {
		v->names[n] = private_labels[i].name;
		v->values[n++] = ptype_label(&v->t, i);
	}
	v->n = n;
	return 0;
}

static void view_free(struct view *v)
{
	free(v->names);
	free(v->values);
}

/* Pyroscope's selectors ({service_name="x"}, or with a type before the braces), parsed; false after
 * answering */
static bool parse_matchers(struct cp_resp *out, char **text, size_t n, struct cp_selector ***sels)
{
	int err;

	if (!(*sels = calloc(n + 1, sizeof(**sels)))) {
		cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
		return false;
	}
	for (size_t i = 0; i < n; i++)
		if ((err = cp_selector_parse(text[i], &(*sels)[i]))) {
			cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "matchers: %s", cp_errmsg(-err));
			return false;
		}
	return true;
}

static void free_matchers(struct cp_selector **sels, size_t n)
{
	for (size_t i = 0; sels && i < n; i++)
		cp_selector_free(sels[i]);
	free(sels);
}

/* does v match any of sels (none: all)?  1, 0, -err */
static int view_match(const struct view *v, const char *type, struct cp_selector **sels, size_t n)
{
	if (!n)
		return 1;
	for (size_t i = 0; i < n; i++) {
		int m;

		if (sels[i]->type && !cp_selector_match_type(sels[i], type))
			continue;
		cp_selector_begin(sels[i]);
		if ((m = cp_selector_match_labels(sels[i], v->names, v->values, v->n)))
			return m;
	}
	return 0;
}

/* every series with its view; false after answering */
struct all {
	struct cp_store_series *ser;
	struct view *v;
	size_t n, nv; /* series, views made */
};

static void all_free(struct all *a)
{
	for (size_t i = 0; a->v && i < a->nv; i++)
		view_free(&a->v[i]);
	free(a->v);
	cp_store_series_free(a->ser, a->n);
}

/* the series of [start, end] (ms, as the list methods give them: both 0 all time, end 0 now) */
static bool all_series(struct cp_api *s, struct cp_resp *out, struct all *a, int64_t start, int64_t end)
{
	int64_t from = INT64_MIN, to = INT64_MAX;
	struct cp_store *st;
	int err;

	memset(a, 0, sizeof(*a));
	if (start < -MS_MAX || start > MS_MAX || end < -MS_MAX || end > MS_MAX) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "start/end: milliseconds since 1970, within %lld",
				 (long long)MS_MAX);
		return false;
	}
	if (start || end) {
		from = start * 1000000;
		to = end ? end * 1000000 : cp_now_ns();
	}
	if (from > to) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "the time range is empty: start is after end");
		return false;
	}
	if (!(st = cp_shared_reader(s->store))) {
		cp_connect_error(out, CP_CONNECT_INTERNAL, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_series_in(st, NULL, from, to, &a->ser, &a->n);
	cp_shared_release(s->store, st);
	if (err) {
		cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
		return false;
	}
	if (a->n && !(a->v = calloc(a->n, sizeof(*a->v)))) {
		cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
		all_free(a);
		return false;
	}
	for (size_t i = 0; i < a->n; i++, a->nv++)
		if ((err = view_make(&a->ser[i], &a->v[i]))) {
			cp_connect_error(out, CP_CONNECT_INTERNAL, "%s", cp_errmsg(-err));
			all_free(a);
			memset(a, 0, sizeof(*a));
			return false;
		}
	return true;
}

/* sorted, distinct strings */
struct strset {
	const char **s;
	size_t n, cap;
};

static int strset_add(struct strset *set, const char *str)
{
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->s[i], str))
			return 0;
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 16;
		const char **p = realloc(set->s, cap * sizeof(*p));

		if (!p)
			return cp_error(ENOMEM, "out of memory");
		set->s = p;
		set->cap = cap;
	}
	set->s[set->n++] = str;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void strset_sort(struct strset *set)
{
	if (set->n)
		qsort(set->s, set->n, sizeof(*set->s), cmp_str);
}

/* a copy of set's strings as a message's repeated string (freed with the message) */
static int strset_give(const struct strset *set, char ***out, size_t *n)
{
	*n = 0;
	*out = NULL;
	if (!set->n)
		return 0;
	if (!(*out = calloc(set->n, sizeof(**out))))
		return cp_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < set->n; i++, (*n)++)
		if (!((*out)[i] = strdup(set->s[i])))
			return cp_error(ENOMEM, "out of memory");
	return 0;
}

#define READ(type, desc, var)                                                                   \
	enum cp_connect_enc enc;                                                                \
	type *var = (type *)cp_connect_read(r, out, &desc, &enc);                               \
	if (!var)                                                                               \
		return

/* ---- ProfileTypes, LabelNames, LabelValues, Series ---- */

static void h_profile_types(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Querier__V1__ProfileTypesResponse res = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
	struct strset ids = { 0 };
	struct all a;
	size_t i;
	READ(Querier__V1__ProfileTypesRequest, querier__v1__profile_types_request__descriptor, req);

	if (!all_series(arg, out, &a, req->start, req->end))
		goto out;
	for (i = 0; i < a.n; i++)
		if (strset_add(&ids, a.v[i].t.id))
			goto oom;
	strset_sort(&ids);
	if (ids.n && !(res.profile_types = calloc(ids.n, sizeof(*res.profile_types))))
		goto oom;
	for (i = 0; i < ids.n; i++) {
		Types__V1__ProfileType *pt = malloc(sizeof(*pt));
		struct ptype t;

		if (!pt)
			goto oom;
		types__v1__profile_type__init(pt);
		res.profile_types[res.n_profile_types++] = pt;
		ptype_of(ids.s[i], &t);
		if (!(pt->id = strdup(t.id)) || !(pt->name = strdup(t.parts[0])) ||
		    !(pt->sample_type = strdup(t.parts[1])) || !(pt->sample_unit = strdup(t.parts[2])) ||
		    !(pt->period_type = strdup(t.parts[3])) || !(pt->period_unit = strdup(t.parts[4])))
			goto oom;
	}
	cp_connect_answer(out, enc, &res.base);
	goto done;
oom:
	cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
done:
	for (i = 0; i < res.n_profile_types; i++)
		protobuf_c_message_free_unpacked(&res.profile_types[i]->base, NULL);
	free(res.profile_types);
	free(ids.s);
	all_free(&a);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* a request's selection: the type, Pyroscope's label selector, the range */
struct psel {
	struct cp_selector *user; /* the label selector */
	const char *type;
	int64_t from, to; /* ns, [from, to) */
};

static struct cp_selector *store_selector(const struct psel *p, size_t src);

/* The values label has in the samples, not the series, of the series that sels pick (none: all) of
 * each type in a, over [start, end] (ms, as all_series takes them): the recorder's pid, thread_id and
 * thread_name, an off-CPU wait's state, a client's pprof labels.  Into set (empty before), each once;
 * keep holds the strings (the caller frees them once set is given).  0 or -errno. */
static int sample_values(struct cp_api *s, const struct all *a, struct cp_selector **sels, size_t nsels,
			 int64_t start, int64_t end, const char *label, struct strset *set, struct strset *keep)
{
	struct strset types = { 0 };
	struct cp_selector *all = NULL;
	struct cp_store *st = NULL;
	int err = 0;

	for (size_t i = 0; i < a->n && !err; i++)
		err = strset_add(&types, a->ser[i].type);
	if (!err && !nsels && !(err = cp_selector_parse("{}", &all)))
		sels = &all, nsels = 1;
	if (!err && !(st = cp_shared_reader(s->store)))
		err = cp_error(errno ? errno : ENOMEM, "%s", "cannot read the store");
	for (size_t t = 0; t < types.n && !err; t++) {
		for (size_t j = 0; j < nsels && !err; j++) {
			struct psel p = { sels[j], types.s[t], INT64_MIN, INT64_MAX };

			if (sels[j]->type && !cp_selector_match_type(sels[j], types.s[t]))
				continue;
			if (start || end) {
				p.from = start * 1000000;
				p.to = end ? end * 1000000 : cp_now_ns();
			}
			for (size_t src = 0; src < NSRC && !err; src++) {
				struct cp_selector *sel = store_selector(&p, src);
				char **v = NULL;
				size_t n = 0;

				if (!sel) {
					err = errno ? -errno : 0;
					continue;
				}
				err = cp_store_sample_values(st, sel, p.from, p.to, label, &v, &n);
				cp_selector_free(sel);
				/* (each call's values are sorted and apart; the union is made below: a busy
				 * host's day has tens of thousands of pids, too many for strset_add's scan) */
				if (!err && n && cp_grow((void **)&keep->s, &keep->cap, keep->n + n, sizeof(*keep->s)))
					err = cp_error(ENOMEM, "out of memory");
				for (size_t k = 0; k < n; k++)
					if (err)
						free(v[k]);
					else
						keep->s[keep->n++] = v[k];
				free(v);
			}
		}
	}
	if (st)
		cp_shared_release(s->store, st);
	cp_selector_free(all);
	free(types.s);
	if (err)
		return err;
	keep->n = cp_strs_sort_unique((char **)keep->s, keep->n);
	free(set->s);
	set->s = NULL;
	set->n = set->cap = 0;
	if (keep->n && !(set->s = malloc(keep->n * sizeof(*set->s))))
		return cp_error(ENOMEM, "out of memory");
	memcpy(set->s, keep->s, keep->n * sizeof(*set->s));
	set->n = set->cap = keep->n;
	return 0;
}

/* the distinct label names (label NULL) or values of label over the series matching matchers */
static void label_list(struct cp_req *r, struct cp_resp *out, void *arg, enum cp_connect_enc enc, char **matchers,
		       size_t nmatchers, int64_t start, int64_t end, const char *label, ProtobufCMessage *res,
		       char ***names, size_t *nnames)
{
	struct cp_selector **sels = NULL;
	struct strset set = { 0 }, keep = { 0 };
	struct all a = { 0 };
	bool series_label = false;
	int m = 0;

	(void)r;
	if (!parse_matchers(out, matchers, nmatchers, &sels) || !all_series(arg, out, &a, start, end))
		goto out;
	for (size_t i = 0; i < a.n && m >= 0; i++) {
		for (size_t k = 0; label && k < a.v[i].nvisible && !series_label; k++)
			series_label = !strcmp(a.v[i].names[k], label);
		if ((m = view_match(&a.v[i], a.ser[i].type, sels, nmatchers)) <= 0)
			continue;
		for (size_t k = 0; k < a.v[i].nvisible && m >= 0; k++)
			if (!label && strset_add(&set, a.v[i].names[k]))
				m = -ENOMEM;
			else if (label && !strcmp(a.v[i].names[k], label) && *a.v[i].values[k] &&
				 strset_add(&set, a.v[i].values[k]))
				m = -ENOMEM;
	}
	/* a label no series has: a sample label, whose values are in the samples (as cprof query --values) */
	if (m >= 0 && label && !series_label && a.n && !set.n)
		m = sample_values(arg, &a, sels, nmatchers, start, end, label, &set, &keep);
	if (m < 0) {
		cp_connect_error(out, cp_connect_code_of(m), "%s", cp_errmsg(-m));
		goto out;
	}
	strset_sort(&set);
	if (strset_give(&set, names, nnames))
		cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
	else
		cp_connect_answer(out, enc, res);
out:
	free(set.s);
	for (size_t i = 0; i < keep.n; i++)
		free((char *)keep.s[i]);
	free(keep.s);
	all_free(&a);
	free_matchers(sels, nmatchers);
}

static void h_label_names(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Types__V1__LabelNamesResponse res = TYPES__V1__LABEL_NAMES_RESPONSE__INIT;
	READ(Types__V1__LabelNamesRequest, types__v1__label_names_request__descriptor, req);

	label_list(r, out, arg, enc, req->matchers, req->n_matchers, req->start, req->end, NULL, &res.base, &res.names,
		   &res.n_names);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	for (size_t i = 0; i < res.n_names; i++)
		free(res.names[i]);
	free(res.names);
}

static void h_label_values(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Types__V1__LabelValuesResponse res = TYPES__V1__LABEL_VALUES_RESPONSE__INIT;
	READ(Types__V1__LabelValuesRequest, types__v1__label_values_request__descriptor, req);

	if (!*req->name)
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "name: give the label whose values to list");
	else if (!strncmp(req->name, "__", 2)) /* Pyroscope's private labels are not listed */
		cp_connect_answer(out, enc, &res.base);
	else
		label_list(r, out, arg, enc, req->matchers, req->n_matchers, req->start, req->end, req->name, &res.base,
			   &res.names, &res.n_names);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	for (size_t i = 0; i < res.n_names; i++)
		free(res.names[i]);
	free(res.names);
}

static Types__V1__LabelPair *label_pair(const char *name, const char *value)
{
	Types__V1__LabelPair *p = malloc(sizeof(*p));

	if (!p)
		return NULL;
	types__v1__label_pair__init(p);
	if (!(p->name = strdup(name)) || !(p->value = strdup(value))) {
		protobuf_c_message_free_unpacked(&p->base, NULL);
		return NULL;
	}
	return p;
}

static int cmp_pair(const void *a, const void *b)
{
	const Types__V1__LabelPair *x = *(Types__V1__LabelPair *const *)a, *y = *(Types__V1__LabelPair *const *)b;

	return strcmp(x->name, y->name);
}

static int labels_same(const Types__V1__Labels *a, const Types__V1__Labels *b)
{
	if (a->n_labels != b->n_labels)
		return 0;
	for (size_t i = 0; i < a->n_labels; i++)
		if (strcmp(a->labels[i]->name, b->labels[i]->name) || strcmp(a->labels[i]->value, b->labels[i]->value))
			return 0;
	return 1;
}

static void h_series(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Querier__V1__SeriesResponse res = QUERIER__V1__SERIES_RESPONSE__INIT;
	struct cp_selector **sels = NULL;
	struct all a = { 0 };
	int m = 0;
	READ(Querier__V1__SeriesRequest, querier__v1__series_request__descriptor, req);

	if (!parse_matchers(out, req->matchers, req->n_matchers, &sels) || !all_series(arg, out, &a, req->start, req->end))
		goto out;
	if (a.n && !(res.labels_set = calloc(a.n, sizeof(*res.labels_set))))
		goto oom;
	for (size_t i = 0; i < a.n; i++) {
		Types__V1__Labels *ls;
		bool dup = false;

		if ((m = view_match(&a.v[i], a.ser[i].type, sels, req->n_matchers)) < 0)
			break;
		if (!m)
			continue;
		if (!(ls = malloc(sizeof(*ls))))
			goto oom;
		types__v1__labels__init(ls);
		ls->labels = calloc(a.v[i].n, sizeof(*ls->labels));
		res.labels_set[res.n_labels_set++] = ls;
		if (!ls->labels)
			goto oom;
		for (size_t k = 0; k < a.v[i].n; k++) {
			bool want = !req->n_label_names;

			for (size_t j = 0; j < req->n_label_names && !want; j++)
				want = !strcmp(req->label_names[j], a.v[i].names[k]);
			if (!want)
				continue;
			if (!(ls->labels[ls->n_labels] = label_pair(a.v[i].names[k], a.v[i].values[k])))
				goto oom;
			ls->n_labels++;
		}
		if (ls->n_labels)
			qsort(ls->labels, ls->n_labels, sizeof(*ls->labels), cmp_pair);
		/* with label_names, series that differ in other labels are one */
		for (size_t j = 0; j + 1 < res.n_labels_set && !dup; j++)
			dup = labels_same(res.labels_set[j], ls);
		if (dup) {
			protobuf_c_message_free_unpacked(&ls->base, NULL);
			res.n_labels_set--;
		}
	}
	if (m < 0)
		cp_connect_error(out, cp_connect_code_of(m), "%s", cp_errmsg(-m));
	else
		cp_connect_answer(out, enc, &res.base);
	goto done;
oom:
	cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
done:
	for (size_t i = 0; i < res.n_labels_set; i++)
		protobuf_c_message_free_unpacked(&res.labels_set[i]->base, NULL);
	free(res.labels_set);
out:
	all_free(&a);
	free_matchers(sels, req->n_matchers);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ---- selections ---- */

/* false after answering */
static bool psel_parse(struct cp_resp *out, const char *type, const char *labels, int64_t start, int64_t end,
		       struct psel *p)
{
	struct cp_selector *t = NULL;
	int64_t now = cp_now_ns();
	int err;

	memset(p, 0, sizeof(*p));
	if (!*type) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT,
				 "profile_typeID: give a type, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds");
		return false;
	}
	if (strchr(type, '{') || (err = cp_selector_parse(type, &t)) || !t->type) {
		cp_selector_free(t);
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "profile_typeID: '%.128s' is not a profile type",
				 type);
		return false;
	}
	cp_selector_free(t);
	if ((err = cp_selector_parse(*labels ? labels : "{}", &p->user)) || p->user->type) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "label_selector: %s",
				 err ? cp_errmsg(-err) : "give only {matchers}");
		cp_selector_free(p->user);
		p->user = NULL;
		return false;
	}
	if (start < -MS_MAX || start > MS_MAX || end < -MS_MAX || end > MS_MAX) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "start/end: milliseconds since 1970, within %lld",
				 (long long)MS_MAX);
		goto bad;
	}
	p->to = end ? end * 1000000 : now;
	p->from = start ? start * 1000000 : p->to - 3600 * (int64_t)1000000000;
	if (p->from > p->to) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "the time range is empty: start is after end");
		goto bad;
	}
	p->type = type;
	return true;
bad:
	cp_selector_free(p->user);
	p->user = NULL;
	return false;
}

/* The store selector of p for the series whose service_name comes from svc_src[src], or NULL
 * (errno 0) when none can match: the type, the label selector's matchers (those of service_name on
 * the label it comes from; the private ones checked against the type here), and that the labels
 * service_name would come from first are missing.  NULL + errno on error. */
static struct cp_selector *store_selector(const struct psel *p, size_t src)
{
	struct cp_selector *sel = NULL;
	struct ptype t;
	int err;

	ptype_of(p->type, &t);
	if ((err = cp_selector_parse(p->type, &sel)))
		goto fail;
	for (size_t i = 0; i < p->user->n; i++) {
		const struct cp_matcher *m = &p->user->matchers[i];
		const char *name = m->name;

		if (!strncmp(name, "__", 2)) {
			const char *v = "";

			for (size_t k = 0; k < NPRIV; k++)
				if (!strcmp(private_labels[k].name, name))
					v = ptype_label(&t, k);
			if ((err = cp_matcher_match(m, v)) <= 0)
				goto none;
			continue;
		}
		if (!strcmp(name, SERVICE_NAME)) {
			if (!svc_src[src]) {
				if ((err = cp_matcher_match(m, SERVICE_DEFAULT)) <= 0)
					goto none;
				continue;
			}
			name = svc_src[src];
		}
		if ((err = cp_selector_add_matcher(sel, name, m->op, m->value)))
			goto fail;
	}
	for (size_t k = 0; k < src && k < NSRC - 1; k++)
		if ((err = cp_selector_add_matcher(sel, svc_src[k], CP_MATCH_EQ, "")))
			goto fail;
	if (svc_src[src] && (err = cp_selector_add_matcher(sel, svc_src[src], CP_MATCH_NE, "")))
		goto fail;
	return sel;
none:
	cp_selector_free(sel);
	errno = err < 0 ? -err : 0;
	return NULL;
fail:
	cp_selector_free(sel);
	errno = -err;
	return NULL;
}

/* The samples of p merged into one profile (*prof; NULL when no series matches); false after answering */
static bool psel_profile(struct cp_api *s, struct cp_resp *out, const struct psel *p, struct cp_profile **prof)
{
	*prof = NULL;
	for (size_t src = 0; src < NSRC; src++) {
		struct cp_selector *sel = store_selector(p, src);
		struct cp_store_query q = { sel, p->from, p->to, NULL, NULL, false };
		struct cp_store_result *res = NULL;
		struct cp_store *st;
		size_t n = 0;
		int err;

		if (!sel && !errno)
			continue;
		if (!sel) {
			cp_connect_error(out, cp_connect_code_of(errno), "%s", cp_errmsg(errno));
			goto fail;
		}
		if (!(st = cp_shared_reader(s->store))) {
			cp_selector_free(sel);
			cp_connect_error(out, CP_CONNECT_INTERNAL, "%s", cp_errmsg(errno));
			goto fail;
		}
		err = cp_store_select(st, &q, &res, &n);
		cp_shared_release(s->store, st);
		cp_selector_free(sel);
		if (err == -ENOENT)
			continue;
		if (!err && n && !*prof) {
			*prof = res[0].profile;
			res[0].profile = NULL;
		} else if (!err && n) {
			err = cp_profile_merge(*prof, res[0].profile, NULL);
		}
		cp_store_results_free(res, n);
		if (err) {
			cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
			goto fail;
		}
	}
	return true;
fail:
	cp_profile_free(*prof);
	*prof = NULL;
	return false;
}

static void psel_free(struct psel *p)
{
	cp_selector_free(p->user);
}

/* max_nodes as given (set: whether it was); false after answering */
static bool get_max_nodes(struct cp_resp *out, bool set, int64_t v, int64_t *max)
{
	*max = set && v ? v : MAX_NODES_DEFAULT;
	if (*max < 0) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "max_nodes: %lld is negative", (long long)v);
		return false;
	}
	return true;
}

/* ---- the flame graph: Pyroscope's FlameGraph of a call tree ---- */

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

struct fg {
	Querier__V1__FlameGraph *g;
	const struct cp_tree *t;
	int64_t min;  /* nodes below it go into their parent's "other" */
	size_t *cap;  /* of each level's values */
	size_t ncap;
	struct strset names; /* points into the tree's names */
};

static int fg_name(struct fg *f, const char *name, int64_t *idx)
{
	for (size_t i = 0; i < f->names.n; i++)
		if (!strcmp(f->names.s[i], name)) {
			*idx = (int64_t)i;
			return 0;
		}
	*idx = (int64_t)f->names.n;
	return strset_add(&f->names, name);
}

/* a node of the flame graph at depth, x: its absolute offset; *prev_end: the level's last end */
static int fg_push(struct fg *f, uint32_t depth, int64_t x, int64_t total, int64_t self, const char *name)
{
	Querier__V1__FlameGraph *g = f->g;
	Querier__V1__Level *l;
	int64_t idx, prev = 0;
	int err;

	if ((err = fg_name(f, name, &idx)))
		return err;
	if (depth >= g->n_levels) {
		Querier__V1__Level **lv = realloc(g->levels, (depth + 1) * sizeof(*lv));
		size_t *cap = realloc(f->cap, (depth + 1) * sizeof(*cap));

		if (lv)
			g->levels = lv;
		if (cap)
			f->cap = cap;
		if (!lv || !cap)
			return cp_error(ENOMEM, "out of memory");
		for (; g->n_levels <= depth; g->n_levels++) {
			if (!(l = malloc(sizeof(*l))))
				return cp_error(ENOMEM, "out of memory");
			querier__v1__level__init(l);
			g->levels[g->n_levels] = l;
			f->cap[g->n_levels] = 0;
		}
	}
	l = g->levels[depth];
	if (l->n_values + 4 > f->cap[depth]) {
		size_t cap = f->cap[depth] ? f->cap[depth] * 2 : 64;
		int64_t *v = realloc(l->values, cap * sizeof(*v));

		if (!v)
			return cp_error(ENOMEM, "out of memory");
		l->values = v;
		f->cap[depth] = cap;
	}
	/* the offset is from the end of the level's previous node (Pyroscope's delta encoding) */
	for (size_t i = 0; i < l->n_values; i += 4)
		prev += l->values[i] + l->values[i + 1];
	l->values[l->n_values++] = x - prev;
	l->values[l->n_values++] = total;
	l->values[l->n_values++] = self;
	l->values[l->n_values++] = idx;
	if (self > g->max_self)
		g->max_self = self;
	return 0;
}

static int fg_node(struct fg *f, uint32_t node, uint32_t depth, int64_t x)
{
	const struct cp_tree_node *n = &f->t->nodes[node];
	int64_t cx = x + n->self[0], other = 0;
	int err;

	if ((err = fg_push(f, depth, x, n->total[0], n->self[0], depth ? cp_tree_name(f->t, node) : "total")))
		return err;
	for (uint32_t c = n->child; c; c = f->t->nodes[c].sibling) {
		const struct cp_tree_node *cn = &f->t->nodes[c];

		if (!cn->total[0])
			continue;
		if (cn->total[0] < f->min || !strcmp(cp_tree_name(f->t, c), "other")) {
			other += cn->total[0];
			continue;
		}
		if ((err = fg_node(f, c, depth + 1, cx)))
			return err;
		cx += cn->total[0];
	}
	if (other && (err = fg_push(f, depth + 1, cx, other, other, "other")))
		return err;
	return 0;
}

/* the flame graph of p (value 0) in at most about max_nodes nodes, as Pyroscope makes it: the nodes
 * whose total is under the max_nodes-th largest go into an "other" node of their parent */
static int flame_graph(const struct cp_profile *p, int64_t max_nodes, Querier__V1__FlameGraph **out)
{
	struct fg f = { 0 };
	struct cp_tree *t = NULL;
	int64_t *totals = NULL;
	int err = -ENOMEM;

	if (!(f.g = *out = malloc(sizeof(**out))))
		return cp_error(ENOMEM, "out of memory");
	querier__v1__flame_graph__init(f.g);
	if (!p || !p->nsamples)
		return 0;
	if (!(t = cp_tree_new()) || (err = cp_tree_add(t, p, 0, 0, false)) || (err = cp_tree_sort(t)))
		goto out;
	f.t = t;
	f.g->total = t->nodes[0].total[0];
	if (max_nodes > 0 && (uint64_t)max_nodes < t->nnodes - 1) {
		err = -ENOMEM;
		if (!(totals = malloc((t->nnodes - 1) * sizeof(*totals))))
			goto out;
		for (uint32_t i = 1; i < t->nnodes; i++)
			totals[i - 1] = t->nodes[i].total[0];
		qsort(totals, t->nnodes - 1, sizeof(*totals), cmp_i64_desc);
		f.min = totals[max_nodes - 1];
	}
	err = fg_node(&f, 0, 0, 0);
	if (!err && f.names.n && !(f.g->names = calloc(f.names.n, sizeof(*f.g->names))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < f.names.n; i++, f.g->n_names++)
		if (!(f.g->names[i] = strdup(f.names.s[i])))
			err = -ENOMEM;
out:
	free(totals);
	free(f.cap);
	free(f.names.s);
	cp_tree_free(t);
	return err == -ENOMEM ? cp_error(ENOMEM, "out of memory") : err;
}

/* ---- SelectMergeStacktraces, SelectMergeProfile ---- */

/* p as google.v1.Profile (pprof; an empty one for NULL) */
static Google__V1__Profile *to_pprof(const struct cp_profile *p, int *err)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	Google__V1__Profile *g;

	if (!p) {
		if ((g = malloc(sizeof(*g))))
			google__v1__profile__init(g);
		*err = g ? 0 : -ENOMEM;
		return g;
	}
	if ((*err = cp_pprof_encode(p, 0, &buf, &len)))
		return NULL;
	g = google__v1__profile__unpack(NULL, len, buf);
	free(buf);
	*err = g ? 0 : cp_error(ENOMEM, "out of memory");
	return g;
}

/* *p cut to max_nodes nodes as Pyroscope cuts a pprof answer (render/trim.h; 0: whole) */
static int trim(struct cp_profile **p, int64_t max_nodes)
{
	struct cp_profile *q;
	int err;

	if (!*p || max_nodes <= 0)
		return 0;
	if ((err = cp_profile_trim_nodes(*p, 0, max_nodes, &q)))
		return err;
	cp_profile_free(*p);
	*p = q;
	return 0;
}

static void h_select_merge_stacktraces(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Querier__V1__SelectMergeStacktracesResponse res = QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	Querier__V1__PprofProfile pp = QUERIER__V1__PPROF_PROFILE__INIT;
	struct cp_profile *prof = NULL;
	struct psel p = { 0 };
	int64_t max;
	int err = 0;
	READ(Querier__V1__SelectMergeStacktracesRequest, querier__v1__select_merge_stacktraces_request__descriptor,
	     req);

	if (req->format != QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_UNSPECIFIED &&
	    req->format != QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_FLAMEGRAPH &&
	    req->format != QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED, "format: cprof answers the flame graph and pprof");
		goto out;
	}
	if (req->_stack_trace_selector_case || req->n_profile_id_selector || req->n_trace_id_selector ||
	    req->n_span_selector || req->_async_case) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED,
				 "stack trace, profile, trace and span selectors and async queries are not supported");
		goto out;
	}
	if (!get_max_nodes(out, req->_max_nodes_case, req->max_nodes, &max) ||
	    !psel_parse(out, req->profile_typeid, req->label_selector, req->start, req->end, &p) ||
	    !psel_profile(arg, out, &p, &prof))
		goto out;
	if (req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF) {
		if (!(err = trim(&prof, max)) && (pp.profile = to_pprof(prof, &err)))
			res.pprof = &pp;
	} else {
		err = flame_graph(prof, max, &res.flamegraph);
	}
	if (err)
		cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
	else
		cp_connect_answer(out, enc, &res.base);
	if (res.flamegraph)
		protobuf_c_message_free_unpacked(&res.flamegraph->base, NULL);
	if (pp.profile)
		protobuf_c_message_free_unpacked(&pp.profile->base, NULL);
out:
	cp_profile_free(prof);
	psel_free(&p);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void h_select_merge_profile(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_profile *prof = NULL;
	Google__V1__Profile *g;
	struct psel p = { 0 };
	int64_t max;
	int err;
	READ(Querier__V1__SelectMergeProfileRequest, querier__v1__select_merge_profile_request__descriptor, req);

	if (req->_stack_trace_selector_case || req->n_profile_id_selector || req->n_trace_id_selector) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED,
				 "stack trace, profile and trace selectors are not supported");
		goto out;
	}
	/* the pprof is whole unless max_nodes is given (as Pyroscope's: it is for exporting pprof) */
	if (!get_max_nodes(out, req->_max_nodes_case, req->max_nodes, &max) ||
	    !psel_parse(out, req->profile_typeid, req->label_selector, req->start, req->end, &p) ||
	    !psel_profile(arg, out, &p, &prof))
		goto out;
	if ((err = trim(&prof, req->_max_nodes_case ? max : 0)) || !(g = to_pprof(prof, &err))) {
		cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
		goto out;
	}
	cp_connect_answer(out, enc, &g->base);
	protobuf_c_message_free_unpacked(&g->base, NULL);
out:
	cp_profile_free(prof);
	psel_free(&p);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ---- SelectSeries ---- */

/* a group's totals summed over the store selections */
struct sgroup {
	char *name;
	int64_t *totals;
};

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct sgroup *)a)->name, ((const struct sgroup *)b)->name);
}

static void sgroups_free(struct sgroup *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(g[i].name);
		free(g[i].totals);
	}
	free(g);
}

/* one store selection's group totals added to *groups */
static int sgroups_add(struct sgroup **groups, size_t *ngroups, const struct cp_store_group_totals *gt, size_t ng,
		       const char *fixed, size_t nb)
{
	for (size_t k = 0; k < ng; k++) {
		const char *name = fixed ? fixed : gt[k].group;
		size_t j;

		for (j = 0; j < *ngroups && strcmp((*groups)[j].name, name); j++)
			;
		if (j == *ngroups) {
			struct sgroup *g = realloc(*groups, (*ngroups + 1) * sizeof(*g));

			if (!g)
				return cp_error(ENOMEM, "out of memory");
			*groups = g;
			g[j].name = strdup(name);
			g[j].totals = calloc(nb ? nb : 1, sizeof(int64_t));
			(*ngroups)++;
			if (!g[j].name || !g[j].totals)
				return cp_error(ENOMEM, "out of memory");
		}
		for (size_t t = 0; t < nb; t++)
			(*groups)[j].totals[t] += gt[k].totals[t];
	}
	return 0;
}

/* The totals of p per value of the label gb (NULL: one group "") in the buckets of step ns (raised
 * to the coarsest resolution of the data read: *b says which), sorted by group; false after
 * answering. */
static bool psel_totals(struct cp_api *s, struct cp_resp *out, const struct psel *p, const char *gb, int64_t step,
			struct sgroup **groups, size_t *ngroups, struct cp_buckets *b)
{
	bool by_svc = gb && !strcmp(gb, SERVICE_NAME);
	int err;

	*groups = NULL;
	*ngroups = 0;
	if ((err = cp_buckets_align(p->from, p->to, step, b))) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "step: %s", cp_errmsg(-err));
		return false;
	}
	/* every selection's buckets are the same: a selection whose data is coarser raises the step,
	 * then all are read again at it */
	for (int pass = 0; pass < 3; pass++) {
		bool raised = false;

		sgroups_free(*groups, *ngroups);
		*groups = NULL;
		*ngroups = 0;
		for (size_t src = 0; src < NSRC && !raised; src++) {
			struct cp_selector *sel = store_selector(p, src);
			struct cp_store_query q = { sel, p->from, p->to, by_svc ? svc_src[src] : gb, NULL, false };
			struct cp_store_group_totals *gt = NULL;
			struct cp_buckets sb;
			struct cp_store *st;
			size_t ng = 0;

			if (!sel && !errno)
				continue;
			if (!sel) {
				cp_connect_error(out, cp_connect_code_of(errno), "%s", cp_errmsg(errno));
				goto fail;
			}
			if (!(st = cp_shared_reader(s->store))) {
				cp_selector_free(sel);
				cp_connect_error(out, CP_CONNECT_INTERNAL, "%s", cp_errmsg(errno));
				goto fail;
			}
			err = cp_store_over_time_groups(st, &q, step, &gt, &ng, &sb);
			cp_shared_release(s->store, st);
			cp_selector_free(sel);
			if (err == -ENOENT)
				continue;
			if (err) {
				cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
				goto fail;
			}
			if (sb.step != b->step || sb.n != b->n || sb.start != b->start) {
				*b = sb;
				step = sb.step;
				raised = true;
			} else {
				err = sgroups_add(groups, ngroups, gt, ng, by_svc && !svc_src[src] ? SERVICE_DEFAULT : NULL,
						  b->n);
			}
			cp_store_group_totals_free(gt, ng);
			if (err) {
				cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
				goto fail;
			}
		}
		if (!raised) {
			if (*ngroups)
				qsort(*groups, *ngroups, sizeof(**groups), cmp_group);
			return true;
		}
	}
	cp_connect_error(out, CP_CONNECT_INTERNAL, "the selections' resolutions do not agree");
fail:
	sgroups_free(*groups, *ngroups);
	*groups = NULL;
	*ngroups = 0;
	return false;
}

static void h_select_series(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Querier__V1__SelectSeriesResponse res = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
	struct sgroup *groups = NULL;
	struct cp_buckets b = { 0 };
	struct psel p = { 0 };
	size_t ngroups = 0, i;
	int64_t step = 0;
	const char *gb = NULL;
	READ(Querier__V1__SelectSeriesRequest, querier__v1__select_series_request__descriptor, req);

	if (req->_stack_trace_selector_case || (req->_limit_case && req->limit < 0)) {
		cp_connect_error(out, req->_stack_trace_selector_case ? CP_CONNECT_UNIMPLEMENTED :
									CP_CONNECT_INVALID_ARGUMENT,
				 req->_stack_trace_selector_case ? "stack trace selectors are not supported" :
								   "limit: negative");
		goto out;
	}
	if (req->n_group_by > 1) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED, "group_by: cprof groups by one label");
		goto out;
	}
	gb = req->n_group_by ? req->group_by[0] : NULL;
	if (gb && !cp_label_name_valid(gb, strlen(gb))) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "group_by: '%.64s' is not a label name", gb);
		goto out;
	}
	if (!(req->step >= 0 && req->step <= 1e9)) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "step: seconds, from 0 (the default) to 1e9");
		goto out;
	}
	if (!psel_parse(out, req->profile_typeid, req->label_selector, req->start, req->end, &p))
		goto out;
	step = req->step > 0 ? (int64_t)(req->step * 1e9) : cp_buckets_default_step(p.from, p.to);
	if (step < 1000000)
		step = 1000000;
	if (!psel_totals(arg, out, &p, gb, step, &groups, &ngroups, &b))
		goto out;
	if (ngroups && !(res.series = calloc(ngroups, sizeof(*res.series))))
		goto oom;
	for (i = 0; i < ngroups; i++) {
		Types__V1__Series *se = malloc(sizeof(*se));
		size_t np = 0;

		if (!se)
			goto oom;
		types__v1__series__init(se);
		res.series[res.n_series++] = se;
		if (gb) {
			if (!(se->labels = calloc(1, sizeof(*se->labels))) ||
			    !(se->labels[0] = label_pair(gb, groups[i].name)))
				goto oom;
			se->n_labels = 1;
		}
		/* the points of the buckets with samples, as Pyroscope gives them */
		for (size_t t = 0; t < b.n; t++)
			np += groups[i].totals[t] != 0;
		if (np && !(se->points = calloc(np, sizeof(*se->points))))
			goto oom;
		for (size_t t = 0; t < b.n; t++) {
			Types__V1__Point *pt;

			if (!groups[i].totals[t])
				continue;
			if (!(pt = malloc(sizeof(*pt))))
				goto oom;
			types__v1__point__init(pt);
			pt->value = (double)groups[i].totals[t];
			pt->timestamp = (b.start + (int64_t)t * b.step) / 1000000;
			se->points[se->n_points++] = pt;
		}
	}
	cp_connect_answer(out, enc, &res.base);
	goto done;
oom:
	cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
done:
	for (i = 0; i < res.n_series; i++)
		protobuf_c_message_free_unpacked(&res.series[i]->base, NULL);
	free(res.series);
out:
	sgroups_free(groups, ngroups);
	psel_free(&p);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ---- GetProfileStats: whether anything was stored, and from when to when ---- */

static void h_profile_stats(struct cp_req *r, struct cp_resp *out, void *arg)
{
	Types__V1__GetProfileStatsResponse res = TYPES__V1__GET_PROFILE_STATS_RESPONSE__INIT;
	struct cp_api *s = arg;
	struct cp_store *st;
	int64_t oldest = 0, newest = 0;
	int err;
	READ(Types__V1__GetProfileStatsRequest, types__v1__get_profile_stats_request__descriptor, req);

	if (!(st = cp_shared_reader(s->store))) {
		cp_connect_error(out, CP_CONNECT_INTERNAL, "%s", cp_errmsg(errno));
		goto out;
	}
	err = cp_store_extent(st, &oldest, &newest);
	cp_shared_release(s->store, st);
	if (err) {
		cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
		goto out;
	}
	res.data_ingested = newest > 0;
	res.oldest_profile_time = oldest / 1000000; /* ms */
	res.newest_profile_time = newest / 1000000;
	cp_connect_answer(out, enc, &res.base);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ---- the routes ---- */

void api_h_querier(struct cp_req *r, struct cp_resp *out, void *arg)
{
	static const struct {
		const char *method;
		cp_handler_fn fn;
	} methods[] = {
		{ "ProfileTypes", h_profile_types },
		{ "LabelNames", h_label_names },
		{ "LabelValues", h_label_values },
		{ "Series", h_series },
		{ "SelectMergeStacktraces", h_select_merge_stacktraces },
		{ "SelectMergeProfile", h_select_merge_profile },
		{ "SelectSeries", h_select_series },
		{ "GetProfileStats", h_profile_stats },
	};
	const char *path = cp_req_path(r), *m = strrchr(path, '/') + 1;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(methods[i].method, m)) {
			methods[i].fn(r, out, arg);
			return;
		}
	cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED, "querier.v1.QuerierService/%.64s is not implemented", m);
}

/* ---- /pyroscope/render: the JSON flame graph (flamebearer) that Grafana's Profiles Drilldown reads ---- */

/* Pyroscope's step of a render's timeline (s): about 1500 points, at least 15 s, rounded to these */
static int64_t render_step(int64_t from_ms, int64_t to_ms)
{
	static const struct {
		int64_t upto, step; /* ms */
	} steps[] = {
		{ 17500, 15000 },	   { 25000, 20000 },	     { 45000, 30000 },	       { 90000, 60000 },
		{ 210000, 120000 },	   { 450000, 300000 },	     { 750000, 600000 },       { 1050000, 900000 },
		{ 1500000, 1200000 },	   { 2700000, 1800000 },     { 5400000, 3600000 },     { 9000000, 7200000 },
		{ 16200000, 10800000 },	   { 32400000, 21600000 },   { 86400000, 43200000 },   { 172800000, 86400000 },
		{ 604800000, 86400000 },   { 1814400000, 604800000 }, { 3628800000 - 1, 2592000000 },
	};
	int64_t iv = (to_ms - from_ms) / 1500;

	if (iv < 15000)
		return 15;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (iv <= steps[i].upto)
			return steps[i].step / 1000;
	return 31536000;
}

/* a timeline of Pyroscope's flamebearer: the group's totals in whole steps from from_ms, snapped to
 * them, up to to_ms snapped down (as Pyroscope cuts it) */
static json_t *render_timeline(const struct sgroup *g, const struct cp_buckets *b, int64_t from_ms, int64_t to_ms)
{
	int64_t step_ms = b->step / 1000000, start = from_ms / step_ms * step_ms, end = to_ms / step_ms * step_ms;
	json_t *samples = json_array();
	int64_t n = end > start ? (end / 1000 - start / 1000) / (step_ms / 1000) : 0;

	for (int64_t j = 0; samples && j < n; j++) {
		int64_t t = (start + j * step_ms) * 1000000, v = 0;

		if (g && t >= b->start && (t - b->start) / b->step < (int64_t)b->n)
			v = g->totals[(t - b->start) / b->step];
		if (json_array_append_new(samples, json_integer(v < 0 ? 0 : v))) {
			json_decref(samples);
			return NULL;
		}
	}
	return json_pack("{s:I,s:o,s:I,s:n}", "startTime", (json_int_t)(start / 1000), "samples", samples,
			 "durationDelta", (json_int_t)(step_ms / 1000), "watermarks");
}

/* a time argument of render (from, until: cprof's times, which take Pyroscope's now-1h and unix
 * seconds or ms) in ms; false after answering */
static bool render_time(struct cp_req *r, struct cp_resp *out, const char *name, int64_t now, int64_t dflt,
			int64_t *ms)
{
	const char *v = cp_req_arg(r, name);
	int64_t ns = dflt;
	int err;

	if (v && *v && (err = cp_parse_time(v, now, &ns))) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "%s: %s", name, cp_errmsg(-err));
		return false;
	}
	*ms = ns / 1000000;
	return true;
}

/* a render's selection: the selector in the argument qname (TYPE{...}) over [fname, uname); false
 * after answering */
static bool render_psel(struct cp_req *r, struct cp_resp *out, const char *qname, const char *fname,
			const char *uname, struct psel *p, int64_t *from_ms, int64_t *to_ms)
{
	const char *query = cp_req_arg(r, qname);
	int64_t now = cp_now_ns();
	int err;

	memset(p, 0, sizeof(*p));
	if (!query || !*query) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "\"%s\" is required", qname);
		return false;
	}
	if ((err = cp_selector_parse(query, &p->user)) || !p->user->type) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "%s: %s", qname,
				 err ? cp_errmsg(-err) : "must contain a profile-type selection");
		goto fail;
	}
	p->type = p->user->type;
	if (!render_time(r, out, fname, now, now - 3600 * (int64_t)1000000000, from_ms) ||
	    !render_time(r, out, uname, now, now, to_ms))
		goto fail;
	if (*from_ms > *to_ms) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "the time range is empty: %s is after %s", fname,
				 uname);
		goto fail;
	}
	p->from = *from_ms * 1000000;
	p->to = *to_ms * 1000000;
	return true;
fail:
	psel_free(p);
	memset(p, 0, sizeof(*p));
	return false;
}

/* max-nodes (or maxNodes): 0 or none the default; false after answering */
static bool render_max_nodes(struct cp_req *r, struct cp_resp *out, int64_t *max)
{
	const char *mn = cp_req_arg(r, "max-nodes");
	char *end;

	if (!mn || !*mn)
		mn = cp_req_arg(r, "maxNodes");
	*max = MAX_NODES_DEFAULT;
	if (!mn || !*mn)
		return true;
	errno = 0;
	*max = strtoll(mn, &end, 10);
	if (errno || end == mn || *end || *max < 0) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "max-nodes: '%.32s' is not a count", mn);
		return false;
	}
	if (!*max)
		*max = MAX_NODES_DEFAULT;
	return true;
}

/* the units and sample rate Pyroscope's flamebearer gives a type */
static json_t *render_metadata(const char *type, const char *format)
{
	struct ptype t;
	const char *st, *units;

	ptype_of(type, &t);
	st = t.parts[1];
	units = !strcmp(st, "cpu") ? "samples" :
		!strcmp(st, "inuse_objects") || !strcmp(st, "alloc_objects") || !strcmp(st, "goroutine") ||
				!strcmp(st, "samples") ?
					     "objects" :
					     t.parts[2];
	return json_pack("{s:s,s:s,s:I,s:s,s:s}", "format", format, "spyName", "", "sampleRate",
			 (json_int_t)(!strcmp(st, "cpu") ? 1000000000 : 100), "units", units, "name", st);
}

void api_h_pyroscope_render(struct cp_req *r, struct cp_resp *out, void *arg)
{
	const char *format = cp_req_arg(r, "format"), *gb = cp_req_arg(r, "groupBy");
	Querier__V1__FlameGraph *fg = NULL;
	struct cp_profile *prof = NULL;
	struct sgroup *groups = NULL;
	struct cp_buckets b = { 0 };
	struct psel p = { 0 };
	size_t ngroups = 0;
	int64_t from_ms, to_ms, max, step;
	json_t *root = NULL, *levels, *jgroups = NULL, *tl, *meta;
	char *text;
	int err;

	if (format && *format && strcmp(format, "json")) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED, "format: cprof renders json");
		return;
	}
	if (!render_psel(r, out, "query", "from", "until", &p, &from_ms, &to_ms) || !render_max_nodes(r, out, &max))
		goto out;
	if (gb && !*gb)
		gb = NULL;
	if (gb && !cp_label_name_valid(gb, strlen(gb))) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "groupBy: '%.64s' is not a label name", gb);
		goto out;
	}
	step = render_step(from_ms, to_ms) * (int64_t)1000000000;
	if (!psel_profile(arg, out, &p, &prof) || !psel_totals(arg, out, &p, gb, step, &groups, &ngroups, &b))
		goto out;
	if ((err = flame_graph(prof, max, &fg))) {
		cp_connect_error(out, cp_connect_code_of(err), "%s", cp_errmsg(-err));
		goto out;
	}
	levels = json_array();
	for (size_t i = 0; levels && i < fg->n_levels; i++) {
		json_t *l = json_array();

		for (size_t k = 0; l && k < fg->levels[i]->n_values; k++)
			json_array_append_new(l, json_integer(fg->levels[i]->values[k]));
		json_array_append_new(levels, l);
	}
	if (gb) {
		jgroups = json_object();
		for (size_t i = 0; jgroups && i < ngroups; i++)
			json_object_set_new(jgroups, *groups[i].name ? groups[i].name : "*",
					    render_timeline(&groups[i], &b, from_ms, to_ms));
	}
	tl = render_timeline(ngroups == 1 ? &groups[0] : NULL, &b, from_ms, to_ms);
	meta = render_metadata(p.type, "single");
	root = json_pack("{s:i,s:{s:o,s:o,s:I,s:I},s:o,s:o,s:o,s:n}", "version", 1, "flamebearer", "names",
			 json_array(), "levels", levels ? levels : json_array(), "numTicks", (json_int_t)fg->total,
			 "maxSelf", (json_int_t)fg->max_self, "metadata", meta ? meta : json_null(), "timeline",
			 tl ? tl : json_null(), "groups", jgroups ? jgroups : json_null(), "heatmap");
	if (root) {
		json_t *names = json_object_get(json_object_get(root, "flamebearer"), "names");

		for (size_t i = 0; i < fg->n_names; i++)
			json_array_append_new(names, json_string(fg->names[i]));
	}
	if (!root || !(text = json_dumps(root, JSON_COMPACT))) {
		cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
		goto out;
	}
	cp_resp_take(out, 200, "application/json", text, strlen(text));
out:
	json_decref(root);
	if (fg)
		protobuf_c_message_free_unpacked(&fg->base, NULL);
	sgroups_free(groups, ngroups);
	cp_profile_free(prof);
	psel_free(&p);
}


/* ---- /pyroscope/render-diff: two selections' flame graphs in one (Pyroscope's "double" flamebearer) ---- */

/* the diff's levels as they are made: 7 values a node (left x, total, self, right x, total, self,
 * name index), each x from the end of the level's previous node on its side */
struct dfg {
	const struct cp_tree *t;
	int64_t min, max_self;
	json_t *levels;
	int64_t (*end)[2]; /* each level's end on each side */
	size_t nend;
	struct strset names;
};

static int dfg_push(struct dfg *f, uint32_t depth, const int64_t x[2], const int64_t total[2], const int64_t self[2],
		    const char *name)
{
	size_t idx;
	json_t *l;

	for (idx = 0; idx < f->names.n && strcmp(f->names.s[idx], name); idx++)
		;
	if (idx == f->names.n && strset_add(&f->names, name))
		return cp_error(ENOMEM, "out of memory");
	while (json_array_size(f->levels) <= depth) {
		int64_t(*e)[2] = realloc(f->end, (f->nend + 1) * sizeof(*e));

		if (!e || json_array_append_new(f->levels, json_array()))
			return cp_error(ENOMEM, "out of memory");
		f->end = e;
		f->end[f->nend][0] = f->end[f->nend][1] = 0;
		f->nend++;
	}
	l = json_array_get(f->levels, depth);
	for (int side = 0; side < 2; side++) {
		if (json_array_append_new(l, json_integer(x[side] - f->end[depth][side])) ||
		    json_array_append_new(l, json_integer(total[side])) ||
		    json_array_append_new(l, json_integer(self[side])))
			return cp_error(ENOMEM, "out of memory");
		f->end[depth][side] = x[side] + total[side];
		if (self[side] > f->max_self)
			f->max_self = self[side];
	}
	return json_array_append_new(l, json_integer((json_int_t)idx)) ? -ENOMEM : 0;
}

static int dfg_node(struct dfg *f, uint32_t node, uint32_t depth, const int64_t x[2])
{
	const struct cp_tree_node *n = &f->t->nodes[node];
	int64_t cx[2] = { x[0] + n->self[0], x[1] + n->self[1] }, other[2] = { 0, 0 };
	int err;

	if ((err = dfg_push(f, depth, x, n->total, n->self, depth ? cp_tree_name(f->t, node) : "total")))
		return err;
	for (uint32_t c = n->child; c; c = f->t->nodes[c].sibling) {
		const struct cp_tree_node *cn = &f->t->nodes[c];

		if (!cn->total[0] && !cn->total[1])
			continue;
		if ((cn->total[0] < f->min && cn->total[1] < f->min) || !strcmp(cp_tree_name(f->t, c), "other")) {
			other[0] += cn->total[0];
			other[1] += cn->total[1];
			continue;
		}
		if ((err = dfg_node(f, c, depth + 1, cx)))
			return err;
		cx[0] += cn->total[0];
		cx[1] += cn->total[1];
	}
	if ((other[0] || other[1]) && (err = dfg_push(f, depth + 1, cx, other, other, "other")))
		return err;
	return 0;
}

void api_h_pyroscope_render_diff(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_profile *prof[2] = { NULL, NULL };
	struct psel p[2] = { { 0 }, { 0 } };
	struct dfg f = { 0 };
	struct cp_tree *t = NULL;
	struct ptype tl, tr;
	int64_t from_ms, to_ms, max, *totals = NULL;
	json_t *root = NULL, *names, *meta;
	char *text;
	int err = 0;

	if (!render_psel(r, out, "leftQuery", "leftFrom", "leftUntil", &p[0], &from_ms, &to_ms) ||
	    !render_psel(r, out, "rightQuery", "rightFrom", "rightUntil", &p[1], &from_ms, &to_ms) ||
	    !render_max_nodes(r, out, &max))
		goto out;
	ptype_of(p[0].type, &tl);
	ptype_of(p[1].type, &tr);
	if (strcmp(tl.id, tr.id)) {
		cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "profile types must match");
		goto out;
	}
	if (!psel_profile(arg, out, &p[0], &prof[0]) || !psel_profile(arg, out, &p[1], &prof[1]))
		goto out;
	if (!(t = cp_tree_new()) || !(f.levels = json_array())) {
		err = -ENOMEM;
		goto fail;
	}
	for (int side = 0; side < 2 && !err; side++)
		if (prof[side] && prof[side]->nsamples)
			err = cp_tree_add(t, prof[side], 0, side, false);
	if (err || (err = cp_tree_sort(t)))
		goto fail;
	f.t = t;
	/* the nodes under the max_nodes-th largest (of the larger side's totals) fold into "other" */
	if (max > 0 && (uint64_t)max < t->nnodes - 1) {
		if (!(totals = malloc((t->nnodes - 1) * sizeof(*totals)))) {
			err = -ENOMEM;
			goto fail;
		}
		for (uint32_t i = 1; i < t->nnodes; i++)
			totals[i - 1] = t->nodes[i].total[0] > t->nodes[i].total[1] ? t->nodes[i].total[0] :
											t->nodes[i].total[1];
		qsort(totals, t->nnodes - 1, sizeof(*totals), cmp_i64_desc);
		f.min = totals[max - 1];
	}
	if (t->nodes[0].total[0] || t->nodes[0].total[1])
		err = dfg_node(&f, 0, 0, (const int64_t[2]){ 0, 0 });
	if (err)
		goto fail;
	names = json_array();
	for (size_t i = 0; names && i < f.names.n; i++)
		json_array_append_new(names, json_string(f.names.s[i]));
	meta = render_metadata(p[0].type, "double");
	root = json_pack("{s:i,s:{s:o,s:O,s:I,s:I},s:o,s:n,s:n,s:n,s:I,s:I}", "version", 1, "flamebearer", "names",
			 names ? names : json_array(), "levels", f.levels, "numTicks",
			 (json_int_t)(t->nodes[0].total[0] + t->nodes[0].total[1]), "maxSelf", (json_int_t)f.max_self,
			 "metadata", meta ? meta : json_null(), "timeline", "groups", "heatmap", "leftTicks",
			 (json_int_t)t->nodes[0].total[0], "rightTicks", (json_int_t)t->nodes[0].total[1]);
	if (!root || !(text = json_dumps(root, JSON_COMPACT))) {
		err = -ENOMEM;
		goto fail;
	}
	cp_resp_take(out, 200, "application/json", text, strlen(text));
	goto out;
fail:
	cp_connect_error(out, err == -ENOMEM ? CP_CONNECT_INTERNAL : cp_connect_code_of(err), "%s",
			 err == -ENOMEM ? "out of memory" : cp_errmsg(-err));
out:
	json_decref(root);
	json_decref(f.levels);
	free(f.end);
	free(f.names.s);
	free(totals);
	cp_tree_free(t);
	for (int side = 0; side < 2; side++) {
		cp_profile_free(prof[side]);
		psel_free(&p[side]);
	}
}

/* ---- settings.v1.SettingsService/Get: cprof keeps no settings of Grafana's ---- */

void api_h_settings(struct cp_req *r, struct cp_resp *out, void *arg)
{
	const char *path = cp_req_path(r), *m = strrchr(path, '/') + 1;
	Settings__V1__GetSettingsResponse res = SETTINGS__V1__GET_SETTINGS_RESPONSE__INIT;
	ProtobufCMessage *req;
	enum cp_connect_enc enc;

	(void)arg;
	if (strcmp(m, "Get")) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED, "settings.v1.SettingsService/%.64s is not implemented", m);
		return;
	}
	if (!(req = cp_connect_read(r, out, &settings__v1__get_settings_request__descriptor, &enc)))
		return;
	cp_connect_answer(out, enc, &res.base);
	protobuf_c_message_free_unpacked(req, NULL);
}
