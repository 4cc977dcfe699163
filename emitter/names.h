/*
 * names: interning of metric names into small integer ids.
 *
 * Lookups are lock-free: an open-addressing hash table (linear probing)
 * whose entries are published with release stores and read with acquire
 * loads. A name seen for the first time is validated and inserted under a
 * mutex (the rare path). When the table is half full a table twice the
 * size is built and published; old tables stay allocated until
 * vte_names_free(), since a reader may still be probing one (it then
 * misses the newest names, takes the slow path and finds them there).
 *
 * The I/O thread maps ids back to names with vte_names_get(). The entry
 * for an id is written before the name is published in the table, and a
 * sample carrying the id is pushed through the ring after that, so the
 * I/O thread always sees a complete entry.
 *
 * Internal to libvitals. It owns the mapping between names and ids for
 * one emitter; what a valid name is, is the wire's rule (wire_name_check),
 * not this table's.
 */
#ifndef VTE_NAMES_H
#define VTE_NAMES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#pragma GCC visibility push(hidden)

/* Most distinct names per emitter: ids must fit the wire's u16 index. */
#define VTE_NAMES_MAX 65535u
#define VTE_NAMES_CHUNK 1024u
#define VTE_NAMES_NCHUNKS                                                     \
	((VTE_NAMES_MAX + VTE_NAMES_CHUNK - 1) / VTE_NAMES_CHUNK)

typedef struct vte_name {
	uint64_t hash;
	uint32_t len;
	uint32_t id;
	/* Owned by the I/O thread: this name's index in the batch being
	 * built, valid while batch_gen matches the builder's generation. */
	uint32_t batch_gen;
	uint16_t batch_idx;
	char     str[]; /* len bytes and a NUL */
} vte_name;

typedef struct vte_names_tab {
	size_t                mask;
	struct vte_names_tab *older; /* retired tables, freed last */
	_Atomic(vte_name *)   slot[];
} vte_names_tab;

typedef struct vte_names {
	_Atomic(vte_names_tab *) tab;
	pthread_mutex_t          mu;
	uint32_t                 count; /* under mu */
	vte_name               **chunks[VTE_NAMES_NCHUNKS];
	/* Samples refused for their name (invalid, or the table full):
	 * counted by producers, sent in every batch header (WIRE_REFUSED). */
	_Atomic uint64_t refused;
} vte_names;

/* Returns 0 or -1 (ENOMEM). */
int  vte_names_init(vte_names *n);
void vte_names_free(vte_names *n);

/* Hash of a name: 8 bytes at a time, then a final avalanche so that the
 * low bits used for the table index depend on every byte. */
static inline uint64_t
vte_names_hash(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
		s += 8;
		len -= 8;
	}
	w = 0;
	for (size_t i = 0; i < len; i++)
		w |= (uint64_t) (uint8_t) s[i] << (8 * i);
	h = (h ^ w) * 0x94d049bb133111ebull;
	h ^= h >> 32;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

/* Lock-free lookup: the id of the name, or -1 if not (yet) interned. */
static inline int64_t
vte_names_find(vte_names *n, const char *s, size_t len, uint64_t h)
{
	const vte_names_tab *t
	    = atomic_load_explicit(&n->tab, memory_order_acquire);
	size_t i = (size_t) h & t->mask;

	for (;;) {
		const vte_name *e
		    = atomic_load_explicit(&t->slot[i], memory_order_acquire);

		if (e == NULL)
			return -1;
		if (e->hash == h && e->len == len
		    && memcmp(e->str, s, len) == 0)
			return e->id;
		i = (i + 1) & t->mask;
	}
}

/*
 * The rare path: validate and insert a name not found by vte_names_find().
 * Sets *id. Returns 0, VT_ENAME (empty, over VT_NAME_MAX bytes, not UTF-8
 * or control characters), VT_ETOOMANY or VT_ENOMEM. Thread-safe.
 */
int vte_names_intern(
    vte_names *n, const char *s, size_t len, uint64_t h, uint32_t *id);

/* The entry of an interned id (see the header comment for why the I/O
 * thread may read it without the lock). */
static inline vte_name *
vte_names_get(const vte_names *n, uint32_t id)
{
	return n->chunks[id / VTE_NAMES_CHUNK][id % VTE_NAMES_CHUNK];
}

#pragma GCC visibility pop

#endif /* VTE_NAMES_H */
