#include "emitter/ring.h"

#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

/*
 * Slot i starts with sequence i: free for position i. aligned_alloc keeps
 * each 32-byte slot inside one cache line. Writing every slot here also
 * faults in every page now rather than on the hot path. On failure
 * returns -1 and leaves r untouched but for slots = NULL, wake_fd = -1.
 */
int
vte_ring_init(vte_ring *r, size_t nslots)
{
	r->slots   = NULL;
	r->wake_fd = -1;
	if (nslots < VTE_RING_MIN_SLOTS || nslots > VTE_RING_MAX_SLOTS
	    || (nslots & (nslots - 1)) != 0)
		return -1;
	r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->wake_fd < 0)
		return -1;
	r->slots = aligned_alloc(64, VTE_RING_BYTES(nslots));
	if (r->slots == NULL) {
		close(r->wake_fd);
		r->wake_fd = -1;
		return -1;
	}
	for (size_t i = 0; i < nslots; i++) {
		atomic_init(&r->slots[i].seq, (uint32_t) i);
		r->slots[i].name  = 0;
		r->slots[i].step  = 0;
		r->slots[i].time  = 0;
		r->slots[i].value = 0;
	}
	r->mask = nslots - 1;
	atomic_init(&r->enq, 0);
	atomic_init(&r->dropped, 0);
	r->deq = 0;
	atomic_init(&r->dozing, 0);
	return 0;
}

void
vte_ring_free(vte_ring *r)
{
	free(r->slots);
	r->slots = NULL;
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	r->wake_fd = -1;
}
