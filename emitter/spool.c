#include "emitter/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emitter/state_dir.h"

#define PATH_LEN 4096

int
vte_spool_dir(char *buf, size_t len)
{
	const char *e = getenv("VITALS_SPOOL_DIR");
	int         n;

	if (e == NULL || *e == 0)
		return vte_state_dir("spool", buf, len);
	if (strcmp(e, "off") == 0)
		return 1;
	n = snprintf(buf, len, "%s", e);
	return n < 0 || (size_t) n >= len ? -1 : 0;
}

/* $VITALS_SPOOL_MAX: bytes, or with a K, M or G suffix (powers of 1024);
 * the default if unset or malformed. */
static uint64_t
spool_max(void)
{
	const char        *v = getenv("VITALS_SPOOL_MAX");
	char              *end;
	unsigned long long x;
	unsigned           shift = 0;

	if (v == NULL || *v < '0' || *v > '9')
		return VTE_SPOOL_MAX_DEFAULT;
	errno = 0;
	x     = strtoull(v, &end, 10);
	if (errno != 0)
		return VTE_SPOOL_MAX_DEFAULT;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'm' || *end == 'M')
		shift = 20;
	else if (*end == 'g' || *end == 'G')
		shift = 30;
	if (shift != 0)
		end++;
	if (*end != 0 || x > (~0ull >> shift))
		return VTE_SPOOL_MAX_DEFAULT;
	return (uint64_t) x << shift;
}

/* Bytes held by the spool files of dir (0 if it cannot be read). */
static uint64_t
folder_used(const char *dir)
{
	DIR           *d = opendir(dir);
	struct dirent *e;
	uint64_t       sum = 0;
	size_t         sl  = strlen(VTE_SPOOL_SUFFIX);

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t      l = strlen(e->d_name);
		struct stat st;

		if (l <= sl
		    || strcmp(e->d_name + l - sl, VTE_SPOOL_SUFFIX) != 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, 0) == 0)
			sum += (uint64_t) st.st_size;
	}
	closedir(d);
	return sum;
}

static int
write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t w = write(fd, b, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		b += w;
		len -= (size_t) w;
	}
	return 0;
}

/*
 * Write the items to tmp and rename it to path. On failure returns -1
 * with errno set, and tmp is removed. No fsync: this runs while the
 * process exits, which must stay bounded, and an fsync on a loaded or
 * network file system can take seconds; the file outlives the process
 * (what the spool is for), not a crash of the machine, and a file left
 * short by one is refused whole by `vitals spool send`.
 */
static int
write_file(
    const char *tmp, const char *path, const vte_spool_item *items, size_t n)
{
	int     fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int     e;
	uint8_t len[4];

	if (fd < 0)
		return -1;
	if (write_all(fd, VTE_SPOOL_MAGIC, 8) != 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		wire_put32(len, (uint32_t) items[i].len);
		if (write_all(fd, len, sizeof(len)) != 0
		    || write_all(fd, items[i].data, items[i].len) != 0)
			goto fail;
	}
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail;
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = e;
	return -1;
}

/*
 * The one line the emitter prints. Library code does not print as a
 * rule, but here the process is ending and nobody else can say that its
 * samples went to disk, or are gone: this line is the only way the user
 * learns it (stderr is where a scheduler's job log collects it).
 */
int
vte_spool_save(const wire_ident *id, const char *endpoint,
    const vte_spool_item *items, size_t n, uint64_t lost)
{
	char        dir[PATH_LEN], tmp[PATH_LEN + 64], path[PATH_LEN + 64];
	char        head[400], more[96] = "";
	const char *are;
	uint64_t    samples = 0, size = 8, used, max;
	int         r;

	for (size_t i = 0; i < n; i++) {
		samples += items[i].n;
		size += 4 + items[i].len;
	}
	snprintf(head, sizeof(head),
	    "vitals: %" PRIu64 " sample%s not acknowledged by %s within the "
	    "close timeout",
	    samples, samples == 1 ? "" : "s", endpoint);
	are = samples == 1 ? "is" : "are";
	if (n == 0) {
		fprintf(stderr,
		    "vitals: %" PRIu64
		    " samples not acknowledged by %s within "
		    "the close timeout are lost: out of memory to spool "
		    "them\n",
		    lost, endpoint);
		return -1;
	}
	if (lost > 0)
		snprintf(more, sizeof(more),
		    "; %" PRIu64 " more did not fit in the window and %s lost",
		    lost, lost == 1 ? "is" : "are");
	r = vte_spool_dir(dir, sizeof(dir));
	if (r != 0) {
		fprintf(stderr, "%s %s lost: %s%s\n", head, are,
		    r > 0 ? "spooling is off (VITALS_SPOOL_DIR=off)"
		          : "no spool folder (set VITALS_SPOOL_DIR or HOME)",
		    more);
		return -1;
	}
	max = spool_max();
	if (vte_mkdir_p(dir) != 0) {
		fprintf(stderr,
		    "%s %s lost: cannot create the spool folder %s: %s%s\n",
		    head, are, dir, strerror(errno), more);
		return -1;
	}
	used = folder_used(dir);
	if (used + size > max) {
		fprintf(stderr,
		    "%s %s lost: the spool folder %s is full (%" PRIu64
		    " bytes used, %" PRIu64
		    " more needed, VITALS_SPOOL_MAX %" PRIu64 ")%s\n",
		    head, are, dir, used, size, max, more);
		return -1;
	}
	snprintf(
	    tmp, sizeof(tmp), "%s/.%016" PRIx64 ".tmp", dir, id->incarnation);
	snprintf(path, sizeof(path), "%s/%016" PRIx64 "%s", dir,
	    id->incarnation, VTE_SPOOL_SUFFIX);
	if (write_file(tmp, path, items, n) != 0) {
		fprintf(stderr, "%s %s lost: writing %s: %s%s\n", head, are,
		    path, strerror(errno), more);
		return -1;
	}
	fprintf(stderr,
	    "%s: spooled to %s (`vitals spool send` delivers them)%s\n", head,
	    path, more);
	return 0;
}

/* Read the whole file into *out (caller frees). Returns 0 or -1 (errno
 * set, or EFBIG past 2 GiB). */
static int
slurp(const char *path, uint8_t **out, size_t *len)
{
	int         fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t    *b   = NULL;
	size_t      got = 0;
	int         e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0)
		goto fail;
	if (st.st_size > (off_t) 1 << 31) {
		errno = EFBIG;
		goto fail;
	}
	b = malloc((size_t) st.st_size + 1);
	if (b == NULL)
		goto fail;
	while (got < (size_t) st.st_size) {
		ssize_t r = read(fd, b + got, (size_t) st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO; /* shrank while read */
			goto fail;
		}
		got += (size_t) r;
	}
	close(fd);
	*out = b;
	*len = got;
	return 0;
fail:
	e = errno;
	free(b);
	close(fd);
	errno = e;
	return -1;
}

int
vte_spool_read(const char *path, uint8_t **buf, vte_spool_item **items,
    size_t *n, char *err, size_t errlen)
{
	uint8_t        *b;
	size_t          len, off = 8, cap = 0, cnt = 0;
	vte_spool_item *it  = NULL;
	uint64_t        inc = 0;

	*buf   = NULL;
	*items = NULL;
	*n     = 0;
	if (slurp(path, &b, &len) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (len < 8 || memcmp(b, VTE_SPOOL_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: not a vitals spool file", path);
		goto fail;
	}
	while (off < len) {
		wire_batch wb;
		char       why[200];
		uint32_t   bl;

		if (len - off < 4
		    || (bl = wire_get32(b + off)) > WIRE_MAX_MESSAGE
		    || bl > len - off - 4) {
			snprintf(err, errlen,
			    "%s: offset %zu: truncated or bad batch length",
			    path, off);
			goto fail;
		}
		if (wire_batch_decode(b + off + 4, bl, &wb, why, sizeof(why))
		    != 0) {
			snprintf(err, errlen, "%s: offset %zu: %s", path,
			    off + 4, why);
			goto fail;
		}
		if (cnt > 0 && wb.id.incarnation != inc) {
			snprintf(err, errlen,
			    "%s: offset %zu: a batch of another emitter", path,
			    off + 4);
			goto fail;
		}
		inc = wb.id.incarnation;
		if (cnt == cap) {
			size_t          nc = cap ? 2 * cap : 64;
			vte_spool_item *ni = realloc(it, nc * sizeof(*it));

			if (ni == NULL) {
				snprintf(
				    err, errlen, "%s: out of memory", path);
				goto fail;
			}
			it  = ni;
			cap = nc;
		}
		it[cnt].data = b + off + 4;
		it[cnt].len  = bl;
		it[cnt].n    = wb.nsamples;
		cnt++;
		off += 4 + (size_t) bl;
	}
	*buf   = b;
	*items = it;
	*n     = cnt;
	return 0;
fail:
	free(it);
	free(b);
	return -1;
}
