/* The public header compiles alone (it is included first, with nothing
 * before it) and its runtime contract holds without a collector. */
#include "vitals.h"

#include <string.h>

#include "tests/harness.h"

TEST(version)
{
	CHECK(vt_version() == VT_VERSION_NUM);
	CHECK(VT_VERSION_NUM == ((VT_VERSION_MAJOR << 16) |
				    (VT_VERSION_MINOR << 8) |
				    VT_VERSION_PATCH));
}

TEST(strerror_every_code)
{
	for (int c = VT_OK; c <= VT_EKEY; c++) {
		const char *s = vt_strerror(c);

		CHECK(s != NULL && s[0] != 0);
		for (int d = VT_OK; d < c; d++)
			CHECK(strcmp(s, vt_strerror(d)) != 0);
	}
	CHECK(vt_strerror(9999) != NULL);
	CHECK(vt_strerror(-1) != NULL);
}

TEST(bad_names_are_errors)
{
	vt_opts     o;
	vt_emitter *em = NULL;
	char        longname[VT_NAME_MAX + 2];

	vt_opts_init(&o);
	o.endpoint         = "ipc:///nonexistent/vitals-test.sock";
	o.run              = "api-test";
	o.close_timeout_ms = 0;
	REQUIRE(vt_open(&o, &em) == 0);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK(vt_emit(em, "", 1, 1.0) == VT_ENAME);
	CHECK(vt_emit(em, "bad\nname", 1, 1.0) == VT_ENAME);
	CHECK(vt_emit(em, "\xff\xfe", 1, 1.0) == VT_ENAME);
	CHECK(vt_emit(em, longname, 1, 1.0) == VT_ENAME);
	CHECK(vt_emit(em, NULL, 1, 1.0) == VT_EINVAL);
	CHECK(vt_emit(em, "loss", 1, 1.0) == VT_OK);
	vt_close(em);
	vt_close(NULL);

	o.run = "bad\trun";
	CHECK(vt_open(&o, &em) == VT_ENAME);
}

int
main(void)
{
	RUN(version);
	RUN(strerror_every_code);
	RUN(bad_names_are_errors);
	return harness_done();
}
