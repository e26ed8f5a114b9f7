/* SPDX-License-Identifier: MIT */
/* Java Flight Recorder files (what `java -XX:StartFlightRecording`, JDK
 * Mission Control and async-profiler write) read into profiles, without a
 * JVM: the chunks ("FLR\0", version 2.x, compressed integers), each chunk's
 * metadata (the classes and fields of its events, as an element tree over a
 * string table) and its constant pools (the checkpoint events, chained by
 * delta offsets: stack traces, methods, classes, symbols, strings, thread
 * states).  Java frames become functions named class.method (the class with
 * '.' for '/'), one location per (method, line).
 *
 * The profile types, named as Pyroscope names them (grafana/jfr-parser):
 *   process_cpu  cpu/nanoseconds (period cpu/nanoseconds): jdk.ExecutionSample
 *                not in STATE_SLEEPING, one period each (the recording's
 *                jdk.ExecutionSample period, e.g. 10 ms in settings=profile;
 *                async-profiler's interval; else 10 ms)
 *   wall         wall/nanoseconds: profiler.WallClockSample (async-profiler),
 *                its samples times the period; jdk.ExecutionSample too when the
 *                recording's "event" setting is wall
 *   memory       alloc_in_new_tlab_objects/count, alloc_in_new_tlab_bytes/bytes
 *                (jdk.ObjectAllocationInNewTLAB, tlabSize);
 *                alloc_outside_tlab_objects/count, alloc_outside_tlab_bytes/bytes
 *                (jdk.ObjectAllocationOutsideTLAB, allocationSize);
 *                alloc_sample_objects/count, alloc_sample_bytes/bytes
 *                (jdk.ObjectAllocationSample, weight); period space/bytes
 *   mutex        contentions/count, delay/nanoseconds (jdk.JavaMonitorEnter,
 *                duration); period mutex/count
 *   block        contentions/count, delay/nanoseconds (jdk.ThreadPark,
 *                duration); period block/count
 * Other events are skipped.  A file of several chunks is read chunk by chunk
 * into the same profiles.  An event's contextId (a field async-profiler adds,
 * which Pyroscope's Java agent labels in the push's labels part), when not 0,
 * is its sample's numeric label CP_JFR_CONTEXT_LABEL.
 *
 * Owns nothing past a call: the profiles returned are the caller's.  Fails
 * with -errno (or NULL + errno) and a one-line reason recorded by cp_error()
 * (lib/error.h), naming the offset where the file went wrong: -EINVAL for a
 * malformed or truncated file (bad magic, an unsupported version, a size or
 * count past the end of its chunk, a checkpoint chain that does not go
 * backwards, nesting too deep, a reference to a type or pool entry that is
 * not there), -EFBIG past the limits of lib/decode_limits.h (samples,
 * locations, and the memory its pools would take: twice max_decompressed),
 * -ENOMEM.  Every count and length is bounded by the bytes left in its chunk
 * before anything is allocated for it.  Never prints. */
#ifndef CP_JFR_H
#define CP_JFR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* the sample label of an event's contextId */
#define CP_JFR_CONTEXT_LABEL "contextId"

/* The kinds of profile a recording holds, in the order of the parts. */
enum cp_jfr_kind {
	CP_JFR_CPU,          /* process_cpu */
	CP_JFR_WALL,         /* wall */
	CP_JFR_ALLOC_TLAB,   /* memory: alloc_in_new_tlab_* */
	CP_JFR_ALLOC_OUTSIDE, /* memory: alloc_outside_tlab_* */
	CP_JFR_ALLOC_SAMPLE, /* memory: alloc_sample_* */
	CP_JFR_LOCK,         /* mutex */
	CP_JFR_PARK,         /* block */
	CP_JFR_NKINDS
};

/* One profile type of a recording. */
struct cp_jfr_part {
	enum cp_jfr_kind kind;
	const char *name;           /* Pyroscope's name (static): process_cpu, wall, memory, mutex, block */
	const char *event;          /* the JFR event it comes from (static), e.g. "jdk.ExecutionSample" */
	struct cp_profile *profile; /* the caller's; time_nanos and duration_nanos from the chunks */
	uint64_t events;            /* the events counted into it */
};

/* Whether buf starts like a JFR chunk ("FLR\0"). */
bool cp_jfr_is(const void *buf, size_t len);

/* Every profile type with at least one event, in enum order: *parts (the
 * caller frees with cp_jfr_parts_free) and *n.  0 or -errno (see above); a
 * recording with none of the events above gives 0 with *n == 0. */
int cp_jfr_to_parts(const uint8_t *buf, size_t len, struct cp_jfr_part **parts, size_t *n);
void cp_jfr_parts_free(struct cp_jfr_part *parts, size_t n);

/* One profile with every type side by side (for `cprof query -i`, merge and
 * diff of .jfr files), always the same sample types so that any two
 * recordings merge: cpu, wall, alloc_in_new_tlab_objects,
 * alloc_in_new_tlab_bytes, alloc_outside_tlab_objects,
 * alloc_outside_tlab_bytes, alloc_sample_objects, alloc_sample_bytes,
 * mutex_contentions, mutex_delay, block_contentions, block_delay (the lock
 * types named by their Pyroscope profile, as both are contentions/delay
 * there); period cpu/nanoseconds; the default sample type the first with a
 * value (cpu when there is none).  0 with *out, or -errno. */
int cp_jfr_decode(const uint8_t *buf, size_t len, struct cp_profile **out);

/* The sample types of cp_jfr_decode's profile (CP_JFR_NTYPES of them). */
#define CP_JFR_NTYPES 12
extern const char *const cp_jfr_types[CP_JFR_NTYPES][2]; /* name, unit */

/* A JFR compressed integer (LEB128, 7 bits a byte, the ninth byte whole):
 * the bytes read, 0 when the input ends early. */
size_t cp_jfr_varint(const uint8_t *p, const uint8_t *end, uint64_t *v);

#endif
