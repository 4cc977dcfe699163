/*
 * table: an open-addressing hash table of object pointers. The table does
 * not know keys: callers pass the hash and an equality test, so objects
 * keep their own (run, metric, rank) fields and nothing is copied twice.
 * Deletion shifts entries back (no tombstones).
 */
#ifndef DETECT_TABLE_H
#define DETECT_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* An object and its hash side by side: a probe reads one cache line. */
typedef struct detect_table_slot {
	uint64_t hash;
	void    *obj; /* NULL: empty */
} detect_table_slot;

typedef struct detect_table {
	detect_table_slot *slot;
	size_t             cap; /* a power of two, or 0 */
	size_t             n;
} detect_table;

/* Returns 1 if obj has the key. */
typedef int (*detect_table_eq)(const void *obj, const void *key);

void  detect_table_fini(detect_table *t);
void *detect_table_find(
    const detect_table *t, uint64_t h, detect_table_eq eq, const void *key);
/* Insert obj (its key must not be present). Returns 0 or -1 (no memory;
 * the table is unchanged). */
int detect_table_put(detect_table *t, uint64_t h, void *obj);
/* Remove obj (found by identity). Returns 0 or -1 if absent. */
int detect_table_del(detect_table *t, uint64_t h, const void *obj);

/* FNV-1a, 64 bits, continued from h (start with DETECT_HASH_INIT). */
#define DETECT_HASH_INIT 0xcbf29ce484222325ull
uint64_t detect_hash(uint64_t h, const void *p, size_t len);

#endif /* DETECT_TABLE_H */
