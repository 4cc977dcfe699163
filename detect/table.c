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
	free(t->obj);
	free(t->hash);
	t->obj  = NULL;
	t->hash = NULL;
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
		if (t->obj[i] == NULL)
			return NULL;
		if (t->hash[i] == h && eq(t->obj[i], key))
			return t->obj[i];
	}
}

static void
place(void **obj, uint64_t *hash, size_t cap, uint64_t h, void *o)
{
	size_t i = h & (cap - 1);

	while (obj[i] != NULL)
		i = (i + 1) & (cap - 1);
	obj[i]  = o;
	hash[i] = h;
}

/* Doubles the capacity; on failure the table is unchanged. */
static int
grow(detect_table *t)
{
	size_t    cap  = t->cap ? t->cap * 2 : 64;
	void    **obj  = calloc(cap, sizeof(*obj));
	uint64_t *hash = calloc(cap, sizeof(*hash));

	if (obj == NULL || hash == NULL) {
		free(obj);
		free(hash);
		return -1;
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->obj[i] != NULL)
			place(obj, hash, cap, t->hash[i], t->obj[i]);
	free(t->obj);
	free(t->hash);
	t->obj  = obj;
	t->hash = hash;
	t->cap  = cap;
	return 0;
}

int
detect_table_put(detect_table *t, uint64_t h, void *obj)
{
	if ((t->n + 1) * 2 > t->cap && grow(t) != 0)
		return -1;
	place(t->obj, t->hash, t->cap, h, obj);
	t->n++;
	return 0;
}

int
detect_table_del(detect_table *t, uint64_t h, const void *obj)
{
	size_t mask = t->cap - 1, i, j;

	if (t->cap == 0)
		return -1;
	for (i = h & mask; t->obj[i] != obj; i = (i + 1) & mask)
		if (t->obj[i] == NULL)
			return -1;
	/* Shift later members of the cluster back into the hole when their
	 * home slot is not between the hole and where they sit. */
	for (j = (i + 1) & mask; t->obj[j] != NULL; j = (j + 1) & mask) {
		size_t home = t->hash[j] & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->obj[i]  = t->obj[j];
			t->hash[i] = t->hash[j];
			i          = j;
		}
	}
	t->obj[i]  = NULL;
	t->hash[i] = 0;
	t->n--;
	return 0;
}
