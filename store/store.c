#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store/be.h"
#include "store/varint.h"
#include "wire/le.h"

/* The map starts small and doubles when full: a short run costs little
 * address space and the growth path is exercised by every long test. */
#define STORE_MAP_INITIAL (16u << 20)
#define STORE_MAP_MAX ((size_t) 1 << 40)

/*
 * Whether the file system holding dir has no room for one more page. LMDB
 * reports a short write (what a nearly full disk gives) as EIO, so an
 * I/O error is told apart from a full disk here.
 */
static int
no_room(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) != 0)
		return 0;
	return (unsigned long long) sv.f_bavail * sv.f_frsize < 65536;
}

/*
 * Record an LMDB or errno failure on the handle and translate it into a
 * store_err. Returns the translated code.
 */
int
store_fail(store *st, int rc, const char *what)
{
	int code;

	switch (rc) {
	case ENOSPC:
	case EDQUOT:
		code = STORE_ENOSPC;
		break;
	case MDB_MAP_FULL:
		code = STORE_EMAPFULL;
		break;
	case ENOMEM:
		code = STORE_ENOMEM;
		break;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
		code = STORE_ECORRUPT;
		break;
	case MDB_VERSION_MISMATCH:
		code = STORE_EFORMAT;
		break;
	case ENOENT:
		code = STORE_ENOTFOUND;
		break;
	case EIO:
		code = no_room(st->dir) ? STORE_ENOSPC : STORE_EIO;
		break;
	default:
		code = STORE_EIO;
		break;
	}
	if (code == STORE_ENOSPC)
		snprintf(st->err, sizeof(st->err),
		    "%s: %s: disk full (%s); the transaction was not kept",
		    st->dir, what, mdb_strerror(rc));
	else
		snprintf(st->err, sizeof(st->err), "%s: %s: %s", st->dir, what,
		    mdb_strerror(rc));
	return code;
}

/*
 * Converting a format-1 or 2 store to format 3: the statistics of each
 * series move from its record to the stats database (sid BE ->
 * statistics), where the fold reads and rewrites them in sid order;
 * format 1 also gets the sid index (sids: sid BE -> series key), which
 * it did not keep. The series records are left as they are (their
 * statistics are no longer read). One pass over the series records.
 * Returns 0 or an LMDB error.
 */
static int
convert_series(store *st, MDB_txn *txn, int format)
{
	MDB_cursor *cur;
	MDB_val     k, v, sk, sv;
	uint8_t     sid[4], buf[STATS_REC_SIZE];
	int         rc;

	if ((rc = mdb_cursor_open(txn, st->series, &cur)) != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		series_rec r;

		if (v.mv_size == SERIES_REC_SIZE_V3
		    || store_series_decode(v.mv_data, v.mv_size, &r) != 0) {
			rc = MDB_CORRUPTED;
			break;
		}
		be_put32(sid, r.sid);
		sk.mv_data = sid;
		sk.mv_size = 4;
		if (format == 1
		    && (rc = mdb_put(txn, st->sids, &sk, &k, 0)) != 0)
			break;
		sv.mv_size = store_stats_encode(buf, &r);
		sv.mv_data = buf;
		if ((rc = mdb_put(txn, st->stats, &sk, &sv, 0)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int
open_dbs(store *st, char *err, size_t errlen)
{
	MDB_txn     *txn;
	unsigned int dbflags = (st->flags & STORE_RDONLY) ? 0 : MDB_CREATE;
	unsigned int tflags  = (st->flags & STORE_RDONLY) ? MDB_RDONLY : 0;
	int          rc;
	MDB_val      k, v;
	uint8_t      fmt[4];
	uint32_t     had = 0;

	rc = mdb_txn_begin(st->env, NULL, tflags, &txn);
	if (rc != 0)
		goto fail;
	if ((rc = mdb_dbi_open(txn, "meta", dbflags, &st->meta)) != 0
	    || (rc = mdb_dbi_open(txn, "series", dbflags, &st->series)) != 0
	    || (rc = mdb_dbi_open(txn, "blocks", dbflags, &st->blocks)) != 0
	    || (rc = mdb_dbi_open(txn, "emitters", dbflags, &st->emitters))
	        != 0
	    || (rc = mdb_dbi_open(txn, "runs", dbflags, &st->runs)) != 0
	    || (rc = mdb_dbi_open(txn, "alerts", dbflags, &st->alerts)) != 0) {
		mdb_txn_abort(txn);
		goto fail;
	}
	/* The journal (format 2). A format-1 store has none: its reader
	 * reads it as it is, its writer creates it below. */
	rc = mdb_dbi_open(txn, "journal", dbflags, &st->journal);
	if (rc == MDB_NOTFOUND && (st->flags & STORE_RDONLY))
		rc = 0;
	else if (rc == 0)
		st->has_journal = 1;
	if (rc == 0 && !(st->flags & STORE_RDONLY))
		rc = mdb_dbi_open(txn, "sids", dbflags, &st->sids);
	/* The statistics by series id (format 3). A format-1 or 2 store
	 * has none: its reader takes them from the series records, its
	 * writer builds them below. */
	if (rc == 0) {
		rc = mdb_dbi_open(txn, "stats", dbflags, &st->stats);
		if (rc == MDB_NOTFOUND && (st->flags & STORE_RDONLY))
			rc = 0;
		else if (rc == 0)
			st->has_stats = 1;
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		goto fail;
	}
	k.mv_data = (void *) (uintptr_t) "format";
	k.mv_size = 6;
	rc        = mdb_get(txn, st->meta, &k, &v);
	if (rc == 0
	    && (v.mv_size != 4 || wire_get32(v.mv_data) < STORE_FORMAT_OLDEST
	        || wire_get32(v.mv_data) > STORE_FORMAT)) {
		mdb_txn_abort(txn);
		snprintf(err, errlen,
		    "%s: database format %u, this vitals reads formats %d "
		    "to %d",
		    st->dir, v.mv_size == 4 ? wire_get32(v.mv_data) : 0,
		    STORE_FORMAT_OLDEST, STORE_FORMAT);
		return STORE_EFORMAT;
	}
	/* Format 7: a new store keeps its series index by metric (no
	 * conversion: a store written before keeps it in series, with
	 * what readers that opened it then read). */
	{
		unsigned int mf = MDB_DUPSORT | MDB_DUPFIXED;
		int          r2;

		if (!(st->flags & STORE_RDONLY) && rc == MDB_NOTFOUND)
			mf |= MDB_CREATE;
		r2 = mdb_dbi_open(txn, "metrics", mf, &st->metrics);
		if (r2 != 0 && r2 != MDB_NOTFOUND) {
			mdb_txn_abort(txn);
			rc = r2;
			goto fail;
		}
		st->by_metric = r2 == 0;
	}
	/* Format 7 writes no statistics for a series until samples are
	 * counted in it; a writer converts any store to it (below), a
	 * reader of an older one still takes a missing entry as corrupt.
	 * A store with no format yet is new: it has no series. */
	st->stats_sparse = !(st->flags & STORE_RDONLY) || rc != 0
	    || wire_get32(v.mv_data) >= 7;
	/* A writer converts format 1 (no journal) by creating the empty
	 * journal above, and formats 1 and 2 by moving the statistics to
	 * the stats database (convert_series), then writes the new number;
	 * blocks and journal records are not rewritten. Format 3 needs only
	 * the number: its journal records and statistics are read as they
	 * are (the statistics are written compactly when next rewritten,
	 * its records are folded); so do formats 4 to 6 (format 7 only
	 * stops writing the empty statistics of new series: the entries
	 * there stay and are read). Older readers then refuse the store
	 * with their format message. */
	if (!(st->flags & STORE_RDONLY) && rc == 0
	    && (had = wire_get32(v.mv_data)) < 3
	    && (rc = convert_series(st, txn, (int) had)) != 0) {
		mdb_txn_abort(txn);
		goto fail;
	}
	if (!(st->flags & STORE_RDONLY)
	    && (rc == MDB_NOTFOUND || (rc == 0 && had != STORE_FORMAT))) {
		wire_put32(fmt, STORE_FORMAT);
		v.mv_data = fmt;
		v.mv_size = 4;
		rc        = mdb_put(txn, st->meta, &k, &v, 0);
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		goto fail;
	}
	/* Committed even when read-only: an aborted transaction would
	 * close the database handles it opened. */
	if ((rc = mdb_txn_commit(txn)) != 0)
		goto fail;
	return 0;
fail:
	rc = store_fail(st, rc, "opening databases");
	snprintf(err, errlen, "%s", st->err);
	return rc;
}

/* Create dir and its missing parents (0700). Returns 0 or -1 (errno). */
static int
mkdir_p(const char *dir)
{
	char   path[1024];
	size_t n = strlen(dir);

	if (n >= sizeof(path))
		return -1;
	memcpy(path, dir, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (path[i] != '/')
			continue;
		path[i] = 0;
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return -1;
		path[i] = '/';
	}
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

/*
 * Take the writer lock of st->dir, or say who holds it. The lock dies
 * with the process, so a killed collector never leaves it behind.
 */
static int
lock_writer(store *st, char *err, size_t errlen)
{
	char    path[1100], pid[32] = "";
	ssize_t n;
	int     fd;

	snprintf(path, sizeof(path), "%s/writer.lock", st->dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return STORE_EIO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		if (e != EWOULDBLOCK) {
			snprintf(err, errlen, "%s: %s", path, strerror(e));
			close(fd);
			return STORE_EIO;
		}
		n                       = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0]      = 0;
		pid[strcspn(pid, "\n")] = 0;
		snprintf(err, errlen,
		    "%s is in use by another writer (pid %s): one vitalsd per "
		    "database",
		    st->dir, pid[0] ? pid : "unknown");
		close(fd);
		return STORE_EBUSY;
	}
	n = snprintf(path, sizeof(path), "%ld\n", (long) getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, path, (size_t) n, 0) != n) {
		snprintf(err, errlen, "%s/writer.lock: %s", st->dir,
		    strerror(errno));
		close(fd);
		return STORE_EIO;
	}
	st->lock_fd = fd;
	return 0;
}

int
store_open(const char *dir, int flags, store **out, char *err, size_t errlen)
{
	store       *st;
	unsigned int eflags = MDB_NOTLS;
	int          rc;
	size_t       n;

	*out = NULL;
	st   = calloc(1, sizeof(*st));
	if (st == NULL) {
		snprintf(err, errlen, "%s: out of memory", dir);
		return STORE_ENOMEM;
	}
	st->flags = flags;
	n         = strlen(dir);
	if (n >= sizeof(st->dir)) {
		snprintf(err, errlen, "database path too long (%zu bytes)", n);
		free(st);
		return STORE_ENOTFOUND;
	}
	memcpy(st->dir, dir, n + 1);

	st->lock_fd = -1;
	pthread_rwlock_init(&st->remap, NULL);
	if (flags & STORE_RDONLY) {
		struct stat sb;
		char        path[1100];

		snprintf(path, sizeof(path), "%s/data.mdb", dir);
		if (stat(path, &sb) != 0) {
			int e = errno;

			/* Only a missing file means no database: a folder
			 * this user may not enter holds one all the same. */
			if (e == ENOENT || e == ENOTDIR)
				snprintf(err, errlen,
				    "%s: no vitals database here (no "
				    "data.mdb); is --db right?",
				    dir);
			else if (e == EACCES || e == EPERM)
				snprintf(err, errlen,
				    "%s: permission denied (this user may "
				    "not read the database folder)",
				    path);
			else
				snprintf(
				    err, errlen, "%s: %s", path, strerror(e));
			free(st);
			return e == ENOENT || e == ENOTDIR ? STORE_ENOTFOUND
			                                   : STORE_EIO;
		}
		eflags |= MDB_RDONLY;
	} else {
		if (mkdir_p(dir) != 0) {
			snprintf(err, errlen, "%s: cannot create folder: %s",
			    dir, strerror(errno));
			free(st);
			return STORE_EIO;
		}
		if (flags & STORE_NOSYNC)
			eflags |= MDB_NOSYNC;
		if ((rc = lock_writer(st, err, errlen)) != 0) {
			free(st);
			return rc;
		}
	}

	if ((rc = mdb_env_create(&st->env)) != 0)
		goto fail;
	if ((rc = mdb_env_set_maxdbs(st->env, 16)) != 0)
		goto fail;
	if ((rc = mdb_env_set_maxreaders(st->env, 512)) != 0)
		goto fail;
	if (!(flags & STORE_RDONLY)
	    && (rc = mdb_env_set_mapsize(st->env, STORE_MAP_INITIAL)) != 0)
		goto fail;
	/* Database files are created 0600: metrics are the user's own. */
	if ((rc = mdb_env_open(st->env, dir, eflags, 0600)) != 0)
		goto fail;
	if ((rc = open_dbs(st, err, errlen)) != 0) {
		mdb_env_close(st->env);
		if (st->lock_fd >= 0)
			close(st->lock_fd);
		free(st);
		return rc;
	}
	*out = st;
	return 0;
fail:
	if (rc == EACCES || rc == EPERM) {
		/* LMDB's "Permission denied" names neither file nor need. */
		snprintf(st->err, sizeof(st->err),
		    "%s: permission denied (data.mdb must be readable, and "
		    "lock.mdb readable and writable, by this user)",
		    dir);
		rc = STORE_EIO;
	} else {
		rc = store_fail(st, rc, "opening environment");
	}
	snprintf(err, errlen, "%s", st->err);
	if (st->env != NULL)
		mdb_env_close(st->env);
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	free(st);
	return rc;
}

void
store_close(store *st)
{
	if (st == NULL)
		return;
	mdb_env_close(st->env);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* releases the writer lock */
	free(st->jbuf);
	free(st->jtails);
	pthread_rwlock_destroy(&st->remap);
	free(st);
}

const char *
store_errmsg(const store *st)
{
	return st->err;
}

const char *
store_dir(const store *st)
{
	return st->dir;
}

/*
 * Readers adopt a map that the collector grew since they opened the
 * environment (LMDB reports MDB_MAP_RESIZED once).
 */
int
store_read_begin(store *st, store_txn **out)
{
	store_txn *t = calloc(1, sizeof(*t));
	int        rc;

	*out = NULL;
	if (t == NULL) {
		snprintf(
		    st->err, sizeof(st->err), "%s: out of memory", st->dir);
		return STORE_ENOMEM;
	}
	pthread_rwlock_rdlock(&st->remap);
	rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &t->txn);
	if (rc == MDB_MAP_RESIZED) {
		mdb_env_set_mapsize(st->env, 0);
		rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &t->txn);
	}
	if (rc != 0) {
		pthread_rwlock_unlock(&st->remap);
		free(t);
		return store_fail(st, rc, "starting a read transaction");
	}
	t->st = st;
	*out  = t;
	return 0;
}

void
store_read_end(store_txn *t)
{
	if (t == NULL)
		return;
	mdb_txn_abort(t->txn);
	pthread_rwlock_unlock(&t->st->remap);
	free(t);
}

int
store_reader_check(store *st, int *dead)
{
	int rc;

	*dead = 0;
	if ((rc = mdb_reader_check(st->env, dead)) != 0)
		return store_fail(st, rc, "clearing dead readers");
	return 0;
}

uint64_t
store_map_size(const store *st)
{
	MDB_envinfo info;

	if (mdb_env_info(st->env, &info) != 0)
		return 0;
	return info.me_mapsize;
}

uint64_t
store_map_used(const store *st)
{
	MDB_envinfo info;
	MDB_stat    ms;

	if (mdb_env_info(st->env, &info) != 0
	    || mdb_env_stat(st->env, &ms) != 0)
		return 0;
	return ((uint64_t) info.me_last_pgno + 1) * ms.ms_psize;
}

int
store_meta_get(
    store_txn *t, const char *key, size_t klen, size_t width, uint64_t *out)
{
	MDB_val k, v;
	int     rc;

	k.mv_data = (void *) (uintptr_t) key;
	k.mv_size = klen;
	rc        = mdb_get(t->txn, t->st->meta, &k, &v);
	if (rc == MDB_NOTFOUND)
		return STORE_ENOTFOUND;
	if (rc != 0)
		return store_fail(t->st, rc, "reading a meta key");
	if (v.mv_size != width) {
		snprintf(t->st->err, sizeof(t->st->err),
		    "%s: meta key %.*s has %zu bytes, not %zu", t->st->dir,
		    (int) klen, key, v.mv_size, width);
		return STORE_ECORRUPT;
	}
	*out = width == 4 ? wire_get32(v.mv_data) : wire_get64(v.mv_data);
	return 0;
}

int
store_meta_put(
    store_txn *t, const char *key, size_t klen, size_t width, uint64_t n)
{
	uint8_t buf[8];
	MDB_val k, v;
	int     rc;

	if (width == 4)
		wire_put32(buf, (uint32_t) n);
	else
		wire_put64(buf, n);
	k.mv_data = (void *) (uintptr_t) key;
	k.mv_size = klen;
	v.mv_data = buf;
	v.mv_size = width;
	if ((rc = mdb_put(t->txn, t->st->meta, &k, &v, 0)) != 0)
		return store_fail(t->st, rc, "writing a meta key");
	return 0;
}

int
store_grow(store *st)
{
	MDB_envinfo info;
	size_t      next;
	int         rc;

	if ((rc = mdb_env_info(st->env, &info)) != 0)
		return store_fail(st, rc, "reading map size");
	if (info.me_mapsize >= STORE_MAP_MAX) {
		snprintf(st->err, sizeof(st->err),
		    "%s: database reached the %zu GiB map limit", st->dir,
		    STORE_MAP_MAX >> 30);
		return STORE_EMAPFULL;
	}
	next = info.me_mapsize * 2;
	pthread_rwlock_wrlock(&st->remap);
	rc = mdb_env_set_mapsize(st->env, next);
	pthread_rwlock_unlock(&st->remap);
	if (rc != 0)
		return store_fail(st, rc, "growing the map");
	return 0;
}

/*
 * Series keys sort by run, then metric, then rank, so that the metrics of
 * one run and the ranks of one metric are each one contiguous range. The
 * rank is stored biased by one (-1, "no rank", sorts first) big-endian.
 */
size_t
store_series_key(uint8_t *buf, const char *run, size_t runlen,
    const char *metric, size_t mlen, int32_t rank)
{
	size_t   off  = 0;
	uint32_t bias = (uint32_t) rank + 1u;

	memcpy(buf, run, runlen);
	off        = runlen;
	buf[off++] = 0;
	memcpy(buf + off, metric, mlen);
	off += mlen;
	buf[off++] = 0;
	buf[off++] = (uint8_t) (bias >> 24);
	buf[off++] = (uint8_t) (bias >> 16);
	buf[off++] = (uint8_t) (bias >> 8);
	buf[off++] = (uint8_t) bias;
	return off;
}

int
store_series_key_parse(const uint8_t *key, size_t len, const char **run,
    size_t *runlen, const char **metric, size_t *mlen, int32_t *rank)
{
	const uint8_t *z1, *z2;
	uint32_t       bias;

	if (len < 7)
		return -1;
	z1 = memchr(key, 0, len - 4);
	if (z1 == NULL)
		return -1;
	z2 = memchr(z1 + 1, 0, (size_t) (key + len - 4 - (z1 + 1)));
	if (z2 == NULL || z2 != key + len - 5)
		return -1;
	*run    = (const char *) key;
	*runlen = (size_t) (z1 - key);
	*metric = (const char *) z1 + 1;
	*mlen   = (size_t) (z2 - z1 - 1);
	bias    = ((uint32_t) z2[1] << 24) | ((uint32_t) z2[2] << 16)
	    | ((uint32_t) z2[3] << 8) | z2[4];
	*rank = (int32_t) (bias - 1u);
	return 0;
}

/*
 * Block keys sort by series, then first step, then block number: the
 * blocks of one series are contiguous and in step order, and appending a
 * block at ingest lands at (or near) the end of its series' range.
 */
void
store_block_key(
    uint8_t buf[16], uint32_t sid, uint64_t first_step, uint32_t no)
{
	be_put32(buf, sid);
	be_put64(buf + 4, first_step);
	be_put32(buf + 12, no);
}

size_t
store_refused_key(uint8_t *buf, const char *run, size_t runlen)
{
	memcpy(buf, "refused:", 8);
	memcpy(buf + 8, run, runlen);
	return 8 + runlen;
}

size_t
store_emitter_key(
    uint8_t *buf, const char *run, size_t runlen, uint64_t incarnation)
{
	memcpy(buf, run, runlen);
	buf[runlen] = 0;
	be_put64(buf + runlen + 1, incarnation);
	return runlen + 9;
}

static void
put_f64(uint8_t *p, double d)
{
	uint64_t bits;

	memcpy(&bits, &d, 8);
	wire_put64(p, bits);
}

static double
get_f64(const uint8_t *p)
{
	uint64_t bits = wire_get64(p);
	double   d;

	memcpy(&d, &bits, 8);
	return d;
}

void
store_series_encode(uint8_t buf[SERIES_REC_SIZE], const series_rec *r)
{
	wire_put32(buf, r->sid);
	wire_put32(buf + 4, r->nblocks);
	wire_put64(buf + 8, r->samples);
	wire_put64(buf + 16, r->first_step);
	wire_put64(buf + 24, r->last_step);
	wire_put64(buf + 32, (uint64_t) r->first_time);
	wire_put64(buf + 40, (uint64_t) r->last_time);
	put_f64(buf + 48, r->last_value);
	wire_put64(buf + 56, r->tail_first_step);
	wire_put32(buf + 64, r->tail_no);
	wire_put32(buf + 68, 0);
	wire_put64(buf + 72, r->jseen);
}

void
store_series_add(series_rec *r, const store_sample *s, size_t n)
{
	/* The rules ingest applied sample by sample before the journal. */
	for (size_t i = 0; i < n; i++) {
		if (r->samples == 0 || s[i].step < r->first_step)
			r->first_step = s[i].step;
		if (r->samples == 0 || s[i].step > r->last_step)
			r->last_step = s[i].step;
		if (s[i].time_ns < r->first_time)
			r->first_time = s[i].time_ns;
		if (s[i].time_ns >= r->last_time) {
			r->last_time  = s[i].time_ns;
			r->last_value = s[i].value;
		}
		r->samples++;
	}
}

int
store_series_decode(const void *buf, size_t len, series_rec *r)
{
	const uint8_t *p = buf;

	if (len == SERIES_REC_SIZE_V3) {
		/* Format 3: the statistics are in the stats database. */
		memset(r, 0, sizeof(*r));
		r->sid = wire_get32(p);
		store_stats_empty(r);
		return 0;
	}
	if (len != SERIES_REC_SIZE && len != SERIES_REC_SIZE_V1)
		return STORE_ECORRUPT;
	r->jseen           = len == SERIES_REC_SIZE ? wire_get64(p + 72) : 0;
	r->sid             = wire_get32(p);
	r->nblocks         = wire_get32(p + 4);
	r->samples         = wire_get64(p + 8);
	r->first_step      = wire_get64(p + 16);
	r->last_step       = wire_get64(p + 24);
	r->first_time      = (int64_t) wire_get64(p + 32);
	r->last_time       = (int64_t) wire_get64(p + 40);
	r->last_value      = get_f64(p + 48);
	r->tail_first_step = wire_get64(p + 56);
	r->tail_no         = wire_get32(p + 64);
	return 0;
}

void
store_stats_empty(series_rec *r)
{
	r->samples    = 0;
	r->first_step = UINT64_MAX;
	r->last_step  = 0;
	r->first_time = INT64_MAX;
	r->last_time  = INT64_MIN;
	r->last_value = 0;
	r->jseen      = 0;
}

/*
 * Format 4 writes the statistics compactly (the fold rewrites them for
 * every series it folds, so their size is a share of every fold's
 * pages): varints of the samples and the first step, a zigzag varint of
 * the last step less the first (wrapping), the first time (8 bytes), a
 * zigzag varint of the last time less the first (wrapping), the last
 * value (8 bytes) and a varint of jseen: about 26 bytes. Where that
 * would take STATS_REC_SIZE bytes or more, the fixed layout of format 3
 * is written (u64 samples, first step, last step, first time, last time,
 * f64 last value, u64 jseen): a reader tells them apart by the size.
 */
size_t
store_stats_encode(uint8_t buf[STATS_REC_SIZE], const series_rec *r)
{
	uint8_t  tmp[STATS_REC_SIZE + 16], *p = tmp;
	uint64_t lt = (uint64_t) r->last_time - (uint64_t) r->first_time;

	p = put_var(p, r->samples);
	p = put_var(p, r->first_step);
	p = put_var(p, zz((int64_t) (r->last_step - r->first_step)));
	wire_put64(p, (uint64_t) r->first_time);
	p = put_var(p + 8, zz((int64_t) lt));
	put_f64(p, r->last_value);
	p = put_var(p + 8, r->jseen);
	if (p - tmp < STATS_REC_SIZE) {
		memcpy(buf, tmp, (size_t) (p - tmp));
		return (size_t) (p - tmp);
	}
	wire_put64(buf, r->samples);
	wire_put64(buf + 8, r->first_step);
	wire_put64(buf + 16, r->last_step);
	wire_put64(buf + 24, (uint64_t) r->first_time);
	wire_put64(buf + 32, (uint64_t) r->last_time);
	put_f64(buf + 40, r->last_value);
	wire_put64(buf + 48, r->jseen);
	return STATS_REC_SIZE;
}

int
store_stats_decode(const void *buf, size_t len, series_rec *r)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t       ds, dt, ft;

	if (len == STATS_REC_SIZE) {
		r->samples    = wire_get64(p);
		r->first_step = wire_get64(p + 8);
		r->last_step  = wire_get64(p + 16);
		r->first_time = (int64_t) wire_get64(p + 24);
		r->last_time  = (int64_t) wire_get64(p + 32);
		r->last_value = get_f64(p + 40);
		r->jseen      = wire_get64(p + 48);
		return 0;
	}
	if (len > STATS_REC_SIZE || get_var(&p, end, &r->samples) != 0
	    || get_var(&p, end, &r->first_step) != 0
	    || get_var(&p, end, &ds) != 0 || end - p < 8)
		return STORE_ECORRUPT;
	ft = wire_get64(p);
	p += 8;
	if (get_var(&p, end, &dt) != 0 || end - p < 8)
		return STORE_ECORRUPT;
	r->last_value = get_f64(p);
	p += 8;
	if (get_var(&p, end, &r->jseen) != 0 || p != end)
		return STORE_ECORRUPT;
	r->last_step  = r->first_step + (uint64_t) unzz(ds);
	r->first_time = (int64_t) ft;
	r->last_time  = (int64_t) (ft + (uint64_t) unzz(dt));
	return 0;
}

/* Emitter and alert keys (run NUL u64) use the same buffers as series
 * keys. */
_Static_assert(WIRE_RUN_MAX + 1 + 8 <= STORE_KEY_MAX,
    "an emitter or alert key fits STORE_KEY_MAX");

/* Emitter records: a fixed part, the dedup window, then the host name. */
_Static_assert(sizeof(((emitter_rec *) 0)->host) == WIRE_HOST_MAX + 1,
    "an emitter record holds any host the wire carries");

size_t
store_emitter_encode(uint8_t *buf, const emitter_rec *r)
{
	size_t off = 0, hl = strlen(r->host);

	wire_put64(buf + off, r->incarnation), off += 8;
	wire_put64(buf + off, r->start_ns), off += 8;
	wire_put64(buf + off, (uint64_t) r->first_seen), off += 8;
	wire_put64(buf + off, (uint64_t) r->last_seen), off += 8;
	wire_put64(buf + off, r->batches), off += 8;
	wire_put64(buf + off, r->samples), off += 8;
	wire_put64(buf + off, r->duplicates), off += 8;
	wire_put64(buf + off, r->dropped), off += 8;
	wire_put64(buf + off, r->first_step), off += 8;
	wire_put64(buf + off, r->last_step), off += 8;
	wire_put64(buf + off, r->floor), off += 8;
	wire_put32(buf + off, r->pid), off += 4;
	wire_put32(buf + off, (uint32_t) r->rank), off += 4;
	wire_put32(buf + off, (uint32_t) r->local_rank), off += 4;
	wire_put32(buf + off, (uint32_t) r->world_size), off += 4;
	for (int i = 0; i < 16; i++)
		wire_put64(buf + off, r->window[i]), off += 8;
	wire_put16(buf + off, (uint16_t) hl), off += 2;
	memcpy(buf + off, r->host, hl), off += hl;
	/* Written only once set, so records of running emitters keep the
	 * first layout; refused (after ended, then written as 0 if unset)
	 * likewise. */
	if (r->ended != 0 || r->refused != 0)
		wire_put64(buf + off, (uint64_t) r->ended), off += 8;
	if (r->refused != 0)
		wire_put64(buf + off, r->refused), off += 8;
	return off;
}

int
store_emitter_decode(const void *buf, size_t len, emitter_rec *r)
{
	const uint8_t *p   = buf;
	size_t         off = 0, hl;

	if (len < EMITTER_REC_FIXED)
		return STORE_ECORRUPT;
	r->incarnation = wire_get64(p + off), off += 8;
	r->start_ns    = wire_get64(p + off), off += 8;
	r->first_seen  = (int64_t) wire_get64(p + off), off += 8;
	r->last_seen   = (int64_t) wire_get64(p + off), off += 8;
	r->batches     = wire_get64(p + off), off += 8;
	r->samples     = wire_get64(p + off), off += 8;
	r->duplicates  = wire_get64(p + off), off += 8;
	r->dropped     = wire_get64(p + off), off += 8;
	r->first_step  = wire_get64(p + off), off += 8;
	r->last_step   = wire_get64(p + off), off += 8;
	r->floor       = wire_get64(p + off), off += 8;
	r->pid         = wire_get32(p + off), off += 4;
	r->rank        = (int32_t) wire_get32(p + off), off += 4;
	r->local_rank  = (int32_t) wire_get32(p + off), off += 4;
	r->world_size  = (int32_t) wire_get32(p + off), off += 4;
	for (int i = 0; i < 16; i++)
		r->window[i] = wire_get64(p + off), off += 8;
	hl = wire_get16(p + off), off += 2;
	if ((hl != len - off && hl + 8 != len - off && hl + 16 != len - off)
	    || hl >= sizeof(r->host))
		return STORE_ECORRUPT;
	memcpy(r->host, p + off, hl);
	r->host[hl] = 0;
	off += hl;
	r->ended   = len - off >= 8 ? (int64_t) wire_get64(p + off) : 0;
	r->refused = len - off == 16 ? wire_get64(p + off + 8) : 0;
	return 0;
}

void
store_run_encode(uint8_t buf[RUN_REC_SIZE], const run_rec *r)
{
	wire_put64(buf, (uint64_t) r->first_time);
	wire_put64(buf + 8, (uint64_t) r->last_time);
	wire_put64(buf + 16, r->first_step);
	wire_put64(buf + 24, r->last_step);
	wire_put64(buf + 32, r->samples);
	wire_put64(buf + 40, r->dropped);
	wire_put32(buf + 48, r->emitters);
	wire_put32(buf + 52, r->series);
	wire_put32(buf + 56, 0);
}

int
store_run_decode(const void *buf, size_t len, run_rec *r)
{
	const uint8_t *p = buf;

	if (len != RUN_REC_SIZE)
		return STORE_ECORRUPT;
	r->first_time = (int64_t) wire_get64(p);
	r->last_time  = (int64_t) wire_get64(p + 8);
	r->first_step = wire_get64(p + 16);
	r->last_step  = wire_get64(p + 24);
	r->samples    = wire_get64(p + 32);
	r->dropped    = wire_get64(p + 40);
	r->emitters   = wire_get32(p + 48);
	r->series     = wire_get32(p + 52);
	return 0;
}
