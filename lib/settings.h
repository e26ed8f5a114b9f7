/* SPDX-License-Identifier: MIT */
/* cprof.yaml, the server's configuration file (libyaml):
 *
 *   listen: 127.0.0.1:7070
 *   data: /var/lib/cprof
 *   retention: 30d
 *   token_file: /etc/cprof/token
 *   tls_cert: /etc/cprof/cert.pem
 *   tls_key: /etc/cprof/key.pem
 *   max_body: 32M
 *   max_decompressed: 128M
 *   header_timeout: 15s
 *
 *   scrape_configs:          # Parca's, as is (lib/scrape.h): jobs that
 *     - job_name: api        # cprof scrape --config and cprof serve --config run
 *       static_configs: [{targets: ['127.0.0.1:6060']}]
 *
 * Every key is optional; a value of the wrong shape is an error naming its
 * line.  Keys that are not the server's (Parca's object_storage, the other
 * commands' settings, sections) are left to cp_config_opts_parse, whose
 * caller checks them. */
#ifndef CP_SETTINGS_H
#define CP_SETTINGS_H

#include <stddef.h>
#include <stdio.h>

#include "scrape.h"

struct cp_config {
	char *listen, *data, *retention, *token_file, *tls_cert, *tls_key, *max_body, *max_decompressed,
	     *header_timeout, *downsample;
	struct cp_scrape_config scrape;
};

/* 0, or -errno with a message naming the file and line. */
int cp_config_parse(const char *text, size_t len, const char *name, struct cp_config *c);
int cp_config_load(const char *path, struct cp_config *c);
void cp_config_release(struct cp_config *c);

/* The same file as every command's settings: option names (without "--",
 * '_' read as '-') and values, at the top level (for every command that has
 * the option) or in a section named after a command (sections: the names,
 * NULL-terminated).  A list gives the option once per item, a mapping
 * NAME: VALUE pairs as NAME=VALUE (--label).  scrape_configs and
 * object_storage are left to cp_config_parse.  Whether each name is an
 * option is for the caller to check (cmd/util_config.c). */
struct cp_config_opt {
	char *section; /* NULL: the top level */
	char *key;
	char *value;
	size_t line;
};
struct cp_config_opts {
	struct cp_config_opt *v;
	size_t n;
};
int cp_config_opts_parse(const char *text, size_t len, const char *name, const char *const *sections,
			 struct cp_config_opts *o);
void cp_config_opts_release(struct cp_config_opts *o);

/* Writes s as a YAML scalar, double-quoted with JSON-style escapes (valid
 * YAML), or null for NULL: for --print-config. */
void cp_yaml_str(FILE *f, const char *s);

#endif
