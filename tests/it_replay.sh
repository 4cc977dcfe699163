# vitals replay and vitals rules as a user runs them: JSON Lines and CSV
# give the same alerts, two runs are byte-identical, bad input names its
# line, rules files are checked with line and column.
. tests/lib.sh

# A run of 2 ranks: a loss blip, a sustained spike, a NaN; rank 1 goes
# silent for a while; then a restart from step 1500. Written by Python as
# a trainer would (json.dumps writes NaN bare), and as CSV with the
# columns in another order and quoted fields.
python3 - "$T" <<'PY'
import csv, json, math, random, sys
random.seed(7)
T = sys.argv[1]
rows = []
t = 1700000000.0
def loss(s):
    return 2 + 8 * (s + 50) ** -0.4
def emit(step, t, rank, metric, value):
    rows.append({"run": "r,1", "rank": rank, "metric": metric,
                 "step": step, "time": round(t, 6), "value": value})
step = 0
for i in range(2400):
    if i == 2000:
        step = 1500
        t += 120
    t += 2 + random.gauss(0, 0.02)
    m = 3 if step == 600 else 2 if 900 <= step < 920 else 1
    v = float("nan") if step == 1200 else loss(step) * math.exp(random.gauss(0, 0.02)) * m
    emit(step, t, 0, "loss", v)
    emit(step, t, 0, "grad_norm", 0.5 * math.exp(random.gauss(0, 0.1)))
    if not (1300 <= step < 1340 and i < 2000):
        emit(step, t + 0.01, 1, "step_time", 1.9 + random.gauss(0, 0.01))
    emit(step, t + 0.01, 0, "step_time", 1.9 + random.gauss(0, 0.01))
    step += 1
with open(T + "/run.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
with open(T + "/run.csv", "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_MINIMAL)
    w.writerow(["metric", "value", "time", "step", "rank", "run"])
    for r in rows:
        v = r["value"]
        w.writerow([r["metric"], "nan" if v != v else repr(v),
                    "%.6f" % r["time"], r["step"], r["rank"], r["run"]])
PY

"$BIN/vitals" replay "$T/run.jsonl" >"$T/a.jsonl"
check "replay jsonl exits 0" [ $? = 0 ]
"$BIN/vitals" replay "$T/run.csv" >"$T/b.jsonl"
check "replay csv exits 0" [ $? = 0 ]
check "JSON Lines and CSV input give the same alerts" \
	cmp -s "$T/a.jsonl" "$T/b.jsonl"
"$BIN/vitals" replay "$T/run.jsonl" >"$T/a2.jsonl"
check "two replays are byte-identical" cmp -s "$T/a.jsonl" "$T/a2.jsonl"
"$BIN/vitals" replay - <"$T/run.csv" >"$T/c.jsonl"
check "stdin (-) is sniffed and read like the file" \
	cmp -s "$T/a.jsonl" "$T/c.jsonl"
check "the alerts are what happened" python3 -c "
import json
a = [json.loads(l) for l in open('$T/a.jsonl')]
kinds = [(x['kind'], x['state'], x['step']) for x in a]
def has(kind, state, lo, hi):
    return any(k == kind and s == state and lo <= st <= hi for k, s, st in kinds)
assert has('blip', 'resolved', 600, 600), kinds
assert has('spike', 'firing', 901, 901) and has('spike', 'resolved', 920, 921), kinds
assert has('nonfinite', 'firing', 1200, 1200), kinds
assert has('stall', 'firing', 1299, 1302), kinds
assert has('restart', 'resolved', 1500, 1500), kinds
r = [x for x in a if x['kind'] == 'restart'][0]
assert r['run'] == 'r,1' and r['value'] == 499, r
for x in a:
    for k in ('rule', 'kind', 'severity', 'state', 'run', 'rank', 'metric',
              'step', 'time', 'value', 'baseline', 'message', 'host'):
        assert k in x, (k, x)
warn = [x for x in a if x['severity'] != 'info' and x['state'] == 'firing'
        and x['kind'] not in ('spike', 'nonfinite', 'stall')]
assert not warn, warn
"

# Export output (time,step,rank,metric,value,run[,host]) replays as is.
printf 'time,step,rank,metric,value,run,host\n' >"$T/x.csv"
sed -n '2,$p' "$T/run.csv" | python3 -c "
import csv, sys
for m, v, t, s, r, run in csv.reader(sys.stdin):
    print(','.join([t, s, r, m, v, '\"' + run + '\"', 'node-a']))
" >>"$T/x.csv"
"$BIN/vitals" replay "$T/x.csv" >"$T/x.jsonl"
check "export-shaped CSV gives the same alerts, with the host" \
	python3 -c "
import json
a = [json.loads(l) for l in open('$T/a.jsonl')]
x = [json.loads(l) for l in open('$T/x.jsonl')]
assert len(a) == len(x), (len(a), len(x))
for p, q in zip(a, x):
    if q['rank'] >= 0:
        assert q['host'] == 'node-a', q
    p['host'] = q['host'] = ''
    p['message'] = q['message'] = ''
    assert p == q, (p, q)
"

# Errors name the file and line (and column where there is one).
head -n 5 "$T/run.jsonl" >"$T/bad.jsonl"
echo '{"run": "r", "rank": 0, "metric": "loss", "step": 9, "time": 1, "value": }' >>"$T/bad.jsonl"
tail -n 3 "$T/run.jsonl" >>"$T/bad.jsonl"
"$BIN/vitals" replay "$T/bad.jsonl" >"$T/bad.out" 2>"$T/bad.err"
rc=$?
cat "$T/bad.err"
check "a malformed JSON line stops the replay with status 1" [ $rc = 1 ]
check "the error names file, line and column" \
	grep -q "bad.jsonl:6:[0-9]*: expected a JSON object" "$T/bad.err"
printf 'time,step,rank,metric,value\n1,1,0,loss,1\n1,x,0,loss,1\n' >"$T/bad.csv"
"$BIN/vitals" replay "$T/bad.csv" 2>"$T/bad.err"
check "a bad CSV field names line and column" \
	grep -q "bad.csv:3:3: expected step as a whole number >= 0, found 'x'" \
	"$T/bad.err"
"$BIN/vitals" replay "$T/nonexistent.csv" 2>"$T/bad.err"
rc=$?
check "a missing file is an error" \
	sh -c "[ $rc = 1 ] && grep -q 'nonexistent.csv: No such file' '$T/bad.err'"

# Rules files.
"$BIN/vitals" rules default >"$T/default.rules"
check "rules default prints rules that check as valid" \
	sh -c "'$BIN/vitals' rules check '$T/default.rules' | grep -q 'rules, valid'"
"$BIN/vitals" replay --rules "$T/default.rules" "$T/run.jsonl" >"$T/d.jsonl"
check "the printed defaults replay like the built-in ones" \
	cmp -s "$T/a.jsonl" "$T/d.jsonl"
printf 'rule only_nan {\n\tmetric   = "^loss$"\n\tdetector = nonfinite\n}\n' \
	>"$T/nan.rules"
"$BIN/vitals" replay --rules "$T/nan.rules" "$T/run.csv" >"$T/n.jsonl"
check "--rules replaces the defaults" \
	sh -c "[ \$(wc -l <'$T/n.jsonl') = 2 ] && grep -q only_nan '$T/n.jsonl'"
printf 'rule x {\n\tmetric = "loss"\n\tdetector = spike\n\tz = six\n}\n' \
	>"$T/broken.rules"
"$BIN/vitals" rules check "$T/broken.rules" 2>"$T/rules.err"
rc=$?
cat "$T/rules.err"
check "rules check: a broken file exits 1 naming line and column" \
	sh -c "[ $rc = 1 ] && grep -q 'broken.rules:4:6: expected a number for .z.' '$T/rules.err'"
"$BIN/vitals" replay --rules "$T/broken.rules" "$T/run.csv" 2>/dev/null
check "replay refuses a broken rules file" [ $? = 1 ]
# Rules files are read with vitalsd's 1 MiB cap by every command: valid
# rules padded with comments past it are refused, naming the file.
cp "$T/default.rules" "$T/big.rules"
python3 -c "print(('# padding' + ' ' * 70 + chr(10)) * 14000, end='')" \
	>>"$T/big.rules"
"$BIN/vitals" rules check "$T/big.rules" >/dev/null 2>"$T/big.err"
check "rules check refuses a rules file over 1 MiB, naming it" \
	sh -c "[ $? = 1 ] && grep -q 'big.rules: larger than 1 MiB' '$T/big.err'"
"$BIN/vitals" replay --rules "$T/big.rules" "$T/run.csv" >/dev/null 2>&1
check "replay refuses a rules file over 1 MiB" [ $? = 1 ]

# rules check --db lists the stored series each rule matches.
start_collector
"$BIN/vitals" emit --run chk --step 1 loss=2.5 tokens_per_sec=1000 >/dev/null
stop_collector
"$BIN/vitals" rules check --db "$DB" >"$T/check.out"
check "rules check --db lists matching series" \
	sh -c "grep -A3 '^rule loss_spike' '$T/check.out' | grep -q 'chk  loss  rank' &&
	       grep -A3 '^rule throughput_drop' '$T/check.out' | grep -q 'tokens_per_sec'"
# Trainer logs: the scraping presets of `vitals tail`, offline.
python3 - "$T/megatron.log" <<'PY'
import math, random, sys
random.seed(3)
with open(sys.argv[1], "w") as f:
    for it in range(1, 301):
        loss = 5.0 * it ** -0.05 * (1 + 0.01 * random.gauss(0, 1))
        lm = "nan" if it == 250 else "%E" % loss
        f.write("[default0]: iteration %8d/  115311 | consumed samples: %d | "
                "elapsed time per iteration (s): 1.05 | learning rate: 5.279E-05 | "
                "global batch size:  2048 | lm loss: %s | grad norm: %.3f | "
                "num zeros: 0.0 | number of skipped iterations:   0 | "
                "number of nan iterations:   0 | samples per second: 19.256 | "
                "TFLOPs: 147.43 |\n" % (it, it * 2048, lm, 0.9 + 0.01 * random.gauss(0, 1)))
PY
"$BIN/vitals" replay --preset megatron --run meg "$T/megatron.log" >"$T/meg.jsonl" 2>"$T/meg.err"
check "replay --preset megatron: the NaN at iteration 250 flagged, rank from the prefix" \
	python3 -c "
import json
a = [json.loads(l) for l in open('$T/meg.jsonl')]
nan = [x for x in a if x['kind'] == 'nonfinite' and x['state'] == 'firing']
assert nan and nan[0]['step'] == 250 and nan[0]['run'] == 'meg' and nan[0]['rank'] == 0, a
"
"$BIN/vitals" replay --preset nosuch "$T/megatron.log" 2>"$T/meg.err"
check "replay with an unknown preset: a usage error naming it" \
	sh -c "[ $? = 2 ] && grep -q nosuch '$T/meg.err'"

finish
