/*
 * table: a hash table from byte-string keys to pointers, for the
 * collector's caches of series, emitters and runs. Keys are copied; values
 * are borrowed. One thread at a time.
 */
#ifndef COLLECTOR_TABLE_H
#define COLLECTOR_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct table table;

/* Returns NULL when out of memory. */
table *table_new(void);
/* Frees the table and its keys, not the values. NULL is a no-op. */
void table_free(table *t);
/* The value stored under key, or NULL. */
void *table_get(const table *t, const void *key, size_t len);
/* Store value under key (replacing). Returns 0, or -1 when out of memory. */
int table_put(table *t, const void *key, size_t len, void *value);
size_t table_count(const table *t);
/* Visit every value: *pos starts at 0; returns NULL after the last. */
void *table_next(const table *t, size_t *pos);

#endif /* COLLECTOR_TABLE_H */
