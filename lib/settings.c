/* SPDX-License-Identifier: MIT */
/* cprof.yaml: libyaml loads the document; we walk its top-level mapping. */
#include "settings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "error.h"
#include "util.h"

static int scalar(yaml_document_t *d, yaml_node_t *n, const char *name, const char *key, char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return cp_error(EINVAL, "%s:%zu: %s wants a single value", name, n->start_mark.line + 1, key);
	(void)d;
	free(*out);
	*out = strndup((const char *)n->data.scalar.value, n->data.scalar.length);
	return *out ? 0 : -ENOMEM;
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
	};
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	yaml_node_pair_t *pair;
	int err = 0;

	memset(c, 0, sizeof(*c));
	if (!yaml_parser_initialize(&parser))
		return cp_error(ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		err = cp_error(EINVAL, "%s:%zu: %s", name, parser.problem_mark.line + 1,
			       parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		return err;
	}
	yaml_parser_delete(&parser);
	root = yaml_document_get_root_node(&doc);
	if (!root) /* an empty file: all defaults */
		goto out;
	if (root->type != YAML_MAPPING_NODE) {
		err = cp_error(EINVAL, "%s:%zu: wants a mapping of settings (key: value)", name, root->start_mark.line + 1);
		goto out;
	}
	for (pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pair->key), *v = yaml_document_get_node(&doc, pair->value);
		size_t i;

		if (!k || !v || k->type != YAML_SCALAR_NODE) {
			err = cp_error(EINVAL, "%s: a key that is not a name", name);
			goto out;
		}
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strlen(keys[i].key) == k->data.scalar.length &&
			    !memcmp(keys[i].key, k->data.scalar.value, k->data.scalar.length))
				break;
		if (i == sizeof(keys) / sizeof(keys[0])) {
			err = cp_error(EINVAL, "%s:%zu: unknown setting '%.*s' (known: listen, data, retention, token_file, "
					       "tls_cert, tls_key, max_body)",
				       name, k->start_mark.line + 1, (int)(k->data.scalar.length > 64 ? 64 : k->data.scalar.length),
				       (const char *)k->data.scalar.value);
			goto out;
		}
		if ((err = scalar(&doc, v, name, keys[i].key, (char **)((char *)c + keys[i].off))))
			goto out;
	}
out:
	yaml_document_delete(&doc);
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
	free(c->token_file);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->max_body);
	memset(c, 0, sizeof(*c));
}
