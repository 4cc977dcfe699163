#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * UTF-8 per RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF. Control characters are refused because names end up in CSV,
 * JSON and on a terminal.
 */
/*
 * Whether the 8 bytes of w are all printable ASCII (0x20 to 0x7e): no
 * byte has its top bit, none is below 0x20 (the borrow test is exact for
 * whether such a byte exists), none is DEL.
 */
static int
printable8(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, tops = ones * 0x80;
	uint64_t       del = w ^ (ones * 0x7f);

	return ((w & tops) | ((w - ones * 0x20) & ~w & tops)
	           | ((del - ones) & ~del & tops))
	    == 0;
}

int
wire_name_check(const char *s, size_t len, size_t max)
{
	const uint8_t *p = (const uint8_t *) s;
	size_t         i = 0;

	if (len == 0 || len > max)
		return -1;
	/* Names are nearly always plain ASCII, and a wide batch checks as
	 * many names as it has samples: 8 bytes at a time first, byte by
	 * byte from the first word that is not. */
	for (uint64_t w; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		if (!printable8(w))
			break;
	}
	/* The last bytes of a name of 8 or more: the 8 that end it (some
	 * checked already), when all are printable. */
	if (i < len && len >= 8 && i + 8 > len) {
		uint64_t w;

		memcpy(&w, p + len - 8, 8);
		if (printable8(w))
			return 0;
	}
	while (i < len) {
		uint8_t  c = p[i];
		uint32_t cp;
		size_t   n;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f)
				return -1;
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n  = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n  = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n  = 3;
			cp = c & 0x07;
		} else {
			return -1;
		}
		if (i + n >= len)
			return -1;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return -1;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		/* C1 controls */
		if (cp >= 0x80 && cp <= 0x9f)
			return -1;
		i += n + 1;
	}
	return 0;
}

size_t
wire_batch_header_size(const wire_ident *id, size_t names_bytes)
{
	return WIRE_BATCH_FIXED + 2 + id->run_len + 2 + id->host_len + 2 +
	    names_bytes + 4;
}

void
wire_put_batch_flags(uint8_t *buf, uint32_t flags)
{
	uint32_t layout = wire_get32(buf + 4) & WIRE_REFUSED;

	wire_put32(buf + 4, layout | (flags & ~(uint32_t) WIRE_REFUSED));
}

void
wire_put_batch_floor(uint8_t *buf, uint64_t floor)
{
	wire_put64(buf + 24, floor);
}

size_t
wire_put_batch_head(uint8_t *buf, const wire_ident *id, uint64_t seq,
    uint64_t floor, uint64_t dropped)
{
	size_t off;

	buf[0] = WIRE_MAGIC0;
	buf[1] = WIRE_MAGIC1;
	buf[2] = WIRE_VERSION;
	buf[3] = WIRE_BATCH;
	wire_put32(buf + 4, 0);
	wire_put64(buf + 8, id->incarnation);
	wire_put64(buf + 16, seq);
	wire_put64(buf + 24, floor);
	wire_put64(buf + 32, dropped);
	wire_put64(buf + 40, id->start_ns);
	wire_put32(buf + 48, id->pid);
	wire_put32(buf + 52, (uint32_t) id->rank);
	wire_put32(buf + 56, (uint32_t) id->local_rank);
	wire_put32(buf + 60, (uint32_t) id->world_size);
	off = WIRE_BATCH_FIXED;
	wire_put16(buf + off, id->run_len);
	memcpy(buf + off + 2, id->run, id->run_len);
	off += 2 + id->run_len;
	wire_put16(buf + off, id->host_len);
	memcpy(buf + off + 2, id->host, id->host_len);
	off += 2 + id->host_len;
	return off;
}

size_t
wire_put_batch_head_refused(uint8_t *buf, const wire_ident *id, uint64_t seq,
    uint64_t floor, uint64_t dropped, uint64_t refused)
{
	size_t off;

	if (refused == 0)
		return wire_put_batch_head(buf, id, seq, floor, dropped);
	/* The identity goes WIRE_REFUSED_SIZE bytes further: written at the
	 * usual place, then moved (it is short). */
	off = wire_put_batch_head(buf, id, seq, floor, dropped);
	memmove(buf + WIRE_BATCH_FIXED + WIRE_REFUSED_SIZE,
	    buf + WIRE_BATCH_FIXED, off - WIRE_BATCH_FIXED);
	wire_put64(buf + WIRE_BATCH_FIXED, refused);
	wire_put32(buf + 4, wire_get32(buf + 4) | WIRE_REFUSED);
	return off + WIRE_REFUSED_SIZE;
}

int
wire_batch_strip_refused(uint8_t *buf, size_t *len)
{
	uint32_t flags;

	if (*len < WIRE_BATCH_FIXED + WIRE_REFUSED_SIZE)
		return 0;
	flags = wire_get32(buf + 4);
	if (!(flags & WIRE_REFUSED))
		return 0;
	memmove(buf + WIRE_BATCH_FIXED,
	    buf + WIRE_BATCH_FIXED + WIRE_REFUSED_SIZE,
	    *len - WIRE_BATCH_FIXED - WIRE_REFUSED_SIZE);
	wire_put32(buf + 4, flags & ~(uint32_t) WIRE_REFUSED);
	*len -= WIRE_REFUSED_SIZE;
	return 1;
}

void
wire_put_names_count(uint8_t *buf, size_t *off, uint16_t n)
{
	wire_put16(buf + *off, n);
	*off += 2;
}

void
wire_put_name(uint8_t *buf, size_t *off, const char *name, size_t len)
{
	buf[*off] = (uint8_t) len;
	memcpy(buf + *off + 1, name, len);
	*off += 1 + len;
}

void
wire_put_samples_count(uint8_t *buf, size_t *off, uint32_t n)
{
	wire_put32(buf + *off, n);
	*off += 4;
}

void
wire_put_sample(uint8_t *buf, size_t *off, const wire_sample *s)
{
	uint8_t *p = buf + *off;
	uint64_t bits;

	memcpy(&bits, &s->value, 8);
	wire_put16(p, s->name);
	wire_put64(p + 2, s->step);
	wire_put64(p + 10, (uint64_t) s->time_ns);
	wire_put64(p + 18, bits);
	*off += WIRE_SAMPLE_SIZE;
}

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/*
 * The highest name index of n samples. Without a branch per sample (a
 * wide batch has thousands, each checked): four running maxima, so that
 * the loads do not wait on one another; the caller looks for the first
 * bad index only when there is one.
 */
static uint32_t
names_over(const uint8_t *samples, uint32_t n)
{
	uint32_t m0 = 0, m1 = 0, m2 = 0, m3 = 0, i = 0;

	for (; i + 4 <= n; i += 4) {
		const uint8_t *q = samples + (size_t) i * WIRE_SAMPLE_SIZE;
		uint32_t       a = wire_get16(q);
		uint32_t       b = wire_get16(q + WIRE_SAMPLE_SIZE);
		uint32_t       c = wire_get16(q + 2 * WIRE_SAMPLE_SIZE);
		uint32_t       d = wire_get16(q + 3 * WIRE_SAMPLE_SIZE);

		m0 = a > m0 ? a : m0;
		m1 = b > m1 ? b : m1;
		m2 = c > m2 ? c : m2;
		m3 = d > m3 ? d : m3;
	}
	for (; i < n; i++) {
		uint32_t a
		    = wire_get16(samples + (size_t) i * WIRE_SAMPLE_SIZE);

		m0 = a > m0 ? a : m0;
	}
	m0 = m1 > m0 ? m1 : m0;
	m2 = m3 > m2 ? m3 : m2;
	return n == 0 ? 0 : m2 > m0 ? m2 : m0;
}

int
wire_batch_decode(
    const void *buf, size_t len, wire_batch *out, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	size_t         off;

	memset(out, 0, sizeof(*out));
	if (len < 4)
		return fail(err, errlen, "message of %zu bytes is too short",
		    len);
	if (p[0] != WIRE_MAGIC0 || p[1] != WIRE_MAGIC1)
		return fail(err, errlen, "bad magic 0x%02x%02x at offset 0",
		    p[0], p[1]);
	if (p[2] != WIRE_VERSION)
		return fail(err, errlen,
		    "unsupported protocol version %u at offset 2", p[2]);
	if (p[3] != WIRE_BATCH)
		return fail(err, errlen,
		    "unexpected message type %u at offset 3", p[3]);
	if (len > WIRE_MAX_MESSAGE)
		return fail(err, errlen, "message of %zu bytes exceeds %u",
		    len, WIRE_MAX_MESSAGE);
	if (len < WIRE_BATCH_FIXED + 2)
		return fail(err, errlen,
		    "batch truncated at %zu bytes (header needs %d)", len,
		    WIRE_BATCH_FIXED + 2);
	out->flags = wire_get32(p + 4);
	if ((out->flags & ~(uint32_t) WIRE_FLAGS_KNOWN) != 0)
		return fail(err, errlen, "unknown flags 0x%x at offset 4",
		    out->flags & ~(uint32_t) WIRE_FLAGS_KNOWN);
	out->id.incarnation = wire_get64(p + 8);
	out->seq            = wire_get64(p + 16);
	out->floor          = wire_get64(p + 24);
	out->dropped        = wire_get64(p + 32);
	out->id.start_ns    = wire_get64(p + 40);
	out->id.pid         = wire_get32(p + 48);
	out->id.rank        = (int32_t) wire_get32(p + 52);
	out->id.local_rank  = (int32_t) wire_get32(p + 56);
	out->id.world_size  = (int32_t) wire_get32(p + 60);
	if (out->seq == 0)
		return fail(err, errlen, "batch sequence 0 at offset 16");
	if (out->floor > out->seq)
		return fail(err, errlen,
		    "floor %llu above sequence %llu at offset 24",
		    (unsigned long long) out->floor,
		    (unsigned long long) out->seq);
	if (out->id.rank < -1 || out->id.local_rank < -1 ||
	    out->id.world_size < -1)
		return fail(err, errlen, "negative rank at offset 52");

	off = WIRE_BATCH_FIXED;
	if (out->flags & WIRE_REFUSED) {
		if (len < WIRE_BATCH_FIXED + WIRE_REFUSED_SIZE + 2)
			return fail(err, errlen,
			    "batch truncated at %zu bytes (header with the "
			    "refused count needs %d)",
			    len, WIRE_BATCH_FIXED + WIRE_REFUSED_SIZE + 2);
		out->refused = wire_get64(p + off);
		off += WIRE_REFUSED_SIZE;
	}
	out->id.run_len = wire_get16(p + off);
	off += 2;
	if (out->id.run_len > len - off)
		return fail(err, errlen,
		    "run name of %u bytes overruns message at offset %zu",
		    out->id.run_len, off - 2);
	out->id.run = (const char *) p + off;
	if (wire_name_check(out->id.run, out->id.run_len, WIRE_RUN_MAX) != 0)
		return fail(err, errlen,
		    "invalid run name at offset %zu (empty, over %d bytes, "
		    "not UTF-8 or control characters)",
		    off, WIRE_RUN_MAX);
	off += out->id.run_len;

	if (len - off < 2)
		return fail(err, errlen, "truncated at offset %zu (host)", off);
	out->id.host_len = wire_get16(p + off);
	off += 2;
	if (out->id.host_len > len - off)
		return fail(err, errlen,
		    "host name of %u bytes overruns message at offset %zu",
		    out->id.host_len, off - 2);
	out->id.host = (const char *) p + off;
	if (wire_name_check(out->id.host, out->id.host_len, WIRE_HOST_MAX) !=
	    0)
		return fail(err, errlen, "invalid host name at offset %zu",
		    off);
	off += out->id.host_len;

	if (len - off < 2)
		return fail(err, errlen, "truncated at offset %zu (names)",
		    off);
	out->nnames = wire_get16(p + off);
	off += 2;
	out->names = p + off;
	for (uint32_t i = 0; i < out->nnames; i++) {
		size_t nl;

		if (len - off < 1)
			return fail(err, errlen,
			    "name table truncated at offset %zu (name %u)",
			    off, i);
		nl = p[off];
		if (nl > len - off - 1)
			return fail(err, errlen,
			    "name %u of %zu bytes overruns message at "
			    "offset %zu",
			    i, nl, off);
		if (wire_name_check((const char *) p + off + 1, nl,
			WIRE_NAME_MAX) != 0)
			return fail(err, errlen,
			    "invalid metric name %u at offset %zu (empty, "
			    "not UTF-8 or control characters)",
			    i, off);
		off += 1 + nl;
	}

	if (len - off < 4)
		return fail(err, errlen, "truncated at offset %zu (samples)",
		    off);
	out->nsamples = wire_get32(p + off);
	off += 4;
	if ((uint64_t) out->nsamples * WIRE_SAMPLE_SIZE != len - off)
		return fail(err, errlen,
		    "%u samples need %llu bytes at offset %zu, message has "
		    "%zu",
		    out->nsamples,
		    (unsigned long long) out->nsamples * WIRE_SAMPLE_SIZE,
		    off, len - off);
	out->samples = p + off;
	if (names_over(out->samples, out->nsamples) < out->nnames)
		return 0;
	/* Some sample names no entry: find the first, for the message. */
	for (uint32_t i = 0; i < out->nsamples; i++) {
		uint16_t ni = wire_get16(out->samples + i * WIRE_SAMPLE_SIZE);

		if (ni >= out->nnames)
			return fail(err, errlen,
			    "sample %u names metric %u of %u at offset %zu",
			    i, ni, out->nnames,
			    off + (size_t) i * WIRE_SAMPLE_SIZE);
	}
	return 0;
}

int
wire_batch_peek(
    const void *buf, size_t len, uint64_t *incarnation, uint64_t *seq)
{
	const uint8_t *p = buf;

	if (len < 24 || p[0] != WIRE_MAGIC0 || p[1] != WIRE_MAGIC1
	    || p[3] != WIRE_BATCH)
		return -1;
	*incarnation = wire_get64(p + 8);
	*seq         = wire_get64(p + 16);
	return 0;
}

void
wire_batch_sample(const wire_batch *b, uint32_t i, wire_sample *out)
{
	const uint8_t *p = b->samples + (size_t) i * WIRE_SAMPLE_SIZE;
	uint64_t       bits;

	out->name    = wire_get16(p);
	out->step    = wire_get64(p + 2);
	out->time_ns = (int64_t) wire_get64(p + 10);
	bits         = wire_get64(p + 18);
	memcpy(&out->value, &bits, 8);
}

const char *
wire_names_next(const wire_batch *b, size_t *off, size_t *len)
{
	const uint8_t *p;

	/* The table was validated: walking it cannot overrun. */
	if (*off == SIZE_MAX)
		return NULL;
	p = b->names + *off;
	if (p >= b->samples - 4) {
		*off = SIZE_MAX;
		return NULL;
	}
	*len = p[0];
	*off += 1 + p[0];
	return (const char *) p + 1;
}

const char *
wire_batch_name(const wire_batch *b, uint16_t i, size_t *len)
{
	size_t      off = 0;
	const char *s   = NULL;

	for (uint32_t k = 0; k <= i; k++) {
		s = wire_names_next(b, &off, len);
		if (s == NULL)
			return NULL;
	}
	return s;
}

void
wire_ack_encode(uint8_t *buf, const wire_ack *a)
{
	buf[0] = WIRE_MAGIC0;
	buf[1] = WIRE_MAGIC1;
	buf[2] = WIRE_VERSION;
	buf[3] = WIRE_ACK;
	wire_put32(buf + 4, a->status);
	wire_put64(buf + 8, a->incarnation);
	wire_put64(buf + 16, a->seq);
}

int
wire_ack_decode(const void *buf, size_t len, wire_ack *out)
{
	const uint8_t *p = buf;

	if (len != WIRE_ACK_SIZE || p[0] != WIRE_MAGIC0 ||
	    p[1] != WIRE_MAGIC1 || p[2] != WIRE_VERSION || p[3] != WIRE_ACK)
		return -1;
	out->status      = wire_get32(p + 4);
	out->incarnation = wire_get64(p + 8);
	out->seq         = wire_get64(p + 16);
	if (out->status > WIRE_ACK_REJECTED)
		return -1;
	return 0;
}
