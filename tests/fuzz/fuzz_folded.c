/* SPDX-License-Identifier: MIT */
/* Fuzz target: folded-stack text (and format sniffing), then writing it back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "folded.h"
#include "load.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cp_profile *p = cp_folded_decode((const char *)data, len), *q;
	FILE *f;

	if (p) {
		f = fopen("/dev/null", "w");
		if (f) {
			cp_folded_write(f, p, 0, false);
			cp_folded_write(f, p, 0, true);
			fclose(f);
		}
		cp_profile_free(p);
	}
	q = cp_profile_decode(data, len);
	cp_profile_free(q);
	return 0;
}
