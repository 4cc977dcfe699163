/*
 * rules_file: reading a rules file for the detect engine, the one loader
 * of vitalsd (--rules, and again on SIGHUP), `vitals rules check` and
 * `vitals replay --rules`, so that a file one accepts the others accept.
 * detect/ parses the text; this does the file (detect/ touches none).
 */
#ifndef COMMON_RULES_FILE_H
#define COMMON_RULES_FILE_H

#include <stddef.h>

#include "detect/detect.h"

/* Largest rules file read: far above any hand-written set, and a bound on
 * what a wrong path (a log, a device) can make a daemon allocate. */
#define RULES_FILE_MAX_BYTES ((size_t) 1 << 20)

/*
 * The rules of path ("-": standard input), or the built-in set if path is
 * NULL. Returns 0 with *out set (caller frees with detect_rules_free), or
 * non-zero with *out NULL and one line in err without a program name:
 * "rules PATH: No such file or directory", "rules PATH: larger than 1
 * MiB", "FILE:LINE:COL: expected ..., found ..." for a text that does not
 * parse.
 */
int rules_file_load(
    const char *path, detect_rules **out, char *err, size_t errlen);

#endif /* COMMON_RULES_FILE_H */
