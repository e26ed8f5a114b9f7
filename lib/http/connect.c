/* SPDX-License-Identifier: MIT */
/* Connect's unary protocol (connect.h), its JSON in proto3's mapping (protojson.h). */
#include "http/connect.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "protojson.h"
#include "regex.h"

static const struct {
	const char *name;
	int status;
} codes[] = {
	[CP_CONNECT_INVALID_ARGUMENT] = { "invalid_argument", 400 },
	[CP_CONNECT_NOT_FOUND] = { "not_found", 404 },
	[CP_CONNECT_RESOURCE_EXHAUSTED] = { "resource_exhausted", 429 },
	[CP_CONNECT_UNIMPLEMENTED] = { "unimplemented", 501 },
	[CP_CONNECT_INTERNAL] = { "internal", 500 },
	[CP_CONNECT_UNAVAILABLE] = { "unavailable", 503 },
};

static void error_status(struct cp_resp *out, int status, const char *code, const char *msg)
{
	json_t *j = json_pack("{s:s,s:s}", "code", code, "message", msg);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s) {
		cp_resp_text(out, 500, "application/json", "{\"code\":\"internal\",\"message\":\"out of memory\"}");
		return;
	}
	cp_resp_take(out, status, "application/json", s, strlen(s));
}

void cp_connect_error(struct cp_resp *out, enum cp_connect_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_status(out, codes[code].status, codes[code].name, msg);
}

enum cp_connect_code cp_connect_code_of(int err)
{
	err = err < 0 ? -err : err;
	if (err == EINVAL || err == CP_REGEX_ECOST || err == E2BIG || err == EOVERFLOW)
		return CP_CONNECT_INVALID_ARGUMENT;
	if (err == ENOENT)
		return CP_CONNECT_NOT_FOUND;
	if (err == EFBIG)
		return CP_CONNECT_RESOURCE_EXHAUSTED;
	return CP_CONNECT_INTERNAL;
}

/* ---- the protocol ---- */

ProtobufCMessage *cp_connect_read(struct cp_req *r, struct cp_resp *out, const ProtobufCMessageDescriptor *d,
				  enum cp_connect_enc *enc)
{
	const char *ct = cp_req_header(r, "Content-Type"), *ce = cp_req_header(r, "Content-Encoding");
	size_t len = 0, n;
	const uint8_t *body = cp_req_body(r, &len);
	ProtobufCMessage *m;

	n = ct ? strcspn(ct, "; ") : 0;
	if (ct && n == strlen("application/proto") && !strncasecmp(ct, "application/proto", n)) {
		*enc = CP_CONNECT_PROTO;
	} else if (ct && n == strlen("application/json") && !strncasecmp(ct, "application/json", n)) {
		*enc = CP_CONNECT_JSON;
	} else {
		error_status(out, 415, "unimplemented",
			     "a Connect unary request is POSTed as application/proto or application/json");
		return NULL;
	}
	if (ce && *ce && strcasecmp(ce, "identity")) {
		cp_connect_error(out, CP_CONNECT_UNIMPLEMENTED, "compression '%.32s' is not supported (send identity)",
				 ce);
		return NULL;
	}
	if (*enc == CP_CONNECT_PROTO) {
		if (!(m = protobuf_c_message_unpack(d, NULL, len, body ? body : (const uint8_t *)"")))
			cp_connect_error(out, CP_CONNECT_INVALID_ARGUMENT, "the body is not a valid %s", d->name);
		return m;
	}
	if (!(m = cp_protojson_read(d, len ? (const char *)body : "{}", len ? len : 2, NULL)))
		cp_connect_error(out,
				 errno == ENOMEM  ? CP_CONNECT_INTERNAL :
				 errno == EFBIG	  ? CP_CONNECT_RESOURCE_EXHAUSTED :
						    CP_CONNECT_INVALID_ARGUMENT,
				 "%s: %s", d->name, cp_errmsg(errno));
	return m;
}

void cp_connect_answer(struct cp_resp *out, enum cp_connect_enc enc, const ProtobufCMessage *m)
{
	size_t len;
	char *buf;

	if (enc == CP_CONNECT_JSON) {
		if (!(buf = cp_protojson_write(m, &len))) {
			cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
			return;
		}
		cp_resp_take(out, 200, "application/json", buf, len);
		return;
	}
	len = protobuf_c_message_get_packed_size(m);
	if (!(buf = malloc(len ? len : 1))) {
		cp_connect_error(out, CP_CONNECT_INTERNAL, "out of memory");
		return;
	}
	protobuf_c_message_pack(m, (uint8_t *)buf);
	cp_resp_take(out, 200, "application/proto", buf, len);
}
