/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static __thread char msg[CP_ERRMSG_MAX];

int cp_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return -(err < 0 ? -err : err);
}

int cp_error_ctx(int err, const char *fmt, ...)
{
	char prefix[512], old[sizeof(msg) - sizeof(prefix) - 4];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (err < 0)
		err = -err;
	n = strnlen(msg, sizeof(old) - 1);
	memcpy(old, msg, n);
	old[n] = '\0';
	if (!old[0])
		snprintf(old, sizeof(old), "%s", strerror(err));
	snprintf(msg, sizeof(msg), "%s: %s", prefix, old);
	return -err;
}

const char *cp_errmsg(int err)
{
	if (msg[0])
		return msg;
	return strerror(err < 0 ? -err : err);
}

void cp_error_clear(void)
{
	msg[0] = '\0';
}
