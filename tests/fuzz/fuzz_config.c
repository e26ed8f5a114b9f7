/* SPDX-License-Identifier: MIT */
/* Fuzz target: cprof serve's YAML configuration file, then its values read
 * the way cprof serve reads them (a size, a duration). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "selector.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cp_config c;
	uint64_t size;
	int64_t ns;

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
