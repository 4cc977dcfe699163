/*
 * journal: the records of the journal database, the fold that moves them
 * into blocks, and the lookup readers merge with the blocks.
 *
 * A record holds the samples of one commit grouped by series (below,
 * "records"), coded compactly (sample_put: 6 to 10 bytes a realistic
 * sample; format 8's float32 records about 3, f32code). Its key is its number
 * (u64 big-endian), one more than the last record's, so every record is an
 * append at the right edge of the B-tree.
 */
#include "store/journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/be.h"
#include "store/block.h"
#include "store/f32code.h"
#include "store/store_int.h"
#include "store/varint.h"
#include "store/write.h"
#include "wire/le.h"

#define REC_HEAD 24
#define REC_GROUP 8
#define SAMPLE_MAX 31 /* two 10-byte varints, a tag and a varint */
/* Format 7's commit records: tag REC_TAG7 | these flags (at least one of
 * REC7_C1 and REC7_F32; records, below). */
#define REC7_S0 1u  /* every group from the base step: no first step */
#define REC7_C1 2u  /* each group's steps one apart: only the first coded */
#define REC7_F32 4u /* every value a float32: its 32-bit pattern's xor */
/* Format 8 (tag REC_TAG8 | REC7_S0, REC7_C1, REC7_F32, which it needs):
 * a group's steps and times apart from its values, or those of its
 * chunk's first group; its values in f32code (records, below). Not a
 * bit of the tag: the writer's flag for it. */
#define REC8_G 8u

/* A record as read: its groups and samples, checked against its size
 * (the layouts: "records", below). */
typedef struct jrec {
	uint64_t       no;
	const uint8_t *p, *idx, *pay; /* the record, its table, its code */
	uint32_t       ngroups, nsamples;
	size_t         size;
	int            v3;         /* written by format 3 or 4 (chunked) */
	int            v4;         /* format 4: one header a group */
	int            merged;     /* made by store_journal_merge */
	int            bc;         /* format 6: groups in the block code */
	int            s0;         /* format 6: first steps not coded */
	int            c1;         /* format 7: later steps not coded */
	int            f32;        /* format 7: values as float32 */
	int            g8;         /* format 8: groups as REC8_G says */
	uint64_t       step, unit; /* base step, time unit */
	uint32_t       chunk;      /* groups a chunk (formats 3, 4) */
	int64_t        time;       /* base time */
} jrec;

/* Where a reader is in a record: at group g (g == ngroups: past the
 * last), of series sid. Format 3: p is where the group's count is,
 * format 4 where its samples are; next, once known, where the next
 * group's code starts. */
typedef struct jcur {
	uint32_t       g, sid;
	const uint8_t *p, *next;
	uint64_t       cnt; /* format 4: the group's count (p: its code) */
	/* Format 8: the steps and times of the chunk's first group, its
	 * count, and whether the group c is at shares them. */
	const uint8_t *tpl;
	uint64_t       tcnt;
	int            same;
} jcur;

static int
corrupt(store *st, uint64_t no)
{
	snprintf(st->err, sizeof(st->err),
	    "%s: journal record %llu does not parse", st->dir,
	    (unsigned long long) no);
	return STORE_ECORRUPT;
}

/* ---- the compact sample code ------------------------------------------ */

/*
 * What each sample is coded against: the previous sample of its group
 * (the first against the record's base step and time and a zero value).
 * The step as a signed delta, the time as a signed delta of deltas in
 * the record's time unit (every one of them is a multiple of it: 1 ms
 * for vitalsd's default times), the value as the xor of its bit pattern
 * with the previous one: a tag byte (0: equal; else 1 + its trailing
 * zero bits) and the xor shifted right by them, as a varint. Realistic
 * samples take 4 to 10 bytes.
 */
typedef struct jcoder {
	uint64_t step, bits;
	int64_t  time, dtime;
	uint64_t unit; /* the time unit (1: format-2 records) */
} jcoder;

/* The time's delta of deltas of s against c (before the unit), moving
 * c's time on. */
static inline int64_t
sample_dd(jcoder *c, const store_sample *s)
{
	int64_t dt = (int64_t) ((uint64_t) s->time_ns - (uint64_t) c->time);
	int64_t dd = (int64_t) ((uint64_t) dt - (uint64_t) c->dtime);

	c->time  = s->time_ns;
	c->dtime = dt;
	return dd;
}

/* Code s at p against c (moved on to s); without its step (nostep: a
 * record's first sample of a group at the base step, format 6, or a
 * later one, one step after the one before, format 7's REC7_C1); its
 * value, when f32 (format 7's REC7_F32: every value of the record is
 * f32code_exact), as a varint of the xor of its 32-bit pattern with the
 * previous one's (0 for a group's first). */
static uint8_t *
sample_put(uint8_t *p, jcoder *c, const store_sample *s, int nostep, int f32)
{
	uint64_t bits, x;
	int64_t  dd = sample_dd(c, s);

	memcpy(&bits, &s->value, sizeof(bits));
	if (!nostep)
		p = put_var(p, zz((int64_t) (s->step - c->step)));
	/* dd is a multiple of the unit, which is at most 10^6. */
	p = put_var(p, zz(dd / (int64_t) c->unit));
	x = bits ^ c->bits;
	if (f32) {
		uint32_t f = 0, pf = 0;

		(void) f32code_exact(bits, &f);
		(void) f32code_exact(c->bits, &pf);
		p = put_var(p, f ^ pf);
	} else if (x == 0) {
		*p++ = 0;
	} else {
		unsigned tz = (unsigned) __builtin_ctzll(x);

		*p++ = (uint8_t) (tz + 1);
		p    = put_var(p, x >> tz);
	}
	c->step = s->step;
	c->bits = bits;
	return p;
}

/* Format 8: code the step and time of s at p against c, moved on to
 * s (sample_put's code without the value). */
static uint8_t *
time_put(uint8_t *p, jcoder *c, const store_sample *s, int nostep)
{
	int64_t dd = sample_dd(c, s);

	if (!nostep)
		p = put_var(p, zz((int64_t) (s->step - c->step)));
	p       = put_var(p, zz(dd / (int64_t) c->unit));
	c->step = s->step;
	return p;
}

/* Format 8: decode time_put's code at *p into s's step and time (its
 * value left), moving c and *p on; without a step, it is dstep past
 * the one before. 0 or -1. */
static int
time_get(const uint8_t **p, const uint8_t *end, jcoder *c, store_sample *s,
    int nostep, uint64_t dstep)
{
	uint64_t d = 0, dd;
	int64_t  dt;

	if ((!nostep && get_var(p, end, &d) != 0) || get_var(p, end, &dd) != 0)
		return -1;
	if (nostep)
		d = zz((int64_t) dstep);
	dt = (int64_t) ((uint64_t) c->dtime + (uint64_t) unzz(dd) * c->unit);
	c->step    = c->step + (uint64_t) unzz(d);
	c->time    = (int64_t) ((uint64_t) c->time + (uint64_t) dt);
	c->dtime   = dt;
	s->step    = c->step;
	s->time_ns = c->time;
	return 0;
}

/* Whether unit (10^6, 10^3 or 1) divides x: by constants, which the
 * compiler turns into multiplications (a merge asks it of every sample
 * it codes). */
static inline int
unit_divides(uint64_t unit, int64_t x)
{
	return unit == 1000000 ? x % 1000000 == 0
	    : unit == 1000     ? x % 1000 == 0
	                       : 1;
}

/* unit narrowed to the largest of itself, 10^3 and 1 that divides the
 * time delta of deltas of each of the n samples of a group at s, coded
 * from the record's first sample. */
static uint64_t
group_unit(
    const store_sample *first, const store_sample *s, size_t n, uint64_t unit)
{
	jcoder c = { first->step, 0, first->time_ns, 0, 1 };

	for (size_t m = 0; m < n && unit > 1; m++) {
		int64_t dd = sample_dd(&c, &s[m]);

		while (!unit_divides(unit, dd))
			unit /= 1000;
	}
	return unit;
}

/* Code a group at q (format 8's, REC8_G, as the records' comment
 * below says; same: it has the count, steps and times of its chunk's
 * first group): the header (dsid, its sid less the one before it
 * in the chunk, shifted left by one, the low bit set when n is over 1),
 * the count when over 1, and its n samples at s, coded from the
 * record's first sample in the record's unit, as the record's flags
 * say (REC7_S0: the first without its step, which is the base step;
 * REC7_C1: the others without theirs, each one past the one before;
 * REC7_F32: values as float32). Returns the byte after. */
static uint8_t *
group_put(uint8_t *q, uint32_t dsid, const store_sample *first, uint64_t unit,
    const store_sample *s, size_t n, unsigned flags, int same)
{
	jcoder c = { first->step, 0, first->time_ns, 0, unit };

	if (flags & REC8_G) {
		q = put_var(q,
		    (uint64_t) dsid << 2 | (same ? 2u : 0u)
		        | (!same && n > 1));
		if (!same) {
			if (n > 1)
				q = put_var(q, n);
			for (size_t m = 0; m < n; m++)
				q = time_put(q, &c, &s[m],
				    m == 0 ? (flags & REC7_S0) != 0
				           : (flags & REC7_C1) != 0);
		}
		return f32code_put(q, s, n);
	}
	q = put_var(q, (uint64_t) dsid << 1 | (n > 1));
	if (n > 1)
		q = put_var(q, n);
	for (size_t m = 0; m < n; m++)
		q = sample_put(q, &c, &s[m],
		    m == 0 ? (flags & REC7_S0) != 0 : (flags & REC7_C1) != 0,
		    (flags & REC7_F32) != 0);
	return q;
}

/* Decode the sample at *p (sample_put's, with the same nostep and f32)
 * into s, moving c and *p on; without a step, it is dstep past the one
 * before (0: a group's first at the base step; 1: REC7_C1's). 0 or -1. */
static int
sample_get(const uint8_t **p, const uint8_t *end, jcoder *c, store_sample *s,
    int nostep, uint64_t dstep, int f32)
{
	uint64_t d = 0, dd, x = 0;
	int64_t  dt;

	if (end - *p >= SAMPLE_MAX) { /* no bounds test a byte */
		if ((!nostep && get_var10(p, &d) != 0)
		    || get_var10(p, &dd) != 0)
			return -1;
	} else if ((!nostep && get_var(p, end, &d) != 0)
	    || get_var(p, end, &dd) != 0 || *p >= end) {
		return -1;
	}
	if (nostep)
		d = zz((int64_t) dstep);
	if (f32) {
		uint32_t pf = 0;
		uint64_t nb;

		if ((end - *p >= 10 ? get_var10(p, &x) : get_var(p, end, &x))
		        != 0
		    || x > UINT32_MAX || !f32code_exact(c->bits, &pf)
		    || f32code_widen(pf ^ (uint32_t) x, &nb) != 0)
			return -1;
		x = nb ^ c->bits;
	} else if (**p != 0) {
		unsigned tz = (unsigned) **p - 1;

		(*p)++;
		if (tz > 63
		    || (end - *p >= 10 ? get_var10(p, &x)
		                       : get_var(p, end, &x))
		        != 0)
			return -1;
		x <<= tz;
	} else {
		(*p)++;
	}
	dt = (int64_t) ((uint64_t) c->dtime + (uint64_t) unzz(dd) * c->unit);
	c->step  = c->step + (uint64_t) unzz(d);
	c->time  = (int64_t) ((uint64_t) c->time + (uint64_t) dt);
	c->dtime = dt;
	c->bits ^= x;
	s->step    = c->step;
	s->time_ns = c->time;
	memcpy(&s->value, &c->bits, sizeof(c->bits));
	return 0;
}

/* ---- records --------------------------------------------------------------
 */

/*
 * A record (little-endian), as format 3 writes it: u32 REC_TAG, u32
 * groups, u32 samples, u64 base step, u64 base time, u32 time unit;
 * then per chunk of REC_CHUNK groups { u32 sid of its first group, u32
 * offset of its code in the payload }; then the payload: per group a
 * varint of its sid less the one before it in the chunk (0 for the
 * first), a varint count and its samples (sample_put). Sids ascend
 * strictly. A reader finds a series by binary search over the chunks
 * and a walk of at most REC_CHUNK groups: a wide record's sample costs
 * about 2 bytes besides its code, where format 2's group table cost 8.
 *
 * Format 4 writes REC_TAG4 (REC_TAG4M: a record store_journal_merge
 * made of several, otherwise the same but for chunks of MERGE_CHUNK
 * groups) and, per group, one varint of (sid
 * delta << 1) | (count > 1), then the count only when it is over 1: a group of
 * one sample (a wide record's) has a one-byte header, where format 3
 * (REC_TAG) wrote the sid delta and the count; both are read. Format 6
 * writes merged records as REC_TAG6M: format 4's layout with each
 * group's samples in the block code (bgroup_put, below); REC_TAG4M
 * records are read as they are.
 *
 * Format 8 writes a commit's record whose values are all float32s as
 * REC_TAG8 | format 7's flags (REC7_F32 always set): a group's header
 * is one varint of (sid delta << 2) | (same << 1) | (count > 1), the
 * count following only when that bit is set. A group without `same`
 * codes the steps and times of its samples (time_put, as the flags
 * say), then their values (f32code_put); one with `same` has the count,
 * steps and times of its chunk's first group (which never has it) and
 * codes its values alone. A reader walks a chunk from its first group
 * (chunk_open), so the cursor knows where those are (jcur.tpl).
 *
 * Format 2's records (no tag: their first u32, the group count, is
 * below 2^29) are read as they are: u32 groups, u32 samples, u64 base
 * step, u64 base time; per group { u32 sid, u32 offset of its code },
 * then per group a varint count and its samples (time unit 1).
 */
#define REC_TAG 0xffffffffu
#define REC_TAG4 0xfffffffeu
#define REC_TAG4M 0xfffffffdu /* format 4, a merge of records */
#define REC_TAG6M 0xfffffffcu /* format 6, a merge in the block code */
#define REC_TAG6S 0xfffffffbu /* format 6, every group from the base step */
#define REC_TAG7 0xfffffff0u  /* format 7, | REC7_S0, REC7_C1, REC7_F32 */
#define REC_TAG8 0xffffffe0u  /* format 8, | REC7_S0, REC7_C1, REC7_F32 */
#define REC3_HEAD 32
#define REC_CHUNK 16
/* A merged record's groups hold many samples each, so that walking
 * them would cost what a chunk saves: a chunk a group (8 bytes a group,
 * a share of a byte a sample), found by the binary search alone. */
#define MERGE_CHUNK 1

static int
rec_parse(store *st, const MDB_val *k, const MDB_val *v, jrec *r)
{
	const uint8_t *p = v->mv_data;
	uint64_t       table;
	uint32_t       tag;
	int            t7, t8;

	if (k->mv_size != 8)
		return corrupt(st, 0);
	r->no = be_get64(k->mv_data);
	if (v->mv_size < REC_HEAD)
		return corrupt(st, r->no);
	r->p    = p;
	r->size = v->mv_size;
	tag       = wire_get32(p);
	t8        = (tag & ~7u) == REC_TAG8;
	t7        = (tag & ~7u) == REC_TAG7 || t8;
	r->bc     = tag == REC_TAG6M;
	r->s0     = tag == REC_TAG6S || (t7 && (tag & REC7_S0));
	r->c1     = t7 && (tag & REC7_C1);
	r->f32    = t7 && (tag & REC7_F32);
	r->g8     = t8;
	if (r->g8 && !r->f32)
		return corrupt(st, r->no);
	r->merged = r->bc || tag == REC_TAG4M;
	r->v4     = r->merged || r->s0 || t7 || tag == REC_TAG4;
	r->chunk  = r->merged ? MERGE_CHUNK : REC_CHUNK;
	r->v3     = r->v4 || wire_get32(p) == REC_TAG;
	if (r->v3) {
		if (v->mv_size < REC3_HEAD)
			return corrupt(st, r->no);
		r->ngroups  = wire_get32(p + 4);
		r->nsamples = wire_get32(p + 8);
		r->step     = wire_get64(p + 12);
		r->time     = (int64_t) wire_get64(p + 20);
		r->unit     = wire_get32(p + 28);
		r->idx      = p + REC3_HEAD;
		table = ((uint64_t) r->ngroups + r->chunk - 1) / r->chunk * 8;
		if (r->unit == 0 || v->mv_size < REC3_HEAD + table)
			return corrupt(st, r->no);
		r->pay = r->idx + table;
		return 0;
	}
	r->ngroups  = wire_get32(p);
	r->nsamples = wire_get32(p + 4);
	r->step     = wire_get64(p + 8);
	r->time     = (int64_t) wire_get64(p + 16);
	r->unit     = 1;
	r->idx      = p + REC_HEAD;
	if (v->mv_size < REC_HEAD + (uint64_t) r->ngroups * REC_GROUP)
		return corrupt(st, r->no);
	r->pay = r->idx + (size_t) r->ngroups * REC_GROUP;
	return 0;
}

/*
 * Format 6's merged records (REC_TAG6M) code each group's samples with
 * the block code (store/block.h), where format 4's sample code took
 * about twice the bytes: after the group's header (as format 4's), a
 * varint of the stream's length in bytes, then, when it is not 0, a
 * zigzag varint of the first sample's step less the record's base
 * step, one of its time less the base time in the record's time unit,
 * and the stream (block_enc_stream: the first value verbatim, then the
 * block code of the other samples). A length of 0 says the samples
 * follow in the sample code instead (sample_put, from the base): a
 * group the block code does not take (a step going back, or more than
 * a block holds).
 */

/* Code a group at q as a merged record of format 6 does (the header as
 * group_put's), with enc, which it leaves cleared. Returns the byte
 * after: at most 30 bytes past the larger of its n samples' sample code
 * and BLOCK_MAX_BYTES. The bytes are right only if unit divides each
 * time delta of deltas of the group coded from first (group_unit). */
static uint8_t *
bgroup_put(uint8_t *q, uint32_t dsid, const store_sample *first, uint64_t unit,
    const store_sample *s, size_t n, block_enc *enc)
{
	const uint8_t *bs;
	size_t         m, bl;
	int64_t        dt
	    = (int64_t) ((uint64_t) s->time_ns - (uint64_t) first->time_ns);

	for (m = 0; m < n; m++)
		if (block_enc_append(enc, s[m].step, s[m].time_ns, s[m].value)
		    != BLOCK_OK)
			break;
	q = put_var(q, (uint64_t) dsid << 1 | (n > 1));
	if (n > 1)
		q = put_var(q, n);
	if (m < n) {
		jcoder c = { first->step, 0, first->time_ns, 0, unit };

		block_enc_clear(enc);
		*q++ = 0;
		for (m = 0; m < n; m++)
			q = sample_put(q, &c, &s[m], 0, 0);
		return q;
	}
	bs = block_enc_stream(enc, &bl);
	q  = put_var(q, bl);
	q  = put_var(q, zz((int64_t) (s->step - first->step)));
	q  = put_var(q, zz(dt / (int64_t) unit));
	memcpy(q, bs, bl);
	block_enc_clear(enc);
	return q + bl;
}

/* Format 6: open the merged group of cnt samples whose code starts at
 * *p (after its header): 0 with d on its block stream and *p after it,
 * 1 with *p at its samples when they are in the sample code, -1 if it
 * does not parse. */
static int
bgrp_open(const jrec *r, const uint8_t **p, uint64_t cnt, block_dec *d)
{
	const uint8_t *end = r->p + r->size;
	uint64_t       len, ds, dt;

	if (get_var(p, end, &len) != 0)
		return -1;
	if (len == 0)
		return 1;
	if (get_var(p, end, &ds) != 0 || get_var(p, end, &dt) != 0
	    || len > (uint64_t) (end - *p) || cnt > UINT32_MAX)
		return -1;
	if (block_dec_init_stream(d, *p, (size_t) len, (uint32_t) cnt,
	        r->step + (uint64_t) unzz(ds),
	        (int64_t) ((uint64_t) r->time + (uint64_t) unzz(dt) * r->unit))
	    != BLOCK_OK)
		return -1;
	*p += len;
	return 0;
}

/* Formats 3 and 4: read the header of the group at c->p (its sid less
 * the one before, and in format 4 its count), leaving c->p where
 * chunk_open and cur_next expect it. *d: the sid delta. 0 or -1. */
static int
grp_head(const jrec *r, jcur *c, uint64_t *d)
{
	const uint8_t *end = r->p + r->size;
	uint64_t       h;

	c->same = 0;
	if (get_var(&c->p, end, &h) != 0)
		return -1;
	if (r->g8) {
		int first = c->g % r->chunk == 0;

		/* A chunk's first group codes its steps and times; a later
		 * one may share them (format 8). */
		*d      = h >> 2;
		c->same = (h & 2) != 0;
		if (c->same) {
			if ((h & 1) || first)
				return -1;
			c->cnt = c->tcnt;
			return 0;
		}
		c->cnt = 1;
		if ((h & 1)
		    && (get_var(&c->p, end, &c->cnt) != 0 || c->cnt < 2))
			return -1;
		if (first) {
			c->tpl  = c->p;
			c->tcnt = c->cnt;
		}
		return 0;
	}
	if (!r->v4) {
		*d = h;
		return 0;
	}
	*d     = h >> 1;
	c->cnt = 1;
	if ((h & 1) && (get_var(&c->p, end, &c->cnt) != 0 || c->cnt < 2))
		return -1;
	return 0;
}

/* Formats 3 and 4: open chunk ch at its first group. Returns 0 or a
 * store_err. */
static int
chunk_open(store *st, const jrec *r, uint32_t ch, jcur *c)
{
	const uint8_t *end = r->p + r->size;
	uint32_t       off = wire_get32(r->idx + (size_t) ch * 8 + 4);
	uint64_t       d;

	c->g    = ch * r->chunk;
	c->next = NULL;
	if (off > (size_t) (end - r->pay))
		return corrupt(st, r->no);
	c->p = r->pay + off;
	if (grp_head(r, c, &d) != 0 || d != 0)
		return corrupt(st, r->no);
	c->sid = wire_get32(r->idx + (size_t) ch * 8);
	return 0;
}

/* The cursor c at the first group of r (c->g == r->ngroups: none).
 * Returns 0 or a store_err. */
static int
cur_first(store *st, const jrec *r, jcur *c)
{
	c->g    = 0;
	c->next = NULL;
	c->p    = NULL;
	if (r->ngroups == 0)
		return 0;
	if (r->v3)
		return chunk_open(st, r, 0, c);
	c->sid = wire_get32(r->idx);
	return 0;
}

/* Format 8: the end of the steps and times of a group of cnt samples
 * at p (time_put's), or NULL if they run past the record. */
static const uint8_t *
times_skip(const jrec *r, const uint8_t *p, uint64_t cnt)
{
	const uint8_t *end = r->p + r->size;
	uint64_t       x;

	if (cnt > (uint64_t) (end - p))
		return NULL;
	for (uint64_t i = 0; i < cnt; i++)
		if ((!(i == 0 ? r->s0 : r->c1) && get_var(&p, end, &x) != 0)
		    || get_var(&p, end, &x) != 0)
			return NULL;
	return p;
}

/* Formats 3 and 4: the end of the code of c's group (its count and
 * samples), read without decoding the samples. NULL if it does not
 * parse. */
static const uint8_t *
grp_skip(const jrec *r, const jcur *c)
{
	const uint8_t *end = r->p + r->size, *p = c->p;
	uint64_t       cnt = c->cnt, x;

	if (r->g8) {
		if (!c->same && (p = times_skip(r, p, cnt)) == NULL)
			return NULL;
		return f32code_skip(p, end, cnt);
	}
	if (r->bc) {
		uint64_t len, a;

		if (get_var(&p, end, &len) != 0)
			return NULL;
		if (len != 0) {
			if (get_var(&p, end, &a) != 0
			    || get_var(&p, end, &a) != 0
			    || len > (uint64_t) (end - p))
				return NULL;
			return p + len;
		}
	}
	if ((!r->v4 && get_var(&p, end, &cnt) != 0) || cnt == 0
	    || cnt > (uint64_t) (end - p))
		return NULL;
	for (uint64_t i = 0; i < cnt; i++) {
		if ((!(i == 0 ? r->s0 : r->c1) && get_var(&p, end, &x) != 0)
		    || get_var(&p, end, &x) != 0 || p >= end)
			return NULL;
		if (r->f32 ? get_var(&p, end, &x) != 0
		           : *p++ != 0 && get_var(&p, end, &x) != 0)
			return NULL;
	}
	return p;
}

/* The cursor c at the next group of r (c->g == r->ngroups: none left).
 * Returns 0 or a store_err. */
static int
cur_next(store *st, const jrec *r, jcur *c)
{
	const uint8_t *p;
	uint64_t       d;

	if (++c->g >= r->ngroups) {
		c->g = r->ngroups;
		return 0;
	}
	if (!r->v3) {
		c->sid = wire_get32(r->idx + (size_t) c->g * REC_GROUP);
		return 0;
	}
	if (c->g % r->chunk == 0)
		return chunk_open(st, r, c->g / r->chunk, c);
	if ((p = c->next) == NULL && (p = grp_skip(r, c)) == NULL)
		return corrupt(st, r->no);
	c->p = p;
	if (grp_head(r, c, &d) != 0 || d == 0 || d > UINT32_MAX - c->sid)
		return corrupt(st, r->no);
	c->sid += (uint32_t) d;
	c->next = NULL;
	return 0;
}

/* Format 2: the first group from lo on whose sid is sid or more, by a
 * binary search of the group table (r->ngroups: none). */
static uint32_t
idx_lower(const jrec *r, uint32_t lo, uint32_t sid)
{
	uint32_t hi = r->ngroups;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (wire_get32(r->idx + (size_t) mid * REC_GROUP) < sid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Find series sid in r: *found 1 with c at its group, or 0. Returns 0
 * or a store_err. */
static int
cur_find(store *st, const jrec *r, uint32_t sid, jcur *c, int *found)
{
	uint32_t lo = 0, hi, n;
	int      rc;

	*found = 0;
	if (!r->v3) {
		lo = idx_lower(r, 0, sid);
		if (lo == r->ngroups
		    || wire_get32(r->idx + (size_t) lo * REC_GROUP) != sid)
			return 0;
		c->g    = lo;
		c->sid  = sid;
		c->next = NULL;
		*found  = 1;
		return 0;
	}
	/* The last chunk starting at or before sid. */
	n  = (r->ngroups + r->chunk - 1) / r->chunk;
	hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (wire_get32(r->idx + (size_t) mid * 8) <= sid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	if ((rc = chunk_open(st, r, lo - 1, c)) != 0)
		return rc;
	while (c->sid < sid) {
		uint32_t ch = c->g / r->chunk;

		if ((rc = cur_next(st, r, c)) != 0)
			return rc;
		if (c->g == r->ngroups || c->g / r->chunk != ch)
			return 0;
	}
	*found = c->sid == sid;
	return 0;
}

/* The first sid of chunk ch of r (formats 3 and 4). */
static inline uint32_t
chunk_sid(const jrec *r, uint32_t ch)
{
	return wire_get32(r->idx + (size_t) ch * 8);
}

/* The last chunk of r, of the n, at or after lo (whose first sid is at
 * most sid) whose first sid is at most sid: a gallop from lo, then a
 * binary search, so a near one costs a step or two. */
static uint32_t
chunk_upto(const jrec *r, uint32_t lo, uint32_t n, uint32_t sid)
{
	uint32_t step = 1, hi;

	while (step < n - lo && chunk_sid(r, lo + step) <= sid) {
		lo += step;
		step *= 2;
	}
	hi = step < n - lo ? lo + step : n;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (chunk_sid(r, mid) <= sid)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Move c on to series sid, from the group c is at (cur_first, or where
 * the last seek left it, of a lower sid; c->g == r->ngroups: past the
 * last): *found 1 with c at its group, or 0 with c at the first group
 * of a greater sid (or past the last). A sid past c's chunk is reached
 * through the chunk table (format 2: the group table), not by walking
 * the groups between: seeking ascending sids costs one pass over the
 * record's code when they are dense, a search each when sparse, and
 * the record is read in order either way. Returns 0 or a store_err.
 */
static int
cur_seek(store *st, const jrec *r, uint32_t sid, jcur *c, int *found)
{
	int rc;

	*found = 0;
	if (c->g == r->ngroups || c->sid >= sid) {
		*found = c->g < r->ngroups && c->sid == sid;
		return 0;
	}
	if (!r->v3) {
		uint32_t lo = idx_lower(r, c->g + 1, sid);

		c->g    = lo;
		c->next = NULL;
		if (lo < r->ngroups) {
			c->sid = wire_get32(r->idx + (size_t) lo * REC_GROUP);
			*found = c->sid == sid;
		}
		return 0;
	}
	{
		uint32_t ch = c->g / r->chunk;
		uint32_t n  = (r->ngroups + r->chunk - 1) / r->chunk;

		if (ch + 1 < n && chunk_sid(r, ch + 1) <= sid) {
			ch = chunk_upto(r, ch + 1, n, sid);
			if ((rc = chunk_open(st, r, ch, c)) != 0)
				return rc;
		}
	}
	while (c->sid < sid) {
		if ((rc = cur_next(st, r, c)) != 0)
			return rc;
		if (c->g == r->ngroups)
			return 0;
	}
	*found = c->sid == sid;
	return 0;
}

/* The code of the group c is at: where its samples start, their count,
 * and (format 8) where the steps and times it shares with its chunk's
 * first group are (NULL: its own, at *p). Returns 0 or STORE_ECORRUPT. */
static int
grp_open(store *st, const jrec *r, const jcur *c, const uint8_t **p,
    uint64_t *cnt, const uint8_t **tpl)
{
	const uint8_t *end = r->p + r->size;

	*tpl = r->g8 && c->same ? c->tpl : NULL;
	if (r->v4) {
		*p   = c->p;
		*cnt = c->cnt;
		/* Format 6's block code takes at least 3 bits a sample,
		 * format 8's values at least one. */
		if (*cnt == 0
		    || *cnt > (uint64_t) (end - *p)
		            * (r->bc        ? 3
		                    : r->g8 ? 8
		                            : 1))
			return corrupt(st, r->no);
		return 0;
	}
	if (r->v3) {
		*p = c->p;
	} else {
		uint32_t off
		    = wire_get32(r->idx + (size_t) c->g * REC_GROUP + 4);

		if (off > (size_t) (end - r->pay))
			return corrupt(st, r->no);
		*p = r->pay + off;
	}
	if (get_var(p, end, cnt) != 0 || *cnt == 0
	    || *cnt > (uint64_t) (end - *p))
		return corrupt(st, r->no);
	return 0;
}

/* Decode cnt samples of a group of r from *p (grp_open, with its tpl)
 * into out; *p ends after them. Returns 0 or STORE_ECORRUPT. */
static int
grp_decode(store *st, const jrec *r, const uint8_t **p, uint64_t cnt,
    const uint8_t *tpl, store_sample *out)
{
	jcoder jc;

	if (r->g8) {
		const uint8_t *tp = tpl ? tpl : *p, *end = r->p + r->size;
		f32code_dec    fd;

		jc = (jcoder) { r->step, 0, r->time, 0, r->unit };
		for (uint64_t i = 0; i < cnt; i++)
			if (time_get(&tp, end, &jc, &out[i],
			        i == 0 ? r->s0 : r->c1, i > 0)
			    != 0)
				return corrupt(st, r->no);
		f32code_dec_init(&fd, tpl ? *p : tp, end, cnt);
		for (uint64_t i = 0; i < cnt; i++) {
			uint64_t b;

			if (f32code_next(&fd, &b) != 0)
				return corrupt(st, r->no);
			memcpy(&out[i].value, &b, sizeof(b));
		}
		*p = fd.p;
		return 0;
	}

	if (r->bc) {
		block_dec d;
		int       b = bgrp_open(r, p, cnt, &d);

		if (b < 0)
			return corrupt(st, r->no);
		for (uint64_t i = 0; b == 0 && i < cnt; i++) {
			store_sample *o = &out[i];

			if (block_dec_next(
			        &d, &o->step, &o->time_ns, &o->value)
			    != 1)
				return corrupt(st, r->no);
		}
		if (b == 0)
			return 0;
	}
	jc.step  = r->step;
	jc.time  = r->time;
	jc.dtime = 0;
	jc.bits  = 0;
	jc.unit  = r->unit;
	for (uint64_t i = 0; i < cnt; i++)
		if (sample_get(p, r->p + r->size, &jc, &out[i],
		        i == 0 ? r->s0 : r->c1, i > 0, r->f32)
		    != 0)
			return corrupt(st, r->no);
	return 0;
}

/* What grp_add_stats gathers of a series' samples: first and last step,
 * first and last time, the value at the latest time (bit pattern). */
typedef struct stats_acc {
	uint64_t fs, ls, lv;
	int64_t  ft, lt;
} stats_acc;

static inline void
stats_take(stats_acc *a, uint64_t step, int64_t time, uint64_t bits)
{
	if (step < a->fs)
		a->fs = step;
	if (step > a->ls)
		a->ls = step;
	if (time < a->ft)
		a->ft = time;
	if (time >= a->lt) {
		a->lt = time;
		a->lv = bits;
	}
}

/*
 * Add the cnt samples of a group of r at *p (grp_open) to the
 * statistics of their series as they are decoded, by store_series_add's
 * rules, in their order (none is kept: a listing wants the statistics
 * alone); *p ends after them. The code as sample_get reads it, with the
 * coder and the statistics in locals (format 6's block code: by the
 * block decoder). Returns 0 or STORE_ECORRUPT.
 */
static int
grp_add_stats(store *st, const jrec *r, const uint8_t **p, uint64_t cnt,
    const uint8_t *tpl, series_rec *s)
{
	const uint8_t *q = *p, *end = r->p + r->size;
	uint64_t       step = r->step, bits = 0, unit = r->unit;
	int64_t        time = r->time, dtime = 0;
	/* store_series_add sets both steps from the first sample of an
	 * empty series: the min and max of it and these. */
	stats_acc a = { s->samples ? s->first_step : UINT64_MAX,
		s->samples ? s->last_step : 0, 0, s->first_time,
		s->last_time };
	block_dec bd;
	int       b = 1;

	memcpy(&a.lv, &s->last_value, sizeof(a.lv));
	if (r->bc && (b = bgrp_open(r, &q, cnt, &bd)) < 0)
		return corrupt(st, r->no);
	for (uint64_t i = 0; b == 0 && i < cnt; i++) {
		double v;

		if (block_dec_next(&bd, &step, &time, &v) != 1)
			return corrupt(st, r->no);
		memcpy(&bits, &v, sizeof(bits));
		stats_take(&a, step, time, bits);
	}
	/* Format 8: steps and times (its own, or its chunk's first
	 * group's) and values side by side. */
	if (r->g8) {
		const uint8_t *tp = tpl ? tpl : q;
		jcoder         jc = { r->step, 0, r->time, 0, r->unit };
		f32code_dec    fd;

		if (tpl == NULL && (q = times_skip(r, q, cnt)) == NULL)
			return corrupt(st, r->no);
		f32code_dec_init(&fd, q, end, cnt);
		for (uint64_t i = 0; i < cnt; i++) {
			store_sample o;

			if (time_get(&tp, end, &jc, &o, i == 0 ? r->s0 : r->c1,
			        i > 0)
			        != 0
			    || f32code_next(&fd, &bits) != 0)
				return corrupt(st, r->no);
			stats_take(&a, o.step, o.time_ns, bits);
		}
		q = fd.p;
		b = 0;
	}
	/* Format 7's flags: by sample_get (the loop below is format 4's
	 * code, which older records and fallback groups keep). */
	if (b != 0 && (r->c1 || r->f32)) {
		jcoder jc = { r->step, 0, r->time, 0, r->unit };

		for (uint64_t i = 0; i < cnt; i++) {
			store_sample o;

			if (sample_get(&q, end, &jc, &o,
			        i == 0 ? r->s0 : r->c1, i > 0, r->f32)
			    != 0)
				return corrupt(st, r->no);
			memcpy(&bits, &o.value, sizeof(bits));
			stats_take(&a, o.step, o.time_ns, bits);
		}
		b = 0;
	}
	for (uint64_t i = 0; b != 0 && i < cnt; i++) {
		uint64_t d = 0, dd, x = 0;
		unsigned tag;
		int      nostep = r->s0 && i == 0;

		if (end - q >= SAMPLE_MAX) { /* no bounds test a byte */
			if ((!nostep && get_var10(&q, &d) != 0)
			    || get_var10(&q, &dd) != 0)
				return corrupt(st, r->no);
			if ((tag = *q++) != 0) {
				if (tag > 64 || get_var10(&q, &x) != 0)
					return corrupt(st, r->no);
				x <<= tag - 1;
			}
		} else {
			if ((!nostep && get_var(&q, end, &d) != 0)
			    || get_var(&q, end, &dd) != 0 || q >= end)
				return corrupt(st, r->no);
			if ((tag = *q++) != 0) {
				if (tag > 64 || get_var(&q, end, &x) != 0)
					return corrupt(st, r->no);
				x <<= tag - 1;
			}
		}
		dtime = (int64_t) ((uint64_t) dtime
		    + (uint64_t) unzz(dd) * unit);
		step += (uint64_t) unzz(d);
		time = (int64_t) ((uint64_t) time + (uint64_t) dtime);
		bits ^= x;
		stats_take(&a, step, time, bits);
	}
	*p = q;
	s->samples += cnt;
	s->first_step = a.fs;
	s->last_step  = a.ls;
	s->first_time = a.ft;
	s->last_time  = a.lt;
	memcpy(&s->last_value, &a.lv, sizeof(a.lv));
	return 0;
}

/* Decode the group c is at, appending its samples to a growing array;
 * *n: how many. Returns 0 or a store_err. */
static int
grp_copy(store *st, const jrec *r, jcur *c, store_sample **buf, size_t *len,
    size_t *cap, uint32_t *n)
{
	const uint8_t *p, *tpl;
	uint64_t       cnt;
	int            rc;

	if ((rc = grp_open(st, r, c, &p, &cnt, &tpl)) != 0)
		return rc;
	if (*len + cnt > *cap) {
		size_t        nc = *cap ? *cap : 256;
		store_sample *nb;

		while (nc < *len + cnt)
			nc *= 2;
		if ((nb = realloc(*buf, nc * sizeof(*nb))) == NULL) {
			snprintf(st->err, sizeof(st->err), "%s: out of memory",
			    st->dir);
			return STORE_ENOMEM;
		}
		*buf = nb;
		*cap = nc;
	}
	if ((rc = grp_decode(st, r, &p, cnt, tpl, *buf + *len)) != 0)
		return rc;
	c->next = p;
	*len += cnt;
	*n = (uint32_t) cnt;
	return 0;
}

/* ---- the writer's view of the journal --------------------------------- */

/* The last record counted in its series' statistics (format 5: meta
 * journal_counted), 0 when none is. Every sample of a record up to it
 * is counted in its series' statistics; its series' jseen is at or past
 * it. Returns 0 or a store_err. */
static int
journal_counted(store_txn *t, uint64_t *no)
{
	int rc = store_meta_get(t, "journal_counted", 15, 8, no);

	if (rc == STORE_ENOTFOUND) {
		*no = 0;
		return 0;
	}
	return rc;
}

/* Load the next record number and the totals the first time the writer
 * needs them (a scan of the record headers). */
static int
load(store_txn *t)
{
	store      *st = t->st;
	MDB_cursor *cur;
	MDB_val     k, v;
	uint64_t    last;
	int         rc;

	if (st->jloaded)
		return 0;
	st->jnext    = 1;
	st->jrecords = 0;
	st->jsamples = 0;
	st->jwidest  = 0;
	st->jcrecords = 0;
	st->jcsamples = 0;
	if ((rc = journal_counted(t, &st->jcounted)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(t->txn, st->journal, &cur)) != 0)
		return store_fail(st, rc, "reading the journal");
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		jrec r;

		if ((rc = rec_parse(st, &k, &v, &r)) != 0) {
			mdb_cursor_close(cur);
			return rc;
		}
		st->jnext = r.no + 1;
		st->jrecords++;
		st->jsamples += r.nsamples;
		if (r.no > st->jcounted) {
			st->jcrecords++;
			st->jcsamples += r.nsamples;
		}
		if (r.ngroups > st->jwidest)
			st->jwidest = r.ngroups;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return store_fail(st, rc, "reading the journal");
	/* Numbers are never reused, also once the journal is empty: the
	 * series records count up to a number (series_rec.jseen). */
	rc = store_meta_get(t, "journal_folded", 14, 8, &last);
	if (rc != 0 && rc != STORE_ENOTFOUND)
		return rc;
	if (rc == 0 && last + 1 > st->jnext)
		st->jnext = last + 1;
	st->jloaded = 1;
	return 0;
}

int
store_journal_stat(store_txn *t, uint64_t *records, uint64_t *samples)
{
	int rc = load(t);

	*records = t->st->jrecords;
	*samples = t->st->jsamples;
	return rc;
}

int
store_journal_widest(store_txn *t, uint64_t *groups)
{
	int rc = load(t);

	*groups = t->st->jwidest;
	return rc;
}

/* A series whose commit brings at least this many samples, and which
 * has none in the journal, is appended to its blocks by the commit
 * itself (direct_put): a narrow run's samples are then coded and
 * written once, and the journal keeps the sparse ones, whose
 * per-series work (finding, resuming and rewriting a tail) it
 * amortises over many commits. At 256 samples that work (one tail
 * page and a share of a series record's leaf) costs about what
 * journalling them would. */
#define DIRECT_MIN 256

/*
 * The cursors a fold (or a commit's direct appends) keeps open across
 * its series: they go in ascending sid order, so the statistics and the
 * blocks are read and written near where the last series left the
 * cursor, which LMDB finds without descending from the root; the
 * statistics are rewritten where they were read.
 */
typedef struct fold_cur {
	MDB_cursor *stats, *blocks;
	int         absent; /* series_of_sid found no entry (format 7) */
} fold_cur;

static int  fold_cur_open(store_txn *t, fold_cur *fc);
static void fold_cur_close(fold_cur *fc);
static int  series_of_sid(
     store_txn *t, fold_cur *fc, uint32_t sid, series_rec *r);
static int series_put(store_txn *t, fold_cur *fc, const series_rec *r);
static int put_block(
    void *vctx, uint64_t first_step, uint32_t no, block_enc *enc);

/* Where fold stores the blocks of one series, and the key of the last
 * block it stored (the tail). */
typedef struct fold_ctx {
	store_txn  *t;
	MDB_cursor *blocks;
	uint32_t    sid;
	uint32_t    last_no;
	uint64_t    last_fs;
} fold_ctx;

/*
 * The tail a direct append left, with its encoder: a narrow run's next
 * commit appends to the same tail, and copying the encoder costs less
 * than decoding the tail (up to 4 KB of samples) again. Slot sid %
 * TAIL_SLOTS (about 1.1 MB in all). Used only when the stored tail has
 * its key and bytes, so a slot left by an aborted transaction, or by a
 * tail a fold has moved on since, is never used; an encoder resumed
 * from a block's bytes is the one that wrote them (the codec's model is
 * a function of the samples).
 */
#define TAIL_SLOTS 256

struct journal_tail {
	uint32_t  sid, no;
	uint64_t  fs;
	int       used;
	block_enc enc;
};

/*
 * Clear direct[i] for each candidate group whose series has samples in
 * a journal record (its new samples must follow those, so they go to
 * the journal too). Returns 0 or a store_err.
 */
static int
pending_in_journal(
    store_txn *t, const store_group *g, size_t ng, uint8_t *direct)
{
	store      *st = t->st;
	MDB_cursor *cur;
	MDB_val     k, v;
	int         rc, own = 0;

	if (st->jrecords == 0)
		return 0;
	if ((rc = mdb_cursor_open(t->txn, st->journal, &cur)) != 0)
		return store_fail(st, rc, "reading the journal");
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		jrec r;
		jcur c;
		int  found = 0;

		if ((rc = rec_parse(st, &k, &v, &r)) != 0) {
			own = 1;
			break;
		}
		for (size_t i = 0; i < ng && rc == 0; i++) {
			if (!direct[i])
				continue;
			rc = cur_find(st, &r, g[i].sid, &c, &found);
			if (rc == 0 && found)
				direct[i] = 0;
		}
		if (rc != 0) {
			own = 1;
			break;
		}
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return 0;
	return own ? rc : store_fail(st, rc, "reading the journal");
}

/* Format 8: whether the n samples at y have the steps and times of the
 * n at x. */
static int
same_times(const store_sample *x, const store_sample *y, size_t n)
{
	for (size_t m = 0; m < n; m++)
		if (x[m].step != y[m].step || x[m].time_ns != y[m].time_ns)
			return 0;
	return 1;
}

/*
 * Append the n samples of series sid (none of it in the journal) to its
 * blocks, as a fold would, and count them in its record. Its jseen
 * moves to the last record written so far: none of them holds a sample
 * of it, so readers need not look it up there. Returns 0 or a
 * store_err.
 */
static int
direct_put(store_txn *t, fold_cur *fc, uint32_t sid, const store_sample *s,
    size_t n, block_enc *enc)
{
	store               *st = t->st;
	fold_ctx             c  = { t, fc->blocks, sid, 0, 0 };
	series_rec           rec;
	struct journal_tail *slot;
	int                  rc;

	if (st->jtails == NULL
	    && (st->jtails = calloc(TAIL_SLOTS, sizeof(*st->jtails)))
	        == NULL) {
		snprintf(
		    st->err, sizeof(st->err), "%s: out of memory", st->dir);
		return STORE_ENOMEM;
	}
	slot = &st->jtails[sid % TAIL_SLOTS];
	if ((rc = series_of_sid(t, fc, sid, &rec)) != 0)
		return rc;
	rc = journal_fold_series(
	    t, fc->blocks, slot, sid, s, n, enc, put_block, &c);
	slot->used = 0;
	if (rc != 0)
		return rc;
	slot->sid = sid;
	slot->no  = c.last_no;
	slot->fs  = c.last_fs;
	memcpy(&slot->enc, enc, sizeof(*enc));
	slot->used = 1;
	store_series_add(&rec, s, n);
	if (rec.jseen < t->st->jnext - 1)
		rec.jseen = t->st->jnext - 1;
	return series_put(t, fc, &rec);
}

int
store_journal_put(
    store_txn *t, const store_group *g, size_t ng, const store_sample *s)
{
	store              *st = t->st;
	uint64_t            ns = 0;
	uint8_t             key[8], *p, *pay, *q, *direct = NULL;
	size_t              need, nj = 0, ndirect = 0, nch;
	uint64_t            unit  = 1000000;
	uint32_t            prev  = 0;
	const store_sample *first = NULL;
	MDB_val             k, v;
	int                 rc, s0 = 1, c1 = 1, f32 = 1, many = 0;
	unsigned            flags;

	if (ng == 0)
		return 0;
	for (size_t i = 0; i < ng; i++) {
		if (g[i].n == 0 || (i > 0 && g[i].sid <= g[i - 1].sid)) {
			snprintf(st->err, sizeof(st->err),
			    "%s: journal groups out of order", st->dir);
			return STORE_ECORRUPT;
		}
		ndirect += g[i].n >= DIRECT_MIN;
	}
	if ((rc = load(t)) != 0)
		return rc;
	if (ndirect > 0) {
		block_enc *enc;
		fold_cur   fc;

		if ((direct = malloc(ng)) == NULL)
			goto nomem;
		for (size_t i = 0; i < ng; i++)
			direct[i] = g[i].n >= DIRECT_MIN;
		if ((rc = pending_in_journal(t, g, ng, direct)) != 0)
			goto out;
		if ((enc = malloc(sizeof(*enc))) == NULL)
			goto nomem;
		if ((rc = fold_cur_open(t, &fc)) != 0) {
			free(enc);
			goto out;
		}
		for (size_t i = 0, at = 0; i < ng; at += g[i].n, i++) {
			if (!direct[i])
				continue;
			rc = direct_put(t, &fc, g[i].sid, s + at, g[i].n, enc);
			if (rc != 0)
				break;
		}
		fold_cur_close(&fc);
		free(enc);
		if (rc != 0)
			goto out;
	}
	for (size_t i = 0, at = 0; i < ng; at += g[i].n, i++) {
		if (direct != NULL && direct[i])
			continue;
		if (first == NULL)
			first = s + at;
		nj++;
		ns += g[i].n;
		s0 &= s[at].step == first->step;
		many |= g[i].n > 1;
		/* Format 7: what its samples let the record leave out. */
		for (size_t m = 0; m < g[i].n && (c1 || f32); m++) {
			uint64_t bits;
			uint32_t f;

			memcpy(&bits, &s[at + m].value, sizeof(bits));
			f32 &= f32code_exact(bits, &f);
			c1 &= m == 0
			    || s[at + m].step == s[at + m - 1].step + 1;
		}
	}
	flags = (s0 ? REC7_S0 : 0) | (c1 && many ? REC7_C1 : 0)
	    | (f32 ? REC7_F32 | REC8_G : 0);
	if (nj == 0)
		goto out;
	if (nj > UINT32_MAX / REC_GROUP || ns > UINT32_MAX / SAMPLE_MAX) {
		snprintf(st->err, sizeof(st->err),
		    "%s: a journal record of %llu samples is too large",
		    st->dir, (unsigned long long) ns);
		rc = STORE_ECORRUPT;
		goto out;
	}
	nch  = (nj + REC_CHUNK - 1) / REC_CHUNK;
	need = REC3_HEAD + nch * 8 + nj * 10 + ns * SAMPLE_MAX;
	if (need > st->jcap) {
		uint8_t *nb = realloc(st->jbuf, need);

		if (nb == NULL)
			goto nomem;
		st->jbuf = nb;
		st->jcap = need;
	}
	/* The time unit: the largest of 10^6, 10^3 and 1 that divides
	 * every time delta of deltas the record codes. */
	for (size_t i = 0, at = 0; i < ng && unit > 1; at += g[i].n, i++)
		if (direct == NULL || !direct[i])
			unit = group_unit(first, &s[at], g[i].n, unit);
	p = st->jbuf;
	/* Format 8's tag where every value is a float32; format 6's
	 * where format 7's flags leave out nothing more. */
	wire_put32(p,
	    flags & REC8_G        ? REC_TAG8 | (flags & 7u)
	        : flags & REC7_C1 ? REC_TAG7 | flags
	        : s0              ? REC_TAG6S
	                          : REC_TAG4);
	wire_put32(p + 4, (uint32_t) nj);
	wire_put32(p + 8, (uint32_t) ns);
	wire_put64(p + 12, first->step);
	wire_put64(p + 20, (uint64_t) first->time_ns);
	wire_put32(p + 28, (uint32_t) unit);
	pay = p + REC3_HEAD + nch * 8;
	q   = pay;
	for (size_t i = 0, at = 0, j = 0, tpl = 0, tat = 0; i < ng;
	     at += g[i].n, i++) {
		int same = 0;

		if (direct != NULL && direct[i])
			continue;
		if (j % REC_CHUNK == 0) {
			uint8_t *e = p + REC3_HEAD + (j / REC_CHUNK) * 8;

			wire_put32(e, g[i].sid);
			wire_put32(e + 4, (uint32_t) (q - pay));
			prev = g[i].sid;
			tpl  = i;
			tat  = at;
		} else if (flags & REC8_G) {
			same = g[i].n == g[tpl].n
			    && same_times(&s[tat], &s[at], g[i].n);
		}
		j++;
		q = group_put(q, g[i].sid - prev, first, unit, &s[at], g[i].n,
		    flags, same);
		prev = g[i].sid;
	}
	be_put64(key, st->jnext);
	k.mv_data = key;
	k.mv_size = 8;
	v.mv_data = st->jbuf;
	v.mv_size = (size_t) (q - st->jbuf);
	rc        = mdb_put(t->txn, st->journal, &k, &v, MDB_APPEND);
	if (rc != 0) {
		rc = store_fail(st, rc, "writing the journal");
		goto out;
	}
	st->jnext++;
	st->jrecords++;
	st->jsamples += ns;
	st->jcrecords++;
	st->jcsamples += ns;
	if (nj > st->jwidest)
		st->jwidest = nj;
	goto out;
nomem:
	snprintf(st->err, sizeof(st->err), "%s: out of memory", st->dir);
	rc = STORE_ENOMEM;
out:
	free(direct);
	return rc;
}

/* ---- appending to blocks ---------------------------------------------- */

/* Whether hint holds the encoder of series sid's tail (key first step
 * fs, number no, bytes tv). */
static int
hint_is_tail(struct journal_tail *hint, uint32_t sid, uint64_t fs, uint32_t no,
    const MDB_val *tv)
{
	const uint8_t *hd;
	size_t         hl;

	if (hint == NULL || !hint->used || hint->sid != sid || hint->no != no
	    || hint->fs != fs)
		return 0;
	hd = block_enc_data(&hint->enc, &hl);
	return hl == tv->mv_size && memcmp(hd, tv->mv_data, hl) == 0;
}

int
journal_fold_series(store_txn *t, MDB_cursor *bcur, struct journal_tail *hint,
    uint32_t sid, const store_sample *s, size_t n, block_enc *enc,
    journal_emit_fn emit, void *ctx)
{
	store      *st  = t->st;
	MDB_cursor *cur = bcur;
	MDB_val     k, v, tv = { 0, NULL };
	uint8_t     key[16];
	uint64_t    fs = 0;
	uint32_t    no = 0, next = 0;
	int         rc, have     = 0;

	if (cur == NULL
	    && (rc = mdb_cursor_open(t->txn, st->blocks, &cur)) != 0)
		return store_fail(st, rc, "reading blocks");
	store_block_key(key, sid, 0, 0);
	k.mv_data = key;
	k.mv_size = 16;
	/* The tail is the block numbered last; numbers only grow. */
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kp = k.mv_data;
		uint32_t       kno;

		if (k.mv_size != 16 || memcmp(kp, key, 4) != 0)
			break;
		kno = be_get32(kp + 12);
		if (!have || kno >= no) {
			have = 1;
			no   = kno;
			fs   = be_get64(kp + 4);
			tv   = v;
		}
	}
	if (bcur == NULL)
		mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_fail(st, rc, "reading blocks");
	block_enc_init(enc);
	if (have && hint_is_tail(hint, sid, fs, no, &tv)) {
		memcpy(enc, &hint->enc, sizeof(*enc));
	} else if (have
	    && block_enc_resume(enc, tv.mv_data, tv.mv_size) != BLOCK_OK) {
		snprintf(st->err, sizeof(st->err),
		    "%s: tail block of series %u is corrupt", st->dir, sid);
		return STORE_ECORRUPT;
	}
	if (have)
		next = no + 1;
	for (size_t i = 0; i < n; i++) {
		rc = enc->count ? block_enc_append(
		         enc, s[i].step, s[i].time_ns, s[i].value)
		                : BLOCK_FULL;
		if (rc == BLOCK_OK)
			continue;
		if (enc->count > 0 && (rc = emit(ctx, fs, no, enc)) != 0)
			return rc;
		block_enc_init(enc);
		fs = s[i].step;
		no = next++;
		if (block_enc_append(enc, s[i].step, s[i].time_ns, s[i].value)
		    != BLOCK_OK)
			return corrupt(st, 0); /* cannot happen: empty */
	}
	if (n > 0 && enc->count > 0)
		return emit(ctx, fs, no, enc);
	return 0;
}

/* ---- readers ------------------------------------------------------------ */

/*
 * Call fn with each record numbered from or later, oldest first, as t
 * sees them. Returns 0, fn's non-zero value (a store_err it reported)
 * or a store_err.
 */
typedef int (*record_fn)(void *ctx, const jrec *r);

static int
records_each(store_txn *t, uint64_t from, record_fn fn, void *ctx)
{
	store      *st = t->st;
	MDB_cursor *cur;
	MDB_val     k, v;
	uint8_t     key[8];
	int         rc, own = 0, op = MDB_SET_RANGE;

	if (!st->has_journal)
		return 0;
	if ((rc = mdb_cursor_open(t->txn, st->journal, &cur)) != 0)
		return store_fail(st, rc, "reading the journal");
	be_put64(key, from);
	k.mv_data = key;
	k.mv_size = 8;
	for (; (rc = mdb_cursor_get(cur, &k, &v, op)) == 0; op = MDB_NEXT) {
		jrec r;

		if ((rc = rec_parse(st, &k, &v, &r)) != 0
		    || (rc = fn(ctx, &r)) != 0) {
			own = 1;
			break;
		}
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return 0;
	return own ? rc : store_fail(st, rc, "reading the journal");
}

/* A series' samples in the records, appended to a growing array. */
typedef struct copy_ctx {
	store        *st;
	uint32_t      sid;
	store_sample *buf;
	size_t        len, cap;
} copy_ctx;

static int
copy_series(void *vctx, const jrec *r)
{
	copy_ctx *c = vctx;
	jcur      jc;
	uint32_t  cnt;
	int       rc, found;

	if ((rc = cur_find(c->st, r, c->sid, &jc, &found)) != 0 || !found)
		return rc;
	return grp_copy(c->st, r, &jc, &c->buf, &c->len, &c->cap, &cnt);
}

int
journal_of_series(store_txn *t, uint32_t sid, store_sample **out, size_t *n)
{
	copy_ctx c = { t->st, sid, NULL, 0, 0 };
	int      rc;

	if ((rc = records_each(t, 0, copy_series, &c)) != 0) {
		free(c.buf);
		c.buf = NULL;
		c.len = 0;
	}
	*out = c.buf;
	*n   = c.len;
	return rc;
}

/* The sid of the i-th wanted series, and what is done with its group:
 * decoded from *p (cnt samples), *p then after them, or left. */
typedef uint32_t (*wanted_sid_fn)(void *ctx, size_t i);
typedef int (*wanted_group_fn)(void *ctx, size_t i, const jrec *r,
    const uint8_t **p, uint64_t cnt, const uint8_t *tpl);

/* The groups in record r of the n wanted series (in sid order), each
 * handed to on: one pass on through the record, by cur_seek. Returns 0
 * or a store_err. */
static int
wanted_groups(store *st, const jrec *r, size_t n, wanted_sid_fn sid_at,
    wanted_group_fn on, void *ctx)
{
	jcur jc;
	int  rc;

	if ((rc = cur_first(st, r, &jc)) != 0)
		return rc;
	for (size_t i = 0; i < n && jc.g < r->ngroups; i++) {
		const uint8_t *p, *start, *tpl;
		uint64_t       cnt;
		int            found;

		if ((rc = cur_seek(st, r, sid_at(ctx, i), &jc, &found)) != 0)
			return rc;
		if (!found)
			continue;
		if ((rc = grp_open(st, r, &jc, &p, &cnt, &tpl)) != 0)
			return rc;
		start = p;
		if ((rc = on(ctx, i, r, &p, cnt, tpl)) != 0)
			return rc;
		if (p != start)
			jc.next = p;
	}
	return 0;
}

/* The groups of the wanted series in one record (store_journal_groups). */
typedef struct groups_ctx {
	store                 *st;
	const uint32_t        *sids;
	size_t                 n;
	store_journal_group_fn fn;
	void                  *ctx;
} groups_ctx;

static uint32_t
groups_sid(void *vctx, size_t i)
{
	return ((groups_ctx *) vctx)->sids[i];
}

static int
groups_decode(void *vctx, size_t i, const jrec *r, const uint8_t **p,
    uint64_t cnt, const uint8_t *tpl)
{
	groups_ctx   *g   = vctx;
	store_sample *out = g->fn(g->ctx, g->sids[i], (size_t) cnt);

	return out == NULL ? 0 : grp_decode(g->st, r, p, cnt, tpl, out);
}

static int
groups_of(void *vctx, const jrec *r)
{
	groups_ctx *g = vctx;

	return wanted_groups(g->st, r, g->n, groups_sid, groups_decode, g);
}

int
store_journal_groups(store_txn *t, const uint32_t *sids, size_t n,
    store_journal_group_fn fn, void *ctx)
{
	groups_ctx g = { t->st, sids, n, fn, ctx };

	return n == 0 ? 0 : records_each(t, 0, groups_of, &g);
}

/* The statistics of the wanted series in one record
 * (store_journal_add_stats). */
typedef struct stats_ctx {
	store      *st;
	series_rec *recs;
	size_t      n;
} stats_ctx;

static uint32_t
stats_sid(void *vctx, size_t i)
{
	return ((stats_ctx *) vctx)->recs[i].sid;
}

static int
stats_add(void *vctx, size_t i, const jrec *r, const uint8_t **p, uint64_t cnt,
    const uint8_t *tpl)
{
	stats_ctx *x = vctx;

	return grp_add_stats(x->st, r, p, cnt, tpl, &x->recs[i]);
}

static int
stats_of(void *vctx, const jrec *r)
{
	stats_ctx *x = vctx;

	return wanted_groups(x->st, r, x->n, stats_sid, stats_add, x);
}

int
store_journal_add_stats(store_txn *t, series_rec *recs, size_t n)
{
	stats_ctx x = { t->st, recs, n };
	uint64_t  counted;
	int       rc;

	if (n == 0)
		return 0;
	/* Records up to journal_counted are in the statistics already;
	 * after it, every group of a series is after its jseen. */
	if ((rc = journal_counted(t, &counted)) != 0)
		return rc;
	return records_each(t, counted + 1, stats_of, &x);
}

/*
 * Whether series without an entry in stats have empty statistics in the
 * store t reads (format 7: none is written when a series is created),
 * rather than a corrupt store. A reader that opened an older store asks
 * the format again, as a writer may have converted it since (formats
 * only grow). 1 or 0.
 */
static int
stats_sparse(store_txn *t)
{
	uint64_t fmt;

	if (!t->st->stats_sparse
	    && store_meta_get(t, "format", 6, 4, &fmt) == 0 && fmt >= 7)
		t->st->stats_sparse = 1;
	return t->st->stats_sparse;
}

int
journal_series_stats(store_txn *t, series_rec *r)
{
	store  *st = t->st;
	uint8_t sk[4];
	MDB_val k, sv;
	int     rc;

	if (!st->has_stats)
		return 0;
	/* Format 3: the statistics are kept by sid. */
	be_put32(sk, r->sid);
	k.mv_data = sk;
	k.mv_size = 4;
	rc        = mdb_get(t->txn, st->stats, &k, &sv);
	if (rc == MDB_NOTFOUND && stats_sparse(t)) {
		store_stats_empty(r);
		return 0;
	}
	if (rc == MDB_NOTFOUND
	    || (rc == 0
	        && store_stats_decode(sv.mv_data, sv.mv_size, r) != 0)) {
		snprintf(st->err, sizeof(st->err),
		    "%s: the statistics of series %u are missing or "
		    "do not parse",
		    st->dir, r->sid);
		return STORE_ECORRUPT;
	}
	if (rc != 0)
		return store_fail(st, rc, "reading a series");
	return 0;
}

/* A series' journal samples added to its statistics, record by record
 * (journal_patch_series). */
typedef struct patch_ctx {
	store      *st;
	series_rec *r;
} patch_ctx;

static int
patch_series(void *vctx, const jrec *r)
{
	patch_ctx     *x = vctx;
	jcur           jc;
	const uint8_t *p, *tpl;
	uint64_t       cnt;
	int            rc, found;

	if ((rc = cur_find(x->st, r, x->r->sid, &jc, &found)) != 0 || !found)
		return rc;
	if ((rc = grp_open(x->st, r, &jc, &p, &cnt, &tpl)) != 0)
		return rc;
	return grp_add_stats(x->st, r, &p, cnt, tpl, x->r);
}

int
journal_patch_series(store_txn *t, series_rec *r)
{
	patch_ctx x = { t->st, r };
	int       rc;

	if ((rc = journal_series_stats(t, r)) != 0)
		return rc;
	if (r->jseen == UINT64_MAX)
		return 0;
	return records_each(t, r->jseen + 1, patch_series, &x);
}

/* ---- the fold ------------------------------------------------------------
 */

/* Where the merge of the records by sid stands in one record. */
typedef struct jpos {
	jrec r;
	jcur c; /* its next group */
} jpos;

/* A slot for one more record at the end of *pos (of *n, room for *cap),
 * or NULL when out of memory (*pos is then unchanged). */
static jpos *
jpos_add(jpos **pos, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		jpos  *np = realloc(*pos, nc * sizeof(*np));

		if (np == NULL)
			return NULL;
		*pos = np;
		*cap = nc;
	}
	return &(*pos)[(*n)++];
}

/*
 * The oldest records from number `from` on into *pos (of *npos, room
 * for *cap): at least one, then while their samples stay within
 * max_samples; *total their samples. Each record's cursor is at its
 * first group.
 */
static int
oldest_records(store_txn *t, uint64_t from, uint64_t max_samples, jpos **pos,
    size_t *npos, size_t *cap, uint64_t *total)
{
	store      *st  = t->st;
	MDB_cursor *cur = NULL;
	MDB_val     k, v;
	uint8_t     key[8];
	int         rc, op = MDB_SET_RANGE;

	*total = 0;
	if ((rc = mdb_cursor_open(t->txn, st->journal, &cur)) != 0)
		return store_fail(st, rc, "reading the journal");
	be_put64(key, from);
	k.mv_data = key;
	k.mv_size = 8;
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		jrec  r;
		jpos *x;

		op = MDB_NEXT;
		if ((rc = rec_parse(st, &k, &v, &r)) != 0)
			goto out;
		if (*npos > 0 && *total + r.nsamples > max_samples)
			break;
		if ((x = jpos_add(pos, npos, cap)) == NULL) {
			snprintf(st->err, sizeof(st->err), "%s: out of memory",
			    st->dir);
			rc = STORE_ENOMEM;
			goto out;
		}
		x->r = r;
		if ((rc = cur_first(st, &r, &x->c)) != 0)
			goto out;
		*total += r.nsamples;
	}
	if (rc == MDB_NOTFOUND)
		rc = 0;
	else if (rc != 0)
		rc = store_fail(st, rc, "reading the journal");
out:
	mdb_cursor_close(cur);
	return rc;
}

static int
fold_cur_open(store_txn *t, fold_cur *fc)
{
	store *st = t->st;
	int    rc;

	memset(fc, 0, sizeof(*fc));
	if ((rc = mdb_cursor_open(t->txn, st->stats, &fc->stats)) != 0
	    || (rc = mdb_cursor_open(t->txn, st->blocks, &fc->blocks)) != 0) {
		fold_cur_close(fc);
		return store_fail(st, rc, "opening cursors");
	}
	return 0;
}

static void
fold_cur_close(fold_cur *fc)
{
	if (fc->stats != NULL)
		mdb_cursor_close(fc->stats);
	if (fc->blocks != NULL)
		mdb_cursor_close(fc->blocks);
	memset(fc, 0, sizeof(*fc));
}

/* The statistics of series sid, leaving fc->stats on them (for
 * series_put), or empty ones where it has no entry in a format-7 store
 * (fc->absent: series_put adds it). Returns 0 or a store_err. */
static int
series_of_sid(store_txn *t, fold_cur *fc, uint32_t sid, series_rec *r)
{
	store  *st    = t->st;
	uint8_t sk[4] = { (uint8_t) (sid >> 24), (uint8_t) (sid >> 16),
		(uint8_t) (sid >> 8), (uint8_t) sid };
	MDB_val k     = { 4, sk }, v;
	int     rc;

	memset(r, 0, sizeof(*r));
	r->sid     = sid;
	fc->absent = 0;
	rc         = mdb_cursor_get(fc->stats, &k, &v, MDB_SET_KEY);
	if (rc == MDB_NOTFOUND && stats_sparse(t)) {
		store_stats_empty(r);
		fc->absent = 1;
		return 0;
	}
	if (rc != 0 || store_stats_decode(v.mv_data, v.mv_size, r) != 0) {
		if (rc == MDB_NOTFOUND || rc == 0) {
			snprintf(st->err, sizeof(st->err),
			    "%s: series %u has samples and its statistics are "
			    "missing or do not parse",
			    st->dir, sid);
			return STORE_ECORRUPT;
		}
		return store_fail(st, rc, "reading a series");
	}
	return 0;
}

/* Rewrite the statistics series_of_sid left fc->stats on (only blocks
 * were written since, in another database), where they are (in place
 * when their size is the same), or add them where it found none: the
 * fold and the count go in sid order, so into a wide run's empty stats
 * they go in key order, filling its pages. Returns 0 or a store_err. */
static int
series_put(store_txn *t, fold_cur *fc, const series_rec *r)
{
	uint8_t sk[4], buf[STATS_REC_SIZE];
	MDB_val k = { 4, sk }, v = { sizeof(buf), buf };
	int     rc;

	be_put32(sk, r->sid);
	v.mv_size = store_stats_encode(buf, r);
	rc = mdb_cursor_put(fc->stats, &k, &v, fc->absent ? 0 : MDB_CURRENT);
	fc->absent = 0;
	if (rc != 0)
		return store_fail(t->st, rc, "writing a series");
	return 0;
}

static int
put_block(void *vctx, uint64_t first_step, uint32_t no, block_enc *enc)
{
	fold_ctx *c = vctx;
	uint8_t   key[16];
	size_t    len;
	MDB_val   k, v;
	int       rc;

	c->last_fs = first_step;
	c->last_no = no;
	store_block_key(key, c->sid, first_step, no);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	v.mv_data = (void *) (uintptr_t) block_enc_data(enc, &len);
	v.mv_size = len;
	rc        = c->blocks != NULL
	           ? mdb_cursor_put(c->blocks, &k, &v, 0)
	           : mdb_put(c->t->txn, c->t->st->blocks, &k, &v, 0);
	if (rc != 0)
		return store_fail(c->t->st, rc, "writing a block");
	return 0;
}

/* The position with the lowest next sid (records break ties: the older
 * first), or -1 when every record is done. */
static long
lowest(const jpos *p, size_t n)
{
	long best = -1;

	for (size_t i = 0; i < n; i++) {
		if (p[i].c.g == p[i].r.ngroups)
			continue;
		if (best < 0 || p[i].c.sid < p[best].c.sid)
			best = (long) i;
	}
	return best;
}

int
store_fold(store_txn *t, uint64_t max_samples, uint64_t *folded)
{
	store        *st  = t->st;
	MDB_val       k;
	jpos         *pos  = NULL;
	size_t        npos = 0, cap = 0, len = 0, scap = 0;
	store_sample *buf   = NULL;
	block_enc    *enc   = NULL;
	fold_cur      fc    = { NULL, NULL, 0 };
	uint64_t      total = 0;
	int           rc;

	*folded = 0;
	if ((rc = load(t)) != 0)
		return rc;
	/* The oldest records: at least one, then while within the step. */
	rc = oldest_records(t, 0, max_samples, &pos, &npos, &cap, &total);
	if (rc != 0 || npos == 0)
		goto out;
	if ((enc = malloc(sizeof(*enc))) == NULL)
		goto nomem;
	if ((rc = fold_cur_open(t, &fc)) != 0)
		goto out;
	/*
	 * Series by series in sid order (each record is sorted by sid, so
	 * this is a merge), each series' samples in record order: the
	 * order they arrived in.
	 */
	for (long b; (b = lowest(pos, npos)) >= 0;) {
		fold_ctx   c = { t, fc.blocks, pos[b].c.sid, 0, 0 };
		series_rec rec;
		int        added = 0;

		/* The series' statistics count these samples from now on:
		 * the records holding them are deleted below. */
		if ((rc = series_of_sid(t, &fc, c.sid, &rec)) != 0)
			goto out;
		len = 0;
		for (size_t i = (size_t) b; i < npos; i++) {
			uint32_t n;
			size_t   at = len;

			if (pos[i].c.g == pos[i].r.ngroups
			    || pos[i].c.sid != c.sid)
				continue;
			if ((rc = grp_copy(st, &pos[i].r, &pos[i].c, &buf,
			         &len, &scap, &n))
			        != 0
			    || (rc = cur_next(st, &pos[i].r, &pos[i].c)) != 0)
				goto out;
			if (pos[i].r.no > rec.jseen) {
				store_series_add(&rec, buf + at, n);
				added = 1;
			}
		}
		rc = journal_fold_series(
		    t, fc.blocks, NULL, c.sid, buf, len, enc, put_block, &c);
		if (rc != 0)
			goto out;
		/* Counted already (store_journal_count): its statistics
		 * and jseen stay as they are. */
		if (!added)
			continue;
		if (rec.jseen < pos[npos - 1].r.no)
			rec.jseen = pos[npos - 1].r.no;
		if ((rc = series_put(t, &fc, &rec)) != 0)
			goto out;
	}
	/* The records go in the same transaction as their blocks. */
	for (size_t i = 0; i < npos; i++) {
		uint8_t key[8];

		be_put64(key, pos[i].r.no);
		k.mv_data = key;
		k.mv_size = 8;
		if ((rc = mdb_del(t->txn, st->journal, &k, NULL)) != 0) {
			rc = store_fail(st, rc, "deleting journal records");
			goto out;
		}
	}
	rc = store_meta_put(t, "journal_folded", 14, 8, pos[npos - 1].r.no);
	if (rc != 0)
		goto out;
	st->jrecords -= npos;
	st->jsamples -= total;
	st->jloaded = 0; /* the widest record may be gone: counted again */
	*folded = total;
	goto out;
nomem:
	snprintf(st->err, sizeof(st->err), "%s: out of memory", st->dir);
	rc = STORE_ENOMEM;
out:
	free(pos);
	free(buf);
	fold_cur_close(&fc);
	free(enc);
	return rc;
}

/* ---- counting records ------------------------------------------------
 */

int
store_journal_count(store_txn *t, uint64_t max_samples, uint64_t *counted)
{
	store      *st   = t->st;
	jpos       *pos  = NULL;
	size_t      npos = 0, cap = 0;
	fold_cur    fc    = { NULL, NULL, 0 };
	uint64_t    total = 0, last;
	int         rc;

	*counted = 0;
	if ((rc = load(t)) != 0)
		return rc;
	/* The oldest records not counted: at least one, then while within
	 * max_samples. */
	rc = oldest_records(
	    t, st->jcounted + 1, max_samples, &pos, &npos, &cap, &total);
	if (rc != 0 || npos == 0)
		goto out;
	last = pos[npos - 1].r.no;
	if ((rc = fold_cur_open(t, &fc)) != 0)
		goto out;
	/* Series by series in sid order, as the fold: each series' groups
	 * in record order (the order they arrived), added to its
	 * statistics unless its jseen is past them; its jseen moves to the
	 * last record counted. */
	for (long b; (b = lowest(pos, npos)) >= 0;) {
		uint32_t   sid = pos[b].c.sid;
		series_rec rec;

		if ((rc = series_of_sid(t, &fc, sid, &rec)) != 0)
			goto out;
		for (size_t i = (size_t) b; i < npos; i++) {
			const uint8_t *p, *tpl;
			uint64_t       cnt;

			if (pos[i].c.g == pos[i].r.ngroups
			    || pos[i].c.sid != sid)
				continue;
			if ((rc = grp_open(
			         st, &pos[i].r, &pos[i].c, &p, &cnt, &tpl))
			    != 0)
				goto out;
			if (pos[i].r.no > rec.jseen) {
				if ((rc = grp_add_stats(
				         st, &pos[i].r, &p, cnt, tpl, &rec))
				    != 0)
					goto out;
				pos[i].c.next = p;
			}
			if ((rc = cur_next(st, &pos[i].r, &pos[i].c)) != 0)
				goto out;
		}
		if (rec.jseen >= last)
			continue;
		rec.jseen = last;
		if ((rc = series_put(t, &fc, &rec)) != 0)
			goto out;
	}
	if ((rc = store_meta_put(t, "journal_counted", 15, 8, last)) != 0)
		goto out;
	st->jcounted = last;
	st->jcrecords -= npos;
	st->jcsamples -= total;
	*counted = total;
	goto out;
out:
	free(pos);
	fold_cur_close(&fc);
	return rc;
}

int
store_journal_uncounted(store_txn *t, uint64_t *records, uint64_t *samples)
{
	int rc = load(t);

	*records = t->st->jcrecords;
	*samples = t->st->jcsamples;
	return rc;
}

/* ---- merging records ---------------------------------------------------
 */

/* Room for n more bytes at *len in the growing buffer *buf of *cap.
 * Returns 0 or -1. */
static int
buf_room(uint8_t **buf, size_t *cap, size_t len, size_t n)
{
	size_t   nc = *cap ? *cap : 65536;
	uint8_t *nb;

	if (len + n <= *cap)
		return 0;
	while (nc < len + n)
		nc *= 2;
	if ((nb = realloc(*buf, nc)) == NULL)
		return -1;
	*buf = nb;
	*cap = nc;
	return 0;
}

/*
 * The time unit a merge of the records at pos whose first sample is
 * first most likely takes, read from their headers: the largest of
 * 10^6, 10^3 and 1 that divides each record's unit and its base time
 * less first's time. Since format 3 a record's unit is the largest
 * that divides each of its samples' times less its base time
 * (group_unit, from 10^6), and its base time is one of its samples'
 * times, so this is the unit group_unit finds over all their samples
 * from first, but where times wrap around (2^63 apart) or a record is
 * of format 2 (no unit: 1). merge_pass checks it.
 */
static uint64_t
merge_unit(const jpos *pos, size_t npos, const store_sample *first)
{
	uint64_t unit = 1000000;

	for (size_t i = 0; i < npos; i++) {
		int64_t d = (int64_t) ((uint64_t) pos[i].r.time
		    - (uint64_t) first->time_ns);

		if (pos[i].r.unit < unit)
			unit = pos[i].r.unit;
		while (!unit_divides(unit, d))
			unit /= 1000;
	}
	return unit;
}

/* What a merge builds: its chunk table (tab, tlen bytes of tcap) and
 * payload (pay, plen of pcap), its groups, the time unit it coded them
 * in (unit) and the one they take (found: group_unit over them all). */
typedef struct merge_out {
	uint8_t *tab, *pay;
	size_t   tlen, tcap, plen, pcap;
	uint64_t ngroups, unit, found;
} merge_out;

/*
 * Merge the records at pos (reset to their first groups) by sid, each
 * series' samples in record order (decoded into *buf, of *bcap), and
 * code the groups into o in format 6's block code (bgroup_put, with
 * enc) in time unit `unit` (0: merge_unit's), *first their first
 * sample. The bytes are the merged record's when o->found, the unit
 * the samples take, is o->unit; else merge again in o->found (a guess
 * from the headers that was wrong). Returns 0 or a store_err.
 */
static int
merge_pass(store *st, jpos *pos, size_t npos, uint64_t unit, merge_out *o,
    store_sample *first, store_sample **buf, size_t *bcap, block_enc *enc)
{
	uint64_t g    = 0;
	uint32_t prev = 0;
	int      rc;

	o->tlen = o->plen = 0;
	o->unit           = unit ? unit : 1000000;
	o->found          = 1000000;
	for (size_t i = 0; i < npos; i++)
		if ((rc = cur_first(st, &pos[i].r, &pos[i].c)) != 0)
			return rc;
	for (long b; (b = lowest(pos, npos)) >= 0; g++) {
		uint32_t sid = pos[b].c.sid;
		size_t   len = 0;
		uint8_t *q;

		for (size_t i = (size_t) b; i < npos; i++) {
			uint32_t n;

			if (pos[i].c.g == pos[i].r.ngroups
			    || pos[i].c.sid != sid)
				continue;
			if ((rc = grp_copy(st, &pos[i].r, &pos[i].c, buf, &len,
			         bcap, &n))
			        != 0
			    || (rc = cur_next(st, &pos[i].r, &pos[i].c)) != 0)
				return rc;
		}
		if (g == 0) {
			*first = (*buf)[0];
			if (unit == 0)
				o->unit = merge_unit(pos, npos, first);
		}
		o->found = group_unit(first, *buf, len, o->found);
		if (buf_room(&o->pay, &o->pcap, o->plen,
		        30
		            + (len * SAMPLE_MAX > BLOCK_MAX_BYTES
		                    ? len * SAMPLE_MAX
		                    : BLOCK_MAX_BYTES))
		        != 0
		    || buf_room(&o->tab, &o->tcap, o->tlen, 8) != 0)
			goto nomem;
		if (g % MERGE_CHUNK == 0) {
			wire_put32(o->tab + o->tlen, sid);
			wire_put32(o->tab + o->tlen + 4, (uint32_t) o->plen);
			o->tlen += 8;
			prev = sid;
		}
		q    = bgroup_put(o->pay + o->plen, sid - prev, first, o->unit,
		       *buf, len, enc);
		prev = sid;
		o->plen = (size_t) (q - o->pay);
	}
	o->ngroups = g;
	return 0;
nomem:
	snprintf(st->err, sizeof(st->err), "%s: out of memory", st->dir);
	return STORE_ENOMEM;
}

int
store_journal_merge(store_txn *t, uint64_t min_fresh, uint64_t min_samples,
    uint64_t max_samples, uint64_t *merged)
{
	store        *st  = t->st;
	MDB_cursor   *cur = NULL;
	MDB_val       k, v;
	jpos         *pos  = NULL;
	size_t        npos = 0, cap = 0, bcap = 0;
	uint8_t       key[8], head[REC3_HEAD];
	merge_out     o   = { NULL, NULL, 0, 0, 0, 0, 0, 0, 0 };
	store_sample *buf = NULL, first = { 0, 0, 0 };
	block_enc    *enc = NULL;
	uint64_t      ng = 0, ns = 0;
	int           rc, op = MDB_LAST;

	*merged = 0;
	if ((rc = load(t)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(t->txn, st->journal, &cur)) != 0)
		return store_fail(st, rc, "reading the journal");
	/* The newest records a commit wrote, newest first. */
	for (; (rc = mdb_cursor_get(cur, &k, &v, op)) == 0; op = MDB_PREV) {
		jrec  r;
		jpos *x;

		if ((rc = rec_parse(st, &k, &v, &r)) != 0)
			goto out;
		/* Nor a counted record: its samples would move past the
		 * jseen of their series, and be counted again. */
		if (r.merged || r.nsamples < min_samples
		    || r.no <= st->jcounted)
			break;
		if ((x = jpos_add(&pos, &npos, &cap)) == NULL)
			goto nomem;
		x->r = r;
	}
	if (rc != 0 && rc != MDB_NOTFOUND) {
		rc = store_fail(st, rc, "reading the journal");
		goto out;
	}
	rc = 0;
	if (npos < 2 || npos < min_fresh)
		goto out;
	/* Oldest first, as the fold merges them. */
	for (size_t i = 0; i < npos / 2; i++) {
		jpos x            = pos[i];
		pos[i]            = pos[npos - 1 - i];
		pos[npos - 1 - i] = x;
	}
	/* The oldest of them, as many as hold at most max_samples (2 at
	 * least): the newer ones stay after the merged record, to be
	 * merged next (merging the newest would leave the older ones
	 * behind it, never merged, and a wide run's records, ten to a
	 * merge, would reach the records bound and be folded early). */
	for (size_t i = 0; i < npos; i++) {
		if (i >= 2 && ns + pos[i].r.nsamples > max_samples) {
			npos = i;
			break;
		}
		ns += pos[i].r.nsamples;
	}
	if (ns > UINT32_MAX / SAMPLE_MAX)
		goto out;
	if ((enc = malloc(sizeof(*enc))) == NULL)
		goto nomem;
	block_enc_init(enc);
	/* One pass in the unit the headers give, a second where the
	 * samples take another (what decoding them first would find). */
	rc = merge_pass(st, pos, npos, 0, &o, &first, &buf, &bcap, enc);
	if (rc == 0 && o.found != o.unit)
		rc = merge_pass(
		    st, pos, npos, o.found, &o, &first, &buf, &bcap, enc);
	if (rc != 0)
		goto out;
	ng = o.ngroups;
	wire_put32(head, REC_TAG6M);
	wire_put32(head + 4, (uint32_t) ng);
	wire_put32(head + 8, (uint32_t) ns);
	wire_put64(head + 12, first.step);
	wire_put64(head + 20, (uint64_t) first.time_ns);
	wire_put32(head + 28, (uint32_t) o.unit);
	/* The record goes together before the old ones are deleted (their
	 * pages are read until then). */
	{
		size_t hl = REC3_HEAD + o.tlen;

		if (buf_room(&o.pay, &o.pcap, o.plen, hl) != 0)
			goto nomem;
		memmove(o.pay + hl, o.pay, o.plen);
		memcpy(o.pay, head, REC3_HEAD);
		memcpy(o.pay + REC3_HEAD, o.tab, o.tlen);
		o.plen += hl;
		mdb_cursor_close(cur);
		cur = NULL;
		for (size_t i = 0; i + 1 < npos; i++) {
			be_put64(key, pos[i].r.no);
			k.mv_data = key;
			k.mv_size = 8;
			if ((rc = mdb_del(t->txn, st->journal, &k, NULL))
			    != 0) {
				rc = store_fail(
				    st, rc, "merging journal records");
				goto out;
			}
		}
		be_put64(key, pos[npos - 1].r.no);
		k.mv_data = key;
		k.mv_size = 8;
		v.mv_data = o.pay;
		v.mv_size = o.plen;
		if ((rc = mdb_put(t->txn, st->journal, &k, &v, 0)) != 0) {
			rc = store_fail(st, rc, "merging journal records");
			goto out;
		}
	}
	st->jrecords -= npos - 1;
	st->jcrecords -= npos - 1;
	if (ng > st->jwidest) /* it holds the groups of those it replaced */
		st->jwidest = ng;
	*merged = npos;
	goto out;
nomem:
	snprintf(st->err, sizeof(st->err), "%s: out of memory", st->dir);
	rc = STORE_ENOMEM;
out:
	if (cur != NULL)
		mdb_cursor_close(cur);
	free(pos);
	free(buf);
	free(o.pay);
	free(o.tab);
	free(enc);
	return rc;
}
