/* SPDX-License-Identifier: MIT */
#include "debugcopy.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"

static bool has_compressed(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			return true;
	return false;
}

static bool is_build(Elf *e, const char *hex)
{
	const void *id;
	ssize_t n = dwelf_elf_gnu_build_id(e, &id);
	char buf[129];

	return n > 0 && cp_hex(id, (size_t)n, buf, sizeof(buf)) && !strcmp(buf, hex);
}

/* e (a file of size bytes) is whole: its section headers and every
 * section's bytes are within the file, and none is compressed. */
static bool whole_and_plain(Elf *e, uint64_t size)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t n = 0;

	if (!gelf_getehdr(e, &eh) || !eh.e_shnum || eh.e_shoff > size ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > size - eh.e_shoff)
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED))
			return false;
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset))
			return false;
		n++;
	}
	return n > 0;
}

/* An existing copy at path, checked: ELF, whole, nothing compressed, the
 * build's.  Its descriptor, or -1 (a damaged one is removed). */
static int open_copy(const char *path, const char *hex)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	Elf *e;
	bool ok;

	if (fd < 0)
		return -1;
	e = fstat(fd, &st) == 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	ok = e && elf_kind(e) == ELF_K_ELF && whole_and_plain(e, (uint64_t)st.st_size) && is_build(e, hex);
	elf_end(e);
	if (!ok) {
		close(fd);
		unlink(path);
		return -1;
	}
	futimens(fd, NULL); /* its time is its last use: the pruning's order */
	return fd;
}

/* in, with its compressed sections uncompressed, written to fd.  0 or -1. */
/* The copy of in, written to fd.  max: the most its sections may hold once
 * uncompressed, and the most the copy may take (a hostile file's sections
 * can claim gigabytes of zeros, or an alignment that pads to as much). */
static int write_copy(Elf *in, int fd, uint64_t max)
{
	Elf *out = elf_begin(fd, ELF_C_WRITE, NULL);
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t phnum, shstrndx;
	int rc = -1;
	uint64_t total = 0;
	int64_t size;

	if (!out || !gelf_getehdr(in, &eh) || elf_getphdrnum(in, &phnum) || elf_getshdrstrndx(in, &shstrndx) ||
	    shstrndx >= SHN_LORESERVE || !gelf_newehdr(out, gelf_getclass(in)))
		goto out;
	if (phnum && !gelf_newphdr(out, phnum))
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(in, (int)i, &ph) || !gelf_update_phdr(out, (int)i, &ph))
			goto out;
	}
	while ((scn = elf_nextscn(in, scn))) {
		Elf_Scn *o = elf_newscn(out);
		Elf_Data *d = NULL, *od;
		GElf_Shdr sh;

		if (!o || !gelf_getshdr(scn, &sh))
			goto out;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch) || ch.ch_size > max - total)
				goto out;
			total += ch.ch_size;
			if (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh))
				goto out;
		}
		while ((d = elf_getdata(scn, d))) {
			if (!(od = elf_newdata(o)))
				goto out;
			od->d_buf = d->d_buf;
			od->d_type = d->d_type;
			od->d_size = d->d_size;
			od->d_off = d->d_off;
			od->d_align = d->d_align;
			od->d_version = d->d_version;
		}
		if (!gelf_update_shdr(o, &sh))
			goto out;
	}
	/* the offsets are laid out anew (libelf's), the rest as it was */
	eh.e_shstrndx = (GElf_Half)shstrndx;
	if (!gelf_update_ehdr(out, &eh))
		goto out;
	/* the size laid out first (a hostile alignment pads to gigabytes) */
	size = elf_update(out, ELF_C_NULL);
	if (size < 0 || (uint64_t)size > max || elf_update(out, ELF_C_WRITE) < 0)
		goto out;
	rc = 0;
out:
	elf_end(out);
	return rc;
}

void cp_debugcopy_prune(const char *dir, uint64_t max_bytes, uint64_t incoming)
{
	struct copy {
		char name[NAME_MAX + 1];
		uint64_t size;
		int64_t used;
	} *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = incoming;
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "debug-", 6) != 0 || len < 12 || fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		/* what a writer killed before its rename left behind */
		if (!strcmp(de->d_name + len - 4, ".tmp")) {
			if (st.st_mtim.tv_sec < time(NULL) - 3600)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (strcmp(de->d_name + len - 6, ".debug") != 0 || cp_grow((void **)&v, &cap, n + 1, sizeof(*v)))
			continue;
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].size = (uint64_t)st.st_size;
		v[n].used = (int64_t)st.st_mtim.tv_sec;
		total += v[n].size;
		n++;
	}
	while (total > max_bytes && n) {
		size_t old = 0;

		for (size_t i = 1; i < n; i++)
			if (v[i].used < v[old].used)
				old = i;
		unlinkat(dirfd(d), v[old].name, 0);
		total -= v[old].size;
		v[old] = v[--n];
	}
	closedir(d);
	free(v);
}

static bool valid_hex(const char *hex)
{
	return hex && *hex && strlen(hex) <= 128 && strspn(hex, "0123456789abcdef") == strlen(hex);
}

int cp_debugcopy_open(const char *build_id_hex, char **path)
{
	char dir[PATH_MAX], copy[PATH_MAX + 64];
	int fd;

	if (!valid_hex(build_id_hex) || elf_version(EV_CURRENT) == EV_NONE || cp_cache_dir(dir, sizeof(dir)) < 0) {
		cp_error_clear();
		return -1;
	}
	snprintf(copy, sizeof(copy), "%s/debug-%s.debug", dir, build_id_hex);
	if ((fd = open_copy(copy, build_id_hex)) < 0)
		return -1;
	if (!(*path = strdup(copy))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The most a copy may uncompress to: debug sections compress 3 to 10
 * times; more than 64 times the file is not debug info. */
static uint64_t copy_max(uint64_t file_size)
{
	return file_size < CP_DEBUGCOPY_MAX_BYTES / 64 ? 64 * file_size : CP_DEBUGCOPY_MAX_BYTES;
}

int cp_debugcopy(int fd, const char *build_id_hex, char **path)
{
	char dir[PATH_MAX], copy[PATH_MAX + 64], tmp[PATH_MAX + 96];
	struct stat st;
	Elf *in;
	int nfd, tfd;
	char *name;

	if (fd < 0 || !valid_hex(build_id_hex) || elf_version(EV_CURRENT) == EV_NONE)
		return fd;
	in = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!in || elf_kind(in) != ELF_K_ELF || !has_compressed(in) || fstat(fd, &st) < 0 ||
	    cp_cache_dir(dir, sizeof(dir)) < 0) {
		elf_end(in);
		cp_error_clear();
		return fd;
	}
	snprintf(copy, sizeof(copy), "%s/debug-%s.debug", dir, build_id_hex);
	if ((nfd = open_copy(copy, build_id_hex)) < 0) {
		/* a copy is about three times the compressed file */
		cp_debugcopy_prune(dir, CP_DEBUGCOPY_MAX_BYTES, 3 * (uint64_t)st.st_size);
		snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", copy, (long)getpid());
		tfd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (tfd < 0 || write_copy(in, tfd, copy_max((uint64_t)st.st_size)) < 0 || rename(tmp, copy) < 0) {
			if (tfd >= 0) {
				close(tfd);
				unlink(tmp);
			}
			elf_end(in);
			return fd;
		}
		close(tfd);
		nfd = open_copy(copy, build_id_hex);
	}
	elf_end(in);
	if (nfd < 0 || !(name = strdup(copy))) {
		if (nfd >= 0)
			close(nfd);
		return fd;
	}
	close(fd);
	if (path) {
		free(*path);
		*path = name;
	} else {
		free(name);
	}
	return nfd;
}
