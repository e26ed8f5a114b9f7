/* SPDX-License-Identifier: MIT */
/* Fuzz target: selectors, durations and times (command-line input), and
 * matching a parsed selector against labels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const names[] = { "comm", "pid", "host" }, *const values[] = { "burn", "42", "" };
	struct cp_selector *sel = NULL;
	char *s = malloc(len + 1);
	int64_t v;

	if (!s)
		return 0;
	memcpy(s, data, len);
	s[len] = '\0';
	if (!cp_selector_parse(s, &sel)) {
		cp_selector_match_type(sel, "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
		cp_selector_match_labels(sel, names, values, 3);
		cp_selector_free(sel);
	}
	cp_parse_duration(s, &v);
	cp_parse_time(s, 1700000000000000000LL, &v);
	free(s);
	return 0;
}
