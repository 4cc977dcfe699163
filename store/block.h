/*
 * block: the compressed encoding of a run of samples of one series.
 *
 * A block holds samples (step, time_ns, value) with non-decreasing steps,
 * at most BLOCK_MAX_BYTES long so that it fills one LMDB overflow page.
 * Steps are delta-of-delta coded; times as their delta less the median of
 * the last three, in the coarsest decimal unit the data allow (so times a
 * caller rounded to us or ms cost no more than that); values as the
 * difference of their bit patterns to a predicted one (previous value,
 * linear extrapolation or moving average, whichever did best lately) with
 * the trailing zero bits all values share dropped. Each residual is
 * written with an adaptive Rice code, bit-packed (Gorilla-style). The
 * encoding is lossless: every double (NaN payloads, -0.0, infinities),
 * uint64 step and int64 time decodes bit-exact. docs/storage-block.md
 * describes the bit layout.
 *
 * The fixed header lets a reader skip a block without decoding it.
 */
#ifndef BLOCK_H
#define BLOCK_H

#include <stddef.h>
#include <stdint.h>

/* 4096-byte page minus LMDB's 16-byte page header: one overflow page. */
#define BLOCK_MAX_BYTES 4080
#define BLOCK_HEADER_SIZE 40

/* Fixed header, readable without decoding. */
typedef struct block_info {
	uint32_t count;
	uint64_t first_step;
	uint64_t last_step;
	int64_t  first_time;
	int64_t  last_time;
} block_info;

/* What encoder and decoder both know after each sample, from which the
 * next sample is predicted and its codes are chosen. Private to block.c. */
typedef struct block_model {
	uint64_t step, step_delta;
	uint64_t time;          /* int64 times, wrapping arithmetic */
	uint64_t time_delta[3]; /* the last three time deltas, newest first */
	uint64_t value, value2; /* bit patterns of the last two values */
	uint64_t value_avg;     /* moving average of the bit patterns */
	uint32_t pred_score[3]; /* recent success of each value predictor */
	uint32_t mean_len[3];   /* steps, times, values: code length stats */
	uint32_t n;             /* samples after the first */
	uint8_t  unit;          /* time residuals count 10^unit ns */
	uint8_t  shift;         /* trailing zero bits dropped from values */
} block_model;

/* An encoder: appends samples to a block being built. Plain value, no
 * heap; one thread at a time. */
typedef struct block_enc {
	uint8_t     buf[BLOCK_MAX_BYTES + 8]; /* 8 bytes of zero slack */
	uint32_t    bits;                     /* bits used after the header */
	uint32_t    count;
	uint64_t    first_step;
	int64_t     first_time;
	block_model m;
	/* Bits spent on steps, times and values (a statistic for benchmarks
	 * and tuning; the first value counts under values). */
	uint32_t field_bits[3];
} block_enc;

enum {
	BLOCK_OK      = 0,
	BLOCK_FULL    = 1, /* not appended: start a new block */
	BLOCK_ORDER   = 2, /* not appended: step below the last step */
	BLOCK_CORRUPT = 3  /* input is not a valid block */
};

/* Start an empty block. */
void block_enc_init(block_enc *e);

/* Append one sample. Returns BLOCK_OK, or BLOCK_FULL / BLOCK_ORDER with the
 * block unchanged. */
int block_enc_append(block_enc *e, uint64_t step, int64_t time_ns, double v);

/* The encoded block so far (header filled in): *len bytes. Borrowed, valid
 * until the next append. */
const uint8_t *block_enc_data(block_enc *e, size_t *len);

/* The block's bit stream alone, without its header (*len bytes, the
 * first sample's value verbatim first): for a caller that keeps the
 * count and the first step and time itself (the journal's merged
 * records, store/journal.c). Borrowed, valid until the next append. */
const uint8_t *block_enc_stream(const block_enc *e, size_t *len);

/* Empty e again, as block_enc_init, clearing only the bytes its samples
 * used (an encoder reused for many short streams). */
void block_enc_clear(block_enc *e);

/* Reopen a stored block to append to it. Returns BLOCK_OK or
 * BLOCK_CORRUPT. */
int block_enc_resume(block_enc *e, const void *data, size_t len);

/* Read the header of a stored block. Returns BLOCK_OK or BLOCK_CORRUPT. */
int block_peek(const void *data, size_t len, block_info *out);

/* Samples a decoder decodes at a time (into its buffer). */
#define BLOCK_DEC_BATCH 16

/* A decoder over a stored block; borrows data, valid while it lives. One
 * thread at a time. */
typedef struct block_dec {
	const uint8_t *stream; /* the bit stream after the header */
	uint32_t       nbytes; /* bytes of stream */
	uint32_t       bitpos, bitend;
	uint32_t       left;  /* samples not yet decoded */
	uint32_t       index; /* samples decoded */
	int            bad;   /* a corrupt sample was seen: stay failed */
	int            bare;  /* a stream without header (init_stream) */
	uint64_t       last_step, last_time; /* from the header, checked */
	block_model    m;
	uint32_t       field_bits[3]; /* as in block_enc, so far */
	/* decoded samples not yet returned: buf_*[next .. nbuf - 1] */
	uint8_t  next, nbuf;
	uint64_t buf_step[BLOCK_DEC_BATCH];
	uint64_t buf_time[BLOCK_DEC_BATCH];
	uint64_t buf_value[BLOCK_DEC_BATCH];
} block_dec;

/* Returns BLOCK_OK or BLOCK_CORRUPT. */
int block_dec_init(block_dec *d, const void *data, size_t len);

/* A decoder over a bare stream (block_enc_stream's) of count samples
 * (at least 1) whose first has step first_step and time first_time:
 * the stream must end within its last byte, on zero bits. Borrows
 * stream. Returns BLOCK_OK or BLOCK_CORRUPT. */
int block_dec_init_stream(block_dec *d, const void *stream, size_t nbytes,
    uint32_t count, uint64_t first_step, int64_t first_time);

/* Next sample: returns 1 and fills the outputs, 0 at the end, -1 if the
 * block is corrupt (truncated bit stream, impossible codes), after the
 * samples before the corrupt one, and from then on. */
int block_dec_next(block_dec *d, uint64_t *step, int64_t *time_ns, double *v);

#endif /* BLOCK_H */
