/* SPDX-License-Identifier: MIT */
/* The function and inlined-call scopes of one DWARF compilation unit, read
 * once and indexed by address: looking an address up gives its chain of
 * scopes (innermost inlined call first, the function last) without walking
 * the unit's DIEs again, as libdw's dwarf_getscopes does for every address
 * (the symbolizer's cost on big units such as CPython's ceval.c), and
 * without a pass over every scope's ranges: they are cut into pieces, each
 * with its deepest scope, found by binary search.  The DIEs returned belong
 * to the unit's Dwarf, which must outlive the index. */
#ifndef CP_SCOPES_H
#define CP_SCOPES_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

struct cp_scopes;

/* Reads cu's scopes; NULL + errno (ENOMEM) on failure.  A unit with none
 * gives an empty index. */
struct cp_scopes *cp_scopes_build(Dwarf_Die *cu);
void cp_scopes_free(struct cp_scopes *s);

/* The scopes holding pc (a DWARF address, without the module's bias),
 * innermost first, into out (at most max); returns how many.  The last is
 * a DW_TAG_subprogram when the unit has one around pc, the others are
 * DW_TAG_inlined_subroutine. */
int cp_scopes_find(const struct cp_scopes *s, uint64_t pc, Dwarf_Die *out, int max);

/* Bytes held, for the caller's memory budget. */
size_t cp_scopes_size(const struct cp_scopes *s);

#endif
