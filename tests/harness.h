/*
 * A small test harness of our own. A test file defines its tests with
 * TEST(name) { ... }, lists them in main with RUN(name), and ends with
 * return harness_done();. Each failed CHECK prints file:line and the
 * expression; the program prints "N passed, N failed" last.
 */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int harness_passed, harness_failed, harness_cur_failed;

/* Set by a test file to release what a test that left early (a failed
 * REQUIRE) still holds, such as a thread serving a socket. */
static void (*harness_after_each)(void);

#define TEST(name) static void name(void)

#define RUN(name)                                                             \
	do {                                                                  \
		harness_cur_failed = 0;                                       \
		name();                                                       \
		if (harness_after_each != NULL)                               \
			harness_after_each();                                 \
		if (harness_cur_failed) {                                     \
			harness_failed++;                                     \
			printf("FAIL %s\n", #name);                           \
		} else {                                                      \
			harness_passed++;                                     \
			printf("ok   %s\n", #name);                           \
		}                                                             \
		fflush(stdout);                                               \
	} while (0)

#define CHECK(expr)                                                           \
	do {                                                                  \
		if (!(expr)) {                                                \
			printf("  %s:%d: check failed: %s\n", __FILE__,       \
			    __LINE__, #expr);                                 \
			harness_cur_failed = 1;                               \
		}                                                             \
	} while (0)

/* Like CHECK, but leaves the test at the first failure. */
#define REQUIRE(expr)                                                         \
	do {                                                                  \
		if (!(expr)) {                                                \
			printf("  %s:%d: required: %s\n", __FILE__, __LINE__, \
			    #expr);                                           \
			harness_cur_failed = 1;                               \
			return;                                               \
		}                                                             \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                    \
	do {                                                                  \
		long long ha_ = (long long) (a), hb_ = (long long) (b);       \
		if (ha_ != hb_) {                                             \
			printf("  %s:%d: %s == %s: %lld != %lld\n", __FILE__, \
			    __LINE__, #a, #b, ha_, hb_);                      \
			harness_cur_failed = 1;                               \
		}                                                             \
	} while (0)

/* A new empty folder /tmp/PREFIX.XXXXXX in dir (of size bytes) for a
 * test's store; the folder dir held before, if any, is removed. */
static inline void
harness_fresh_dir(char *dir, size_t size, const char *prefix)
{
	char cmd[300];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			printf("  could not remove %s\n", dir);
	}
	snprintf(dir, size, "/tmp/%s.XXXXXX", prefix);
	if (mkdtemp(dir) == NULL)
		abort();
}

static inline int
harness_done(void)
{
	printf("%d passed, %d failed\n", harness_passed, harness_failed);
	return harness_failed != 0;
}

#endif /* TESTS_HARNESS_H */
