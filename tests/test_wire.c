/* Unit tests of the wire protocol: encoding, validation, names. */
#include "wire/wire.h"

#include <math.h>
#include <string.h>

#include "tests/harness.h"

static uint8_t buf[1 << 16];

static size_t
make_batch(uint32_t nsamples)
{
	wire_ident id = { 0 };
	size_t     off;

	id.incarnation = 0x1122334455667788ull;
	id.start_ns    = 42;
	id.pid         = 77;
	id.rank        = 3;
	id.local_rank  = 1;
	id.world_size  = 8;
	id.run         = "run-é";
	id.run_len     = (uint16_t) strlen(id.run);
	id.host        = "node7";
	id.host_len    = 5;
	off            = wire_put_batch_head(buf, &id, 9, 5, 123);
	wire_put_names_count(buf, &off, 2);
	wire_put_name(buf, &off, "loss", 4);
	wire_put_name(buf, &off, "train/grad_norm", 15);
	wire_put_samples_count(buf, &off, nsamples);
	for (uint32_t i = 0; i < nsamples; i++) {
		wire_sample s = { (uint16_t) (i % 2), 1000 + i, (int64_t) i - 5,
			i == 0 ? NAN : (i == 1 ? -INFINITY : 0.1 * i) };
		wire_put_sample(buf, &off, &s);
	}
	return off;
}

TEST(roundtrip)
{
	size_t      n = make_batch(10);
	wire_batch  b;
	wire_sample s;
	char        err[200];
	size_t      len, off = 0;
	const char *name;

	REQUIRE(wire_batch_decode(buf, n, &b, err, sizeof(err)) == 0);
	CHECK(b.id.incarnation == 0x1122334455667788ull);
	CHECK(b.seq == 9 && b.floor == 5 && b.dropped == 123);
	CHECK(b.id.rank == 3 && b.id.local_rank == 1 && b.id.world_size == 8);
	CHECK(b.id.pid == 77 && b.id.start_ns == 42);
	CHECK(b.id.run_len == strlen("run-é") &&
	    memcmp(b.id.run, "run-é", b.id.run_len) == 0);
	CHECK(b.nnames == 2 && b.nsamples == 10);
	name = wire_names_next(&b, &off, &len);
	CHECK(name && len == 4 && memcmp(name, "loss", 4) == 0);
	name = wire_names_next(&b, &off, &len);
	CHECK(name && len == 15);
	CHECK(wire_names_next(&b, &off, &len) == NULL);
	name = wire_batch_name(&b, 1, &len);
	CHECK(name && memcmp(name, "train/grad_norm", 15) == 0);
	wire_batch_sample(&b, 0, &s);
	CHECK(isnan(s.value) && s.step == 1000 && s.time_ns == -5);
	wire_batch_sample(&b, 1, &s);
	CHECK(s.value == -INFINITY && s.name == 1);
	wire_batch_sample(&b, 9, &s);
	CHECK(s.value == 0.1 * 9 && s.step == 1009);
}

/* The refused count (WIRE_REFUSED) travels after the fixed header; a
 * batch without it reads as 0, and stripping it gives the plain batch
 * byte for byte (what an old collector takes). */
TEST(refused_count_roundtrip_and_strip)
{
	static uint8_t plain[1 << 16];
	size_t         n = make_batch(4), m, off;
	wire_ident     id;
	wire_batch     b;
	wire_sample    s;
	char           err[200];

	REQUIRE(wire_batch_decode(buf, n, &b, err, sizeof(err)) == 0);
	CHECK(b.refused == 0 && !(b.flags & WIRE_REFUSED));
	memcpy(plain, buf, n);
	id = b.id;
	/* The same batch written with a refused count. */
	m = wire_put_batch_head_refused(buf, &id, 9, 5, 123, 234465);
	CHECK(m == wire_batch_header_size(&id, 0) - 6 + WIRE_REFUSED_SIZE);
	off = wire_batch_header_size(&id, 0) - 6;
	memmove(buf + m, plain + off, n - off);
	m += n - off;
	CHECK(m == n + WIRE_REFUSED_SIZE);
	wire_put_batch_flags(buf, WIRE_URGENT);
	REQUIRE(wire_batch_decode(buf, m, &b, err, sizeof(err)) == 0);
	CHECK(b.refused == 234465 && b.dropped == 123);
	CHECK(b.flags == (WIRE_URGENT | WIRE_REFUSED));
	CHECK(b.id.run_len == strlen("run-é") && b.nsamples == 4);
	wire_batch_sample(&b, 3, &s);
	CHECK(s.step == 1003);
	for (size_t cut = 0; cut < m; cut++)
		CHECK(wire_batch_decode(buf, cut, &b, err, sizeof(err)) != 0);
	CHECK(wire_batch_strip_refused(buf, &m) == 1);
	CHECK(m == n);
	wire_put_batch_flags(buf, 0);
	CHECK(memcmp(buf, plain, n) == 0);
	CHECK(wire_batch_strip_refused(buf, &m) == 0 && m == n);
}

TEST(every_truncation_rejected)
{
	size_t     n = make_batch(3);
	wire_batch b;
	char       err[200];

	for (size_t cut = 0; cut < n; cut++)
		CHECK(wire_batch_decode(buf, cut, &b, err, sizeof(err)) != 0);
	/* One byte too many is as wrong as one too few. */
	CHECK(wire_batch_decode(buf, n + 1, &b, err, sizeof(err)) != 0);
}

TEST(bad_fields_named)
{
	size_t     n = make_batch(3);
	wire_batch b;
	char       err[200];

	buf[2] = 9;
	CHECK(wire_batch_decode(buf, n, &b, err, sizeof(err)) != 0);
	CHECK(strstr(err, "version 9") != NULL);
	make_batch(3);
	wire_put16(buf + n - WIRE_SAMPLE_SIZE, 2); /* name index 2 of 2 */
	CHECK(wire_batch_decode(buf, n, &b, err, sizeof(err)) != 0);
	CHECK(strstr(err, "names metric 2") != NULL);
	make_batch(3);
	wire_put64(buf + 16, 0); /* seq 0 */
	CHECK(wire_batch_decode(buf, n, &b, err, sizeof(err)) != 0);
	make_batch(3);
	wire_put64(buf + 24, 10); /* floor above seq */
	CHECK(wire_batch_decode(buf, n, &b, err, sizeof(err)) != 0);
}

/* A bad name index is refused wherever it is among many samples (they
 * are checked four at a time, then the rest one by one), and the
 * message names the first one. */
TEST(bad_name_index_found_anywhere)
{
	const uint32_t n    = 2001,
	               at[] = { 0, 1, 2, 3, 4, 1000, 1998, 1999, 2000 };
	wire_batch b;
	char       err[200], want[64];

	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		size_t len  = make_batch(n);
		size_t head = len - (size_t) n * WIRE_SAMPLE_SIZE;

		REQUIRE(
		    wire_batch_decode(buf, len, &b, err, sizeof(err)) == 0);
		wire_put16(buf + head + (size_t) at[k] * WIRE_SAMPLE_SIZE,
		    (uint16_t) (2 + k));
		CHECK(wire_batch_decode(buf, len, &b, err, sizeof(err)) != 0);
		snprintf(want, sizeof(want), "sample %u names metric %u of 2",
		    at[k], (unsigned) (2 + k));
		CHECK(strstr(err, want) != NULL);
	}
	/* Every index in range, the highest included: taken. */
	make_batch(n);
	CHECK(
	    wire_batch_decode(buf, make_batch(n), &b, err, sizeof(err)) == 0);
}

TEST(names)
{
	CHECK(wire_name_check("loss", 4, 255) == 0);
	CHECK(wire_name_check("train/loss@rank", 15, 255) == 0);
	CHECK(wire_name_check("entropía", strlen("entropía"), 255) == 0);
	CHECK(wire_name_check("", 0, 255) != 0);
	CHECK(wire_name_check("a\nb", 3, 255) != 0);
	CHECK(wire_name_check("a\x7f", 2, 255) != 0);
	CHECK(wire_name_check("\xff", 1, 255) != 0);
	CHECK(wire_name_check("\xc3", 1, 255) != 0);         /* cut */
	CHECK(wire_name_check("\xc0\xaf", 2, 255) != 0);     /* overlong */
	CHECK(wire_name_check("\xed\xa0\x80", 3, 255) != 0); /* surrogate */
	CHECK(wire_name_check("\xc2\x85", 2, 255) != 0);     /* C1 NEL */
	CHECK(wire_name_check("abcd", 4, 3) != 0);
	CHECK(wire_name_check("a\0b", 3, 255) != 0);
}

/* Long names are checked 8 bytes at a time while they are printable
 * ASCII: one bad byte anywhere, in any word, still refuses the name. */
TEST(names_long)
{
	static const char *const bad[]
	    = { "\x01", "\x1f", "\x7f", "\x80", "\xff", "\xc2\x85" };
	char name[48];

	memset(name, 'a', sizeof(name));
	CHECK(wire_name_check(name, sizeof(name), 255) == 0);
	memcpy(name + 20, "\xc3\xad/ ~", 5);
	CHECK(wire_name_check(name, sizeof(name), 255) == 0);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		size_t n = strlen(bad[k]);

		for (size_t at = 0; at + n <= sizeof(name); at++) {
			memset(name, 'x', sizeof(name));
			memcpy(name + at, bad[k], n);
			if (wire_name_check(name, sizeof(name), 255) == 0) {
				printf("bad byte %zu at %zu passed\n", k, at);
				CHECK(0);
			}
		}
	}
}

/* Names of any length (their last bytes are checked as the 8 that end
 * them): a bad byte anywhere is refused, and a name whose end is not
 * ASCII is checked as UTF-8 all the same. */
TEST(names_any_length)
{
	static const char *const bad[]
	    = { "\x01", "\x1f", "\x7f", "\x80", "\xff", "\xc2\x85", "\xc3" };
	char name[40];

	for (size_t len = 1; len <= 33; len++) {
		memset(name, 'a', sizeof(name));
		CHECK(wire_name_check(name, len, 255) == 0);
		if (len >= 2) {
			memcpy(name + len - 2, "\xc3\xad", 2);
			CHECK(wire_name_check(name, len, 255) == 0);
		}
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			size_t n = strlen(bad[k]);

			for (size_t at = 0; at + n <= len; at++) {
				memset(name, 'x', sizeof(name));
				memcpy(name + at, bad[k], n);
				if (wire_name_check(name, len, 255) == 0) {
					printf("  bad byte %zu at %zu of %zu "
					       "passed\n",
					    k, at, len);
					CHECK(0);
				}
			}
		}
	}
}

TEST(ack)
{
	uint8_t  a[WIRE_ACK_SIZE];
	wire_ack in = { WIRE_ACK_DUPLICATE, 5, 6 }, out;

	wire_ack_encode(a, &in);
	CHECK(wire_ack_decode(a, sizeof(a), &out) == 0);
	CHECK(out.status == WIRE_ACK_DUPLICATE && out.incarnation == 5 &&
	    out.seq == 6);
	CHECK(wire_ack_decode(a, sizeof(a) - 1, &out) != 0);
	a[4] = 7;
	CHECK(wire_ack_decode(a, sizeof(a), &out) != 0);
}

int
main(void)
{
	RUN(roundtrip);
	RUN(refused_count_roundtrip_and_strip);
	RUN(every_truncation_rejected);
	RUN(bad_fields_named);
	RUN(bad_name_index_found_anywhere);
	RUN(names);
	RUN(names_long);
	RUN(names_any_length);
	RUN(ack);
	return harness_done();
}
