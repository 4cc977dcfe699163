/*
 * wire: the binary protocol between emitters and the collector.
 * docs/protocol.md is the normative description; this module encodes and
 * validates it. Integers are little-endian (wire/le.h).
 *
 * The module owns the message layout: every offset, size and limit of a
 * BATCH and an ACK is spelled here and in wire.c only, and everyone else
 * reads and writes messages through these calls (the emitter rewrites a
 * sealed batch's floor with wire_put_batch_floor(); the collector names a
 * batch it cannot decode with wire_batch_peek()). It must not touch
 * anything else: no sockets, no allocation, no clock, no store. It is
 * linked into libvitals, vitalsd and the fuzzers, and exports nothing
 * from libvitals.so (the library's ABI is include/vitals.h).
 */
#ifndef WIRE_H
#define WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "wire/le.h"

#define WIRE_MAGIC0 'V'
#define WIRE_MAGIC1 'T'
#define WIRE_VERSION 1

enum wire_type {
	WIRE_BATCH = 1,
	WIRE_ACK   = 2,
};

/* ACK status values. */
enum wire_ack_status {
	WIRE_ACK_STORED    = 0, /* committed in this acknowledgement */
	WIRE_ACK_DUPLICATE = 1, /* was already stored; discarded */
	WIRE_ACK_REJECTED  = 2, /* malformed: never send it again */
};

/* BATCH flags (offset 4). */
enum wire_batch_flags {
	WIRE_FINAL  = 1, /* the emitter closed normally: its last batch */
	WIRE_URGENT = 2, /* the emitter waits for it (a flush, a close) */
	/* Layout: a u64 `refused` follows the fixed header (offset 64) and
	 * the rest moves by 8. Set by wire_put_batch_head_refused() only. */
	WIRE_REFUSED = 4,
};
#define WIRE_FLAGS_KNOWN (WIRE_FINAL | WIRE_URGENT | WIRE_REFUSED)
#define WIRE_REFUSED_SIZE 8

#define WIRE_BATCH_FIXED 64 /* bytes before the run name */
#define WIRE_SAMPLE_SIZE 26 /* u16 name, u64 step, i64 time, f64 value */
#define WIRE_ACK_SIZE 24
#define WIRE_NAME_MAX 255
#define WIRE_RUN_MAX 128
#define WIRE_HOST_MAX 255
#define WIRE_MAX_MESSAGE (16u << 20)

/* Identity of an emitter, repeated in every batch so that a batch stands
 * alone (the collector may have restarted since the last one). */
typedef struct wire_ident {
	uint64_t    incarnation;
	uint64_t    start_ns; /* when the emitter was opened */
	uint32_t    pid;
	int32_t     rank;
	int32_t     local_rank;
	int32_t     world_size;
	const char *run; /* borrowed; not NUL-terminated when decoded */
	uint16_t    run_len;
	const char *host;
	uint16_t    host_len;
} wire_ident;

typedef struct wire_sample {
	uint16_t name; /* index into the batch's name table */
	uint64_t step;
	int64_t  time_ns;
	double   value;
} wire_sample;

/* A decoded batch: a view into the message buffer, valid while it is. */
typedef struct wire_batch {
	wire_ident     id;
	uint32_t       flags; /* enum wire_batch_flags */
	uint64_t       seq;
	uint64_t       floor;   /* all seqs below are settled at the emitter */
	uint64_t       dropped; /* cumulative samples dropped by the emitter */
	uint64_t       refused; /* cumulative samples the emitter refused
	                         * (bad name, name table full); 0 if the
	                         * batch does not carry the count */
	uint16_t       nnames;
	const uint8_t *names; /* nnames x (u8 len, bytes) */
	uint32_t       nsamples;
	const uint8_t *samples; /* nsamples x WIRE_SAMPLE_SIZE */
} wire_batch;

typedef struct wire_ack {
	uint32_t status;
	uint64_t incarnation;
	uint64_t seq;
} wire_ack;

/*
 * Check that [s, s+len) is a valid name: 1..max bytes of UTF-8 without
 * control characters (C0, DEL) and without the NUL byte.
 * Returns 0 if valid, else -1.
 */
int wire_name_check(const char *s, size_t len, size_t max);

/*
 * Size of the batch header for this identity and name table, i.e. the
 * offset of the first sample. names_bytes is the sum of (1 + len) over the
 * names.
 */
size_t wire_batch_header_size(const wire_ident *id, size_t names_bytes);

/*
 * Write a batch header into buf (which must hold
 * wire_batch_header_size() bytes). The name table is written by the caller
 * with wire_put_name() right after, then nsamples samples with
 * wire_put_sample(). Returns the offset after the header's fixed part and
 * identity strings (where the name count goes).
 */
size_t wire_put_batch_head(uint8_t *buf, const wire_ident *id, uint64_t seq,
    uint64_t floor, uint64_t dropped);
/*
 * wire_put_batch_head(), and if refused > 0 the WIRE_REFUSED flag and the
 * count after the fixed header (the batch is then WIRE_REFUSED_SIZE bytes
 * longer than wire_batch_header_size() says). A collector older than the
 * flag rejects such a batch: wire_batch_strip_refused() turns it into
 * the plain layout to send again.
 */
size_t wire_put_batch_head_refused(uint8_t *buf, const wire_ident *id,
    uint64_t seq, uint64_t floor, uint64_t dropped, uint64_t refused);
/* Turn a batch of len bytes carrying WIRE_REFUSED into the plain layout
 * in place: the count is removed and *len shrinks by WIRE_REFUSED_SIZE.
 * Returns 1 if it did, 0 if the batch has no such count. */
int wire_batch_strip_refused(uint8_t *buf, size_t *len);
/* Sets the flags of a batch whose head is written (they start at 0); the
 * layout flag WIRE_REFUSED is kept as the head wrote it. */
void wire_put_batch_flags(uint8_t *buf, uint32_t flags);
/* Sets the floor of a batch whose head is written: a sealed batch is sent
 * again with the floor the emitter has reached since. */
void wire_put_batch_floor(uint8_t *buf, uint64_t floor);
/* Writes the name count at *off, advancing it. */
void wire_put_names_count(uint8_t *buf, size_t *off, uint16_t n);
/* Writes one name (u8 length, bytes) at *off, advancing it. */
void wire_put_name(uint8_t *buf, size_t *off, const char *name, size_t len);
/* Writes the sample count at *off, advancing it. */
void wire_put_samples_count(uint8_t *buf, size_t *off, uint32_t n);
/* Writes one sample at *off, advancing it. */
void wire_put_sample(uint8_t *buf, size_t *off, const wire_sample *s);

/*
 * Validate and decode a batch. Every length, count, name and index is
 * checked against len; nothing is trusted. On failure returns -1 and
 * writes a one-line reason to err (with the byte offset).
 */
int wire_batch_decode(
    const void *buf, size_t len, wire_batch *out, char *err, size_t errlen);

/*
 * Read the incarnation and sequence of a message that did not decode, so
 * that the collector can refuse the batch it names. Returns 0 if the
 * message is long enough and starts as a BATCH (magic, type; any
 * version), else -1 and leaves the outputs alone.
 */
int wire_batch_peek(
    const void *buf, size_t len, uint64_t *incarnation, uint64_t *seq);

/* Sample i of a decoded batch (i < nsamples). */
void wire_batch_sample(const wire_batch *b, uint32_t i, wire_sample *out);

/*
 * Name i of a decoded batch: sets *len and returns a pointer into the
 * message (not NUL-terminated). Walks the table: O(i). Callers that need
 * every name use wire_names_next().
 */
const char *wire_batch_name(const wire_batch *b, uint16_t i, size_t *len);

/* Iterate the name table: *off starts at 0. Returns the name and its
 * length, or NULL after the last one. */
const char *wire_names_next(const wire_batch *b, size_t *off, size_t *len);

/* Encode an ACK into buf[WIRE_ACK_SIZE]. */
void wire_ack_encode(uint8_t *buf, const wire_ack *a);
/* Decode an ACK; -1 if malformed. */
int wire_ack_decode(const void *buf, size_t len, wire_ack *out);

#endif /* WIRE_H */
