/* SPDX-License-Identifier: MIT */
#include "blocks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../error.h"
#include "../gzip.h"
#include "../util.h"
#include "../varint.h"

int cp_block_entry_cmp(const void *a, const void *b)
{
	const struct cp_block_entry *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->labels < y->labels ? -1 : x->labels > y->labels;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Whether two series' entries have the same times, stacks and label sets, one for one (a is empty
 * for the first series). */
static bool same_keys(const struct cp_block_entry *a, size_t na, const struct cp_block_entry *b, size_t nb)
{
	if (!na || na != nb)
		return false;
	for (size_t k = 0; k < na; k++)
		if (a[k].t != b[k].t || a[k].stack != b[k].stack || a[k].labels != b[k].labels)
			return false;
	return true;
}

int cp_block_encode(const struct cp_block_entry *e, size_t n, struct cp_block *b)
{
	uint8_t *raw = NULL;
	size_t rn = 0, sn = 0, i, j, pi, pj, nseries = 0;
	int64_t prev = 0;
	uint64_t gcd;
	size_t zlen;
	int err = 0;

	memset(b, 0, sizeof(*b));
	b->tmin = INT64_MAX;
	b->tmax = INT64_MIN;
	b->entries = (int64_t)n;
	for (i = 0; i < n; i++) {
		b->tmin = e[i].t < b->tmin ? e[i].t : b->tmin;
		b->tmax = e[i].t > b->tmax ? e[i].t : b->tmax;
		b->samples = cp_add_sat(b->samples, e[i].value);
		nseries += i == 0 || e[i].series != e[i - 1].series;
	}
	b->smin = n ? e[0].series : 0;
	b->smax = n ? e[n - 1].series : 0;
	raw = malloc(n * 4 * CP_VARINT_MAX + nseries * 3 * CP_VARINT_MAX + 16);
	b->series = malloc((nseries + 1) * CP_VARINT_MAX);
	b->ends = malloc((nseries + 1) * CP_VARINT_MAX);
	if (!raw || !b->series || !b->ends) {
		err = cp_error(ENOMEM, "out of memory writing samples");
		goto out;
	}
	sn = cp_put_uvarint(b->series, nseries);
	/* the format's mark: 0 (an old block starts with its first series' count, never 0), its version */
	rn += cp_put_uvarint(raw + rn, 0);
	rn += cp_put_uvarint(raw + rn, CP_BLOCK_FORMAT);
	for (i = 0, pi = pj = 0; i < n; pi = i, pj = j, i = j) {
		int64_t pt = b->tmin, ps = 0, end = b->tmin;
		bool shared;

		for (j = i; j < n && e[j].series == e[i].series; j++)
			end = e[j].end > end ? e[j].end : e[j].t > end ? e[j].t : end;
		shared = same_keys(e + pi, pj - pi, e + i, j - i);
		sn += cp_put_uvarint(b->series + sn, (uint64_t)(e[i].series - prev));
		b->ends_len += cp_put_uvarint(b->ends + b->ends_len, (uint64_t)end - (uint64_t)b->tmin);
		prev = e[i].series;
		/* values as multiples of their gcd: CPU time is counts x the period */
		gcd = 0;
		for (size_t k = i; k < j && gcd != 1; k++)
			gcd = gcd_u64(gcd, e[k].value < 0 ? -(uint64_t)e[k].value : (uint64_t)e[k].value);
		gcd = gcd && gcd <= INT64_MAX ? gcd : 1;
		rn += cp_put_uvarint(raw + rn, j - i);
		rn += cp_put_uvarint(raw + rn, gcd);
		rn += cp_put_uvarint(raw + rn, shared);
		/* column by column: runs of alike numbers compress far better; times, stacks and label
		 * sets once for the sibling series of one profile (its sample types: samples and
		 * cpu), whose entries have the same keys */
		for (size_t k = i; k < j && !shared; k++) {
			rn += cp_put_uvarint(raw + rn, cp_zigzag(e[k].t - pt));
			pt = e[k].t;
		}
		for (size_t k = i; k < j && !shared; k++) {
			rn += cp_put_uvarint(raw + rn, cp_zigzag((int64_t)e[k].stack - ps));
			ps = e[k].stack;
		}
		for (size_t k = i; k < j && !shared; k++)
			rn += cp_put_uvarint(raw + rn, e[k].labels);
		for (size_t k = i; k < j; k++)
			rn += cp_put_uvarint(raw + rn, cp_zigzag(e[k].value / (int64_t)gcd));
	}
	b->series_len = sn;
	b->rawlen = rn;
	/* the best: 2% smaller than zlib's default on the recorder's blocks */
	if ((err = cp_zlib_compress(raw, rn, Z_BEST_COMPRESSION, &b->data, &zlen)))
		goto out;
	b->data_len = zlen;
out:
	free(raw);
	if (err)
		cp_block_release(b);
	return err;
}

static size_t run_end(const struct cp_block_entry *e, size_t n, size_t i)
{
	size_t j = i;

	while (j < n && e[j].series == e[i].series)
		j++;
	return j;
}

/* buf[0..*n) as one block to emit, then emptied */
static int emit_block(const struct cp_block_entry *buf, size_t *n, cp_block_emit emit, void *ctx)
{
	struct cp_block b;
	int err;

	if (!*n)
		return 0;
	if ((err = cp_block_encode(buf, *n, &b)))
		return err;
	err = emit(ctx, &b, *n);
	cp_block_release(&b);
	*n = 0;
	return err;
}

int cp_block_encode_by_series(const struct cp_block_entry *e, size_t n, size_t max_entries, cp_block_emit emit,
			      void *ctx)
{
	struct cp_block_entry *buf = NULL;
	size_t bn = 0, bcap = 0, i, j, g, len, nsib, chunk;
	int err = 0;

	for (i = 0; i < n && !err; i = g) {
		/* the group at i: a series, then its siblings (the same keys, one for one), a few */
		j = run_end(e, n, i);
		len = j - i;
		for (g = j, nsib = 1; g < n && nsib < CP_BLOCK_SIBLINGS_MAX; g += len, nsib++)
			if (run_end(e, n, g) - g != len || !same_keys(e + i, len, e + g, len))
				break;
		if (bn && bn + len * nsib > max_entries && (err = emit_block(buf, &bn, emit, ctx)))
			break;
		/* a group longer than a block: cut at the same entries in each sibling */
		chunk = max_entries / nsib ? max_entries / nsib : 1;
		for (size_t c = 0; c < len && !err; c += chunk) {
			size_t m = len - c < chunk ? len - c : chunk;

			if (cp_grow((void **)&buf, &bcap, bn + m * nsib, sizeof(*buf))) {
				err = cp_error(ENOMEM, "out of memory writing samples");
				break;
			}
			for (size_t s = 0; s < nsib; s++) {
				memcpy(buf + bn, e + i + s * len + c, m * sizeof(*buf));
				bn += m;
			}
			if (len * nsib > max_entries)
				err = emit_block(buf, &bn, emit, ctx);
		}
	}
	if (!err)
		err = emit_block(buf, &bn, emit, ctx);
	free(buf);
	return err;
}

void cp_block_release(struct cp_block *b)
{
	free(b->series);
	free(b->ends);
	free(b->data);
	b->series = b->ends = b->data = NULL;
}

int cp_block_ends(const void *blob, size_t len, int64_t tmin, int64_t tmax, int64_t *ends, size_t n)
{
	const uint8_t *p = blob, *end = blob ? p + len : p;
	size_t i, used;
	uint64_t v;

	for (i = 0; i < n; i++) {
		if (p < end && (used = cp_get_uvarint(p, end, &v))) {
			p += used;
			ends[i] = v > (uint64_t)INT64_MAX - (uint64_t)(tmin < 0 ? 0 : tmin) ? INT64_MAX : tmin + (int64_t)v;
		} else {
			ends[i] = tmax;
		}
	}
	return 0;
}

int cp_block_series(const void *blob, size_t len, int64_t **ids, size_t *n)
{
	const uint8_t *sp = blob, *send = sp + len;
	uint64_t ns = 0, v;
	int64_t sid = 0, *out;
	size_t used, i;

	if (!(used = cp_get_uvarint(sp, send, &ns)) || ns > (uint64_t)(send - sp))
		return cp_error(EBADMSG, "a sample block is corrupt (series list)");
	if (!(out = calloc(ns + 1, sizeof(*out))))
		return cp_error(ENOMEM, "out of memory reading samples");
	sp += used;
	for (i = 0; i < ns; i++) {
		if (!(used = cp_get_uvarint(sp, send, &v))) {
			free(out);
			return cp_error(EBADMSG, "a sample block is corrupt (series list)");
		}
		sp += used;
		sid += (int64_t)v;
		out[i] = sid;
	}
	*ids = out;
	*n = ns;
	return 0;
}

int cp_block_decode(struct cp_block_reader *r, const void *data, size_t len, uint64_t rawlen, int64_t tmin,
		    const unsigned char *want, size_t nseries, cp_block_visit fn, void *ctx)
{
	const uint8_t *p, *end;
	size_t used, i;
	uint64_t format = 0, prev = 0; /* the previous series's count: 0, none */
	int err = 0;

	if (rawlen > (1u << 30))
		return cp_error(EBADMSG, "a sample block is corrupt (size)");
	if (cp_grow((void **)&r->raw, &r->rawcap, rawlen + 1, 1))
		return cp_error(ENOMEM, "out of memory reading samples");
	if ((err = cp_zlib_inflate_exact(data, len, r->raw, rawlen)))
		return err == -ENOMEM ? cp_error(ENOMEM, "out of memory reading samples") :
					cp_error(EBADMSG, "a sample block is corrupt (compressed data)");
	p = r->raw;
	end = r->raw + rawlen;
	/* format 2 starts with 0 and its version; format 1 (schema 2's blocks and schema 3's first ones)
	 * with its first series' count, never 0, and shares no columns */
	if (p < end && !*p) {
		if (!(used = cp_get_uvarint(p + 1, end, &format)) || format != CP_BLOCK_FORMAT)
			return cp_error(EBADMSG, "a sample block is corrupt (format)");
		p += 1 + used;
	}
	for (i = 0; i < nseries && !err; i++) {
		uint64_t cnt = 0, gcd = 1, shared = 0, *col;
		int64_t t, stack = 0;
		size_t u0, k;

		/* every series's times start again from the block's t_min */
		if (!(used = cp_get_uvarint(p, end, &cnt)) || !(u0 = cp_get_uvarint(p + used, end, &gcd)) || !gcd ||
		    gcd > INT64_MAX || cnt > (uint64_t)(end - p))
			return cp_error(EBADMSG, "a sample block is corrupt (entries)");
		p += used + u0;
		if (format && (!(used = cp_get_uvarint(p, end, &shared)) || shared > 1 || (shared && cnt != prev)))
			return cp_error(EBADMSG, "a sample block is corrupt (entries)");
		p += format ? used : 0;
		/* four columns of cnt varints: times, stacks, label sets, values; shared: the first three
		 * are the previous series's, still in cols */
		if (!shared && cp_grow((void **)&r->cols, &r->colcap, 4 * cnt + 1, sizeof(*r->cols)))
			return cp_error(ENOMEM, "out of memory reading samples");
		prev = cnt;
		for (k = shared ? 3 * cnt : 0; k < 4 * cnt; k++) {
			if (p < end && *p < 0x80) { /* (most are one byte: a fleet's day reads hundreds of millions) */
				r->cols[k] = *p++;
				continue;
			}
			if (!(used = cp_get_uvarint(p, end, &r->cols[k])))
				return cp_error(EBADMSG, "a sample block is corrupt (entries)");
			p += used;
		}
		if (!want[i])
			continue;
		t = tmin;
		for (k = 0, col = r->cols; k < cnt && !err; k++) {
			t += cp_unzigzag(col[k]);
			stack += cp_unzigzag(col[cnt + k]);
			err = fn(ctx, i, t, stack, col[2 * cnt + k], (int64_t)((uint64_t)cp_unzigzag(col[3 * cnt + k]) * gcd));
		}
	}
	return err;
}

void cp_block_reader_release(struct cp_block_reader *r)
{
	free(r->raw);
	free(r->cols);
	memset(r, 0, sizeof(*r));
}
