/* SPDX-License-Identifier: MIT */
#include "series.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"
#include "backend.h"
#include "db.h"

int cp_series_ids_init(struct cp_series_ids *c)
{
	memset(c, 0, sizeof(*c));
	return cp_strtab_init(&c->keys) ? cp_error(ENOMEM, "out of memory for the series ids") : 0;
}

void cp_series_ids_release(struct cp_series_ids *c)
{
	sqlite3_finalize(c->insert);
	sqlite3_finalize(c->select);
	cp_strtab_release(&c->keys);
	free(c->ids);
	memset(c, 0, sizeof(*c));
}

int cp_series_ids_reset(struct cp_series_ids *c)
{
	cp_strtab_release(&c->keys);
	return cp_strtab_init(&c->keys) ? cp_error(ENOMEM, "out of memory for the series ids") : 0;
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cp_kv *)a)->name, ((const struct cp_kv *)b)->name);
}

static bool is_text(const char *v)
{
	json_t *j = v ? json_string(v) : NULL; /* NULL unless UTF-8 */

	json_decref(j);
	return j != NULL;
}

char *cp_series_labels_json(const struct cp_kv *unsorted, size_t n, int *err)
{
	struct cp_kv *labels = malloc((n + 1) * sizeof(*labels));
	json_t *o = json_object();
	char *s = NULL;
	size_t i;

	*err = 0;
	if (!o || !labels)
		goto nomem;
	if (n) /* labels may be NULL when there are none */
		memcpy(labels, unsorted, n * sizeof(*labels));
	cp_qsort(labels, n, sizeof(*labels), kv_cmp);
	for (i = 0; i < n; i++) {
		/* the value's string, made once: NULL unless UTF-8 */
		json_t *v = labels[i].value ? json_string(labels[i].value) : NULL;

		if (!v || !is_text(labels[i].name)) {
			json_decref(v);
			*err = cp_error(EINVAL, "label %s: names and values must be UTF-8 text",
					labels[i].name ? labels[i].name : "(null)");
			goto out;
		}
		if (json_object_set_new(o, labels[i].name, v))
			goto nomem;
	}
	if ((s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)))
		goto out;
nomem:
	*err = cp_error(ENOMEM, "out of memory writing series");
out:
	json_decref(o);
	free(labels);
	return s;
}

/* c's statements, prepared for db (again when db is another handle) */
static int prepare(struct cp_series_ids *c, sqlite3 *db)
{
	if (c->db == db && c->insert && c->select)
		return 0;
	sqlite3_finalize(c->insert);
	sqlite3_finalize(c->select);
	c->insert = c->select = NULL;
	c->db = db;
	/* (not RETURNING id: its ephemeral table tripled an insert's cost,
	 * 9 us against 3, and a storm adds hundreds of series a flush) */
	if (sqlite3_prepare_v3(db, "INSERT INTO series(type, labels) VALUES(?1, ?2) ON CONFLICT DO NOTHING", -1,
			       SQLITE_PREPARE_PERSISTENT, &c->insert, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(db, "SELECT id FROM series WHERE type = ?1 AND labels = ?2", -1,
			       SQLITE_PREPARE_PERSISTENT, &c->select, NULL) != SQLITE_OK) {
		int err = cp_db_error(db, "preparing a query");

		sqlite3_finalize(c->insert);
		c->insert = NULL;
		return err;
	}
	return 0;
}

int64_t cp_series_id(struct cp_series_ids *c, sqlite3 *db, const char *type, const char *labels)
{
	size_t tl = strlen(type), ll = strlen(labels);
	char *key = malloc(tl + ll + 2);
	int64_t id, k;
	size_t cap = c->cap;
	int err;

	if (!key)
		return cp_error(ENOMEM, "out of memory writing series");
	memcpy(key, type, tl);
	key[tl] = '\x1e';
	memcpy(key + tl + 1, labels, ll + 1);
	if ((k = cp_strtab_find(&c->keys, key, tl + ll + 1)) >= 0) {
		id = c->ids[k];
		goto out;
	}
	if ((err = prepare(c, db))) {
		id = err;
		goto out;
	}
	sqlite3_bind_text(c->insert, 1, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(c->insert, 2, labels, -1, SQLITE_STATIC);
	if (sqlite3_step(c->insert) != SQLITE_DONE)
		goto fail;
	if (sqlite3_changes64(db) == 1) { /* added: its id */
		id = sqlite3_last_insert_rowid(db);
	} else { /* there already */
		sqlite3_bind_text(c->select, 1, type, -1, SQLITE_STATIC);
		sqlite3_bind_text(c->select, 2, labels, -1, SQLITE_STATIC);
		if (sqlite3_step(c->select) != SQLITE_ROW)
			goto fail;
		id = sqlite3_column_int64(c->select, 0);
	}
	sqlite3_reset(c->insert);
	sqlite3_reset(c->select);
	if (c->keys.n > CP_SERIES_IDS_MAX && cp_series_ids_reset(c)) {
		id = -ENOMEM;
		goto out;
	}
	k = cp_strtab_intern(&c->keys, key, tl + ll + 1);
	if (k < 0 || cp_grow((void **)&c->ids, &cap, (size_t)k + 1, sizeof(*c->ids))) {
		id = cp_error(ENOMEM, "out of memory writing series");
		goto out;
	}
	c->cap = cap;
	c->ids[k] = id;
	goto out;
fail:
	id = cp_db_error(db, "writing series");
	sqlite3_reset(c->insert);
	sqlite3_reset(c->select);
out:
	if (c->insert)
		sqlite3_clear_bindings(c->insert);
	if (c->select)
		sqlite3_clear_bindings(c->select);
	free(key);
	return id;
}


static int parse_labels(const char *json, struct cp_store_series *r)
{
	json_t *o = json_loads(json, 0, NULL), *v;
	const char *k;
	size_t i = 0;

	if (!o || !json_is_object(o)) {
		json_decref(o);
		return cp_error(EBADMSG, "the store has a series with malformed labels: %s", json);
	}
	r->names = calloc(json_object_size(o) + 1, sizeof(char *));
	r->values = calloc(json_object_size(o) + 1, sizeof(char *));
	if (!r->names || !r->values) {
		json_decref(o);
		return cp_error(ENOMEM, "out of memory reading series");
	}
	json_object_foreach(o, k, v) {
		r->names[i] = strdup(k);
		r->values[i] = strdup(json_is_string(v) ? json_string_value(v) : "");
		r->nlabels = ++i;
		if (!r->names[i - 1] || !r->values[i - 1]) {
			json_decref(o);
			return cp_error(ENOMEM, "out of memory reading series");
		}
	}
	json_decref(o);
	return 0;
}

uint64_t cp_series_deferrable(const struct cp_selector *sel, const struct cp_store_series *ser, size_t n)
{
	uint64_t mask = 0;

	for (size_t i = 0; sel && i < sel->n && i < 64; i++) {
		bool found = false;

		for (size_t k = 0; k < n && !found; k++)
			for (size_t j = 0; j < ser[k].nlabels && !found; j++)
				found = !strcmp(ser[k].names[j], sel->matchers[i].name);
		if (!found)
			mask |= (uint64_t)1 << i;
	}
	return mask;
}

int cp_series_match(const struct cp_selector *sel, uint64_t mask, struct cp_store_series *s)
{
	if (!cp_selector_match_type(sel, s->type))
		return 0;
	return cp_selector_match_series(sel, (const char *const *)s->names, (const char *const *)s->values, s->nlabels,
					mask, &s->deferred);
}

int cp_series_list(sqlite3 *db, const struct cp_selector *sel, uint64_t mask, struct cp_store_series **out, size_t *n)
{
	struct cp_store_series *r = NULL;
	size_t cnt = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	int err, rc;

	if ((err = cp_db_prepare(db, "SELECT id, type, labels FROM series ORDER BY type, labels", &st)))
		return err;
	if (sel) /* one budget for the selector's regexes over all the series */
		cp_selector_begin(sel);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cp_store_series x = { 0 };
		int hit = 1;

		x.id = sqlite3_column_int64(st, 0);
		x.type = strdup((const char *)sqlite3_column_text(st, 1));
		if (!x.type || (err = parse_labels((const char *)sqlite3_column_text(st, 2), &x))) {
			err = err ? err : cp_error(ENOMEM, "out of memory reading series");
			cp_store_series_release(&x);
			goto out;
		}
		if (sel)
			hit = cp_series_match(sel, mask, &x);
		if (hit <= 0) { /* < 0: a regex too costly, the error is the answer */
			cp_store_series_release(&x);
			if ((err = hit))
				goto out;
			continue;
		}
		if (cp_grow((void **)&r, &cap, cnt + 1, sizeof(*r))) {
			cp_store_series_release(&x);
			err = cp_error(ENOMEM, "out of memory reading series");
			goto out;
		}
		r[cnt++] = x;
	}
	if (rc != SQLITE_DONE)
		err = cp_db_error(db, "reading series");
out:
	sqlite3_finalize(st);
	if (err) {
		cp_store_series_free(r, cnt);
		return err;
	}
	*out = r;
	*n = cnt;
	return 0;
}

/* When the types of the series share one name (the selector said "wall" and the store holds wall:wall
 * and wall:samples), the name's main type, as Pyroscope shows it: the sample type named in this table,
 * else the one measured in its period's own type (process_cpu:cpu:...:cpu, wall:wall:...:wall). NULL
 * when there is no single such type. */
static const char *main_type(const struct cp_store_series *ser, size_t n)
{
	static const char *const mains[][2] = {
		{ "process_cpu", "cpu" }, { "wall", "wall" },	 { "memory", "inuse_space" },
		{ "mutex", "delay" },	  { "block", "delay" }, { "goroutines", "goroutine" },
	};
	const char *pick = NULL, *name, *n2;
	char st[128], pt[128];
	size_t i, k, len, len2;

	/* one name (cpu and process_cpu are one: cp_type_name_canonical) */
	len = strcspn(ser[0].type, ":");
	name = cp_type_name_canonical(ser[0].type, &len);
	for (i = 0; i < n; i++) {
		len2 = strcspn(ser[i].type, ":");
		n2 = cp_type_name_canonical(ser[i].type, &len2);
		if (len2 != len || strncmp(n2, name, len))
			return NULL;
	}
	for (i = 0; i < n; i++) {
		const char *want = NULL;

		if (pick && !strcmp(pick, ser[i].type))
			continue;
		cp_store_type_part(ser[i].type, 1, st, sizeof(st));
		for (k = 0; k < sizeof(mains) / sizeof(mains[0]); k++)
			if (strlen(mains[k][0]) == len && !strncmp(mains[k][0], name, len))
				want = mains[k][1];
		if (want ? strcmp(st, want) : strcmp(st, cp_store_type_part(ser[i].type, 3, pt, sizeof(pt))))
			continue;
		if (pick)
			return NULL;
		pick = ser[i].type;
	}
	return pick;
}

/* The series ser[0..n) (sorted by type), which must be of one type (or of one name with a main type:
 * main_type, whose series only are kept). */
int cp_series_resolve(struct cp_store_series **ser, size_t *n)
{
	char list[512] = "";
	size_t i, used = 0, ntypes = 0;

	if (!*n) {
		cp_store_series_free(*ser, *n);
		*ser = NULL;
		return cp_error(ENOENT, "no stored series match the selector (cprof query --series lists them)");
	}
	for (i = 0; i < *n; i++) {
		if (i && !strcmp((*ser)[i].type, (*ser)[i - 1].type))
			continue;
		ntypes++;
		if (used < sizeof(list) - 1)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", (*ser)[i].type);
	}
	if (ntypes > 1 && main_type(*ser, *n)) {
		char *pick = strdup(main_type(*ser, *n));
		size_t kept = 0;

		if (!pick) {
			cp_store_series_free(*ser, *n);
			*ser = NULL;
			*n = 0;
			return cp_error(ENOMEM, "out of memory reading series");
		}
		for (i = 0; i < *n; i++) {
			if (strcmp((*ser)[i].type, pick))
				cp_store_series_release(&(*ser)[i]);
			else
				(*ser)[kept++] = (*ser)[i];
		}
		free(pick);
		*n = kept;
		return 0;
	}
	if (ntypes > 1) {
		cp_store_series_free(*ser, *n);
		*ser = NULL;
		*n = 0;
		return cp_error(EINVAL, "the selector matches %zu profile types; name one: %s", ntypes, list);
	}
	return 0;
}

int cp_store_series_cmp(const struct cp_store_series *a, const struct cp_store_series *b)
{
	int c = strcmp(a->type, b->type);

	for (size_t i = 0; !c && i < a->nlabels && i < b->nlabels; i++)
		if (!(c = strcmp(a->names[i], b->names[i])))
			c = strcmp(a->values[i], b->values[i]);
	return c ? c : a->nlabels < b->nlabels ? -1 : a->nlabels > b->nlabels;
}

