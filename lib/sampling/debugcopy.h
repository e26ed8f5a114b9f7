/* SPDX-License-Identifier: MIT */
/* Uncompressed copies of separate debug files.
 *
 * Debug files from distribution packages (Debian's -dbg and dbgsym) and
 * from debuginfod servers keep their .debug_* sections compressed
 * (SHF_COMPRESSED).  libdw decompresses every one of them into the heap when
 * the file's DWARF is first asked for, and keeps them as long as the
 * session: 12 MB for libc's, resident for as long as the recorder runs.  A
 * copy with the sections uncompressed, written once into the cache
 * directory (cp_cache_dir) and keyed by build id, is mapped instead: its
 * pages are the page cache's, only those read are resident, and they can be
 * let go (cp_mod_release_pages).
 *
 * Ownership: the copies are files named debug-BUILDID.debug in the cache
 * directory; at most CP_DEBUGCOPY_MAX_BYTES of them are kept, the least
 * recently used removed first.  A copy is written to a temporary name and
 * renamed, so a reader never sees half a file; a copy that is damaged or
 * belongs to another build is replaced.
 * Errors: none are returned.  When no copy can be made or used (not
 * compressed, no build id, no cache directory, a full disk), the caller's
 * file is read as before. */
#ifndef CP_DEBUGCOPY_H
#define CP_DEBUGCOPY_H

#include <stdint.h>

#define CP_DEBUGCOPY_MAX_BYTES (512ull << 20)

/* fd is a debug file (its name *path, malloc'd, may be NULL) of the build
 * whose id is build_id_hex.  When it has compressed sections, returns a
 * descriptor of its uncompressed copy, closes fd and replaces *path with the
 * copy's name; else returns fd as it is. */
int cp_debugcopy(int fd, const char *build_id_hex, char **path);
/* The copy of build_id_hex's debug file made before, checked: its
 * descriptor and (malloc'd) name in *path, or -1 when there is none. */
int cp_debugcopy_open(const char *build_id_hex, char **path);
/* Removes the least recently used (oldest modified) copies in dir until
 * they take at most max_bytes, counting incoming bytes more. */
void cp_debugcopy_prune(const char *dir, uint64_t max_bytes, uint64_t incoming);

#endif
