/* SPDX-License-Identifier: MIT */
/* proto3's JSON mapping for the messages protoc-c generates, by their descriptors: lowerCamelCase
 * names (or the proto names) read, lowerCamelCase written; 64-bit integers as strings or numbers,
 * enums by name or number, bytes in base64 (or hex for the fields a reader names: OTLP/JSON writes
 * trace, span and profile ids in hex).  For the field types protoc-c knows: no maps, no well-known
 * types (Pyroscope's query API and OTLP use neither); unknown JSON fields are ignored.  Used by
 * Connect (lib/http/connect.c) and OTLP/HTTP's JSON (lib/ingest/otlp.c).
 * Ownership: a message read is the caller's (protobuf_c_message_free_unpacked(m, NULL)); text written
 * is the caller's (free).  Errors: NULL with errno, and for a read the message in cp_errmsg (EINVAL:
 * malformed or a field's value wrong, EFBIG: past the decode limits' JSON counts, ENOMEM). */
#ifndef CP_PROTOJSON_H
#define CP_PROTOJSON_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* m as compact JSON text (*len bytes, NUL-terminated). */
char *cp_protojson_write(const ProtobufCMessage *m, size_t *len);
/* JSON text (len bytes, held to cp_json_bounded first) as a message of d; hex: the proto names of
 * bytes fields written in hex, NULL-terminated (NULL: none). */
ProtobufCMessage *cp_protojson_read(const ProtobufCMessageDescriptor *d, const char *text, size_t len,
				    const char *const *hex);

#endif
