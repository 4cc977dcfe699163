# End to end: trainer processes -> vitalsd -> LMDB -> vitals query.
. tests/lib.sh

# Every sample of a query for each metric, concatenated under one header
# (--all-samples: a sample stored twice must show, not be folded).
query_all() {
	run=$1
	metrics=$2
	"$BIN/vitals" query --db "$DB" --run "$run" --metric m0 --all-samples
	m=1
	while [ $m -lt "$metrics" ]; do
		"$BIN/vitals" query --db "$DB" --run "$run" --metric "m$m" \
			--all-samples |
			tail -n +2
		m=$((m + 1))
	done
}

start_collector

# 4 ranks (processes) x 5 metrics x 50,000 steps = 1,000,000 samples.
export VITALS_RUN=e2e-million
"$BIN/tests/trainer" emit --ranks 4 --metrics 5 --steps 50000 \
	--step-us 20 --flush-ms 60000 >"$T/emit.out"
check "million: trainer got every sample acknowledged" [ $? = 0 ]
cat "$T/emit.out"
query_all e2e-million 5 >"$T/q.csv"
"$BIN/tests/trainer" verify --ranks 4 --metrics 5 --steps 50000 \
	<"$T/q.csv" >"$T/verify.out"
rc=$?
cat "$T/verify.out"
check "million: query returns all 1,000,000 bit-exact, once, in step order" \
	[ $rc = 0 ]
"$BIN/vitals" runs --db "$DB" >"$T/runs.csv"
cat "$T/runs.csv"
check "million: runs lists 1,000,000 samples, 20 series, 4 emitters, 0 dropped, 0 refused, finished" \
	grep -q '^e2e-million,0,49999,.*,1000000,20,4,0,0,true,0$' "$T/runs.csv"

# JSON Lines reads back with Python's json, NaN and Infinity included.
"$BIN/vitals" query --db "$DB" --run e2e-million --metric m1 --rank 2 \
	--steps 0:1999 --format jsonl >"$T/q.jsonl"
check "jsonl: 2000 lines that Python's json reads, with NaN and Infinity" \
	python3 -c "
import json, math, sys
rows = [json.loads(l) for l in open('$T/q.jsonl')]
assert len(rows) == 2000, len(rows)
assert [r['step'] for r in rows] == list(range(2000))
assert all(r['rank'] == 2 and r['metric'] == 'm1' for r in rows)
assert math.isnan(rows[7]['value']) and rows[13]['value'] == math.inf
assert rows[17]['value'] == -math.inf
"

# Threads: 4 emitters in one process.
export VITALS_RUN=e2e-threads
"$BIN/tests/trainer" emit --threads --ranks 4 --metrics 3 --steps 10000 \
	--flush-ms 60000 >/dev/null
check "threads: trainer got every sample acknowledged" [ $? = 0 ]
"$BIN/vitals" export --db "$DB" --run e2e-threads --all-samples >"$T/x.csv"
check "threads: export returns all 120,000 exactly once" \
	sh -c "'$BIN/tests/trainer' verify --ranks 4 --metrics 3 --steps 10000 <'$T/x.csv'"

check "collector stops cleanly on SIGTERM" stop_collector
finish
