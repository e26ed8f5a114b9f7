/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* this thread's record: code 0 means none */
static __thread int code;
static __thread char msg[CP_ERRMSG_MAX];

static int positive(int err)
{
	return err < 0 ? -err : err;
}

int cp_error(int err, const char *fmt, ...)
{
	va_list ap;

	err = positive(err);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	code = err;
	return -err;
}

int cp_error_ctx(int err, const char *fmt, ...)
{
	char prefix[512], old[sizeof(msg) - sizeof(prefix) - 4];
	size_t n;
	va_list ap;

	err = positive(err);
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (code == err && msg[0]) {
		n = strnlen(msg, sizeof(old) - 1);
		memcpy(old, msg, n);
		old[n] = '\0';
	} else {
		snprintf(old, sizeof(old), "%s", strerror(err));
	}
	snprintf(msg, sizeof(msg), "%s: %s", prefix, old);
	code = err;
	return -err;
}

const char *cp_errmsg(int err)
{
	err = positive(err);
	if (code && code == err && msg[0])
		return msg;
	return strerror(err);
}

void cp_error_clear(void)
{
	code = 0;
	msg[0] = '\0';
}

int cp_error_code(void)
{
	return code;
}
