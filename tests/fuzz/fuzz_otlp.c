/* SPDX-License-Identifier: MIT */
/* Fuzz target: OTLP profiles export requests as cprof serve decodes them
 * (lib/ingest/otlp.c, cp_otlp_decode: the wire checked, unpacked by the code
 * protoc-c makes of proto/otlp/, each profile made a cprof profile), and the
 * same input as OTLP/JSON (cp_otlp_decode_json, through lib/protojson.c).
 * Every profile of an accepted request has one sample type and at least one
 * sample. */
#include <stdint.h>
#include <stdlib.h>

#include "ingest/protocol.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cp_ingest_batch b = { 0 };

	for (int json = 0; json < 2; json++) {
		int err = json ? cp_otlp_decode_json((const char *)data, len, &b) : cp_otlp_decode(data, len, &b);

		if (!err)
			for (size_t i = 0; i < b.n; i++)
				if (b.a[i].profile->ntypes != 1 || !b.a[i].profile->nsamples)
					abort();
		cp_ingest_batch_release(&b);
	}
	return 0;
}
