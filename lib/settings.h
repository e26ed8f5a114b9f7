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
 * Every key is optional; an unknown key or a value of the wrong shape is an
 * error naming its line. */
#ifndef CP_SETTINGS_H
#define CP_SETTINGS_H

#include <stddef.h>

struct cp_config {
	char *listen, *data, *retention, *token_file, *tls_cert, *tls_key, *max_body;
};

/* 0, or -errno with a message naming the file and line. */
int cp_config_parse(const char *text, size_t len, const char *name, struct cp_config *c);
int cp_config_load(const char *path, struct cp_config *c);
void cp_config_release(struct cp_config *c);

#endif
