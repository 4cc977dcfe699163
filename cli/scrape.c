/*
 * scrape: samples from log lines (see scrape.h).
 *
 * A preset is a list of forms tried in order; the first form whose line
 * pattern matches a line decides it. A form's line pattern finds the step
 * (and may name metrics with groups, as custom patterns do); its optional
 * key/value pattern is then matched again and again over the rest of the
 * line, and a table maps each key the trainer prints to a metric name.
 * Keys a preset does not know are kept under a sanitised name, so a new
 * column in a trainer's log shows up without a new release.
 */
#include "cli/scrape.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* ---- presets ------------------------------------------------------------ */

enum {
	F_UNKNOWN    = 1, /* keep keys the table does not name */
	F_COUNT      = 2, /* no step in the line: count lines per rank */
	F_COUNT_LOSS = 4, /* ... counting only lines with a loss */
	F_TRAIN_TIME = 8, /* derive step_time_ms from train_time_ms */
};

typedef struct kv_name {
	const char *key;    /* as the trainer prints it */
	const char *metric; /* NULL: skip; "=step": the line's step */
	const char *paren;  /* metric for a "(12.90%)" after the value */
	int         finite; /* skip non-finite values (placeholders) */
} kv_name;

typedef struct form_def {
	const char    *line;
	const char    *kv; /* groups k, v and optionally p; NULL: none */
	const kv_name *names;
	const char    *prefix; /* for kept unknown keys */
	unsigned       flags;
} form_def;

typedef struct preset_def {
	const char     *name;
	const char     *alias;
	const form_def *forms;
	size_t          nforms;
} preset_def;

/*
 * Megatron-LM and Megatron-DeepSpeed (training_log):
 *  iteration    31219/  115311 | consumed samples: ... | lm loss: 5.0E+00 |
 * and the validation line
 *  validation loss at iteration 1000 | lm loss value: 3.2E+00 | ...
 */
static const kv_name megatron_names[] = {
	{ "lm loss", "loss", NULL, 0 },
	{ "grad norm", "grad_norm", NULL, 0 },
	{ "learning rate", "lr", NULL, 0 },
	{ "elapsed time per iteration (ms)", "iteration_time_ms", NULL, 0 },
	{ "elapsed time per iteration (s)", "iteration_time_s", NULL, 0 },
	{ "global batch size", "global_batch_size", NULL, 0 },
	{ "loss scale", "loss_scale", NULL, 0 },
	{ "num zeros", "num_zeros", NULL, 0 },
	{ "params norm", "params_norm", NULL, 0 },
	{ "number of skipped iterations", "skipped_iterations", NULL, 0 },
	{ "number of nan iterations", "nan_iterations", NULL, 0 },
	{ "samples per second", "samples_per_sec", NULL, 0 },
	{ "TFLOPs", "tflops", NULL, 0 },
	{ "throughput per GPU (TFLOP/s/GPU)", "tflops", NULL, 0 },
	{ "tokens per gpu per second (tgs)", "tokens_per_sec_per_gpu", NULL,
	    0 },
	{ "consumed samples", "consumed_samples", NULL, 0 },
	{ "consumed tokens", "consumed_tokens", NULL, 0 },
	{ "actual seqlen", "seqlen", NULL, 0 },
	{ NULL, NULL, NULL, 0 },
};
static const kv_name megatron_val_names[] = {
	{ "lm loss value", "val_loss", NULL, 0 },
	{ "lm loss PPL", "val_ppl", NULL, 0 },
	{ NULL, NULL, NULL, 0 },
};
#define MEGATRON_KV                                                           \
	"\\s*(?<k>[^|:]*[^|:\\s])\\s*:\\s*(?<v>[^|]*?)\\s*(?:\\||$)"
static const form_def megatron_forms[] = {
	{ "\\biteration\\s+(?<step>\\d+)\\s*/\\s*\\d+\\s*\\|", MEGATRON_KV,
	    megatron_names, "", F_UNKNOWN },
	{ "\\bvalidation loss at iteration\\s+(?<step>\\d+)[^|]*\\|",
	    MEGATRON_KV, megatron_val_names, "val_", F_UNKNOWN },
};

/*
 * llm.c: train_gpt2.cu prints
 *  step    1/5000 | loss 7.123456 (+0.12z)| norm 1.2345 (+0.50z)| lr ...
 * (older: "| train loss 7.1 | norm ..." and "step 1/50: train loss 5.4
 * (took 12.0 ms)"); its main.log holds "s:100 trl:3.2100 lr:... norm:...",
 * "s:100 tel:3.3" (validation) and "s:100 eval:0.29" (HellaSwag).
 */
static const kv_name llmc_log_names[] = {
	{ "trl", "loss", NULL, 0 },
	{ "tel", "val_loss", NULL, 0 },
	{ "lr", "lr", NULL, 0 },
	{ "norm", "grad_norm", NULL, 0 },
	{ "eval", "eval_acc", NULL, 0 },
	{ NULL, NULL, NULL, 0 },
};
static const form_def llmc_forms[] = {
	{ "\\bstep\\s+(?<step>\\d+)\\s*/\\s*\\d+\\s*\\|"
	  "\\s*(?:train\\s+)?loss\\s+(?<loss>[^\\s|(]+)[^|]*\\|"
	  "\\s*norm\\s+(?<grad_norm>[^\\s|(]+)[^|]*\\|"
	  "(?:\\s*lr\\s+(?<lr>[^\\s|]+)\\s*\\|)?"
	  "\\s*(?<step_time_ms>[^\\s|]+)\\s*ms\\s*(?:\\||$)"
	  "(?:\\s*(?<mfu>[^\\s|%]+)%[^|]*MFU\\s*(?:\\||$))?"
	  "(?:\\s*(?<tokens_per_sec>[^\\s|]+)\\s*tok/s)?",
	    NULL, NULL, NULL, 0 },
	{ "\\bstep\\s+(?<step>\\d+)(?:\\s*/\\s*\\d+)?\\s*:\\s*train loss\\s+"
	  "(?<loss>[^\\s,(]+)(?:\\s+norm\\s+(?<grad_norm>[^\\s,(]+))?"
	  "(?:\\s+lr\\s+(?<lr>[^\\s,(]+))?"
	  "\\s*\\((?:took\\s+)?(?<step_time_ms>[^\\s,)]+)\\s*ms"
	  "(?:,\\s*(?<tokens_per_sec>[^\\s,)]+)\\s*tok/s)?\\)",
	    NULL, NULL, NULL, 0 },
	{ "^s:(?<step>\\d+)(?=\\s)", "(?<k>[A-Za-z_]\\w*):(?<v>\\S+)",
	    llmc_log_names, "", F_UNKNOWN },
};

/*
 * nanoGPT: the speedrun's (modded-nanogpt)
 *  step:947/5100 train_loss:5.2585 train_time:144222ms step_avg:153.92ms
 * (step time derived from consecutive train_time), and karpathy/nanoGPT's
 *  iter 100: loss 4.2345, time 123.45ms, mfu 12.34%
 *  step 2000: train loss 1.2345, val loss 1.4567
 */
static const kv_name nanogpt_names[] = {
	{ "train_loss", "loss", NULL, 0 },
	{ "val_loss", "val_loss", NULL, 0 },
	{ "train_time", "train_time_ms", NULL, 0 },
	/* "nan" until the first timed steps: not a fault of the run. */
	{ "step_avg", "step_avg_ms", NULL, 1 },
	{ NULL, NULL, NULL, 0 },
};
static const form_def nanogpt_forms[] = {
	{ "(?<![\\w/])step:(?<step>\\d+)/\\d+(?=\\s)",
	    "(?<k>[A-Za-z_]\\w*):(?<v>\\S*?)(?:ms)?(?=\\s|$)", nanogpt_names,
	    "", F_UNKNOWN | F_TRAIN_TIME },
	{ "\\biter\\s+(?<step>\\d+):\\s*loss\\s+(?<loss>[^\\s,]+),"
	  "\\s*time\\s+(?<step_time_ms>[^\\s,]+?)\\s*ms"
	  "(?:,\\s*mfu\\s+(?<mfu>[^\\s,]+?)%)?",
	    NULL, NULL, NULL, 0 },
	{ "\\bstep\\s+(?<step>\\d+):\\s*train loss\\s+"
	  "(?<eval_train_loss>[^\\s,]+),\\s*val loss\\s+(?<val_loss>[^\\s,]+)",
	    NULL, NULL, NULL, 0 },
};

/*
 * torchtitan (colours removed first):
 *  step: 6922  loss:  3.3222  grad_norm:  0.9790  memory: 12.25GiB(12.90%)
 *  tps: 500,705  tflops: 256.52  mfu: 25.94%
 */
static const kv_name torchtitan_names[] = {
	{ "loss", "loss", NULL, 0 },
	{ "grad_norm", "grad_norm", NULL, 0 },
	{ "memory", "memory_gib", "memory_pct", 0 },
	{ "tps", "tps", NULL, 0 },
	{ "tflops", "tflops", NULL, 0 },
	{ "mfu", "mfu", NULL, 0 },
	{ NULL, NULL, NULL, 0 },
};
static const form_def torchtitan_forms[] = {
	{ "(?<![\\w/])step:\\s*(?<step>\\d+)(?=\\s|$)",
	    "(?<k>[A-Za-z_]\\w*):\\s*(?<v>[^\\s(]*?)(?:GiB|GB|%)?"
	    "(?:\\((?<p>[^)]*?)%?\\))?(?=\\s|$)",
	    torchtitan_names, "", F_UNKNOWN },
};

/*
 * Hugging Face Trainer: {'loss': 2.1234, 'grad_norm': 0.87,
 * 'learning_rate': 4.9e-05, 'epoch': 0.12}. The dict has no step: the step
 * is the number of dicts with a loss so far (per rank); evaluation and
 * summary dicts take the current one. A 'step' key wins when present.
 */
static const kv_name hf_names[] = {
	{ "loss", "loss", NULL, 0 },
	{ "grad_norm", "grad_norm", NULL, 0 },
	{ "learning_rate", "lr", NULL, 0 },
	{ "step", "=step", NULL, 0 },
	{ "global_step", "=step", NULL, 0 },
	{ NULL, NULL, NULL, 0 },
};
static const form_def hf_forms[] = {
	{ "\\{(?=\\s*['\"][^'\"]+['\"]\\s*:)",
	    "['\"](?<k>[^'\"]+)['\"]\\s*:\\s*"
	    "(?|tensor\\(\\s*(?<v>[^,)]+)[^)]*\\)|(?<v>[^,}]+?))\\s*(?=[,}])",
	    hf_names, "", F_UNKNOWN | F_COUNT | F_COUNT_LOSS },
};

#define NFORMS(a) (sizeof(a) / sizeof((a)[0]))
static const preset_def presets[] = {
	{ "megatron", "megatron-deepspeed", megatron_forms,
	    NFORMS(megatron_forms) },
	{ "llmc", "llm.c", llmc_forms, NFORMS(llmc_forms) },
	{ "nanogpt", "modded-nanogpt", nanogpt_forms, NFORMS(nanogpt_forms) },
	{ "torchtitan", NULL, torchtitan_forms, NFORMS(torchtitan_forms) },
	{ "hf", "huggingface", hf_forms, NFORMS(hf_forms) },
};

const char *
scrape_preset_help(void)
{
	return "  megatron    Megatron-LM / Megatron-DeepSpeed "
	       "\"iteration N/M | lm loss: ... |\"\n"
	       "  llmc        llm.c \"step N/M | loss ... | norm ... |\" "
	       "and main.log \"s:N trl:...\"\n"
	       "  nanogpt     \"step:N/M train_loss:... train_time:...ms\", "
	       "\"iter N: loss ..., time ...ms\"\n"
	       "  torchtitan  \"step: N  loss: ...  grad_norm: ...  tps: "
	       "...\"\n"
	       "  hf          Hugging Face Trainer \"{'loss': ..., "
	       "'grad_norm': ...}\"\n";
}

/* ---- compiled forms ----------------------------------------------------- */

typedef struct group {
	uint32_t    num;
	const char *name; /* in form.namebuf */
} group;

typedef struct form {
	const form_def   *def; /* NULL: a custom pattern */
	pcre2_code       *line, *kv;
	pcre2_match_data *md, *kvmd;
	int               step_g, rank_g, time_g; /* -1: none */
	int               k_g, v_g, p_g;
	group            *metrics;
	size_t            nmetrics;
	char             *namebuf;
	unsigned          flags;
} form;

typedef struct rank_state {
	int32_t  rank;
	uint64_t count;
	int      has_tt;
	uint64_t tt_step;
	double   tt;
} rank_state;

#define MAX_RANK_STATES 4096

struct scrape {
	form                *forms;
	size_t               nforms;
	pcre2_match_context *mctx;
	pcre2_code          *ts; /* a leading date and time */
	pcre2_match_data    *tsmd;
	rank_state          *ranks;
	size_t               nranks, capranks;
	scrape_counts        c;
	char                 buf[SCRAPE_LINE_MAX + 1];
};

static int
compile(const char *re, pcre2_code **out, const char *what, char *err,
    size_t errlen)
{
	int        ec;
	PCRE2_SIZE eo;

	*out = pcre2_compile(
	    (PCRE2_SPTR) re, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	if (*out == NULL) {
		PCRE2_UCHAR msg[256];

		if (pcre2_get_error_message(ec, msg, sizeof(msg)) < 0)
			snprintf((char *) msg, sizeof(msg), "error %d", ec);
		snprintf(err, errlen, "%s: at offset %zu: %s", what,
		    (size_t) eo, (const char *) msg);
		return -1;
	}
	/* JIT is only a speed-up: without it matching is the same. */
	(void) pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
	return 0;
}

static int
group_num(const pcre2_code *re, const char *name)
{
	int n = pcre2_substring_number_from_name(re, (PCRE2_SPTR) name);

	return n > 0 ? n : -1;
}

/*
 * The named groups of a line pattern other than step, rank and time are
 * metrics. Fails (-1, message in err) only when out of memory.
 */
static int
form_groups(form *f, char *err, size_t errlen)
{
	uint32_t   count, size;
	PCRE2_SPTR table;
	size_t     total = 0, at = 0;

	f->step_g = group_num(f->line, "step");
	f->rank_g = group_num(f->line, "rank");
	f->time_g = group_num(f->line, "time");
	pcre2_pattern_info(f->line, PCRE2_INFO_NAMECOUNT, &count);
	pcre2_pattern_info(f->line, PCRE2_INFO_NAMEENTRYSIZE, &size);
	pcre2_pattern_info(f->line, PCRE2_INFO_NAMETABLE, &table);
	if (count == 0)
		return 0;
	for (uint32_t i = 0; i < count; i++)
		total += strlen((const char *) table + i * size + 2) + 1;
	f->metrics = calloc(count, sizeof(*f->metrics));
	f->namebuf = malloc(total);
	if (f->metrics == NULL || f->namebuf == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < count; i++) {
		const unsigned char *e  = table + i * size;
		const char          *nm = (const char *) e + 2;
		size_t               n  = strlen(nm) + 1;

		if (strcmp(nm, "step") == 0 || strcmp(nm, "rank") == 0
		    || strcmp(nm, "time") == 0)
			continue;
		memcpy(f->namebuf + at, nm, n);
		f->metrics[f->nmetrics].num  = (uint32_t) (e[0] << 8 | e[1]);
		f->metrics[f->nmetrics].name = f->namebuf + at;
		f->nmetrics++;
		at += n;
	}
	return 0;
}

static int
form_init(form *f, const form_def *def, const char *pattern, char *err,
    size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->def   = def;
	f->flags = def != NULL ? def->flags : 0;
	f->k_g = f->v_g = f->p_g = -1;
	if (compile(def != NULL ? def->line : pattern, &f->line,
	        def != NULL ? "preset" : "pattern", err, errlen)
	    != 0)
		return -1;
	if (form_groups(f, err, errlen) != 0)
		return -1;
	f->md = pcre2_match_data_create_from_pattern(f->line, NULL);
	if (f->md == NULL)
		goto oom;
	if (def != NULL && def->kv != NULL) {
		if (compile(def->kv, &f->kv, "preset", err, errlen) != 0)
			return -1;
		f->kvmd = pcre2_match_data_create_from_pattern(f->kv, NULL);
		if (f->kvmd == NULL)
			goto oom;
		f->k_g = group_num(f->kv, "k");
		f->v_g = group_num(f->kv, "v");
		f->p_g = group_num(f->kv, "p");
	}
	if (def == NULL && f->step_g < 0)
		f->flags |= F_COUNT;
	if (def == NULL && f->nmetrics == 0) {
		snprintf(err, errlen,
		    "pattern: no named group gives a metric (groups step, "
		    "rank and time are not metrics): add one such as "
		    "(?<loss>\\S+)");
		return -1;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void
form_fini(form *f)
{
	pcre2_match_data_free(f->md);
	pcre2_match_data_free(f->kvmd);
	pcre2_code_free(f->line);
	pcre2_code_free(f->kv);
	free(f->metrics);
	free(f->namebuf);
}

static const preset_def *
find_preset(const char *name)
{
	for (size_t i = 0; i < NFORMS(presets); i++)
		if (strcmp(name, presets[i].name) == 0
		    || (presets[i].alias != NULL
		        && strcmp(name, presets[i].alias) == 0))
			return &presets[i];
	return NULL;
}

/*
 * On failure frees what was made, sets *out to NULL and writes one line
 * to err.
 */
int
scrape_new(const char *preset, const char *pattern, scrape **out, char *err,
    size_t errlen)
{
	const preset_def *p = NULL;
	scrape           *s;
	size_t            n = 1;

	*out = NULL;
	if ((preset == NULL) == (pattern == NULL)) {
		snprintf(err, errlen, "give either a preset or a pattern");
		return -1;
	}
	if (preset != NULL) {
		p = find_preset(preset);
		if (p == NULL) {
			snprintf(err, errlen,
			    "unknown preset '%s' (one of megatron, llmc, "
			    "nanogpt, torchtitan, hf)",
			    preset);
			return -1;
		}
		n = p->nforms;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto oom;
	s->forms = calloc(n, sizeof(*s->forms));
	s->mctx  = pcre2_match_context_create(NULL);
	if (s->forms == NULL || s->mctx == NULL)
		goto oom;
	/* A bad custom pattern on a long line must not take seconds. */
	pcre2_set_match_limit(s->mctx, 1000000);
	pcre2_set_depth_limit(s->mctx, 10000);
	for (size_t i = 0; i < n; i++) {
		s->nforms++;
		if (form_init(&s->forms[i], p != NULL ? &p->forms[i] : NULL,
		        pattern, err, errlen)
		    != 0)
			goto fail;
	}
	if (compile("(?<!\\d)(\\d{4})-(\\d\\d)-(\\d\\d)[ T](\\d\\d):(\\d\\d):"
	            "(\\d\\d)(?:[.,](\\d{1,9}))?",
	        &s->ts, "timestamp", err, errlen)
	    != 0)
		goto fail;
	s->tsmd = pcre2_match_data_create_from_pattern(s->ts, NULL);
	if (s->tsmd == NULL)
		goto oom;
	*out = s;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	scrape_free(s);
	return -1;
}

void
scrape_free(scrape *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nforms; i++)
		form_fini(&s->forms[i]);
	free(s->forms);
	pcre2_match_context_free(s->mctx);
	pcre2_match_data_free(s->tsmd);
	pcre2_code_free(s->ts);
	free(s->ranks);
	free(s);
}

void
scrape_get_counts(const scrape *s, scrape_counts *out)
{
	*out = s->c;
}

/* ---- numbers ------------------------------------------------------------ */

static int
lower_eq(const char *s, size_t n, const char *word)
{
	size_t i;

	for (i = 0; i < n && word[i]; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char) (c - 'A' + 'a');
		if (c != word[i])
			return 0;
	}
	return i == n && word[i] == 0;
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int
scrape_number(const char *s, size_t len, double *out)
{
	char   clean[80];
	size_t i = 0, n = 0, digits = 0, lead = 0;
	int    neg = 0, grouped = 0;

	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (len > i && s[len - 1] == '%')
		len--;
	if (i < len && (s[i] == '+' || s[i] == '-')) {
		neg = s[i] == '-';
		i++;
	}
	if (lower_eq(s + i, len - i, "nan")) {
		*out = neg ? -NAN : NAN;
		return 0;
	}
	if (lower_eq(s + i, len - i, "inf")
	    || lower_eq(s + i, len - i, "infinity")) {
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (len - i >= sizeof(clean) - 2)
		return -1;
	if (neg)
		clean[n++] = '-';
	/* Integer part: 1,234,567 groups of three after the first. */
	for (; i < len; i++) {
		if (is_digit(s[i])) {
			clean[n++] = s[i];
			digits++;
			lead++;
		} else if (s[i] == ',') {
			if (lead == 0 || (grouped ? lead != 3 : lead > 3))
				return -1;
			grouped = 1;
			lead    = 0;
		} else
			break;
	}
	if (grouped && lead != 3)
		return -1;
	if (i < len && s[i] == '.') {
		clean[n++] = s[i++];
		for (; i < len && is_digit(s[i]); i++, digits++)
			clean[n++] = s[i];
	}
	if (digits == 0)
		return -1;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t ed = 0;

		clean[n++] = s[i++];
		if (i < len && (s[i] == '+' || s[i] == '-'))
			clean[n++] = s[i++];
		for (; i < len && is_digit(s[i]); i++, ed++)
			clean[n++] = s[i];
		if (ed == 0)
			return -1;
	}
	if (i != len)
		return -1;
	clean[n] = 0;
	/* Overflow gives +-inf and underflow 0 or a subnormal, as printed
	 * numbers that large or small mean. */
	*out = strtod(clean, NULL);
	return 0;
}

/* ---- matching ----------------------------------------------------------- */

/* Copy a line without its line end and ANSI escape sequences. */
static size_t
clean_line(const char *in, size_t len, char *out)
{
	size_t n = 0;

	if (len > SCRAPE_LINE_MAX)
		len = SCRAPE_LINE_MAX;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char) in[i];

		if (c != 0x1b) {
			out[n++] = (char) c;
			continue;
		}
		if (i + 1 < len && in[i + 1] == '[') {
			/* CSI: parameters and intermediates, one final. */
			i += 2;
			while (i < len
			    && ((unsigned char) in[i] < 0x40
			        || (unsigned char) in[i] > 0x7e))
				i++;
		} else if (i + 1 < len && in[i + 1] == ']') {
			/* OSC: up to BEL or ST. */
			for (i += 2; i < len; i++) {
				if (in[i] == 0x07)
					break;
				if (in[i] == 0x1b && i + 1 < len
				    && in[i + 1] == '\\') {
					i++;
					break;
				}
			}
		} else
			i++;
	}
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = 0;
	return n;
}

/* "[default7]:" or "[rank7]:" at the start: the rank and its length. */
static size_t
rank_prefix(const char *s, size_t len, int32_t *rank)
{
	size_t   i = 1;
	uint64_t r = 0;
	int      d = 0;

	if (len < 4 || s[0] != '[')
		return 0;
	while (i < len
	    && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
	        || s[i] == '_'))
		i++;
	for (; i < len && is_digit(s[i]) && d < 10; i++, d++)
		r = r * 10 + (uint64_t) (s[i] - '0');
	if (d == 0 || r > INT32_MAX || i + 1 >= len || s[i] != ']'
	    || s[i + 1] != ':')
		return 0;
	*rank = (int32_t) r;
	return i + 2;
}

static rank_state *
rank_get(scrape *s, int32_t rank)
{
	for (size_t i = 0; i < s->nranks; i++)
		if (s->ranks[i].rank == rank)
			return &s->ranks[i];
	if (s->nranks == s->capranks) {
		size_t      cap = s->capranks ? s->capranks * 2 : 8;
		rank_state *r;

		if (cap > MAX_RANK_STATES)
			return NULL;
		r = realloc(s->ranks, cap * sizeof(*r));
		if (r == NULL)
			return NULL;
		s->ranks    = r;
		s->capranks = cap;
	}
	memset(&s->ranks[s->nranks], 0, sizeof(s->ranks[0]));
	s->ranks[s->nranks].rank = rank;
	return &s->ranks[s->nranks++];
}

static int
parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 20)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		if (v > (UINT64_MAX - (uint64_t) (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t) (s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The first "YYYY-MM-DD HH:MM:SS[.fff]" in the line, as UTC; 0 if none. */
static int64_t
line_time(scrape *s, const char *line, size_t len)
{
	PCRE2_SIZE *ov;
	uint64_t    f[7] = { 0 };
	int64_t     ns;

	if (pcre2_match(s->ts, (PCRE2_SPTR) line, len, 0, 0, s->tsmd, s->mctx)
	    < 0)
		return 0;
	ov = pcre2_get_ovector_pointer(s->tsmd);
	for (int g = 1; g <= 7; g++) {
		if (ov[2 * g] == PCRE2_UNSET)
			continue;
		if (parse_uint(line + ov[2 * g], ov[2 * g + 1] - ov[2 * g],
		        UINT32_MAX, &f[g - 1])
		    != 0)
			return 0;
	}
	if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23
	    || f[4] > 59 || f[5] > 60)
		return 0;
	ns = days_from_civil((int64_t) f[0], (int64_t) f[1], (int64_t) f[2]);
	ns = ((ns * 24 + (int64_t) f[3]) * 60 + (int64_t) f[4]) * 60
	    + (int64_t) f[5];
	ns *= 1000000000;
	if (ov[14] != PCRE2_UNSET) {
		size_t  nd   = ov[15] - ov[14];
		int64_t frac = (int64_t) f[6];

		for (size_t i = nd; i < 9; i++)
			frac *= 10;
		ns += frac;
	}
	return ns;
}

/* Lower-case letters and digits, other runs as one '_'. */
static const char *
sanitize(scrape_result *r, size_t *used, const char *prefix, const char *k,
    size_t n)
{
	char  *out  = r->names + *used;
	size_t room = sizeof(r->names) - *used, o = 0, pl = strlen(prefix);
	int    sep = 0;

	if (room < pl + 2)
		return NULL;
	memcpy(out, prefix, pl);
	o = pl;
	for (size_t i = 0; i < n && o + 2 < room && o < 64; i++) {
		char c = k[i];

		if (c >= 'A' && c <= 'Z')
			c = (char) (c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || is_digit(c)) {
			if (sep && o > pl)
				out[o++] = '_';
			out[o++] = c;
			sep      = 0;
		} else
			sep = 1;
	}
	if (o == pl)
		return NULL;
	out[o++] = 0;
	*used += o;
	return out;
}

static void
add_metric(scrape_result *r, const char *name, double v)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->m[i].name, name) == 0)
			return;
	if (r->n == SCRAPE_MAX_METRICS)
		return;
	r->m[r->n].name  = name;
	r->m[r->n].value = v;
	r->n++;
}

static void
add_value(
    scrape_result *r, const char *name, const char *v, size_t n, int finite)
{
	double d;

	if (scrape_number(v, n, &d) != 0) {
		r->malformed++;
		return;
	}
	if (finite && !isfinite(d))
		return;
	add_metric(r, name, d);
}

static const kv_name *
lookup(const kv_name *names, const char *k, size_t n)
{
	for (; names != NULL && names->key != NULL; names++)
		if (strlen(names->key) == n && memcmp(names->key, k, n) == 0)
			return names;
	return NULL;
}

/*
 * The key/value pairs after the line pattern's match. A "=step" key sets
 * *step (returns through has_step).
 */
static void
scan_kv(scrape *s, form *f, const char *line, size_t len, size_t off,
    scrape_result *r, uint64_t *step, int *has_step)
{
	size_t used = 0;

	while (off <= len) {
		PCRE2_SIZE    *ov;
		const char    *k, *v, *name;
		size_t         kn, vn;
		const kv_name *e;
		int            rc;

		rc = pcre2_match(
		    f->kv, (PCRE2_SPTR) line, len, off, 0, f->kvmd, s->mctx);
		if (rc < 0) {
			if (rc != PCRE2_ERROR_NOMATCH)
				s->c.limit++;
			break;
		}
		ov  = pcre2_get_ovector_pointer(f->kvmd);
		off = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
		if (ov[2 * f->k_g] == PCRE2_UNSET
		    || ov[2 * f->v_g] == PCRE2_UNSET)
			continue;
		k  = line + ov[2 * f->k_g];
		kn = ov[2 * f->k_g + 1] - ov[2 * f->k_g];
		v  = line + ov[2 * f->v_g];
		vn = ov[2 * f->v_g + 1] - ov[2 * f->v_g];
		e  = lookup(f->def->names, k, kn);
		if (e != NULL && e->metric != NULL
		    && strcmp(e->metric, "=step") == 0) {
			uint64_t u;

			if (parse_uint(v, vn, UINT64_MAX, &u) == 0) {
				*step     = u;
				*has_step = 1;
			} else
				r->malformed++;
			continue;
		}
		if (e != NULL)
			name = e->metric;
		else if (f->flags & F_UNKNOWN)
			name = sanitize(r, &used, f->def->prefix, k, kn);
		else
			name = NULL;
		if (name == NULL)
			continue;
		add_value(r, name, v, vn, e != NULL && e->finite);
		if (e != NULL && e->paren != NULL && f->p_g > 0
		    && ov[2 * f->p_g] != PCRE2_UNSET)
			add_value(r, e->paren, line + ov[2 * f->p_g],
			    ov[2 * f->p_g + 1] - ov[2 * f->p_g], 0);
	}
}

static int
has_metric(const scrape_result *r, const char *name, double *v)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->m[i].name, name) == 0) {
			*v = r->m[i].value;
			return 1;
		}
	return 0;
}

/* nanoGPT: step_time_ms from the train_time of the previous step. */
static void
derive_step_time(rank_state *rs, scrape_result *r)
{
	double tt;

	if (rs == NULL || !has_metric(r, "train_time_ms", &tt)
	    || !isfinite(tt))
		return;
	if (rs->has_tt && r->step > rs->tt_step && tt >= rs->tt)
		add_metric(r, "step_time_ms",
		    (tt - rs->tt) / (double) (r->step - rs->tt_step));
	if (!rs->has_tt || r->step != rs->tt_step) {
		rs->has_tt  = 1;
		rs->tt_step = r->step;
		rs->tt      = tt;
	}
}

/*
 * Match one form at the start of the cleaned line. Returns 1 (matched,
 * *r filled), 0 (no match) or -1 (the match limit was hit).
 */
static int
match_form(scrape *s, form *f, const char *line, size_t len, scrape_result *r)
{
	PCRE2_SIZE *ov;
	uint64_t    step     = 0;
	int         has_step = 0, rc;
	rank_state *rs;

	rc = pcre2_match(
	    f->line, (PCRE2_SPTR) line, len, 0, 0, f->md, s->mctx);
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc < 0)
		return -1;
	ov = pcre2_get_ovector_pointer(f->md);
	if (f->rank_g > 0 && ov[2 * f->rank_g] != PCRE2_UNSET) {
		uint64_t u;

		if (parse_uint(line + ov[2 * f->rank_g],
		        ov[2 * f->rank_g + 1] - ov[2 * f->rank_g], INT32_MAX,
		        &u)
		    == 0)
			r->rank = (int32_t) u;
		else
			r->malformed++;
	}
	if (f->step_g > 0 && ov[2 * f->step_g] != PCRE2_UNSET) {
		if (parse_uint(line + ov[2 * f->step_g],
		        ov[2 * f->step_g + 1] - ov[2 * f->step_g], UINT64_MAX,
		        &step)
		    != 0) {
			/* No step, no sample. */
			r->malformed++;
			s->c.malformed++;
			return 0;
		}
		has_step = 1;
	}
	if (f->time_g > 0 && ov[2 * f->time_g] != PCRE2_UNSET) {
		double t;

		if (scrape_number(line + ov[2 * f->time_g],
		        ov[2 * f->time_g + 1] - ov[2 * f->time_g], &t)
		        == 0
		    && isfinite(t) && fabs(t) < 9e9)
			r->time_ns = (int64_t) llround(t * 1e9);
		else
			r->malformed++;
	} else
		r->time_ns = line_time(s, line, len);
	for (size_t i = 0; i < f->nmetrics; i++) {
		uint32_t g = f->metrics[i].num;

		if (ov[2 * g] == PCRE2_UNSET)
			continue;
		add_value(r, f->metrics[i].name, line + ov[2 * g],
		    ov[2 * g + 1] - ov[2 * g], 0);
	}
	/* Ovector of f->md stays valid: kv uses its own match data. */
	if (f->kv != NULL)
		scan_kv(s, f, line, len, ov[1], r, &step, &has_step);
	rs = (f->flags & (F_COUNT | F_TRAIN_TIME)) ? rank_get(s, r->rank)
	                                           : NULL;
	if (!has_step && (f->flags & F_COUNT)) {
		double loss;

		if (rs == NULL)
			return 0;
		if (!(f->flags & F_COUNT_LOSS) || has_metric(r, "loss", &loss))
			rs->count++;
		step     = rs->count;
		has_step = 1;
	}
	if (!has_step)
		return 0;
	r->step = step;
	if (f->flags & F_TRAIN_TIME)
		derive_step_time(rs, r);
	return 1;
}

int
scrape_line(scrape *s, const char *line, size_t len, scrape_result *r)
{
	char   *buf  = s->buf;
	int32_t rank = -1;
	size_t  n, skip;

	s->c.lines++;
	n    = clean_line(line, len, buf);
	skip = rank_prefix(buf, n, &rank);
	for (size_t i = 0; i < s->nforms; i++) {
		int rc;

		memset(r, 0, offsetof(scrape_result, m));
		r->rank = rank;
		rc      = match_form(s, &s->forms[i], buf + skip, n - skip, r);

		if (rc < 0) {
			s->c.limit++;
			return 0;
		}
		if (rc == 0)
			continue;
		s->c.matched++;
		s->c.samples += r->n;
		s->c.malformed += r->malformed;
		return 1;
	}
	return 0;
}

/* ---- reader ------------------------------------------------------------- */

struct scrape_reader {
	scrape       *s;
	FILE         *f;
	char         *line;
	size_t        cap;
	uint64_t      lineno;
	int64_t       last_time; /* 0: no line had a time yet */
	size_t        next;      /* next metric of r to return */
	scrape_result r;
};

int
scrape_reader_open(scrape *s, FILE *f, scrape_reader **out)
{
	scrape_reader *rd = calloc(1, sizeof(*rd));

	*out = rd;
	if (rd == NULL)
		return -1;
	rd->s = s;
	rd->f = f;
	return 0;
}

int
scrape_reader_next(scrape_reader *rd, scrape_sample *out)
{
	while (rd->next >= rd->r.n) {
		ssize_t n;

		errno = 0;
		n     = getline(&rd->line, &rd->cap, rd->f);
		if (n < 0)
			return ferror(rd->f) ? -1 : 0;
		rd->lineno++;
		rd->next = 0;
		if (scrape_line(rd->s, rd->line, (size_t) n, &rd->r) != 1)
			rd->r.n = 0;
		else if (rd->r.time_ns != 0)
			rd->last_time = rd->r.time_ns;
	}
	out->metric = rd->r.m[rd->next].name;
	out->value  = rd->r.m[rd->next].value;
	out->rank   = rd->r.rank;
	out->step   = rd->r.step;
	out->line   = rd->lineno;
	if (rd->r.time_ns != 0)
		out->time_ns = rd->r.time_ns;
	else if (rd->last_time != 0)
		out->time_ns = rd->last_time;
	else
		out->time_ns = rd->r.step > (uint64_t) INT64_MAX / 1000000000
		    ? INT64_MAX
		    : (int64_t) rd->r.step * 1000000000;
	rd->next++;
	return 1;
}

void
scrape_reader_close(scrape_reader *rd)
{
	if (rd == NULL)
		return;
	free(rd->line);
	free(rd);
}
