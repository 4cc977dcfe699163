#include "collector/table.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
	uint64_t hash;
	uint8_t *key; /* NULL: empty */
	size_t   len;
	void    *value;
} slot;

struct table {
	slot  *slots;
	size_t cap; /* power of two */
	size_t count;
};

/* FNV-1a, 64 bits. */
static uint64_t
hash_bytes(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t       h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

table *
table_new(void)
{
	table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->cap   = 64;
	t->slots = calloc(t->cap, sizeof(slot));
	if (t->slots == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

void
table_free(table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].key);
	free(t->slots);
	free(t);
}

static slot *
find(const table *t, uint64_t h, const void *key, size_t len)
{
	size_t mask = t->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		slot *s = &t->slots[i];

		if (s->key == NULL)
			return s;
		if (s->hash == h && s->len == len &&
		    memcmp(s->key, key, len) == 0)
			return s;
	}
}

void *
table_get(const table *t, const void *key, size_t len)
{
	slot *s = find(t, hash_bytes(key, len), key, len);

	return s->key ? s->value : NULL;
}

/* Double the slots; on failure the table is unchanged. */
static int
grow(table *t)
{
	slot  *old = t->slots, *ns;
	size_t oc  = t->cap;

	ns = calloc(oc * 2, sizeof(slot));
	if (ns == NULL)
		return -1;
	t->slots = ns;
	t->cap   = oc * 2;
	for (size_t i = 0; i < oc; i++) {
		if (old[i].key != NULL)
			*find(t, old[i].hash, old[i].key, old[i].len) = old[i];
	}
	free(old);
	return 0;
}

int
table_put(table *t, const void *key, size_t len, void *value)
{
	uint64_t h = hash_bytes(key, len);
	slot    *s;

	if ((t->count + 1) * 10 > t->cap * 7 && grow(t) != 0)
		return -1;
	s = find(t, h, key, len);
	if (s->key == NULL) {
		s->key = malloc(len ? len : 1);
		if (s->key == NULL)
			return -1;
		memcpy(s->key, key, len);
		s->len  = len;
		s->hash = h;
		t->count++;
	}
	s->value = value;
	return 0;
}

size_t
table_count(const table *t)
{
	return t->count;
}

void *
table_next(const table *t, size_t *pos)
{
	while (*pos < t->cap) {
		slot *s = &t->slots[(*pos)++];

		if (s->key != NULL)
			return s->value;
	}
	return NULL;
}
