/* SPDX-License-Identifier: MIT */
/* Protobuf-style varints and zigzag, for the store's compact encodings.
 * Inline, on the caller's buffers: writers need 10 bytes of room per value;
 * readers return the bytes read, 0 for input that ends early or is too long. */
#ifndef CP_VARINT_H
#define CP_VARINT_H

#include <stddef.h>
#include <stdint.h>

static inline size_t cp_put_uvarint(uint8_t *buf, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (uint8_t)v;
	return n;
}

/* Bytes read, or 0 when the input ends early or the varint is too long. */
static inline size_t cp_get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	size_t n = 0;

	while (p + n < end && n < 10) {
		uint8_t b = p[n];

		r |= (uint64_t)(b & 0x7f) << (7 * n);
		n++;
		if (!(b & 0x80)) {
			*v = r;
			return n;
		}
	}
	return 0;
}

static inline uint64_t cp_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t cp_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#define CP_VARINT_MAX 10

#endif
