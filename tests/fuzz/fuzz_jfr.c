/* SPDX-License-Identifier: MIT */
/* Fuzz target: Java Flight Recorder files through the production reader
 * (cp_jfr_decode, cp_jfr_to_parts, and the loader's sniffing).  A second pass
 * sets the chunk's size to the input's length, so that a cut or grown input
 * gets past the header check into the metadata, pools and events. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jfr.h"
#include "load.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void decode(const uint8_t *data, size_t len)
{
	struct cp_jfr_part *parts = NULL;
	struct cp_profile *p = NULL;
	size_t n = 0;

	if (!cp_jfr_decode(data, len, &p))
		cp_profile_free(p);
	if (!cp_jfr_to_parts(data, len, &parts, &n))
		cp_jfr_parts_free(parts, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t *copy;

	decode(data, len);
	cp_profile_free(cp_profile_decode(data, len));
	if (len < 68 || !(copy = malloc(len)))
		return 0;
	memcpy(copy, data, len);
	memcpy(copy, "FLR\0\0\2", 6);
	for (int i = 0; i < 8; i++)
		copy[8 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
	decode(copy, len);
	free(copy);
	return 0;
}
