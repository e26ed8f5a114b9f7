/* SPDX-License-Identifier: MIT */
#include "hugepages.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

static size_t round_up(size_t n)
{
	return (n + CP_HUGE_PAGE - 1) & ~(CP_HUGE_PAGE - 1);
}

void *cp_huge_alloc(size_t bytes)
{
	size_t len, span;
	uintptr_t raw, at;
	void *p;

	if (!bytes || bytes > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	len = round_up(bytes);
	/* map one huge page more than needed and cut off the unaligned ends */
	span = len + CP_HUGE_PAGE;
	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	raw = (uintptr_t)p;
	at = (raw + CP_HUGE_PAGE - 1) & ~(uintptr_t)(CP_HUGE_PAGE - 1);
	if (at > raw)
		munmap(p, at - raw);
	if (raw + span > at + len)
		munmap((void *)(at + len), raw + span - (at + len));
	/* advice only: a kernel without transparent huge pages maps small ones */
	(void)madvise((void *)at, len, MADV_HUGEPAGE);
	return (void *)at;
}

void cp_huge_free(void *p, size_t bytes)
{
	if (p && bytes)
		munmap(p, round_up(bytes));
}

