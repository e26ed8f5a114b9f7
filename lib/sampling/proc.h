/* SPDX-License-Identifier: MIT */
/* Process metadata for the sampler: executable mappings (from /proc/PID/maps
 * and from the kernel's mmap records, so that a process is still known after
 * it exits), comm, exe, and labels from its cgroup path (container id,
 * systemd unit, Kubernetes pod uid).  Also the parsers of the text files this
 * reads: /proc/PID/maps lines, cgroup paths and perf-map (JIT) files. */
#ifndef CP_PROC_H
#define CP_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cp_map {
	uint64_t start, end, pgoff;
	char *path;             /* "/usr/lib/.../libc.so.6", "[vdso]", "" for anonymous */
	uint8_t build_id[20];
	uint8_t build_id_len;   /* 0: unknown (read from the file when needed) */
	uint64_t time;          /* when its mmap record was made (0: read from /proc) */
	uint32_t ukey1, skey1;  /* the unwinder's / symbolizer's id of this file, + 1 (0: not yet) */
	uint32_t skey_gen;      /* the symbolizer cache generation skey1 belongs to */
	uint64_t pmap_serial;   /* the profile (its serial) whose mapping pmap_id is, 0: none */
	uint32_t pmap_id;       /* the id of this mapping in that profile */
	bool build_id_read;     /* the file was read for it */
};

struct cp_perfmap_entry {
	uint64_t start, size;
	char *name;
	size_t line; /* order in the file: a later line wins */
};

struct cp_perfmap {
	struct cp_perfmap_entry *e; /* sorted by start */
	uint64_t *maxend;           /* maxend[i]: the largest end among e[0..i] */
	size_t n, cap;
	/* a process's file, read as it grows (cp_proc_jit_symbol) */
	int64_t mtime_ns;
	int64_t size;
	uint64_t ino, dev;
	uint64_t used;              /* bytes of the file parsed (whole lines) */
	uint64_t checked_ns;        /* CLOCK_MONOTONIC of the last look at it */
	int64_t not_before_ns;      /* a file older (CLOCK_REALTIME) is another process's */
	int64_t owner;              /* the process's uid (-1: unknown): the file's owner, or root */
	bool owner_read;            /* owner and not_before_ns were read (once a file is there) */
};

struct cp_procs;

struct cp_proc {
	uint32_t pid;
	struct cp_procs *table;       /* the table it is in (its mappings' paths are kept there) */
	char comm[16];
	char *exe;
	char *container, *unit, *pod; /* NULL when not in one */
	uint64_t cgroup_id;
	struct cp_map *maps;          /* executable mappings, sorted, disjoint */
	size_t nmaps, mapcap;
	bool have_maps;               /* maps are tracked (from /proc or since fork/exec) */
	uint32_t maps_gen;            /* changes whenever maps change */
	uint64_t reread_ns;           /* last /proc/PID/maps reread for a missing address */
	bool proc_read;               /* /proc/PID was read (or tried) */
	bool meta_read;
	bool dead;
	bool followed;                /* the recorder's: one of the -p processes or what they started */
	uint64_t exit_time;           /* CLOCK_MONOTONIC ns of its exit record */
	uint64_t exec_time;           /* of its last exec record (CLOCK_MONOTONIC ns), 0 unknown */
	bool exe_from_mmap;           /* next file mapping after exec names the exe */
	struct cp_perfmap *jit;
	/* the runtime it runs (the recorder's, runtime.h): which (0: none), the
	 * native frames its frames go above (an interpreter loop's addresses),
	 * the loop under them (cp_rt_found's), the runtime's layout */
	uint32_t rt_id;
	uint64_t rt_entry_lo, rt_entry_hi, rt_loop_lo, rt_loop_hi;
	bool rt_entries_skipped;
	uint32_t rt_gen; /* maps_gen + 1 when last looked at (0: never) */
	unsigned rt_layout;
	bool rt_native; /* the runtime has no walker: its frames are native ones */
	void *user;                   /* the caller's (record: this interval's profile) */
};

struct cp_procs;
struct cp_procs *cp_procs_new(void);
/* free_user releases each process's user pointer (may be NULL) */
void cp_procs_free(struct cp_procs *t, void (*free_user)(void *));
/* The process (created when create is true; NULL + errno otherwise). */
struct cp_proc *cp_procs_get(struct cp_procs *t, uint32_t pid, bool create);
void cp_procs_remove(struct cp_procs *t, uint32_t pid, void (*free_user)(void *));
/* Calls fn for every process; fn may not add or remove processes. */
void cp_procs_each(struct cp_procs *t, void (*fn)(struct cp_proc *, void *), void *arg);
size_t cp_procs_count(const struct cp_procs *t);

/* Reads exe, comm and the cgroup labels from /proc/PID (once it is called). */
void cp_proc_read_meta(struct cp_proc *p);
/* Reads /proc/PID (maps, exe, comm, cgroup) once; 0 or -errno (gone). */
int cp_proc_read(struct cp_proc *p);
/* addr (a user address) is in no known mapping: read /proc/PID/maps again
 * (at most once a second per process). 0 when reread, else -errno. */
int cp_proc_refresh(struct cp_proc *p, uint64_t addr);
/* Adds an executable mapping, replacing what it overlaps. 0 or -ENOMEM. */
int cp_proc_add_map(struct cp_proc *p, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
		    const uint8_t *build_id, size_t build_id_len);
void cp_proc_clear_maps(struct cp_proc *p);
/* Drops the mappings older than t (an exec at t; records come per CPU, so
 * the new program's may have been read first). */
void cp_proc_drop_maps_before(struct cp_proc *p, uint64_t t);
/* Parent's mappings (shared until one of the two changes its own) and a copy
 * of its metadata into child (at fork). */
int cp_proc_inherit(struct cp_proc *child, const struct cp_proc *parent);
const struct cp_map *cp_proc_find_map(const struct cp_proc *p, uint64_t addr);
/* Sets the labels from a cgroup v2 path ("/system.slice/ssh.service"). */
void cp_proc_set_cgroup(struct cp_proc *p, const char *path);
/* The build id of a mapping (read from the file when the kernel gave none). */
const uint8_t *cp_map_build_id(struct cp_map *m, const struct cp_proc *p, size_t *len);
/* Memory with no file behind it, where a JIT puts its code: "" in
 * /proc/PID/maps, "//anon" in the kernel's mmap records, "[anon:NAME]"
 * (named with prctl) and the other "[...]" regions but the vDSO. */
bool cp_map_no_file(const char *path);
/* Opens the file mapped by m as p sees it (through /proc/PID/root, for
 * containers, else by path); "[vdso]" is a dup of vdso_fd.  -1 on failure. */
int cp_map_open(const struct cp_proc *p, const struct cp_map *m, int vdso_fd);
/* The file's identity for caches: its build id in hex, else its path. */
const char *cp_map_key(struct cp_map *m, const struct cp_proc *p, char *buf, size_t len);
/* The JIT symbol for addr from /tmp/perf-PID.map, or NULL.  The file is
 * cached, and its new lines read when addr is not in it (it may have grown). */
const char *cp_proc_jit_symbol(struct cp_proc *p, uint64_t addr);

/* Parsers (outside input; each has a fuzz target). */
struct cp_maps_line {
	uint64_t start, end, pgoff;
	char perms[5];
	const char *path; /* points into the line, "" when none */
};
/* One /proc/PID/maps line (modified in place: the path is cut at '\n'). 0 or -EINVAL. */
int cp_parse_maps_line(char *line, struct cp_maps_line *out);
/* Labels from a cgroup path: container id (Docker, containerd, CRI-O, Podman),
 * systemd unit (the innermost .service/.scope/... name) and Kubernetes pod uid.
 * Each buffer is set to "" when absent. */
void cp_cgroup_labels(const char *path, char *container, size_t clen, char *unit, size_t ulen, char *pod,
		      size_t plen);
/* A perf-map file: "START SIZE NAME" per line, hexadecimal (0x optional). */
int cp_perfmap_parse(const char *text, size_t len, struct cp_perfmap *out);
/* Adds the lines of text that end in '\n' to m (parsed or zeroed before, as
 * a JIT appends to its file): the bytes used, or -ENOMEM. */
int64_t cp_perfmap_append(struct cp_perfmap *m, const char *text, size_t len);
void cp_perfmap_release(struct cp_perfmap *m);
const char *cp_perfmap_find(const struct cp_perfmap *m, uint64_t addr);

#endif
