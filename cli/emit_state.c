#include "cli/emit_state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emitter/state_dir.h"

#define STATE_MAGIC "vitals emit state 1"

/* Seqs stay far below 2^63 (vt_open_continue's bound): past this a
 * state starts a new incarnation rather than wrap. */
#define SEQ_LIMIT ((uint64_t) 1 << 62)

/*
 * The file name of (run, rank): the run with every byte outside
 * [A-Za-z0-9_-] as %XX (run names may hold '/' and any UTF-8), then
 * ".RANK.state". A run whose encoding would pass 150 bytes is cut there
 * and followed by a 64-bit FNV-1a hash of the whole name; the file also
 * holds the run, so a collision starts a new incarnation, never a mixup.
 */
static void
file_name(const char *run, int32_t rank, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char              enc[160];
	size_t            o     = 0;
	uint64_t          h     = 0xcbf29ce484222325ull;
	int               long_ = 0;

	for (const unsigned char *p = (const unsigned char *) run; *p; p++) {
		h = (h ^ *p) * 0x100000001b3ull;
		if (long_)
			continue;
		if (o + 3 >= 150) {
			long_ = 1;
			continue;
		}
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
		    || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-') {
			enc[o++] = (char) *p;
		} else {
			enc[o++] = '%';
			enc[o++] = hex[*p >> 4];
			enc[o++] = hex[*p & 15];
		}
	}
	enc[o] = 0;
	if (long_)
		snprintf(buf, len, "%s~%016" PRIx64 ".%d.state", enc, h,
		    (int) rank);
	else
		snprintf(buf, len, "%s.%d.state", enc, (int) rank);
}

/* The value of line "KEY VALUE\n" in text, copied (NUL-terminated) into
 * out; -1 if absent or too long. */
static int
field(const char *text, const char *key, char *out, size_t len)
{
	size_t      kl = strlen(key);
	const char *p  = text;

	while (p != NULL && *p) {
		const char *nl = strchr(p, '\n');
		size_t      ll = nl ? (size_t) (nl - p) : strlen(p);

		if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			if (ll - kl - 1 >= len)
				return -1;
			memcpy(out, p + kl + 1, ll - kl - 1);
			out[ll - kl - 1] = 0;
			return 0;
		}
		p = nl ? nl + 1 : NULL;
	}
	return -1;
}

static int
field_u64(const char *text, const char *key, uint64_t *out)
{
	char               v[32];
	char              *end;
	unsigned long long x;

	if (field(text, key, v, sizeof(v)) != 0 || v[0] < '0' || v[0] > '9')
		return -1;
	errno = 0;
	x     = strtoull(v, &end, 10);
	if (errno != 0 || *end != 0)
		return -1;
	*out = x;
	return 0;
}

/* What the file holds for (run, rank), if it is a whole state written
 * for them: 0 with *inc and *next set, else -1. */
static int
read_state(
    int fd, const char *run, int32_t rank, uint64_t *inc, uint64_t *next)
{
	char     buf[512];
	char     r[256];
	ssize_t  n = pread(fd, buf, sizeof(buf) - 1, 0);
	uint64_t rk;

	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (strncmp(buf, STATE_MAGIC "\n", sizeof(STATE_MAGIC)) != 0
	    || field(buf, "run", r, sizeof(r)) != 0 || strcmp(r, run) != 0
	    || field_u64(buf, "rank", &rk) != 0 || rk != (uint64_t) rank
	    || field_u64(buf, "incarnation", inc) != 0
	    || field_u64(buf, "next_seq", next) != 0 || *next == 0
	    || *next >= SEQ_LIMIT)
		return -1;
	return 0;
}

/* Replace the file's content and make it durable. 0 or -1 (errno). */
static int
write_state(int fd, const char *run, int32_t rank, uint64_t inc, uint64_t next)
{
	char buf[512];
	int  n = snprintf(buf, sizeof(buf),
	     STATE_MAGIC "\nrun %s\nrank %d\nincarnation %" PRIu64
	                 "\nnext_seq %" PRIu64 "\n",
	     run, (int) rank, inc, next);

	if (n < 0 || (size_t) n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (pwrite(fd, buf, (size_t) n, 0) != n || ftruncate(fd, n) != 0
	    || fdatasync(fd) != 0)
		return -1;
	return 0;
}

int
emit_state_begin(emit_state *st, const char *run, int32_t rank,
    uint64_t nbatches, char *err, size_t errlen)
{
	char     dir[3800], name[200];
	uint64_t inc = 0, next = 1;
	int      n;

	st->fd          = -1;
	st->incarnation = 0;
	st->first_seq   = 1;
	if (vte_state_dir("emit", dir, sizeof(dir)) != 0) {
		snprintf(err, errlen,
		    "no state folder (set XDG_STATE_HOME or HOME)");
		return -1;
	}
	file_name(run, rank, name, sizeof(name));
	n = snprintf(st->path, sizeof(st->path), "%s/%s", dir, name);
	if (n < 0 || (size_t) n >= sizeof(st->path)) {
		snprintf(err, errlen, "state folder %s: name too long", dir);
		return -1;
	}
	if (vte_mkdir_p(dir) != 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	st->fd = open(st->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (st->fd < 0) {
		snprintf(err, errlen, "%s: %s", st->path, strerror(errno));
		return -1;
	}
	/* Concurrent calls for this run and rank wait here, each for the
	 * one before it (at most its --timeout-ms and close). */
	while (flock(st->fd, LOCK_EX) != 0) {
		if (errno == EINTR)
			continue;
		snprintf(
		    err, errlen, "%s: lock: %s", st->path, strerror(errno));
		goto fail;
	}
	if (read_state(st->fd, run, rank, &inc, &next) != 0
	    || next + nbatches >= SEQ_LIMIT) {
		inc  = 0;
		next = 1;
	}
	/* The range is taken before anything is sent: if this call dies
	 * halfway, the next starts above whatever it may have stored. */
	if (write_state(st->fd, run, rank, inc, next + nbatches) != 0) {
		snprintf(err, errlen, "%s: %s", st->path, strerror(errno));
		goto fail;
	}
	st->incarnation = inc;
	st->first_seq   = next;
	snprintf(st->run, sizeof(st->run), "%s", run);
	st->rank = rank;
	st->next = next + nbatches;
	return 0;
fail:
	close(st->fd);
	st->fd = -1;
	return -1;
}

int
emit_state_keep(emit_state *st, uint64_t incarnation, char *err, size_t errlen)
{
	if (st->fd < 0 || st->incarnation == incarnation)
		return 0;
	if (write_state(st->fd, st->run, st->rank, incarnation, st->next)
	    != 0) {
		snprintf(err, errlen, "%s: %s", st->path, strerror(errno));
		return -1;
	}
	st->incarnation = incarnation;
	return 0;
}

void
emit_state_end(emit_state *st, int ok)
{
	if (st == NULL || st->fd < 0)
		return;
	if (!ok && ftruncate(st->fd, 0) == 0)
		fdatasync(st->fd);
	close(st->fd); /* releases the lock */
	st->fd = -1;
}
