/* SPDX-License-Identifier: MIT */
/* Sample blocks, the local store's unit of time-series data: the entries of
 * one append batch in one day (a row of a partition's blocks table,
 * docs/STORE.md "Encodings").  An entry is (series, time, stack, label set,
 * value); a block keeps the ids of its series apart (so that a reader skips a
 * block without a wanted series before inflating it), with when what each
 * series counts ended (its profiles' time + duration: the Duration a query
 * says), and the entries
 * column by column per series (times as deltas from the block's t_min,
 * stacks as deltas, label sets, values divided by their gcd; a series whose
 * times, stacks and label sets are the previous series's, a sibling sample
 * type of the same profile, stores its values only), zlib level 9.  Blocks
 * are written in format CP_BLOCK_FORMAT; those of format 1 (no shared
 * columns, no mark) are read as well.
 * Pure encoding: no SQLite, no dictionary.
 *
 * Ownership: an encoded block's buffers are the caller's (cp_block_release);
 * a reader's scratch buffers are its own (cp_block_reader_release).
 * Errors: 0 or -errno with the message recorded: EBADMSG "a sample block is
 * corrupt (...)" saying which part, ENOMEM, EIO when zlib fails to compress;
 * or what the visitor returned. */
#ifndef CP_STORE_BLOCKS_H
#define CP_STORE_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CP_BLOCK_FORMAT 2

struct cp_block_entry {
	int64_t series, t;
	uint32_t stack, labels;
	int64_t value;
	int64_t end; /* when what the entry counts ended: its profile's time + duration (>= t) */
};

/* The order of entries in a block: series, time, stack, label set. */
int cp_block_entry_cmp(const void *a, const void *b);

struct cp_block {
	int64_t tmin, tmax, entries, samples; /* samples: the sum of the values (saturating) */
	int64_t smin, smax;                   /* the lowest and highest series id */
	uint8_t *series;                      /* the series blob */
	size_t series_len;
	uint8_t *ends;                        /* each series' end (blocks.ends), in the series blob's order */
	size_t ends_len;
	uint8_t *data;                        /* the entries, compressed */
	size_t data_len, rawlen;              /* rawlen: data's length inflated */
};

/* Encodes e[0..n) (n >= 1, sorted by cp_block_entry_cmp). */
int cp_block_encode(const struct cp_block_entry *e, size_t n, struct cp_block *b);
void cp_block_release(struct cp_block *b);

/* Called with each block cp_block_encode_by_series makes (released after) and its entry count;
 * returns 0 to go on. */
typedef int (*cp_block_emit)(void *ctx, const struct cp_block *b, size_t entries);
/* Encodes e[0..n) (sorted) as blocks laid out by series, of at most max_entries entries: each
 * holds whole series, and a series with its siblings (up to CP_BLOCK_SIBLINGS_MAX - 1 series after
 * it with the same keys, which then share their columns: the other sample types of its profiles)
 * always together; a group longer than a block is cut into blocks at the same entries of each of
 * its series.  A query of a few series then reads few blocks. */
#define CP_BLOCK_SIBLINGS_MAX 8
int cp_block_encode_by_series(const struct cp_block_entry *e, size_t n, size_t max_entries, cp_block_emit emit,
			      void *ctx);

/* The series ids a block's series blob lists, in order: *ids malloc'ed. */
int cp_block_series(const void *blob, size_t len, int64_t **ids, size_t *n);
/* The ends of a block's n series (its ends blob, tmin its t_min), into ends[0..n): when what each
 * counts ended (a blob that is missing, a store's of schema 2, or short: the block's t_max). */
int cp_block_ends(const void *blob, size_t len, int64_t tmin, int64_t tmax, int64_t *ends, size_t n);

/* Called for each entry decoded: the block's k-th series (as the blob lists
 * them), its time, stack and label set as stored (unchecked: stack may be
 * out of range in a corrupt block), its value.  Returns 0 to go on. */
typedef int (*cp_block_visit)(void *ctx, size_t k, int64_t t, int64_t stack, uint64_t labels, int64_t value);

struct cp_block_reader {
	uint8_t *raw;
	uint64_t *cols;
	size_t rawcap, colcap;
};

/* Inflates a block's data (rawlen bytes once inflated; times from tmin) and
 * visits the entries of the series k < nseries for which want[k] is set. */
int cp_block_decode(struct cp_block_reader *r, const void *data, size_t len, uint64_t rawlen, int64_t tmin,
		    const unsigned char *want, size_t nseries, cp_block_visit fn, void *ctx);
void cp_block_reader_release(struct cp_block_reader *r);

#endif
