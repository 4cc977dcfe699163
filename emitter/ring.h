/*
 * ring: the bounded multi-producer single-consumer queue between the
 * logging threads and the I/O thread.
 *
 * Dmitry Vyukov's bounded queue: each slot carries a sequence number; a
 * producer claims a position with a CAS on the enqueue index after seeing
 * that the slot is free for that position, writes the sample and publishes
 * it with a release store of the slot's sequence. The single consumer
 * reads slots in order and hands each back for the next lap. No locks, no
 * system calls, no allocation. When the slot for the next position still
 * holds an unconsumed sample the ring is full: the push fails and the
 * dropped counter is incremented.
 *
 * Sequence numbers are 32 bits (compared by signed difference, valid for
 * rings below 2^31 slots), which keeps a slot at 32 bytes: two per cache
 * line.
 *
 * A consumer with nothing to do may doze: it raises the ring's doze flag,
 * checks once more that nothing was claimed, and waits on wake_fd (an
 * eventfd) for a bounded time. Samples pushed meanwhile wait for the end
 * of the doze, with one exception that keeps the ring from overflowing
 * while it sleeps: the push that claims a position on a half-ring
 * boundary looks at the flag, and if it is raised, clears it and writes
 * wake_fd. So a dozing consumer is woken before the ring is more than
 * half full, and every other push costs one bit test. The CAS that
 * claims a position and that load of the flag, like the store of the
 * flag and the consumer's load of the enqueue index, are sequentially
 * consistent, so either the producer sees the flag or the consumer sees
 * the claim.
 *
 * Internal to libvitals. It owns the samples between a logging thread
 * and the I/O thread; a push must not block or allocate, makes a system
 * call only to keep a dozing consumer from letting the ring overflow, and
 * only the I/O thread pops.
 */
#ifndef VTE_RING_H
#define VTE_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* The flag in a slot's name field telling that the time is in clock ticks
 * (vte_clock_ticks), not in ns since the epoch. */
#define VTE_RING_TICKS 0x80000000u

/* Smallest and largest rings. */
#define VTE_RING_MIN_SLOTS 4096u
#define VTE_RING_MAX_SLOTS (1u << 24)

typedef struct vte_ring_slot {
	_Atomic uint32_t seq;
	uint32_t         name; /* interned name id | VTE_RING_TICKS */
	uint64_t         step;
	int64_t          time;
	double           value;
} vte_ring_slot;

/* Producers write enq and dropped, the consumer writes deq: each on its
 * own cache line so they do not slow each other down. */
typedef struct vte_ring {
	vte_ring_slot *slots;
	uint64_t       mask;
	_Alignas(64) _Atomic uint64_t enq; /* positions claimed so far */
	_Alignas(64) _Atomic uint64_t dropped;
	_Alignas(64) uint64_t deq;            /* consumer only */
	_Alignas(64) _Atomic uint32_t dozing; /* 1: the consumer waits long */
	int wake_fd; /* eventfd: wakes the consumer, owned by the ring */
} vte_ring;

/* Bytes a ring of n slots occupies. */
#define VTE_RING_BYTES(n) ((size_t) (n) * sizeof(vte_ring_slot))

/* Allocate a ring of nslots (a power of 2 within the limits above) and
 * its wake_fd, and touch every page so that pushes never fault. Returns 0
 * or -1 (errno: ENOMEM, or eventfd's). */
int  vte_ring_init(vte_ring *r, size_t nslots);
void vte_ring_free(vte_ring *r);

/*
 * Push one sample. Returns 0, or -1 if the ring is full (the sample was
 * dropped and counted). Thread-safe for any number of producers.
 */
static inline int
vte_ring_push(
    vte_ring *r, uint32_t name, uint64_t step, int64_t time, double value)
{
	uint64_t pos = atomic_load_explicit(&r->enq, memory_order_relaxed);
	vte_ring_slot *s;

	for (;;) {
		uint32_t seq;
		int32_t  dif;

		s   = &r->slots[pos & r->mask];
		seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		dif = (int32_t) (seq - (uint32_t) pos);
		if (dif == 0) {
			/* seq_cst: ordered before the load of dozing below
			 * (on x86 any CAS is a full barrier: no cost). */
			if (atomic_compare_exchange_weak_explicit(&r->enq,
			        &pos, pos + 1, memory_order_seq_cst,
			        memory_order_relaxed))
				break;
		} else if (dif < 0) {
			atomic_fetch_add_explicit(
			    &r->dropped, 1, memory_order_relaxed);
			return -1;
		} else {
			pos = atomic_load_explicit(
			    &r->enq, memory_order_relaxed);
		}
	}
	s->name  = name;
	s->step  = step;
	s->time  = time;
	s->value = value;
	atomic_store_explicit(
	    &s->seq, (uint32_t) (pos + 1), memory_order_release);
	if (__builtin_expect(((pos + 1) & (r->mask >> 1)) == 0, 0)
	    && atomic_load_explicit(&r->dozing, memory_order_seq_cst)
	    && atomic_exchange_explicit(&r->dozing, 0, memory_order_seq_cst)) {
		uint64_t one = 1;

		/* Fails only if the counter is full: it is readable then. */
		if (write(r->wake_fd, &one, sizeof(one)) < 0)
			return 0;
	}
	return 0;
}

/*
 * Pop the oldest published sample into *out. Returns 1, or 0 if the next
 * position is not published yet (empty, or its producer is mid-write).
 * Consumer thread only.
 */
static inline int
vte_ring_pop(vte_ring *r, vte_ring_slot *out)
{
	vte_ring_slot *s = &r->slots[r->deq & r->mask];
	uint32_t seq     = atomic_load_explicit(&s->seq, memory_order_acquire);

	if (seq != (uint32_t) (r->deq + 1))
		return 0;
	out->name  = s->name;
	out->step  = s->step;
	out->time  = s->time;
	out->value = s->value;
	atomic_store_explicit(
	    &s->seq, (uint32_t) (r->deq + r->mask + 1), memory_order_release);
	r->deq++;
	return 1;
}

/*
 * Consumer: raise the doze flag if nothing is claimed and not popped.
 * Returns 1 if the consumer may now wait on wake_fd (and must call
 * vte_ring_wake_up() when it wakes), 0 if a sample came (flag lowered).
 */
static inline int
vte_ring_doze(vte_ring *r)
{
	atomic_store_explicit(&r->dozing, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&r->enq, memory_order_seq_cst) == r->deq)
		return 1;
	atomic_store_explicit(&r->dozing, 0, memory_order_relaxed);
	return 0;
}

/* Consumer: lower the doze flag after a wait. */
static inline void
vte_ring_wake_up(vte_ring *r)
{
	atomic_store_explicit(&r->dozing, 0, memory_order_relaxed);
}

/* Samples accepted so far (positions claimed). */
static inline uint64_t
vte_ring_claimed(const vte_ring *r)
{
	return atomic_load_explicit(&r->enq, memory_order_acquire);
}

/* Samples dropped so far because the ring was full. */
static inline uint64_t
vte_ring_dropped(const vte_ring *r)
{
	return atomic_load_explicit(&r->dropped, memory_order_acquire);
}

#pragma GCC visibility pop

#endif /* VTE_RING_H */
