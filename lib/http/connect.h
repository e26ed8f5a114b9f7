/* SPDX-License-Identifier: MIT */
/* Connect's unary RPCs (connectrpc.com/docs/protocol) over lib/http/server.h, for the messages
 * protoc-c generates: a POST whose body is the request message as application/proto (the protobuf
 * encoding) or application/json (proto3's JSON mapping: lowerCamelCase names, or the proto names,
 * 64-bit integers as strings or numbers, enums by name or number, bytes in base64), answered with
 * the response message in the request's encoding, or an error as Connect writes them: HTTP status
 * and {"code":"invalid_argument","message":"..."}.  The JSON mapping is lib/protojson.h's.
 * Ownership: a message read is the caller's (protobuf_c_message_free_unpacked(m, NULL));
 * cp_connect_answer only reads its message.  Errors: each function answers through out. */
#ifndef CP_HTTP_CONNECT_H
#define CP_HTTP_CONNECT_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

#include "server.h"

enum cp_connect_enc { CP_CONNECT_PROTO, CP_CONNECT_JSON };

/* Connect's error codes (their names on the wire) with the HTTP status each is sent with */
enum cp_connect_code {
	CP_CONNECT_INVALID_ARGUMENT,
	CP_CONNECT_NOT_FOUND,
	CP_CONNECT_RESOURCE_EXHAUSTED,
	CP_CONNECT_UNIMPLEMENTED,
	CP_CONNECT_INTERNAL,
	CP_CONNECT_UNAVAILABLE,
};

/* The request's body as a message of d, in the encoding its Content-Type says (*enc); NULL after
 * answering the error (an unknown content type: 415, a compressed body: unimplemented, a
 * malformed body: invalid_argument). */
ProtobufCMessage *cp_connect_read(struct cp_req *r, struct cp_resp *out, const ProtobufCMessageDescriptor *d,
				  enum cp_connect_enc *enc);
/* Answers m in enc (200). */
void cp_connect_answer(struct cp_resp *out, enum cp_connect_enc enc, const ProtobufCMessage *m);
/* Answers a Connect error (always JSON, whatever the request's encoding, as the protocol says). */
void cp_connect_error(struct cp_resp *out, enum cp_connect_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The Connect code for a cprof -errno (EINVAL, ENOENT, CP_REGEX_ECOST, ENOMEM, ...). */
enum cp_connect_code cp_connect_code_of(int err);

#endif
