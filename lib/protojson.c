/* SPDX-License-Identifier: MIT */
/* proto3's JSON mapping over protoc-c's descriptors (protojson.h). */
#include "protojson.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "decode_limits.h"
#include "error.h"

/* nesting of JSON objects and messages taken: Pyroscope's requests nest 3 deep, OTLP's 6 */
#define JSON_DEPTH_MAX 32

/* the field's JSON name: its name in lowerCamelCase (as protoc writes json_name) */
static void json_name(const char *name, char *buf, size_t len)
{
	size_t o = 0;
	bool up = false;

	for (; *name && o + 1 < len; name++) {
		if (*name == '_') {
			up = true;
			continue;
		}
		buf[o++] = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
		up = false;
	}
	buf[o] = 0;
}

static json_t *scalar_to_json(const ProtobufCFieldDescriptor *f, const void *v)
{
	char buf[32];

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)v);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)v);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		snprintf(buf, sizeof(buf), "%" PRId64, *(const int64_t *)v);
		return json_string(buf);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		snprintf(buf, sizeof(buf), "%" PRIu64, *(const uint64_t *)v);
		return json_string(buf);
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE: {
		double d = f->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)v : *(const double *)v;

		if (isnan(d))
			return json_string("NaN");
		if (isinf(d))
			return json_string(d > 0 ? "Infinity" : "-Infinity");
		return json_real(d);
	}
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)v);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)v);

		return ev ? json_string(ev->name) : json_integer(*(const int *)v);
	}
	case PROTOBUF_C_TYPE_STRING:
		return json_stringn(*(char *const *)v ? *(char *const *)v : "",
				    *(char *const *)v ? strlen(*(char *const *)v) : 0);
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = v;
		char *s = NULL;
		size_t n = 0;
		json_t *j;

		if (cp_base64_encode(b->data, b->len, &s, &n))
			return NULL;
		j = json_stringn(s, n);
		free(s);
		return j;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		break;
	}
	return NULL;
}

static json_t *message_to_json(const ProtobufCMessage *m);

static json_t *value_to_json(const ProtobufCFieldDescriptor *f, const void *v)
{
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(ProtobufCMessage *const *)v ? message_to_json(*(ProtobufCMessage *const *)v) : json_object();
	return scalar_to_json(f, v);
}

static size_t type_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return 8;
	case PROTOBUF_C_TYPE_FLOAT:
		return 4;
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_ENUM:
		return sizeof(int);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	}
	return 0;
}

/* a proto3 field without presence at its default: left out of the JSON */
static bool is_default(const ProtobufCFieldDescriptor *f, const void *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		return !*(char *const *)v || !**(char *const *)v;
	case PROTOBUF_C_TYPE_BYTES:
		return !((const ProtobufCBinaryData *)v)->len;
	case PROTOBUF_C_TYPE_MESSAGE:
		return !*(void *const *)v;
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)v == 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)v == 0;
	default: {
		static const char zero[8];

		return !memcmp(v, zero, type_size(f));
	}
	}
}

static json_t *message_to_json(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *o = json_object();

	for (unsigned i = 0; o && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;
		const void *v = base + f->offset;
		char name[128];
		json_t *j;

		json_name(f->name, name, sizeof(name));
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset), sz = type_size(f);
			const char *arr = *(char *const *)v;

			if (!n)
				continue;
			if (!(j = json_array()))
				goto fail;
			for (size_t k = 0; k < n; k++)
				if (json_array_append_new(j, value_to_json(f, arr + k * sz))) {
					json_decref(j);
					goto fail;
				}
		} else {
			if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
				if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
					continue;
			} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
				   f->type != PROTOBUF_C_TYPE_STRING) {
				if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset))
					continue;
			} else if (is_default(f, v)) {
				continue;
			}
			if (!(j = value_to_json(f, v)))
				goto fail;
		}
		if (json_object_set_new(o, name, j))
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

char *cp_protojson_write(const ProtobufCMessage *m, size_t *len)
{
	json_t *j = message_to_json(m);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	*len = strlen(s);
	return s;
}

static bool is_hex_field(const char *const *hex, const char *name)
{
	for (; hex && *hex; hex++)
		if (!strcmp(*hex, name))
			return true;
	return false;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* s (n hex digits, case-insensitive) as bytes (malloc'ed): 0, 1 when it is not hex, or -ENOMEM */
static int hex_decode(const char *s, size_t n, uint8_t **out, size_t *len)
{
	uint8_t *b;

	if (n % 2)
		return 1;
	if (!(b = malloc(n / 2 + 1)))
		return cp_error(ENOMEM, "out of memory reading JSON");
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return 1;
		}
		b[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*out = b;
	*len = n / 2;
	return 0;
}

static int bad(const char *field, const char *what)
{
	return cp_error(EINVAL, "field %s: %s", field, what);
}

static int json_int(const json_t *j, const char *field, bool is_unsigned, int64_t lo, int64_t hi, int64_t *out)
{
	if (json_is_integer(j)) {
		*out = json_integer_value(j);
	} else if (json_is_real(j)) {
		double d = json_real_value(j);

		if (d != floor(d) || d < -9.2e18 || d > 9.2e18)
			return bad(field, "not an integer");
		*out = (int64_t)d;
	} else if (json_is_string(j)) {
		const char *s = json_string_value(j);
		char *end;

		errno = 0;
		if (is_unsigned) {
			if (*s == '-')
				return bad(field, "not an unsigned integer");
			*out = (int64_t)strtoull(s, &end, 10);
		} else {
			*out = strtoll(s, &end, 10);
		}
		if (errno || end == s || *end)
			return bad(field, "not an integer");
		if (is_unsigned)
			return hi != INT64_MAX && (uint64_t)*out > (uint64_t)hi ? bad(field, "out of range") : 0;
	} else {
		return bad(field, "not a number");
	}
	if (*out < lo || *out > hi)
		return bad(field, "out of range");
	return 0;
}

static int json_to_message(const ProtobufCMessageDescriptor *d, const json_t *j, ProtobufCMessage **out, int depth,
			   const char *const *hex);

/* one value of field f from j into v (an element's or the field's storage, zeroed) */
static int json_to_value(const ProtobufCFieldDescriptor *f, const json_t *j, void *v, int depth, const char *const *hex)
{
	int64_t x;
	int err;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if ((err = json_int(j, f->name, false, INT32_MIN, INT32_MAX, &x)))
			return err;
		*(int32_t *)v = (int32_t)x;
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if ((err = json_int(j, f->name, true, 0, UINT32_MAX, &x)))
			return err;
		*(uint32_t *)v = (uint32_t)x;
		return 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_int(j, f->name, false, INT64_MIN, INT64_MAX, (int64_t *)v);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return json_int(j, f->name, true, 0, INT64_MAX, (int64_t *)v);
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE: {
		double dv;

		if (json_is_number(j)) {
			dv = json_number_value(j);
		} else if (json_is_string(j)) {
			const char *s = json_string_value(j);
			char *end;

			if (!strcmp(s, "NaN"))
				dv = NAN;
			else if (!strcmp(s, "Infinity"))
				dv = INFINITY;
			else if (!strcmp(s, "-Infinity"))
				dv = -INFINITY;
			else if ((dv = strtod(s, &end)), end == s || *end)
				return bad(f->name, "not a number");
		} else {
			return bad(f->name, "not a number");
		}
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)v = (float)dv;
		else
			*(double *)v = dv;
		return 0;
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(j))
			return bad(f->name, "not true or false");
		*(protobuf_c_boolean *)v = json_is_true(j);
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		if (json_is_string(j)) {
			const ProtobufCEnumValue *ev =
				protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, json_string_value(j));

			if (!ev)
				return bad(f->name, "not a value of its enum");
			*(int *)v = ev->value;
			return 0;
		}
		if ((err = json_int(j, f->name, false, INT32_MIN, INT32_MAX, &x)))
			return err;
		*(int *)v = (int)x;
		return 0;
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(j))
			return bad(f->name, "not a string");
		if (!(*(char **)v = strndup(json_string_value(j), json_string_length(j))))
			return cp_error(ENOMEM, "out of memory");
		if (strlen(*(char **)v) != json_string_length(j))
			return bad(f->name, "a string with a NUL");
		return 0;
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = v;
		uint8_t *data = NULL;
		size_t n = 0;

		if (!json_is_string(j))
			return bad(f->name, "not a base64 string");
		if (is_hex_field(hex, f->name)) {
			if ((err = hex_decode(json_string_value(j), json_string_length(j), &data, &n)))
				return err < 0 ? err : bad(f->name, "not hexadecimal");
		} else if (cp_base64_decode(json_string_value(j), json_string_length(j), &data, &n)) {
			return bad(f->name, "not base64");
		}
		b->data = data;
		b->len = n;
		return 0;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		return json_to_message(f->descriptor, j, (ProtobufCMessage **)v, depth + 1, hex);
	}
	return bad(f->name, "of an unknown type");
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d, const char *key)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
	char name[128];

	for (unsigned i = 0; !f && i < d->n_fields; i++) {
		json_name(d->fields[i].name, name, sizeof(name));
		if (!strcmp(name, key))
			f = &d->fields[i];
	}
	return f;
}

static int json_to_message(const ProtobufCMessageDescriptor *d, const json_t *j, ProtobufCMessage **out, int depth,
			   const char *const *hex)
{
	ProtobufCMessage *m;
	const char *key;
	json_t *val;

	*out = NULL;
	if (depth > JSON_DEPTH_MAX)
		return cp_error(EINVAL, "messages nested too deep");
	if (!json_is_object(j))
		return cp_error(EINVAL, "%s: not a JSON object", d->name);
	if (!(m = calloc(1, d->sizeof_message)))
		return cp_error(ENOMEM, "out of memory");
	d->message_init(m);
	*out = m;
	json_object_foreach((json_t *)j, key, val) {
		const ProtobufCFieldDescriptor *f = find_field(d, key);
		char *base = (char *)m;
		void *v;
		int err;

		if (!f || json_is_null(val))
			continue; /* unknown fields are ignored; null is the default */
		v = base + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = json_array_size(val), sz = type_size(f);
			size_t *q = (size_t *)(base + f->quantifier_offset);
			char *arr;

			if (!json_is_array(val))
				return bad(f->name, "not a list");
			if (*q)
				return bad(f->name, "given twice");
			if (!n)
				continue;
			if (!(arr = calloc(n, sz)))
				return cp_error(ENOMEM, "out of memory");
			*(char **)v = arr;
			for (size_t k = 0; k < n; k++) {
				if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)
					*q = k; /* only what is filled is freed */
				if ((err = json_to_value(f, json_array_get(val, k), arr + k * sz, depth, hex))) {
					if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(void **)(arr + k * sz))
						*q = k + 1;
					return err;
				}
			}
			*q = n;
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t *c = (uint32_t *)(base + f->quantifier_offset);

			if (*c)
				return bad(f->name, "a second member of its oneof");
			if (f->type == PROTOBUF_C_TYPE_STRING)
				*(char **)v = NULL;
			*c = f->id;
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
			   f->type != PROTOBUF_C_TYPE_STRING) {
			*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
		}
		if (f->type == PROTOBUF_C_TYPE_STRING) {
			/* the default (protobuf-c's empty string) is not freed; a string given twice is */
			char *old = *(char **)v;

			if (old && old != f->default_value && old != (char *)&protobuf_c_empty_string)
				free(old);
			*(char **)v = NULL;
			if ((err = json_to_value(f, val, v, depth, hex))) {
				if (!*(char **)v)
					*(const char **)v = f->default_value;
				return err;
			}
			continue;
		}
		if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(void **)v)
			return bad(f->name, "given twice");
		if (f->type == PROTOBUF_C_TYPE_BYTES && ((ProtobufCBinaryData *)v)->len)
			return bad(f->name, "given twice");
		if ((err = json_to_value(f, val, v, depth, hex)))
			return err;
	}
	return 0;
}

ProtobufCMessage *cp_protojson_read(const ProtobufCMessageDescriptor *d, const char *text, size_t len,
				    const char *const *hex)
{
	json_error_t je;
	json_t *j;
	ProtobufCMessage *m = NULL;
	int err;

	/* held to the decode limits' JSON counts before jansson takes memory for it */
	if ((err = cp_json_bounded(text, len, "the request"))) {
		errno = -err;
		return NULL;
	}
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		errno = cp_error(EINVAL, "malformed JSON: %s (at %d:%d)", je.text, je.line, je.column) * -1;
		return NULL;
	}
	err = json_to_message(d, j, &m, 0, hex);
	json_decref(j);
	if (err) {
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		errno = -err;
		return NULL;
	}
	return m;
}
