#include "detect/table.h"

#include <stdlib.h>

uint64_t
detect_hash(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void
detect_table_fini(detect_table *t)
{
	free(t->slot);
	t->slot = NULL;
	t->cap  = 0;
	t->n    = 0;
}

void *
detect_table_find(
    const detect_table *t, uint64_t h, detect_table_eq eq, const void *key)
{
	if (t->cap == 0)
		return NULL;
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		const detect_table_slot *sl = &t->slot[i];

		if (sl->obj == NULL)
			return NULL;
		if (sl->hash == h && eq(sl->obj, key))
			return sl->obj;
	}
}

static void
place(detect_table_slot *slot, size_t cap, uint64_t h, void *o)
{
	size_t i = h & (cap - 1);

	while (slot[i].obj != NULL)
		i = (i + 1) & (cap - 1);
	slot[i].obj  = o;
	slot[i].hash = h;
}

/* Doubles the capacity; on failure the table is unchanged. */
static int
grow(detect_table *t)
{
	size_t             cap  = t->cap ? t->cap * 2 : 64;
	detect_table_slot *slot = calloc(cap, sizeof(*slot));

	if (slot == NULL)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i].obj != NULL)
			place(slot, cap, t->slot[i].hash, t->slot[i].obj);
	free(t->slot);
	t->slot = slot;
	t->cap  = cap;
	return 0;
}

int
detect_table_put(detect_table *t, uint64_t h, void *obj)
{
	if ((t->n + 1) * 2 > t->cap && grow(t) != 0)
		return -1;
	place(t->slot, t->cap, h, obj);
	t->n++;
	return 0;
}

int
detect_table_del(detect_table *t, uint64_t h, const void *obj)
{
	size_t mask = t->cap - 1, i, j;

	if (t->cap == 0)
		return -1;
	for (i = h & mask; t->slot[i].obj != obj; i = (i + 1) & mask)
		if (t->slot[i].obj == NULL)
			return -1;
	/* Shift later members of the cluster back into the hole when their
	 * home slot is not between the hole and where they sit. */
	for (j = (i + 1) & mask; t->slot[j].obj != NULL; j = (j + 1) & mask) {
		size_t home = t->slot[j].hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slot[i] = t->slot[j];
			i          = j;
		}
	}
	t->slot[i].obj  = NULL;
	t->slot[i].hash = 0;
	t->n--;
	return 0;
}
