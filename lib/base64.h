/* SPDX-License-Identifier: MIT */
/* Base64, by gnutls: what the Pyroscope and Parca APIs carry (pprof in JSON, a raw write's
 * profiles) and what basic auth sends.  The output is malloc'ed and the caller's.  Errors: -EINVAL
 * (bad base64), -EFBIG (over 1 GiB to encode), -ENOMEM, with the message recorded. */
#ifndef CP_BASE64_H
#define CP_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Base64 (standard or URL-safe, padding optional, whitespace dropped) and back. */
int cp_base64_decode(const char *s, size_t len, uint8_t **out, size_t *outlen);
int cp_base64_encode(const uint8_t *d, size_t len, char **out, size_t *outlen);

#endif
