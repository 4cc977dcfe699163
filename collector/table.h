/*
 * table: a hash table of pointers by byte-string keys, for the
 * collector's caches of series, emitters and runs. A value holds its own
 * key, which the table reads through its key function: nothing is copied
 * (a cache of many series is mostly keys), and a value must keep its key
 * unchanged while it is in the table. Values are borrowed. One thread at
 * a time.
 */
#ifndef COLLECTOR_TABLE_H
#define COLLECTOR_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct table table;

/* The key of a value (and its length in *len). */
typedef const uint8_t *(*table_key_fn)(const void *value, size_t *len);

/* Returns NULL when out of memory. */
table *table_new(table_key_fn key);
/* Frees the table, not the values. NULL is a no-op. */
void table_free(table *t);
/* The value stored under key, or NULL. */
void *table_get(const table *t, const void *key, size_t len);
/* Store value under its key (replacing the value of that key). Returns 0,
 * or -1 when out of memory. */
int    table_put(table *t, void *value);
size_t table_count(const table *t);
/* Visit every value: *pos starts at 0; returns NULL after the last. */
void *table_next(const table *t, size_t *pos);

#endif /* COLLECTOR_TABLE_H */
