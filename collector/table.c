#include "collector/table.h"

#include <stdlib.h>
#include <string.h>

/* A slot: the key's hash and the value (NULL: empty). 16 bytes, so that
 * a probe reads one cache line and a table of 100,000 series is 4 MiB. */
typedef struct slot {
	uint64_t hash;
	void    *value;
} slot;

struct table {
	slot        *slots;
	size_t       cap; /* power of two */
	size_t       count;
	table_key_fn key;
};

static uint64_t
mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* 8 bytes a step (a series key is 30 to 60 bytes: run, metric, rank),
 * then a final avalanche so that the low bits (the slot) depend on
 * every byte. */
static uint64_t
hash_bytes(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t       h = 0x9e3779b97f4a7c15ull ^ len, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = mix(h, w);
	}
	if (len > 0) {
		w = 0;
		memcpy(&w, p, len);
		h = mix(h, w);
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 32);
}

table *
table_new(table_key_fn key)
{
	table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->cap   = 64;
	t->key   = key;
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
	free(t->slots);
	free(t);
}

/* The slot of key (hash h), or the empty slot where it would go. */
static slot *
find(const table *t, uint64_t h, const void *key, size_t len)
{
	size_t mask = t->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		slot          *s = &t->slots[i];
		const uint8_t *k;
		size_t         kl;

		if (s->value == NULL)
			return s;
		if (s->hash != h)
			continue;
		k = t->key(s->value, &kl);
		if (kl == len && memcmp(k, key, len) == 0)
			return s;
	}
}

/* The empty slot for hash h (growing: every key is distinct). */
static slot *
free_slot(const table *t, uint64_t h)
{
	size_t mask = t->cap - 1;
	size_t i    = h & mask;

	while (t->slots[i].value != NULL)
		i = (i + 1) & mask;
	return &t->slots[i];
}

void *
table_get(const table *t, const void *key, size_t len)
{
	return find(t, hash_bytes(key, len), key, len)->value;
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
		if (old[i].value != NULL)
			*free_slot(t, old[i].hash) = old[i];
	}
	free(old);
	return 0;
}

int
table_put(table *t, void *value)
{
	size_t         len;
	const uint8_t *key = t->key(value, &len);
	uint64_t       h   = hash_bytes(key, len);
	slot          *s;

	if ((t->count + 1) * 10 > t->cap * 7 && grow(t) != 0)
		return -1;
	s = find(t, h, key, len);
	if (s->value == NULL)
		t->count++;
	s->hash  = h;
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

		if (s->value != NULL)
			return s->value;
	}
	return NULL;
}
