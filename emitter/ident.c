#include "emitter/ident.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "emitter/clock.h"

/* A non-empty environment variable, else NULL. */
static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return (v != NULL && v[0] != '\0') ? v : NULL;
}

/*
 * An integer environment variable in [lo, hi], parsed with strtol and
 * checked for trailing garbage and overflow. Returns 1 and sets *out if
 * present and valid, else 0.
 */
static int
env_int(const char *name, long lo, long hi, int32_t *out)
{
	const char *v = env(name);
	char       *end;
	long        x;

	if (v == NULL)
		return 0;
	errno = 0;
	x     = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi)
		return 0;
	*out = (int32_t) x;
	return 1;
}

/* Replace bytes that would make a name invalid (controls, non-ASCII,
 * spaces) so that a name made up from the system is always usable. */
static void
sanitize(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char) *s <= 0x20 || (unsigned char) *s >= 0x7f)
			*s = '_';
}

/* The command name from /proc/self/comm, else "vitals". */
static void
command_name(char *buf, size_t size)
{
	FILE  *f = fopen("/proc/self/comm", "re");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	if (n == 0)
		snprintf(buf, size, "vitals");
	sanitize(buf);
}

/*
 * When this process started, in seconds since the epoch: field 22 of
 * /proc/self/stat (clock ticks since boot) plus the boot time. Falls back
 * to now.
 */
static time_t
process_start(void)
{
	char            buf[1024];
	FILE           *f = fopen("/proc/self/stat", "re");
	size_t          n = 0;
	const char     *p;
	struct timespec real, boot;
	long            tck = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_REALTIME, &real);
	if (f == NULL)
		return real.tv_sec;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command in field 2 may hold spaces and parentheses: skip to
	 * the last ')'; field 3 follows. */
	p = strrchr(buf, ')');
	if (p == NULL || tck <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
		return real.tv_sec;
	p++;
	for (int field = 3; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL)
		return real.tv_sec;
	{
		char              *end;
		unsigned long long ticks;

		errno = 0;
		ticks = strtoull(p + 1, &end, 10);
		if (errno != 0 || end == p + 1)
			return real.tv_sec;
		return real.tv_sec - boot.tv_sec
		    + (time_t) (ticks / (unsigned long long) tck);
	}
}

/* "<command>-<YYYYmmdd-HHMMSS>" of the process start, in UTC so that
 * every host of a job spells the same instant the same way. */
static void
default_run(char *buf, size_t size)
{
	char      cmd[64];
	char      when[32];
	time_t    t = process_start();
	struct tm tm;

	command_name(cmd, sizeof(cmd));
	if (gmtime_r(&t, &tm) == NULL
	    || strftime(when, sizeof(when), "%Y%m%d-%H%M%S", &tm) == 0)
		snprintf(when, sizeof(when), "%lld", (long long) t);
	snprintf(buf, size, "%s-%s", cmd, when);
}

/* 64 random bits; getrandom() may be unavailable (seccomp, old kernel) or
 * not yet seeded, so fall back to mixing clocks, pid and an address. */
static uint64_t
incarnation(void)
{
	uint64_t x = 0;

	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t) sizeof(x)) {
		x = (uint64_t) vte_clock_real_ns()
		    ^ ((uint64_t) vte_clock_mono_ns() << 17)
		    ^ ((uint64_t) getpid() << 40) ^ (uint64_t) (uintptr_t) &x;
		/* splitmix64 finaliser */
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		x ^= x >> 31;
	}
	return x != 0 ? x : 1;
}

static int
resolve_run(const vt_opts *o, vte_ident *id, char *err, size_t errlen)
{
	const char *src, *v;
	int         n;

	if (o->run != NULL) {
		src = "the run option";
		n   = snprintf(id->run, sizeof(id->run), "%s", o->run);
	} else if ((v = env("VITALS_RUN")) != NULL) {
		src = "$VITALS_RUN";
		n   = snprintf(id->run, sizeof(id->run), "%s", v);
	} else if ((v = env("TORCHELASTIC_RUN_ID")) != NULL
	    && strcmp(v, "none") != 0) {
		src = "$TORCHELASTIC_RUN_ID";
		n   = snprintf(id->run, sizeof(id->run), "%s", v);
	} else if ((v = env("SLURM_JOB_ID")) != NULL) {
		src = "$SLURM_JOB_ID";
		n   = snprintf(id->run, sizeof(id->run), "slurm-%s", v);
	} else {
		default_run(id->run, sizeof(id->run));
		return 0;
	}
	if (n < 0 || (size_t) n >= sizeof(id->run)
	    || wire_name_check(id->run, (size_t) n, VT_RUN_MAX) != 0) {
		snprintf(err, errlen,
		    "run name from %s is empty, over %d bytes, not UTF-8 or "
		    "has control characters",
		    src, VT_RUN_MAX);
		return VT_ENAME;
	}
	return 0;
}

static int
resolve_host(const vt_opts *o, vte_ident *id, char *err, size_t errlen)
{
	size_t n;

	if (o->host != NULL) {
		n = strlen(o->host);
		if (wire_name_check(o->host, n, WIRE_HOST_MAX) != 0) {
			snprintf(err, errlen,
			    "host option is empty, over %d bytes, not UTF-8 "
			    "or has control characters",
			    WIRE_HOST_MAX);
			return VT_ENAME;
		}
		memcpy(id->host, o->host, n + 1);
		return 0;
	}
	if (gethostname(id->host, sizeof(id->host)) != 0)
		id->host[0] = '\0';
	id->host[sizeof(id->host) - 1] = '\0';
	sanitize(id->host);
	if (id->host[0] == '\0')
		snprintf(id->host, sizeof(id->host), "unknown");
	return 0;
}

/*
 * One rank field: the option if >= lo, -1 for the environment (first
 * valid of the two variables, else dflt); anything else is an error.
 */
static int
resolve_int(int opt, long lo, const char *var1, const char *var2, int32_t dflt,
    int32_t *out, const char *what, char *err, size_t errlen)
{
	if (opt >= lo) {
		*out = opt;
		return 0;
	}
	if (opt != -1) {
		snprintf(err, errlen, "%s %d out of range", what, opt);
		return VT_EINVAL;
	}
	if (!env_int(var1, lo, INT32_MAX, out)
	    && !env_int(var2, lo, INT32_MAX, out))
		*out = dflt;
	return 0;
}

int
vte_ident_resolve(const vt_opts *o, uint64_t inc, uint64_t first_seq,
    vte_ident *id, char *err, size_t errlen)
{
	int rc;

	if ((rc = resolve_run(o, id, err, errlen)) != 0
	    || (rc = resolve_host(o, id, err, errlen)) != 0
	    || (rc = resolve_int(o->rank, 0, "RANK", "SLURM_PROCID", 0,
	            &id->w.rank, "rank", err, errlen))
	        != 0
	    || (rc = resolve_int(o->local_rank, 0, "LOCAL_RANK",
	            "SLURM_LOCALID", 0, &id->w.local_rank, "local rank", err,
	            errlen))
	        != 0
	    || (rc = resolve_int(o->world_size, 1, "WORLD_SIZE",
	            "SLURM_NTASKS", 1, &id->w.world_size, "world size", err,
	            errlen))
	        != 0)
		return rc;
	/* A first batch number without the incarnation it continues would
	 * be a fresh id whose batches 1..first_seq-1 never come: harmless
	 * but meaningless, so refused as the mistake it likely is. The
	 * bound keeps seq arithmetic far from wrapping. */
	if (first_seq >= (uint64_t) 1 << 63 || (first_seq > 1 && inc == 0)) {
		snprintf(err, errlen,
		    "first_seq %llu: needs an incarnation and must be below "
		    "2^63",
		    (unsigned long long) first_seq);
		return VT_EINVAL;
	}
	id->w.incarnation = inc != 0 ? inc : incarnation();
	id->w.start_ns    = (uint64_t) vte_clock_real_ns();
	id->w.pid         = (uint32_t) getpid();
	id->w.run         = id->run;
	id->w.run_len     = (uint16_t) strlen(id->run);
	id->w.host        = id->host;
	id->w.host_len    = (uint16_t) strlen(id->host);
	return 0;
}
