#include "emitter/names.h"

#include <stdlib.h>

#include "vitals.h"
#include "wire/wire.h"

#define INITIAL_SLOTS 64u

static vte_names_tab *
tab_new(size_t nslots)
{
	vte_names_tab *t;

	t = calloc(1, sizeof(*t) + nslots * sizeof(t->slot[0]));
	if (t == NULL)
		return NULL;
	t->mask = nslots - 1;
	for (size_t i = 0; i < nslots; i++)
		atomic_init(&t->slot[i], NULL);
	return t;
}

/* Insert into a table known to have room; caller holds the lock. */
static void
tab_put(vte_names_tab *t, vte_name *e)
{
	size_t i = (size_t) e->hash & t->mask;

	while (atomic_load_explicit(&t->slot[i], memory_order_relaxed) != NULL)
		i = (i + 1) & t->mask;
	atomic_store_explicit(&t->slot[i], e, memory_order_release);
}

int
vte_names_init(vte_names *n)
{
	vte_names_tab *t;

	memset(n->chunks, 0, sizeof(n->chunks));
	n->count = 0;
	atomic_init(&n->refused, 0);
	t = tab_new(INITIAL_SLOTS);
	if (t == NULL)
		goto fail;
	if (pthread_mutex_init(&n->mu, NULL) != 0)
		goto fail_tab;
	atomic_init(&n->tab, t);
	return 0;
fail_tab:
	free(t);
fail:
	return -1;
}

void
vte_names_free(vte_names *n)
{
	vte_names_tab *t = atomic_load_explicit(&n->tab, memory_order_relaxed);

	while (t != NULL) {
		vte_names_tab *older = t->older;

		free(t);
		t = older;
	}
	for (uint32_t id = 0; id < n->count; id++)
		free(vte_names_get(n, id));
	for (size_t c = 0; c < VTE_NAMES_NCHUNKS; c++)
		free(n->chunks[c]);
	pthread_mutex_destroy(&n->mu);
}

/*
 * Builds a table twice the size holding every name and publishes it. The
 * old one is chained behind it, not freed: readers may still be in it.
 * Caller holds the lock. Returns 0 or -1 (ENOMEM; nothing changed).
 */
static int
grow(vte_names *n)
{
	vte_names_tab *old
	    = atomic_load_explicit(&n->tab, memory_order_relaxed);
	vte_names_tab *t = tab_new((old->mask + 1) * 2);

	if (t == NULL)
		return -1;
	for (uint32_t id = 0; id < n->count; id++)
		tab_put(t, vte_names_get(n, id));
	t->older = old;
	atomic_store_explicit(&n->tab, t, memory_order_release);
	return 0;
}

int
vte_names_intern(
    vte_names *n, const char *s, size_t len, uint64_t h, uint32_t *id)
{
	vte_names_tab *t;
	vte_name      *e = NULL;
	int64_t        found;
	uint32_t       nid;
	int            rc;

	pthread_mutex_lock(&n->mu);
	/* Another thread may have inserted it since our lookup. */
	found = vte_names_find(n, s, len, h);
	if (found >= 0) {
		*id = (uint32_t) found;
		rc  = 0;
		goto out;
	}
	if (wire_name_check(s, len, VT_NAME_MAX) != 0) {
		rc = VT_ENAME;
		goto out;
	}
	if (n->count >= VTE_NAMES_MAX) {
		rc = VT_ETOOMANY;
		goto out;
	}
	rc  = VT_ENOMEM;
	nid = n->count;
	if (n->chunks[nid / VTE_NAMES_CHUNK] == NULL) {
		n->chunks[nid / VTE_NAMES_CHUNK]
		    = calloc(VTE_NAMES_CHUNK, sizeof(vte_name *));
		if (n->chunks[nid / VTE_NAMES_CHUNK] == NULL)
			goto out;
	}
	t = atomic_load_explicit(&n->tab, memory_order_relaxed);
	if ((size_t) (nid + 1) * 2 > t->mask + 1) {
		if (grow(n) != 0)
			goto out;
		t = atomic_load_explicit(&n->tab, memory_order_relaxed);
	}
	e = malloc(sizeof(*e) + len + 1);
	if (e == NULL)
		goto out;
	e->hash      = h;
	e->len       = (uint32_t) len;
	e->id        = nid;
	e->batch_gen = 0;
	e->batch_idx = 0;
	memcpy(e->str, s, len);
	e->str[len] = '\0';
	/* The id's entry first, then the release store that publishes it. */
	n->chunks[nid / VTE_NAMES_CHUNK][nid % VTE_NAMES_CHUNK] = e;
	n->count++;
	tab_put(t, e);
	*id = nid;
	rc  = 0;
out:
	pthread_mutex_unlock(&n->mu);
	return rc;
}
