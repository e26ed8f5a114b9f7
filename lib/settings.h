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
 *
 *   scrape_configs:          # Parca's, as is (lib/scrape.h): jobs that
 *     - job_name: api        # cprof scrape --config and cprof serve --config run
 *       static_configs: [{targets: ['127.0.0.1:6060']}]
 *
 * Every key is optional; an unknown key or a value of the wrong shape is an
 * error naming its line (Parca's object_storage is ignored). */
#ifndef CP_SETTINGS_H
#define CP_SETTINGS_H

#include <stddef.h>

#include "scrape.h"

struct cp_config {
	char *listen, *data, *retention, *token_file, *tls_cert, *tls_key, *max_body;
	struct cp_scrape_config scrape;
};

/* 0, or -errno with a message naming the file and line. */
int cp_config_parse(const char *text, size_t len, const char *name, struct cp_config *c);
int cp_config_load(const char *path, struct cp_config *c);
void cp_config_release(struct cp_config *c);

#endif
