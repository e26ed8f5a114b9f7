/* SPDX-License-Identifier: MIT */
/* Fuzz target: the YAML configuration file, read as cprof serve reads it
 * (its values then parsed: a size, a duration) and as every command reads
 * it (option names and values, top level and sections). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "selector.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const sections[] = { "record", "serve", "scrape", "query", "top", NULL };
	struct cp_config c;
	struct cp_config_opts o;
	uint64_t size;
	int64_t ns;

	if (!cp_config_opts_parse((const char *)data, len, "fuzz.yaml", sections, &o)) {
		for (size_t i = 0; i < o.n; i++)
			if (!o.v[i].key || !o.v[i].value || !o.v[i].line)
				abort(); /* every entry is complete */
		cp_config_opts_release(&o);
	}

	/* the text is a buffer of exactly len bytes: no terminating NUL */
	if (cp_config_parse((const char *)data, len, "fuzz.yaml", &c))
		return 0;
	if (c.max_body)
		cp_parse_size(c.max_body, &size);
	if (c.retention)
		cp_parse_duration(c.retention, &ns);
	cp_config_release(&c);
	cp_config_release(&c); /* releasing twice is harmless */
	return 0;
}
