/* SPDX-License-Identifier: MIT */
/* Fuzz target: the pprof decoder (gzip or raw), then a round trip through the
 * encoder for whatever it accepts, which must decode again. */
#include <stdint.h>
#include <stdlib.h>

#include "pprof.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cp_profile *p = cp_pprof_decode(data, len), *q;
	uint8_t *out = NULL;
	size_t outlen = 0;

	if (!p)
		return 0;
	if (cp_pprof_encode(p, 0, &out, &outlen) == 0) {
		q = cp_pprof_decode(out, outlen);
		if (!q || q->nsamples != p->nsamples || q->nlocations != p->nlocations)
			abort(); /* what we write, we must read back the same */
		cp_profile_free(q);
	}
	free(out);
	cp_profile_free(p);
	return 0;
}
