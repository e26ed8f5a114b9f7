/* SPDX-License-Identifier: MIT */
/* cprof.yaml / parca.yaml: libyaml loads the document; we walk it, checking
 * every key and value and naming the line of what is wrong. */
#include "settings.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "error.h"
#include "selector.h"
#include "util.h"

struct walk {
	yaml_document_t doc;
	const char *name; /* the file, for messages */
};

static int bad(const struct walk *w, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const struct walk *w, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cp_error(EINVAL, "%s:%zu: %s", w->name, n->start_mark.line + 1, msg);
}

/* room for one more element at the end of *arr (n elements now) */
static int push1(void **arr, size_t n, size_t size)
{
	void *p = realloc(*arr, (n + 1) * size);

	if (!p)
		return cp_error(ENOMEM, "out of memory reading the configuration");
	*arr = p;
	return 0;
}

static yaml_node_t *node(struct walk *w, int id)
{
	return yaml_document_get_node(&w->doc, id);
}

/* k is the key s, where '-' and '_' are the same (token-file, token_file) */
static bool key_is(const yaml_node_t *k, const char *s)
{
	size_t n = strlen(s);

	if (k->type != YAML_SCALAR_NODE || n != k->data.scalar.length)
		return false;
	for (size_t i = 0; i < n; i++) {
		char a = (char)k->data.scalar.value[i], b = s[i];

		if (a != b && !((a == '-' || a == '_') && (b == '-' || b == '_')))
			return false;
	}
	return true;
}

static const char *text_of(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* a scalar value, copied */
static int scalar(struct walk *w, yaml_node_t *n, const char *key, char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return bad(w, n, "%s wants a single value", key);
	free(*out);
	*out = strndup(text_of(n), n->data.scalar.length);
	return *out ? 0 : -ENOMEM;
}

static int boolean(struct walk *w, yaml_node_t *n, const char *key, bool *out)
{
	const char *v = text_of(n);

	if (n->type == YAML_SCALAR_NODE && (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "yes"))) {
		*out = true;
		return 0;
	}
	if (n->type == YAML_SCALAR_NODE && (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "no"))) {
		*out = false;
		return 0;
	}
	return bad(w, n, "%s wants true or false", key);
}

static int duration(struct walk *w, yaml_node_t *n, const char *key, int64_t *out)
{
	int err;

	if (n->type != YAML_SCALAR_NODE)
		return bad(w, n, "%s wants a duration such as 10s", key);
	if ((err = cp_parse_duration(text_of(n), out)) || *out <= 0)
		return bad(w, n, "%s: '%.32s' is not a positive duration (such as 10s, 1m)", key, text_of(n));
	return 0;
}

static int want(struct walk *w, yaml_node_t *n, yaml_node_type_t type, const char *key)
{
	if (n->type == type)
		return 0;
	return bad(w, n, "%s wants %s", key,
		   type == YAML_MAPPING_NODE ? "a mapping (key: value lines)" : "a list (- item lines)");
}

static int unknown(struct walk *w, yaml_node_t *k, const char *where, const char *known)
{
	return bad(w, k, "unknown %s '%.64s' (known: %s)", where, k->type == YAML_SCALAR_NODE ? text_of(k) : "?", known);
}

#define FOR_PAIRS(w, map, k, v)                                                                            \
	for (yaml_node_pair_t *p_ = (map)->data.mapping.pairs.start; p_ < (map)->data.mapping.pairs.top; p_++) \
		if (((k) = node(w, p_->key)) && ((v) = node(w, p_->value)))
#define FOR_ITEMS(w, seq, item)                                                                          \
	for (yaml_node_item_t *i_ = (seq)->data.sequence.items.start; i_ < (seq)->data.sequence.items.top; i_++) \
		if (((item) = node(w, *i_)))

/* labels: {name: value} */
static int kv_map(struct walk *w, yaml_node_t *n, const char *key, bool label_names, struct cp_kv **out, size_t *cnt)
{
	yaml_node_t *k, *v;
	int err;

	if ((err = want(w, n, YAML_MAPPING_NODE, key)))
		return err;
	FOR_PAIRS(w, n, k, v)
	{
		char *name = NULL, *value = NULL;

		if (k->type != YAML_SCALAR_NODE || (label_names && !cp_label_name_valid(text_of(k), k->data.scalar.length)))
			return bad(w, k, "%s: '%.64s' is not a label name (letters, digits and _)", key,
				   k->type == YAML_SCALAR_NODE ? text_of(k) : "?");
		if (v->type == YAML_SEQUENCE_NODE && !label_names) { /* params: {key: [value]} as Prometheus has them */
			yaml_node_t *item;

			FOR_ITEMS(w, v, item)
			{
				if (item->type != YAML_SCALAR_NODE)
					return bad(w, item, "%s: values are text", key);
				if (push1((void **)out, *cnt, sizeof(**out)))
					return cp_error(ENOMEM, "out of memory reading the configuration");
				(*out)[*cnt].name = strdup(text_of(k));
				(*out)[*cnt].value = strdup(text_of(item));
				(*cnt)++;
				if (!(*out)[*cnt - 1].name || !(*out)[*cnt - 1].value)
					return cp_error(ENOMEM, "out of memory reading the configuration");
			}
			continue;
		}
		if ((err = scalar(w, v, key, &value)))
			return err;
		name = strdup(text_of(k));
		if (!name || push1((void **)out, *cnt, sizeof(**out))) {
			free(name);
			free(value);
			return cp_error(ENOMEM, "out of memory reading the configuration");
		}
		(*out)[*cnt].name = name;
		(*out)[*cnt].value = value;
		(*cnt)++;
	}
	return 0;
}

/* host:port, [v6]:port */
static bool target_ok(const char *t)
{
	const char *colon = strrchr(t, ':');
	char *end;
	long port;

	if (!colon || colon == t || strchr(t, '/') || strchr(t, ' '))
		return false;
	if (t[0] == '[' && colon[-1] != ']')
		return false;
	port = strtol(colon + 1, &end, 10);
	return *end == '\0' && colon[1] && port > 0 && port <= 65535;
}

static int statics(struct walk *w, yaml_node_t *n, struct cp_scrape_job *j)
{
	yaml_node_t *item, *k, *v;
	int err;

	if ((err = want(w, n, YAML_SEQUENCE_NODE, "static_configs")))
		return err;
	FOR_ITEMS(w, n, item)
	{
		struct cp_scrape_static *s;

		if ((err = want(w, item, YAML_MAPPING_NODE, "static_configs")))
			return err;
		if (push1((void **)&j->statics, j->nstatics, sizeof(*j->statics)))
			return cp_error(ENOMEM, "out of memory reading the configuration");
		s = &j->statics[j->nstatics++];
		memset(s, 0, sizeof(*s));
		FOR_PAIRS(w, item, k, v)
		{
			if (key_is(k, "targets")) {
				yaml_node_t *t;

				if ((err = want(w, v, YAML_SEQUENCE_NODE, "targets")))
					return err;
				FOR_ITEMS(w, v, t)
				{
					if (t->type != YAML_SCALAR_NODE || !target_ok(text_of(t)))
						return bad(w, t, "target '%.64s' is not HOST:PORT (e.g. 127.0.0.1:6060)",
							   t->type == YAML_SCALAR_NODE ? text_of(t) : "?");
					if (push1((void **)&s->targets, s->ntargets, sizeof(*s->targets)) ||
					    !(s->targets[s->ntargets] = strdup(text_of(t))))
						return cp_error(ENOMEM, "out of memory reading the configuration");
					s->ntargets++;
				}
			} else if (key_is(k, "labels")) {
				if ((err = kv_map(w, v, "labels", true, &s->labels, &s->nlabels)))
					return err;
			} else {
				return unknown(w, k, "key in static_configs", "targets, labels");
			}
		}
	}
	return 0;
}

static struct cp_scrape_profile *profile_named(struct cp_scrape_job *j, const char *name)
{
	size_t i;

	for (i = 0; i < j->nprofiles; i++)
		if (!strcmp(j->profiles[i].name, name))
			return &j->profiles[i];
	return NULL;
}

static int profile_entry(struct walk *w, yaml_node_t *k, yaml_node_t *v, struct cp_scrape_job *j)
{
	struct cp_scrape_profile *p;
	yaml_node_t *kk, *vv;
	int err;

	if (k->type != YAML_SCALAR_NODE || !cp_type_name_valid(text_of(k)))
		return bad(w, k, "pprof_config: '%.64s' is not a profile name (letters, digits, _ . -)",
			   k->type == YAML_SCALAR_NODE ? text_of(k) : "?");
	if ((err = want(w, v, YAML_MAPPING_NODE, text_of(k))))
		return err;
	if (!(p = profile_named(j, text_of(k)))) { /* a custom entry (fgprof...) */
		if (push1((void **)&j->profiles, j->nprofiles, sizeof(*j->profiles)))
			return cp_error(ENOMEM, "out of memory reading the configuration");
		p = &j->profiles[j->nprofiles++];
		memset(p, 0, sizeof(*p));
		if (!(p->name = strdup(text_of(k))))
			return cp_error(ENOMEM, "out of memory reading the configuration");
		p->enabled = true;
	}
	FOR_PAIRS(w, v, kk, vv)
	{
		if (key_is(kk, "enabled"))
			err = boolean(w, vv, "enabled", &p->enabled);
		else if (key_is(kk, "path"))
			err = scalar(w, vv, "path", &p->path);
		else if (key_is(kk, "delta"))
			err = boolean(w, vv, "delta", &p->delta);
		else if (key_is(kk, "seconds")) {
			char *end;
			long secs = vv->type == YAML_SCALAR_NODE ? strtol(text_of(vv), &end, 10) : 0;

			if (vv->type != YAML_SCALAR_NODE || *end || secs <= 0 || secs > 86400)
				return bad(w, vv, "seconds wants a whole number of seconds (1 to 86400)");
			p->seconds = secs * 1000000000LL;
		} else if (key_is(kk, "keep_sample_type")) {
			yaml_node_t *item, *a, *b;

			if ((err = want(w, vv, YAML_SEQUENCE_NODE, "keep_sample_type")))
				return err;
			FOR_ITEMS(w, vv, item)
			{
				struct cp_scrape_keep *kp;

				if ((err = want(w, item, YAML_MAPPING_NODE, "keep_sample_type")))
					return err;
				if (push1((void **)&p->keep, p->nkeep, sizeof(*p->keep)))
					return cp_error(ENOMEM, "out of memory reading the configuration");
				kp = &p->keep[p->nkeep++];
				memset(kp, 0, sizeof(*kp));
				FOR_PAIRS(w, item, a, b)
				{
					if (key_is(a, "type"))
						err = scalar(w, b, "type", &kp->type);
					else if (key_is(a, "unit"))
						err = scalar(w, b, "unit", &kp->unit);
					else
						return unknown(w, a, "key in keep_sample_type", "type, unit");
					if (err)
						return err;
				}
				if (!kp->type)
					return bad(w, item, "keep_sample_type wants a type (and a unit)");
			}
		} else
			return unknown(w, kk, "key in a pprof_config entry", "enabled, path, delta, seconds, keep_sample_type");
		if (err)
			return err;
	}
	if (!p->path) { /* a name cprof knows: its usual path (fgprof, heap) */
		bool delta = false, delta_given = false;
		const char *dp = cp_scrape_default_path(p->name, &delta);

		FOR_PAIRS(w, v, kk, vv)
		delta_given |= key_is(kk, "delta");
		if (dp && !(p->path = strdup(dp)))
			return cp_error(ENOMEM, "out of memory reading the configuration");
		if (dp && !delta_given)
			p->delta = delta;
	}
	if (p->enabled && (!p->path || p->path[0] != '/'))
		return bad(w, v, "%s: wants a path starting with / (e.g. /debug/pprof/%s)", p->name, p->name);
	return 0;
}

static int profiling(struct walk *w, yaml_node_t *n, struct cp_scrape_job *j)
{
	yaml_node_t *k, *v, *kk, *vv;
	int err;

	if ((err = want(w, n, YAML_MAPPING_NODE, "profiling_config")))
		return err;
	FOR_PAIRS(w, n, k, v)
	{
		if (key_is(k, "path_prefix")) {
			if ((err = scalar(w, v, "path_prefix", &j->path_prefix)))
				return err;
			if (j->path_prefix[0] && j->path_prefix[0] != '/')
				return bad(w, v, "path_prefix wants a path starting with / (e.g. /app)");
		} else if (key_is(k, "pprof_config")) {
			if ((err = want(w, v, YAML_MAPPING_NODE, "pprof_config")))
				return err;
			FOR_PAIRS(w, v, kk, vv)
			if ((err = profile_entry(w, kk, vv, j)))
				return err;
		} else {
			return unknown(w, k, "key in profiling_config", "path_prefix, pprof_config");
		}
	}
	return 0;
}

static int job(struct walk *w, yaml_node_t *n, struct cp_scrape_config *c)
{
	struct cp_scrape_job *j;
	yaml_node_t *k, *v, *timeout_node = NULL;
	size_t i;
	int err;

	if ((err = want(w, n, YAML_MAPPING_NODE, "a scrape config")))
		return err;
	if (push1((void **)&c->jobs, c->njobs, sizeof(*c->jobs)))
		return cp_error(ENOMEM, "out of memory reading the configuration");
	j = &c->jobs[c->njobs++];
	memset(j, 0, sizeof(*j));
	j->interval = 10 * 1000000000LL;
	if ((err = cp_scrape_default_profiles(&j->profiles, &j->nprofiles)))
		return err;
	FOR_PAIRS(w, n, k, v)
	{
		if (key_is(k, "job_name"))
			err = scalar(w, v, "job_name", &j->name);
		else if (key_is(k, "scrape_interval"))
			err = duration(w, v, "scrape_interval", &j->interval);
		else if (key_is(k, "scrape_timeout")) {
			err = duration(w, v, "scrape_timeout", &j->timeout);
			timeout_node = v;
		} else if (key_is(k, "scheme")) {
			if (!(err = scalar(w, v, "scheme", &j->scheme)) && strcmp(j->scheme, "http") && strcmp(j->scheme, "https"))
				return bad(w, v, "scheme is http or https, not '%.32s'", j->scheme);
		} else if (key_is(k, "params"))
			err = kv_map(w, v, "params", false, &j->params, &j->nparams);
		else if (key_is(k, "static_configs"))
			err = statics(w, v, j);
		else if (key_is(k, "profiling_config"))
			err = profiling(w, v, j);
		else if (key_is(k, "relabel_configs"))
			return bad(w, k, "relabel_configs are not applied by cprof: remove them (static labels go in "
					 "static_configs[].labels)");
		else
			return unknown(w, k, "key in a scrape config",
				       "job_name, scrape_interval, scrape_timeout, scheme, params, static_configs, "
				       "profiling_config");
		if (err)
			return err;
	}
	if (!j->name || !*j->name)
		return bad(w, n, "a scrape config wants a job_name");
	for (i = 0; i + 1 < c->njobs; i++)
		if (!strcmp(c->jobs[i].name, j->name))
			return bad(w, n, "job_name '%.64s' is used twice", j->name);
	if (!j->scheme && !(j->scheme = strdup("http")))
		return cp_error(ENOMEM, "out of memory reading the configuration");
	{
		size_t targets = 0, enabled = 0;

		for (i = 0; i < j->nstatics; i++)
			targets += j->statics[i].ntargets;
		for (i = 0; i < j->nprofiles; i++)
			enabled += j->profiles[i].enabled;
		if (!targets)
			return bad(w, n, "job %s has no targets (static_configs: [{targets: ['HOST:PORT']}])", j->name);
		if (!enabled)
			return bad(w, n, "job %s has every profile disabled", j->name);
	}
	if (!j->timeout)
		j->timeout = j->interval + 3 * 1000000000LL;
	for (i = 0; i < j->nprofiles; i++) {
		struct cp_scrape_profile *p = &j->profiles[i];
		int64_t secs = p->seconds ? p->seconds : j->interval;

		if (p->enabled && p->delta && secs < 1000000000LL)
			return bad(w, n, "job %s: the delta profile %s covers whole seconds: give it seconds: 1 or more, "
					 "or a scrape_interval of at least 1s",
				   j->name, p->name);
		if (p->enabled && p->delta && j->timeout <= secs)
			return bad(w, timeout_node ? timeout_node : n,
				   "job %s: scrape_timeout must exceed the %llds that the delta profile %s covers "
				   "(e.g. scrape_timeout: %llds)",
				   j->name, (long long)(secs / 1000000000), p->name, (long long)(secs / 1000000000 + 3));
	}
	return 0;
}

/* Loads the document into w; *root is its mapping, or NULL for an empty
 * file.  0 or -errno; w->doc is to be deleted either way. */
static int load(struct walk *w, const char *text, size_t len, const char *name, yaml_node_t **root)
{
	yaml_parser_t parser;
	int err;

	*root = NULL;
	w->name = name;
	memset(&w->doc, 0, sizeof(w->doc)); /* deleting it is harmless until it is loaded */
	if (!yaml_parser_initialize(&parser))
		return cp_error(ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &w->doc)) {
		err = cp_error(EINVAL, "%s:%zu: %s", name, parser.problem_mark.line + 1,
			       parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		return err;
	}
	yaml_parser_delete(&parser);
	*root = yaml_document_get_root_node(&w->doc);
	if (*root && (*root)->type != YAML_MAPPING_NODE)
		return bad(w, *root, "wants a mapping of settings (key: value)");
	return 0;
}

int cp_config_parse(const char *text, size_t len, const char *name, struct cp_config *c)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "listen", offsetof(struct cp_config, listen) },
		{ "data", offsetof(struct cp_config, data) },
		{ "retention", offsetof(struct cp_config, retention) },
		{ "token_file", offsetof(struct cp_config, token_file) },
		{ "tls_cert", offsetof(struct cp_config, tls_cert) },
		{ "tls_key", offsetof(struct cp_config, tls_key) },
		{ "max_body", offsetof(struct cp_config, max_body) },
		{ "max_decompressed", offsetof(struct cp_config, max_decompressed) },
		{ "header_timeout", offsetof(struct cp_config, header_timeout) },
		{ "downsample", offsetof(struct cp_config, downsample) },
	};
	struct walk w;
	yaml_node_t *root, *k, *v, *item;
	int err;

	memset(c, 0, sizeof(*c));
	if ((err = load(&w, text, len, name, &root)) || !root) /* empty: all defaults */
		goto out;
	FOR_PAIRS(&w, root, k, v)
	{
		size_t i;

		for (i = 0; i < sizeof(keys) / sizeof(keys[0]) && !key_is(k, keys[i].key); i++)
			;
		if (i < sizeof(keys) / sizeof(keys[0])) {
			err = scalar(&w, v, keys[i].key, (char **)((char *)c + keys[i].off));
		} else if (key_is(k, "scrape_configs")) {
			if (!(err = want(&w, v, YAML_SEQUENCE_NODE, "scrape_configs")))
				FOR_ITEMS(&w, v, item)
				if ((err = job(&w, item, &c->scrape)))
					break;
		} else {
			/* Parca's object_storage (cprof has its own store), the
			 * other commands' settings and the sections: checked by
			 * cp_config_opts_parse and the command line */
		}
		if (err)
			goto out;
	}
out:
	yaml_document_delete(&w.doc);
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory reading %s", name);
	if (err)
		cp_config_release(c);
	return err;
}

int cp_config_load(const char *path, struct cp_config *c)
{
	char *text = NULL;
	size_t len = 0;
	int err = cp_read_file(path, 1 << 20, (uint8_t **)&text, &len);

	if (err)
		return err;
	err = cp_config_parse(text, len, path, c);
	free(text);
	return err;
}

void cp_config_release(struct cp_config *c)
{
	free(c->listen);
	free(c->data);
	free(c->retention);
	free(c->downsample);
	free(c->token_file);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->max_body);
	free(c->max_decompressed);
	free(c->header_timeout);
	cp_scrape_config_release(&c->scrape);
	memset(c, 0, sizeof(*c));
}

/* ---- every command's settings: option names and values ---- */

static int opt_push(struct cp_config_opts *o, const char *section, const yaml_node_t *k, const char *value,
		    size_t vlen)
{
	struct cp_config_opt *e;
	char *key;

	if (push1((void **)&o->v, o->n, sizeof(*o->v)))
		return cp_error(ENOMEM, "out of memory reading the configuration");
	e = &o->v[o->n];
	memset(e, 0, sizeof(*e));
	key = strndup(text_of(k), k->data.scalar.length);
	e->section = section ? strdup(section) : NULL;
	e->value = strndup(value, vlen);
	if (!key || !e->value || (section && !e->section)) {
		free(key);
		free(e->section);
		free(e->value);
		return cp_error(ENOMEM, "out of memory reading the configuration");
	}
	for (char *c = key; *c; c++)
		if (*c == '_')
			*c = '-';
	e->key = key;
	e->line = k->start_mark.line + 1;
	o->n++;
	return 0;
}

/* null, ~ or nothing, unquoted: YAML's null */
static bool is_null(const yaml_node_t *v)
{
	const char *t = text_of(v);
	size_t n = v->data.scalar.length;

	return v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (n == 0 || (n == 1 && t[0] == '~') ||
		(n == 4 && (!memcmp(t, "null", 4) || !memcmp(t, "Null", 4) || !memcmp(t, "NULL", 4))));
}

/* One option's value: a scalar, a list of scalars (the option repeated) or
 * a mapping of scalars (NAME=VALUE each, as --label takes). */
static int opt_value(struct walk *w, struct cp_config_opts *o, const char *section, yaml_node_t *k, yaml_node_t *v)
{
	yaml_node_t *item, *kk, *vv;
	int err = 0;

	if (k->type != YAML_SCALAR_NODE || !k->data.scalar.length)
		return bad(w, k, "a setting's name must be a word");
	switch (v->type) {
	case YAML_SCALAR_NODE:
		if (is_null(v))
			return 0; /* not set */
		return opt_push(o, section, k, text_of(v), v->data.scalar.length);
	case YAML_SEQUENCE_NODE:
		FOR_ITEMS(w, v, item)
		{
			if (item->type != YAML_SCALAR_NODE)
				return bad(w, item, "%.64s: a list of single values", text_of(k));
			if ((err = opt_push(o, section, k, text_of(item), item->data.scalar.length)))
				return err;
		}
		return 0;
	case YAML_MAPPING_NODE:
		FOR_PAIRS(w, v, kk, vv)
		{
			char *pair;
			size_t n;

			if (kk->type != YAML_SCALAR_NODE || vv->type != YAML_SCALAR_NODE)
				return bad(w, kk, "%.64s: a mapping of NAME: VALUE", text_of(k));
			n = kk->data.scalar.length + 1 + vv->data.scalar.length;
			if (!(pair = malloc(n + 1)))
				return cp_error(ENOMEM, "out of memory reading the configuration");
			snprintf(pair, n + 1, "%.*s=%.*s", (int)kk->data.scalar.length, text_of(kk),
				 (int)vv->data.scalar.length, text_of(vv));
			err = opt_push(o, section, k, pair, n);
			free(pair);
			if (err)
				return err;
		}
		return 0;
	default:
		return bad(w, v, "%.64s: no value", text_of(k));
	}
}

int cp_config_opts_parse(const char *text, size_t len, const char *name, const char *const *sections,
			 struct cp_config_opts *o)
{
	struct walk w;
	yaml_node_t *root, *k, *v, *kk, *vv;
	int err;

	memset(o, 0, sizeof(*o));
	if ((err = load(&w, text, len, name, &root)) || !root) /* empty, or only comments */
		goto out;
	FOR_PAIRS(&w, root, k, v)
	{
		const char *const *sec;

		if (key_is(k, "scrape_configs") || key_is(k, "object_storage"))
			continue; /* the scrape jobs: cp_config_parse */
		for (sec = sections; sec && *sec && !key_is(k, *sec); sec++)
			;
		if (sec && *sec) {
			if (v->type == YAML_SCALAR_NODE && !v->data.scalar.length)
				continue; /* "record:" with nothing under it */
			if (v->type != YAML_MAPPING_NODE) {
				err = bad(&w, v, "%s: wants the settings of cprof %s (key: value)", *sec, *sec);
				goto out;
			}
			FOR_PAIRS(&w, v, kk, vv)
			if ((err = opt_value(&w, o, *sec, kk, vv)))
				goto out;
			continue;
		}
		if ((err = opt_value(&w, o, NULL, k, v)))
			goto out;
	}
out:
	yaml_document_delete(&w.doc);
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory reading %s", name);
	if (err)
		cp_config_opts_release(o);
	return err;
}

void cp_config_opts_release(struct cp_config_opts *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].section);
		free(o->v[i].key);
		free(o->v[i].value);
	}
	free(o->v);
	memset(o, 0, sizeof(*o));
}

void cp_yaml_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\x%02x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}
