/*
 * A detection engine for a unit test: on the given rules text (parse
 * errors printed), or on the built-in rules when text is NULL.
 */
#ifndef TESTS_RULES_ENGINE_H
#define TESTS_RULES_ENGINE_H

#include <stdio.h>
#include <string.h>

#include "detect/detect.h"

static inline detect_engine *
rules_engine(const char *text)
{
	detect_rules  *r = NULL;
	detect_engine *e = NULL;
	char           err[512];
	int            rc;

	if (text == NULL)
		rc = detect_rules_default(&r);
	else
		rc = detect_rules_parse(
		    text, strlen(text), "test.rules", &r, err, sizeof(err));
	if (rc != 0) {
		if (text != NULL)
			printf("  rules: %s\n", err);
		return NULL;
	}
	if (detect_engine_new(r, &e) != 0)
		e = NULL;
	detect_rules_free(r);
	return e;
}

#endif /* TESTS_RULES_ENGINE_H */
