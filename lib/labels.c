/* SPDX-License-Identifier: MIT */
/* Labels checked as they come in: see labels.h. */
#include "labels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "selector.h"

int cp_labels_add(struct cp_labels *l, const char *name, const char *value)
{
	size_t i, nlen = strlen(name), vlen = strlen(value);

	if (!cp_label_name_valid(name, nlen))
		return cp_error(EINVAL, "bad label name '%.64s' (letters, digits and _, not starting with a digit)", name);
	if (nlen > CP_LABEL_NAME_MAX)
		return cp_error(EINVAL, "label name '%.64s...' is longer than %d bytes", name, CP_LABEL_NAME_MAX);
	if (vlen > CP_LABEL_VALUE_MAX)
		return cp_error(EINVAL, "the value of label '%.64s' is longer than %d bytes", name, CP_LABEL_VALUE_MAX);
	/* the cap also keeps this check linear in practice: 64 x 64 at most */
	if (l->n >= CP_LABELS_MAX)
		return cp_error(EINVAL, "more than %d labels for one series (at '%.64s')", CP_LABELS_MAX, name);
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->kv[i].name, name))
			return cp_error(EINVAL, "label '%.64s' given twice", name);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct cp_kv *kv = realloc(l->kv, cap * sizeof(*kv));

		if (!kv)
			return cp_error(ENOMEM, "out of memory adding the label '%s'", name);
		l->kv = kv;
		l->cap = cap;
	}
	l->kv[l->n].name = strdup(name);
	l->kv[l->n].value = strdup(value);
	if (!l->kv[l->n].name || !l->kv[l->n].value) {
		free((char *)l->kv[l->n].name);
		free((char *)l->kv[l->n].value);
		return cp_error(ENOMEM, "out of memory adding the label '%s'", name);
	}
	l->n++;
	return 0;
}

void cp_labels_release(struct cp_labels *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free((char *)l->kv[i].name);
		free((char *)l->kv[i].value);
	}
	free(l->kv);
	memset(l, 0, sizeof(*l));
}

int cp_label_arg(struct cp_labels *l, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t nlen = eq ? (size_t)(eq - arg) : 0;
	char *name;
	int err;

	if (!eq || !cp_label_name_valid(arg, nlen))
		return cp_error(EINVAL, "bad label '%.64s': want NAME=VALUE, the name of letters, digits and _", arg);
	if (nlen >= 2 && arg[0] == '_' && arg[1] == '_')
		return cp_error(EINVAL, "bad label '%.64s': names starting with __ are reserved", arg);
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->kv[i].name) == nlen && !memcmp(l->kv[i].name, arg, nlen))
			return cp_error(EINVAL, "label '%.*s' is given twice", (int)(nlen < 64 ? nlen : 64), arg);
	if (l->n >= CP_LABEL_ARGS_MAX)
		return cp_error(EINVAL, "too many labels (at most %d)", CP_LABEL_ARGS_MAX);
	if (!(name = strndup(arg, nlen)))
		return cp_error(ENOMEM, "out of memory reading -l %s", arg);
	err = cp_labels_add(l, name, eq + 1);
	free(name);
	return err;
}

int cp_labels_take_defaults(struct cp_labels *l, struct cp_labels *defaults)
{
	struct cp_labels out = { 0 };
	size_t i, j;
	int err = 0;

	for (i = 0; i < defaults->n && !err; i++) {
		for (j = 0; j < l->n && strcmp(l->kv[j].name, defaults->kv[i].name); j++)
			;
		if (j == l->n)
			err = cp_labels_add(&out, defaults->kv[i].name, defaults->kv[i].value);
	}
	for (i = 0; i < l->n && !err; i++)
		err = out.n >= CP_LABEL_ARGS_MAX ?
			      cp_error(EINVAL, "too many labels (at most %d, the configuration file's with the options')",
				       CP_LABEL_ARGS_MAX) :
			      cp_labels_add(&out, l->kv[i].name, l->kv[i].value);
	if (err) {
		cp_labels_release(&out);
		return err;
	}
	cp_labels_release(l);
	cp_labels_release(defaults);
	*l = out;
	return 0;
}
