/* SPDX-License-Identifier: MIT */
/* How record, scrape and import push to a server: the options of cmd.h's
 * struct push_args, checked, and shown by --print-config. */
#include <stdio.h>
#include <string.h>

#include "../lib/push/protocol.h"
#include "../lib/selector.h"
#include "../lib/settings.h"
#include "../lib/util.h"
#include "cmd.h"

bool push_option(struct push_args *a, int opt, const char *arg)
{
	if (opt >= OPT_REMOTE_API && opt <= OPT_SERVICE_LABEL && !from_config())
		a->given = true;
	switch (opt) {
	case OPT_REMOTE_API: a->api = arg; return true;
	case OPT_TENANT: a->tenant = arg; return true;
	case OPT_BASIC_USER: a->basic_user = arg; return true;
	case OPT_SERVICE_LABEL: a->service_label = arg; return true;
	default: return false;
	}
}

int push_check(const char *verb, const char *url, struct push_args *a)
{
	const struct cp_push_protocol *p = cp_push_protocol_find(a->api);
	char names[64];

	if (!url && a->given)
		return usage_error(verb, "--remote-api, --tenant, --basic-auth-user and --service-label go with --remote URL");
	if (!url) { /* the configuration file's, for when there is a server */
		memset(a, 0, sizeof(*a));
		return EXIT_OK;
	}
	if (!p)
		return usage_error(verb, "--remote-api: %s, not '%s'", cp_push_protocol_names(names, sizeof(names)), a->api);
	if (!p->service && a->service_label)
		return usage_error(verb, "--service-label is for --remote-api pyroscope or otlp");
	if (!p->tenant && a->tenant)
		return usage_error(verb, "--tenant is for --remote-api pyroscope or otlp");
	if (a->tenant && (!*a->tenant || strpbrk(a->tenant, "\r\n")))
		return usage_error(verb, "--tenant: want a tenant ID on one line");
	if (a->basic_user && (!*a->basic_user || strpbrk(a->basic_user, ":\r\n")))
		return usage_error(verb, "--basic-auth-user: want a user name without ':'");
	if (a->service_label && !cp_label_name_valid(a->service_label, strlen(a->service_label)))
		return usage_error(verb, "--service-label: '%s' is not a label name", a->service_label);
	return EXIT_OK;
}

void print_remote_config(FILE *f, const char *remote, const char *token_file, const struct push_args *push,
			 const char *spool, size_t spool_size, const char *data)
{
	const struct push_args *a = remote ? push : NULL;
	char b[32];

	fprintf(f, "\n  remote: ");
	cp_yaml_str(f, remote);
	fprintf(f, "\n  token-file: ");
	cp_yaml_str(f, remote ? token_file : NULL);
	fprintf(f, "\n  remote-api: %s", a && a->api ? a->api : a ? "cprof" : "null");
	fprintf(f, "\n  service-label: ");
	cp_yaml_str(f, a ? a->service_label : NULL);
	fprintf(f, "\n  tenant: ");
	cp_yaml_str(f, a ? a->tenant : NULL);
	fprintf(f, "\n  basic-auth-user: ");
	cp_yaml_str(f, a ? a->basic_user : NULL);
	fputc('\n', f);
	if (remote) {
		fprintf(f, "  spool: ");
		if (spool)
			cp_yaml_str(f, spool);
		else
			fprintf(f, "\"%s/spool\"", data ? data : "");
		fprintf(f, "\n  spool-size: %s\n", cp_size_text(spool_size ? spool_size : (size_t)256 << 20, b, sizeof(b)));
	}
}
