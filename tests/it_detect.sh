# Detection inside vitalsd with real processes: live alerts equal replay
# alerts, exec hooks get the alert and cannot stall ingest, SIGHUP with a
# broken rules file keeps the rules in use, a run that ends normally is
# not a stall but a killed one is.
. tests/lib.sh

# 1. Live vs offline: a simulated run with a loss spike and a NaN.
"$BIN/vitalsd" --listen "$EP" --db "$DB" >"$T/live.jsonl" 2>>"$T/vitalsd.log" &
VPID=$!
sleep 0.3
VITALS_RUN=same "$BIN/vt-simtrainer" --ranks 2 --steps 500 --step-ms 2 \
	--spike-at 300 --nan-at 400 >/dev/null 2>&1
# 4 ranks that all see the same spike: one incident, and the export
# (written series after series) replays to the live alerts.
VITALS_RUN=wide "$BIN/vt-simtrainer" --ranks 4 --steps 500 --step-ms 2 \
	--spike-at 300 >/dev/null 2>&1
sleep 0.5
stop_collector
"$BIN/vitals" alerts --db "$DB" --run same --format jsonl | sort >"$T/stored.jsonl"
grep '"run":"same"' "$T/live.jsonl" | sort >"$T/live.sorted"
"$BIN/vitals" export --db "$DB" --run same >"$T/same.csv"
"$BIN/vitals" replay "$T/same.csv" | sort >"$T/replay.jsonl"
check "live: a loss spike and the NaN were flagged" \
	sh -c "grep -q '\"kind\":\"nonfinite\".*\"step\":400' '$T/stored.jsonl' &&
	       grep -q '\"rule\":\"loss_spike\"' '$T/stored.jsonl'"
check "live: alerts logged on stdout are the alerts stored" \
	cmp -s "$T/live.sorted" "$T/stored.jsonl"
# Live, the collector feeds each rank's batches as they come; the export
# replays in time order. When several ranks fire the same rule, which of
# them opens the incident (and is named in it) depends on that order, so
# the comparison leaves out the fields that name the opening rank: the
# incidents, their kinds, severities and states must be the same.
same_alerts() {
	cmp -s "$1" "$2" && return 0
	echo "exact comparison differs (rank order):"
	diff "$1" "$2" | head -10
	python3 - "$1" "$2" <<'PY'
import json, sys
def load(p):
    return sorted((a['rule'], a['kind'], a['severity'], a['state'], a['run'],
                   a['metric']) for a in map(json.loads, open(p)))
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)
PY
}
check "replay of the export gives the same alerts as live" \
	same_alerts "$T/replay.jsonl" "$T/stored.jsonl"
"$BIN/vitals" alerts --db "$DB" --run wide --format jsonl | sort >"$T/wide.stored"
"$BIN/vitals" export --db "$DB" --run wide >"$T/wide.csv"
"$BIN/vitals" replay "$T/wide.csv" | sort >"$T/wide.replay"
check "4 ranks: the replay of the export gives the live alerts" \
	same_alerts "$T/wide.replay" "$T/wide.stored"
check "4 ranks: alerts were raised" [ -s "$T/wide.stored" ]
check "4 ranks: one spike on every rank is one incident" python3 -c "
import json
a = [json.loads(l) for l in open('$T/wide.stored')]
f = [x for x in a if x['rule'] == 'loss_spike' and x['state'] == 'firing']
assert 1 <= len(f) <= 3, f
assert len(set(x['rank'] for x in f)) == 1, f
"

# 2. Exec hooks: one that records its input, one that hangs.
cat >"$T/rules" <<RULES
rule nan_hook {
	metric   = '^loss\$'
	detector = nonfinite
	severity = critical
	exec     = ["sh", "-c", "cat > $T/hook.out"]
	timeout  = 5s
}
rule hang_hook {
	metric   = '^hang\$'
	detector = nonfinite
	severity = critical
	exec     = ["sleep", "1000"]
	timeout  = 1s
}
RULES
rm -rf "$DB"
start_collector --rules "$T/rules"
"$BIN/vitals" emit --run hooks --step 1 loss=2.5
"$BIN/vitals" emit --run hooks --step 2 loss=nan
i=0
while [ ! -s "$T/hook.out" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "exec hook got the alert as JSON on stdin" \
	python3 -c "
import json
a = json.loads(open('$T/hook.out').read())
assert a['rule'] == 'nan_hook' and a['state'] == 'firing' and a['step'] == 2, a
"
"$BIN/vitals" emit --run hooks --step 3 hang=nan
t0=$(now_ms)
"$BIN/vitals" emit --run hooks --step 4 loss=2.4 --timeout-ms 5000
rc=$?
t1=$(now_ms)
echo "emit while a hook hangs: $((t1 - t0)) ms"
check "a hanging hook does not stall ingest" \
	sh -c "[ $rc = 0 ] && [ $((t1 - t0)) -lt 3000 ]"
sleep 1.5
check "the hanging hook is killed after its timeout" \
	grep -q "hook sleep .* past its timeout: killed" "$T/vitalsd.log"

# 3. SIGHUP with a broken file keeps the rules in use.
printf 'rule broken {\n\tdetector = nonsense\n}\n' >"$T/rules"
kill -HUP "$VPID"
sleep 0.5
check "SIGHUP: the parse error names file, line and column" \
	grep -q "$T/rules:2:[0-9]*:" "$T/vitalsd.log"
check "SIGHUP: vitalsd says it keeps the rules in use" \
	grep -q "keeping the rules in use" "$T/vitalsd.log"
rm -f "$T/hook.out"
"$BIN/vitals" emit --run hooks2 --step 1 loss=inf
i=0
while [ ! -s "$T/hook.out" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "SIGHUP: the old rules still fire" grep -q nan_hook "$T/hook.out"
check "collector still running and stops cleanly" stop_collector

# 4. A run that ends normally is finished, not stalled; a killed one is.
cat >"$T/stall.rules" <<RULES
rule quick_stall {
	metric   = '^step_time\$'
	detector = stall
	floor    = 1s
	ceiling  = 2s
}
RULES
rm -rf "$DB"
start_collector --rules "$T/stall.rules"
VITALS_RUN=done "$BIN/vt-simtrainer" --ranks 2 --steps 200 --step-ms 5 \
	>/dev/null 2>&1
# setsid: the trainer and its forked ranks are one process group to kill.
VITALS_RUN=killed setsid "$BIN/vt-simtrainer" --ranks 2 --steps 1000000 \
	--step-ms 5 >/dev/null 2>&1 &
KPID=$!
sleep 1
pkill -9 -g "$KPID"
wait "$KPID" 2>/dev/null
stalled() {
	"$BIN/vitals" alerts --db "$DB" --run "$1" --format jsonl \
		| grep -q '"kind":"stall","severity":"[a-z]*","state":"firing"'
}
i=0
while ! stalled killed && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1 # past the finished run's largest threshold (2 s) by now
check "a killed run is flagged as stalled" stalled killed
check "a run whose ranks closed normally raises no stall" \
	sh -c "! '$BIN/vitals' alerts --db '$DB' --run done --format jsonl | grep -q stall"
"$BIN/vitals" emitters --db "$DB" --run done >"$T/done.csv"
"$BIN/vitals" emitters --db "$DB" --run killed >"$T/killed.csv"
check "vitals emitters: both ranks of the finished run ended" \
	python3 -c "
import csv
rows = list(csv.DictReader(open('$T/done.csv')))
assert len(rows) == 2 and all(r['ended'] for r in rows), rows
rows = list(csv.DictReader(open('$T/killed.csv')))
assert len(rows) == 2 and not any(r['ended'] for r in rows), rows
"
check "collector stops cleanly" stop_collector
finish
