/* SPDX-License-Identifier: MIT */
/* Memory in transparent huge pages, for the tables the recorder probes at
 * random on every sample.
 *
 * Why: on a virtual machine whose hypervisor shadows the guest's page tables
 * (measured on PVM, the machine the benchmarks run on), touching a 4 KiB page
 * that has dropped out of the shadow costs 1-3 us: a hash table of 192 pages
 * probed once per frame cost a quarter of the recorder's CPU in a storm of
 * short-lived processes, and 1/27 of that in one 2 MiB page.  On bare metal a
 * huge page saves TLB misses; the memory is the same.
 *
 * cp_huge_alloc maps zeroed memory aligned to 2 MiB and asks for huge pages
 * (MADV_HUGEPAGE: honoured when /sys/kernel/mm/transparent_hugepage/enabled is
 * "madvise" or "always"; else ordinary pages, which work the same).
 *
 * Ownership: the caller's (alloc/free with the same size).  Errors:
 * cp_huge_alloc returns NULL with errno set (ENOMEM). */
#ifndef CP_HUGEPAGES_H
#define CP_HUGEPAGES_H

#include <stddef.h>

#define CP_HUGE_PAGE ((size_t)2 << 20)

/* bytes (> 0) of zeroed memory starting at a 2 MiB boundary, its huge pages
 * allocated as they are touched */
void *cp_huge_alloc(size_t bytes);
void cp_huge_free(void *p, size_t bytes);

#endif
