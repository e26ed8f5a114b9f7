/* SPDX-License-Identifier: MIT */
/* The kernel types a BPF object's CO-RE relocations need, cut out of the
 * running kernel's BTF and cached on disk, so that loading the sampler does
 * not parse all of /sys/kernel/btf/vmlinux each run (5 MB read 4 KiB at a
 * time, 130,000 types: 45 ms of the recorder's start-up).  What is kept, for
 * each relocation the object records in .BTF.ext: the structs and unions on
 * its access path with only the members it names (at their offsets, the
 * type keeping its size), the types of those members (a pointer becomes a
 * pointer to void: CO-RE never looks through one), and whole enums.  libbpf
 * relocates against that file (btf_custom_path) as it would against the
 * kernel's BTF, with the same result (tests/unit/check_btfmin.c loads the
 * program both ways and compares the instructions).
 *
 * The cache is keyed by the boot id and a hash of the object, so a new
 * kernel or a new cprof makes a new one; it lives in cp_cache_dir().  A
 * relocation of a kind this does not model, a missing cache directory, or
 * no kernel BTF: no file, and the caller loads against the kernel's BTF as
 * before.  Nothing here is fatal. */
#ifndef CP_BTFMIN_H
#define CP_BTFMIN_H

#include <stddef.h>

struct btf;

/* The raw BTF (as btf__raw_data writes it, malloc'ed in *out) of what the
 * CO-RE relocations of the BPF object obj (ELF, len bytes) need from
 * kernel.  0, or -errno with a message: EBADMSG (the object has no .BTF or
 * a malformed .BTF.ext), ENOTSUP (a relocation kind not modelled), ENOENT
 * (a type or member the kernel lacks: libbpf would fail the same way). */
int cp_btfmin_build(const void *obj, size_t len, const struct btf *kernel, void **out, size_t *outlen);

/* The cached file of cp_btfmin_build for obj on the running kernel, built
 * and written first when missing: its path in buf.  0, or -errno with a
 * message (then load against the kernel's BTF). */
int cp_btfmin_path(const void *obj, size_t len, char *buf, size_t buflen);

/* Forget the cached file at path (it did not load): the next run builds it again. */
void cp_btfmin_forget(const char *path);

#endif
