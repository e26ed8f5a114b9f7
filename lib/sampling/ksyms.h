/* SPDX-License-Identifier: MIT */
/* The kernel's function symbols: /proc/kallsyms parsed into a sorted table
 * of text symbols (name and module), and a copy of that table cached on disk
 * so that a run does not pay for reading /proc/kallsyms again (the kernel
 * generates it, about 0.1 s of CPU).  The cache is keyed by the boot id and
 * the loaded modules (name and address), so a reboot or a new module makes
 * a new one; it lives in $XDG_CACHE_HOME/cprof, /var/cache/cprof for root,
 * else ~/.cache/cprof, in a directory only its owner can read (the addresses
 * are as secret as /proc/kallsyms's).  A cache that is missing, foreign or
 * corrupt is read from /proc again and rewritten; no failure here is an
 * error: without symbols, kernel frames are addresses. */
#ifndef CP_KSYMS_H
#define CP_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct cp_ksyms;
/* /proc/kallsyms text -> sorted table (exposed for the fuzz target). NULL +
 * errno (ENOMEM). */
struct cp_ksyms *cp_ksyms_parse(const char *text, size_t len);
void cp_ksyms_free(struct cp_ksyms *k);
/* The symbol containing addr (NULL if none); *module set to "" or the module
 * name; span (may be NULL): [span[0], span[1]) the addresses the same symbol
 * is found for (up to the next symbol; [addr, addr + 1) after the last). */
const char *cp_ksyms_find(const struct cp_ksyms *k, uint64_t addr, const char **module, uint64_t span[2]);
size_t cp_ksyms_count(const struct cp_ksyms *k);
/* Lets go of the resident pages of a table mapped from the cache (lookups
 * fault back the few they read, from the page cache); else nothing. */
void cp_ksyms_release_pages(struct cp_ksyms *k);

/* This kernel's symbols, from the cache when it is this boot's with these
 * modules, else from /proc/kallsyms (then cached).  NULL when there are none
 * (no privileges: every address reads as zero). */
struct cp_ksyms *cp_ksyms_load(void);

/* The cache file's image of k under key, and back (exposed for the fuzz
 * target and tests): cp_ksyms_decode checks every offset and the order, NULL
 * (EBADMSG) when anything is off or the key differs. */
int cp_ksyms_encode(const struct cp_ksyms *k, const char *key, char **out, size_t *len);
struct cp_ksyms *cp_ksyms_decode(const char *data, size_t len, const char *key);
/* The cache key of the running kernel: boot id and a hash of the modules. */
int cp_ksyms_key(char *buf, size_t len);

#endif
