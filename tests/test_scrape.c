/* scrape: each preset parses its trainer's real lines exactly (the lines of
 * the issue verbatim, and variants seen in those trainers' code and logs);
 * custom patterns; number parsing; malformed values are counted. */
#include "cli/scrape.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/harness.h"

static scrape *
mk(const char *preset, const char *pattern)
{
	scrape *s = NULL;
	char    err[256];

	if (scrape_new(preset, pattern, &s, err, sizeof(err)) != 0)
		printf("  scrape_new: %s\n", err);
	return s;
}

static int
line(scrape *s, const char *l, scrape_result *r)
{
	return scrape_line(s, l, strlen(l), r);
}

/* The value of metric name in r, NAN if absent (checked separately). */
static int
has(const scrape_result *r, const char *name, double *v)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->m[i].name, name) == 0) {
			*v = r->m[i].value;
			return 1;
		}
	return 0;
}

/* Exactly this value (bit for bit what strtod gives for the text). */
static int
is(const scrape_result *r, const char *name, double want)
{
	double v;

	if (!has(r, name, &v)) {
		printf("  metric %s missing\n", name);
		return 0;
	}
	if (v != want) {
		printf("  metric %s = %.17g, want %.17g\n", name, v, want);
		return 0;
	}
	return 1;
}

TEST(numbers)
{
	double v;

	CHECK(scrape_number("1,234,567", 9, &v) == 0 && v == 1234567);
	CHECK(scrape_number("500,705", 7, &v) == 0 && v == 500705);
	CHECK(scrape_number("1,000.5", 7, &v) == 0 && v == 1000.5);
	CHECK(scrape_number("5.279E-05", 9, &v) == 0 && v == 5.279E-05);
	CHECK(scrape_number("5.098124E+00", 12, &v) == 0 && v == 5.098124);
	CHECK(scrape_number("6.00e-06", 8, &v) == 0 && v == 6e-06);
	CHECK(scrape_number("25.94%", 6, &v) == 0 && v == 25.94);
	CHECK(scrape_number(" 42 ", 4, &v) == 0 && v == 42);
	CHECK(scrape_number("+3", 2, &v) == 0 && v == 3);
	CHECK(scrape_number("-0.5", 4, &v) == 0 && v == -0.5);
	CHECK(scrape_number(".5", 2, &v) == 0 && v == 0.5);
	CHECK(scrape_number("7.", 2, &v) == 0 && v == 7);
	CHECK(scrape_number("nan", 3, &v) == 0 && isnan(v));
	CHECK(scrape_number("NaN", 3, &v) == 0 && isnan(v));
	CHECK(scrape_number("-inf", 4, &v) == 0 && isinf(v) && v < 0);
	CHECK(scrape_number("Infinity", 8, &v) == 0 && isinf(v) && v > 0);
	CHECK(scrape_number("1e999", 5, &v) == 0 && isinf(v));
	/* Malformed: bad grouping, junk, hex, empty, two points. */
	CHECK(scrape_number("500,70", 6, &v) != 0);
	CHECK(scrape_number("1,2345", 6, &v) != 0);
	CHECK(scrape_number(",500", 4, &v) != 0);
	CHECK(scrape_number("1234,567", 8, &v) != 0);
	CHECK(scrape_number("1,", 2, &v) != 0);
	CHECK(scrape_number("1.5.2", 5, &v) != 0);
	CHECK(scrape_number("0x10", 4, &v) != 0);
	CHECK(scrape_number("1e", 2, &v) != 0);
	CHECK(scrape_number("", 0, &v) != 0);
	CHECK(scrape_number(".", 1, &v) != 0);
	CHECK(scrape_number("...", 3, &v) != 0);
	CHECK(scrape_number("abc", 3, &v) != 0);
	CHECK(scrape_number("12ms", 4, &v) != 0);
	CHECK(scrape_number("nanx", 4, &v) != 0);
}

TEST(megatron_issue_line)
{
	scrape       *s = mk("megatron", NULL);
	scrape_result r;

	REQUIRE(s != NULL);
	/* Verbatim from the issue: "consumed samples: ..." is not a
	 * number, so it is counted as malformed and skipped. */
	CHECK(line(s,
	          "iteration    31219/  115311 | consumed samples: ... | "
	          "elapsed time per iteration (s): 106.36 | learning rate: "
	          "5.279E-05 | global batch size:  2048 | lm loss: "
	          "5.098124E+00 | grad norm: 960.351 | num zeros: 0.0 | "
	          "number of skipped iterations:   0 | number of nan "
	          "iterations:   0 | samples per second: 19.256 | TFLOPs: "
	          "147.43 |",
	          &r)
	    == 1);
	CHECK(r.step == 31219);
	CHECK(r.rank == -1);
	CHECK_EQ_INT(r.malformed, 1);
	CHECK_EQ_INT(r.n, 10);
	CHECK(is(&r, "iteration_time_s", 106.36));
	CHECK(is(&r, "lr", 5.279E-05));
	CHECK(is(&r, "global_batch_size", 2048));
	CHECK(is(&r, "loss", 5.098124E+00));
	CHECK(is(&r, "grad_norm", 960.351));
	CHECK(is(&r, "num_zeros", 0.0));
	CHECK(is(&r, "skipped_iterations", 0));
	CHECK(is(&r, "nan_iterations", 0));
	CHECK(is(&r, "samples_per_sec", 19.256));
	CHECK(is(&r, "tflops", 147.43));
	scrape_free(s);
}

TEST(megatron_variants)
{
	scrape       *s = mk("megatron-deepspeed", NULL);
	scrape_result r;
	scrape_counts c;

	REQUIRE(s != NULL);
	/* torchrun's rank prefix, a real consumed count, a line end. */
	CHECK(line(s,
	          "[default7]: iteration    31220/  115311 | consumed "
	          "samples:     63938560 | elapsed time per iteration (s): "
	          "106.41 | learning rate: 5.279E-05 | global batch size:  "
	          "2048 | lm loss: 5.101977E+00 | grad norm: 0.412 | num "
	          "zeros: 0.0 | number of skipped iterations:   0 | number "
	          "of nan iterations:   0 | samples per second: 19.246 | "
	          "TFLOPs: 147.36 |\n",
	          &r)
	    == 1);
	CHECK(r.step == 31220);
	CHECK(r.rank == 7);
	CHECK_EQ_INT(r.malformed, 0);
	CHECK_EQ_INT(r.n, 11);
	CHECK(is(&r, "consumed_samples", 63938560));
	CHECK(is(&r, "loss", 5.101977));
	/* Megatron-LM's newer line: a date, ms, throughput per GPU, a key
	 * the table does not know (kept, sanitised). */
	CHECK(line(s,
	          " [2024-05-01 12:00:03] iteration      100/   10000 | "
	          "consumed samples:       102400 | elapsed time per "
	          "iteration (ms): 1234.5 | throughput per GPU "
	          "(TFLOP/s/GPU): 401.2 | learning rate: 1.500000E-04 | "
	          "global batch size:  1024 | lm loss: 7.324159E+00 | "
	          "load_balancing_loss: 1.021E+00 | loss scale: 1.0 | grad "
	          "norm: 2.117 | number of skipped iterations:   0 | number "
	          "of nan iterations:   0 |",
	          &r)
	    == 1);
	CHECK(r.step == 100);
	CHECK(r.rank == -1);
	CHECK(r.time_ns == 1714564803000000000ll);
	CHECK(is(&r, "iteration_time_ms", 1234.5));
	CHECK(is(&r, "tflops", 401.2));
	CHECK(is(&r, "load_balancing_loss", 1.021));
	CHECK(is(&r, "loss_scale", 1.0));
	CHECK(is(&r, "grad_norm", 2.117));
	/* Megatron-DeepSpeed's validation line. */
	CHECK(line(s,
	          "-----------------------------------------------------------"
	          "-------------------\n",
	          &r)
	    == 0);
	CHECK(line(s,
	          " validation loss at iteration 1000 | lm loss value: "
	          "3.259914E+00 | lm loss PPL: 2.604797E+01 | ",
	          &r)
	    == 1);
	CHECK(r.step == 1000);
	CHECK_EQ_INT(r.n, 2);
	CHECK(is(&r, "val_loss", 3.259914));
	CHECK(is(&r, "val_ppl", 26.04797));
	/* Other lines pass. */
	CHECK(
	    line(s, "> building train, validation, and test datasets ...", &r)
	    == 0);
	CHECK(line(s, "", &r) == 0);
	scrape_get_counts(s, &c);
	CHECK(c.lines == 6 && c.matched == 3);
	scrape_free(s);
}

TEST(llmc_issue_lines)
{
	scrape       *s = mk("llmc", NULL);
	scrape_result r;

	REQUIRE(s != NULL);
	CHECK(line(s,
	          "step    1/5000 | loss 7.123456 (+0.12z)| norm 1.2345 "
	          "(+0.50z)| lr 6.00e-06 | 1234.56 ms | 45.6% bf16 MFU | "
	          "123456 tok/s",
	          &r)
	    == 1);
	CHECK(r.step == 1);
	CHECK_EQ_INT(r.n, 6);
	CHECK_EQ_INT(r.malformed, 0);
	CHECK(is(&r, "loss", 7.123456));
	CHECK(is(&r, "grad_norm", 1.2345));
	CHECK(is(&r, "lr", 6.00e-06));
	CHECK(is(&r, "step_time_ms", 1234.56));
	CHECK(is(&r, "mfu", 45.6));
	CHECK(is(&r, "tokens_per_sec", 123456));
	/* main.log */
	CHECK(line(s, "s:100 trl:3.2100 lr:0.000600 norm:0.45", &r) == 1);
	CHECK(r.step == 100);
	CHECK_EQ_INT(r.n, 3);
	CHECK(is(&r, "loss", 3.21));
	CHECK(is(&r, "lr", 0.0006));
	CHECK(is(&r, "grad_norm", 0.45));
	scrape_free(s);
}

TEST(llmc_variants)
{
	scrape       *s = mk("llm.c", NULL);
	scrape_result r;

	REQUIRE(s != NULL);
	CHECK(line(s, "s:250 tel:3.4512", &r) == 1);
	CHECK(r.step == 250 && r.n == 1 && is(&r, "val_loss", 3.4512));
	CHECK(line(s, "s:250 eval:0.2934", &r) == 1);
	CHECK(is(&r, "eval_acc", 0.2934));
	/* An older train_gpt2.cu line and train_gpt2.c's. */
	CHECK(line(s,
	          "step   12/74 | train loss 7.450012 | norm 2.1043 | lr "
	          "1.00e-05 | 99.12 ms | 41.2% A100 fp16 MFU | 164000 tok/s",
	          &r)
	    == 1);
	CHECK(r.step == 12 && r.n == 6);
	CHECK(is(&r, "loss", 7.450012) && is(&r, "mfu", 41.2));
	CHECK(line(s, "step 10: train loss 5.356082 (took 1234.500000 ms)", &r)
	    == 1);
	CHECK(r.step == 10 && r.n == 2);
	CHECK(is(&r, "loss", 5.356082) && is(&r, "step_time_ms", 1234.5));
	/* A rank prefix and a bad number. */
	CHECK(line(s,
	          "[rank3]:step  200/5000 | loss 3.3.1 (+0.12z)| norm 0.3 "
	          "(+0.1z)| lr 6.00e-04 | 120.00 ms | 45.0% bf16 MFU | "
	          "400000 tok/s",
	          &r)
	    == 1);
	CHECK(r.rank == 3 && r.step == 200);
	CHECK_EQ_INT(r.malformed, 1);
	CHECK_EQ_INT(r.n, 5);
	CHECK(line(s, "val loss 3.281920", &r) == 0);
	scrape_free(s);
}

TEST(nanogpt_issue_line_and_step_time)
{
	scrape       *s = mk("nanogpt", NULL);
	scrape_result r;
	double        v;

	REQUIRE(s != NULL);
	CHECK(line(s,
	          "step:947/5100 train_loss:5.2585 train_time:144222ms "
	          "step_avg:153.92ms",
	          &r)
	    == 1);
	CHECK(r.step == 947);
	CHECK_EQ_INT(r.n, 3);
	CHECK(is(&r, "loss", 5.2585));
	CHECK(is(&r, "train_time_ms", 144222));
	CHECK(is(&r, "step_avg_ms", 153.92));
	CHECK(!has(&r, "step_time_ms", &v)); /* first line: no previous */
	CHECK(line(s,
	          "step:948/5100 train_loss:5.2511 train_time:144376ms "
	          "step_avg:153.93ms",
	          &r)
	    == 1);
	CHECK(is(&r, "step_time_ms", 154));
	/* The validation line repeats the step's train_time: no step time,
	 * and the next step's is still right. */
	CHECK(line(s,
	          "step:948/5100 val_loss:5.1990 train_time:144376ms "
	          "step_avg:153.93ms",
	          &r)
	    == 1);
	CHECK(is(&r, "val_loss", 5.199) && !has(&r, "step_time_ms", &v));
	CHECK(line(s,
	          "step:950/5100 train_loss:5.2400 train_time:144676ms "
	          "step_avg:153.94ms",
	          &r)
	    == 1);
	CHECK(is(&r, "step_time_ms", 150));
	/* Per rank: rank 1's first line derives nothing. */
	CHECK(line(s,
	          "[default1]:step:951/5100 train_loss:5.2 train_time:1ms "
	          "step_avg:1.00ms",
	          &r)
	    == 1);
	CHECK(r.rank == 1 && !has(&r, "step_time_ms", &v));
	scrape_free(s);
}

TEST(nanogpt_variants)
{
	scrape       *s = mk("nanogpt", NULL);
	scrape_result r;
	double        v;

	REQUIRE(s != NULL);
	/* The speedrun's first line: step_avg is "nan" by design. */
	CHECK(line(s,
	          "step:0/5100 val_loss:10.8258 train_time:0ms step_avg:nanms",
	          &r)
	    == 1);
	CHECK(r.step == 0 && r.malformed == 0);
	CHECK(is(&r, "val_loss", 10.8258) && !has(&r, "step_avg_ms", &v));
	/* karpathy/nanoGPT */
	CHECK(line(s, "iter 100: loss 4.2345, time 123.45ms, mfu 12.34%", &r)
	    == 1);
	CHECK(r.step == 100 && r.n == 3);
	CHECK(is(&r, "loss", 4.2345) && is(&r, "step_time_ms", 123.45)
	    && is(&r, "mfu", 12.34));
	CHECK(
	    line(s, "step 2000: train loss 1.2345, val loss 1.4567", &r) == 1);
	CHECK(r.step == 2000);
	CHECK(is(&r, "eval_train_loss", 1.2345) && is(&r, "val_loss", 1.4567));
	CHECK(line(s, "saving checkpoint to out", &r) == 0);
	scrape_free(s);
}

TEST(torchtitan_issue_line)
{
	scrape       *s = mk("torchtitan", NULL);
	scrape_result r;

	REQUIRE(s != NULL);
	CHECK(line(s,
	          "step: 6922  loss:  3.3222  grad_norm:  0.9790  memory: "
	          "12.25GiB(12.90%)  tps: 500,705  tflops: 256.52  mfu: "
	          "25.94%",
	          &r)
	    == 1);
	CHECK(r.step == 6922);
	CHECK_EQ_INT(r.n, 7);
	CHECK_EQ_INT(r.malformed, 0);
	CHECK(is(&r, "loss", 3.3222));
	CHECK(is(&r, "grad_norm", 0.9790));
	CHECK(is(&r, "memory_gib", 12.25));
	CHECK(is(&r, "memory_pct", 12.90));
	CHECK(is(&r, "tps", 500705));
	CHECK(is(&r, "tflops", 256.52));
	CHECK(is(&r, "mfu", 25.94));
	scrape_free(s);
}

TEST(torchtitan_variants)
{
	scrape       *s = mk("torchtitan", NULL);
	scrape_result r;

	REQUIRE(s != NULL);
	/* As torchtitan's logger prints it: rank prefix, time, colours,
	 * tflops with a separator. */
	CHECK(line(s,
	          "[rank0]:[titan] 2025-03-01 10:00:00,250 - root - INFO - "
	          "\x1b[31mstep:  2  \x1b[32mloss: 11.9632  \x1b[33mmemory: "
	          "33.21GiB(34.96%)  \x1b[34mtps: 1,234  \x1b[36mtflops: "
	          "1,071.49  \x1b[35mmfu: 8.08%\x1b[39m\r\n",
	          &r)
	    == 1);
	CHECK(r.rank == 0 && r.step == 2);
	CHECK(r.time_ns == 1740823200250000000ll);
	CHECK_EQ_INT(r.n, 6);
	CHECK(is(&r, "loss", 11.9632) && is(&r, "tps", 1234)
	    && is(&r, "tflops", 1071.49) && is(&r, "memory_pct", 34.96));
	/* A malformed value is counted; the others are kept. */
	CHECK(
	    line(s, "step: 7  loss:  3.3.2  tps: 500,70  mfu: 1.5%", &r) == 1);
	CHECK_EQ_INT(r.malformed, 2);
	CHECK_EQ_INT(r.n, 1);
	CHECK(is(&r, "mfu", 1.5));
	CHECK(line(s, "Training starts at step 1, with local batch size 8", &r)
	    == 0);
	scrape_free(s);
}

TEST(hf_issue_line_and_steps)
{
	scrape       *s = mk("hf", NULL);
	scrape_result r;
	scrape_counts c;

	REQUIRE(s != NULL);
	CHECK(line(s,
	          "{'loss': 2.1234, 'grad_norm': 0.87, 'learning_rate': "
	          "4.9e-05, 'epoch': 0.12}",
	          &r)
	    == 1);
	CHECK(r.step == 1);
	CHECK_EQ_INT(r.n, 4);
	CHECK(is(&r, "loss", 2.1234));
	CHECK(is(&r, "grad_norm", 0.87));
	CHECK(is(&r, "lr", 4.9e-05));
	CHECK(is(&r, "epoch", 0.12));
	/* A tensor repr (some versions), after a progress bar. */
	CHECK(line(s,
	          " 12%|#2        | 120/1000 [00:30<03:40,  4.00it/s]{'loss': "
	          "2.0311, 'grad_norm': tensor(0.8123, device='cuda:0'), "
	          "'learning_rate': 4.8e-05, 'epoch': 0.24}",
	          &r)
	    == 1);
	CHECK(r.step == 2);
	CHECK(is(&r, "grad_norm", 0.8123) && is(&r, "loss", 2.0311));
	/* Evaluation: the current step, its own names. */
	CHECK(line(s,
	          "{'eval_loss': 1.9821, 'eval_runtime': 3.2101, "
	          "'eval_samples_per_second': 155.76, 'epoch': 0.24}",
	          &r)
	    == 1);
	CHECK(r.step == 2);
	CHECK(is(&r, "eval_loss", 1.9821)
	    && is(&r, "eval_samples_per_second", 155.76));
	/* nan as Python prints it; a 'step' key wins. */
	CHECK(
	    line(s, "{'loss': nan, 'grad_norm': inf, 'step': 500}", &r) == 1);
	CHECK(r.step == 500);
	CHECK(has(&r, "loss", &r.m[0].value) && isnan(r.m[0].value));
	CHECK(line(s, "{'train_runtime': 'n/a', 'epoch': 3.0}", &r) == 1);
	CHECK_EQ_INT(r.malformed, 1);
	scrape_get_counts(s, &c);
	CHECK(c.malformed == 1 && c.matched == 5);
	CHECK(line(s, "***** Running training *****", &r) == 0);
	scrape_free(s);
}

TEST(custom_pattern)
{
	scrape       *s;
	scrape_result r;
	char          err[256];

	s = mk(NULL,
	    "it (?<step>\\d+) loss=(?<loss>\\S+) acc=(?<acc>\\S+)"
	    "(?: r=(?<rank>\\d+))?");
	REQUIRE(s != NULL);
	CHECK(line(s, "[default2]:it 5 loss=1.5 acc=91.5%", &r) == 1);
	CHECK(r.step == 5 && r.rank == 2 && r.n == 2);
	CHECK(is(&r, "loss", 1.5) && is(&r, "acc", 91.5));
	CHECK(line(s, "[default2]:it 6 loss=1.4 acc=92 r=11", &r) == 1);
	CHECK(r.rank == 11);
	CHECK(line(s, "it 7 loss=x acc=1", &r) == 1);
	CHECK(r.n == 1 && r.malformed == 1);
	CHECK(line(s, "epoch 7 loss=1", &r) == 0);
	scrape_free(s);

	/* No step group: lines are counted; a time group. */
	s = mk(NULL, "^(?<time>[0-9.]+) val=(?<val>\\S+)");
	REQUIRE(s != NULL);
	CHECK(line(s, "1700000000.5 val=3", &r) == 1);
	CHECK(r.step == 1 && r.time_ns == 1700000000500000000ll);
	CHECK(line(s, "1700000001 val=4", &r) == 1);
	CHECK(r.step == 2 && is(&r, "val", 4));
	scrape_free(s);

	/* Errors name what is wrong. */
	CHECK(scrape_new(NULL, "(?<step>\\d+", &s, err, sizeof(err)) != 0);
	CHECK(s == NULL && strstr(err, "offset") != NULL);
	CHECK(scrape_new(NULL, "(?<step>\\d+) (\\S+)", &s, err, sizeof(err))
	    != 0);
	CHECK(strstr(err, "no named group gives a metric") != NULL);
	CHECK(scrape_new("bogus", NULL, &s, err, sizeof(err)) != 0);
	CHECK(strstr(err, "unknown preset 'bogus'") != NULL
	    && strstr(err, "torchtitan") != NULL);
	CHECK(scrape_new(NULL, NULL, &s, err, sizeof(err)) != 0);
}

TEST(long_and_odd_lines)
{
	scrape       *s = mk("torchtitan", NULL);
	scrape_result r;
	static char   big[200000];

	REQUIRE(s != NULL);
	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "step: 3  loss: 1.5 ", 19);
	CHECK(scrape_line(s, big, sizeof(big) - 1, &r) == 1);
	CHECK(r.step == 3 && is(&r, "loss", 1.5));
	/* A NUL inside a line and a step too large for 64 bits. */
	CHECK(scrape_line(s, "step: 4 \0loss: 2", 16, &r) == 1);
	CHECK(r.step == 4 && is(&r, "loss", 2));
	CHECK(line(s, "step: 99999999999999999999  loss: 1", &r) == 0);
	scrape_free(s);
}

TEST(reader)
{
	static const char text[]
	    = "step: 1  loss: 3.5  tps: 1,000\n"
	      "noise\n"
	      "step: 2  loss: 3.25\n"
	      "[rank1]:[titan] 2025-03-01 10:00:00,250 - INFO - step: 3  "
	      "loss: 3\n"
	      "step: 4  loss: 2.5"; /* no newline at the end */
	scrape        *s = mk("torchtitan", NULL);
	scrape_reader *rd;
	scrape_sample  x;
	FILE *f = fmemopen((void *) (uintptr_t) text, sizeof(text) - 1, "r");

	REQUIRE(s != NULL && f != NULL);
	REQUIRE(scrape_reader_open(s, f, &rd) == 0);
	CHECK(scrape_reader_next(rd, &x) == 1);
	CHECK(strcmp(x.metric, "loss") == 0 && x.value == 3.5 && x.step == 1
	    && x.rank == -1 && x.line == 1);
	CHECK(x.time_ns == 1000000000); /* no time yet: step seconds */
	CHECK(scrape_reader_next(rd, &x) == 1);
	CHECK(strcmp(x.metric, "tps") == 0 && x.value == 1000);
	CHECK(scrape_reader_next(rd, &x) == 1);
	CHECK(x.step == 2 && x.line == 3 && x.time_ns == 2000000000);
	CHECK(scrape_reader_next(rd, &x) == 1);
	CHECK(
	    x.step == 3 && x.rank == 1 && x.time_ns == 1740823200250000000ll);
	CHECK(scrape_reader_next(rd, &x) == 1);
	CHECK(x.step == 4 && x.value == 2.5
	    && x.time_ns == 1740823200250000000ll); /* the last time seen */
	CHECK(scrape_reader_next(rd, &x) == 0);
	CHECK(scrape_reader_next(rd, &x) == 0);
	scrape_reader_close(rd);
	fclose(f);
	scrape_free(s);
}

int
main(void)
{
	RUN(numbers);
	RUN(megatron_issue_line);
	RUN(megatron_variants);
	RUN(llmc_issue_lines);
	RUN(llmc_variants);
	RUN(nanogpt_issue_line_and_step_time);
	RUN(nanogpt_variants);
	RUN(torchtitan_issue_line);
	RUN(torchtitan_variants);
	RUN(hf_issue_line_and_steps);
	RUN(custom_pattern);
	RUN(long_and_odd_lines);
	RUN(reader);
	return harness_done();
}
