# Detection inside vitalsd with real processes: live alerts equal replay
# alerts, exec hooks get the alert and cannot stall ingest, SIGHUP with a
# broken rules file keeps the rules in use, a run that ends normally is
# not a stall but a killed one is.
. tests/lib.sh

# wait_for SECONDS COMMAND...: poll (every 0.1 s) until the command
# succeeds, at most SECONDS; its last status. The checks below wait for
# what they look for instead of sleeping a fixed time, so that a busy
# machine makes them slower, not wrong.
wait_for() {
	n=$(($1 * 10))
	shift
	while ! "$@"; do
		[ "$n" -gt 0 ] || return 1
		sleep 0.1
		n=$((n - 1))
	done
}

# 1. Live vs offline: a simulated run with a loss spike and a NaN.
"$BIN/vitalsd" --listen "$EP" --db "$DB" >"$T/live.jsonl" 2>>"$T/vitalsd.log" &
VPID=$!
wait_for 30 test -S "$T/collector.sock"
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
wait_for 30 test -s "$T/hook.out"
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
check "the hanging hook is killed after its timeout" wait_for 30 \
	grep -q "hook sleep .* past its timeout: killed" "$T/vitalsd.log"

# 3. SIGHUP with a broken file keeps the rules in use.
printf 'rule broken {\n\tdetector = nonsense\n}\n' >"$T/rules"
kill -HUP "$VPID"
check "SIGHUP: the parse error names file, line and column" wait_for 30 \
	grep -q "$T/rules:2:[0-9]*:" "$T/vitalsd.log"
check "SIGHUP: vitalsd says it keeps the rules in use" \
	grep -q "keeping the rules in use" "$T/vitalsd.log"
rm -f "$T/hook.out"
"$BIN/vitals" emit --run hooks2 --step 1 loss=inf
wait_for 30 test -s "$T/hook.out"
check "SIGHUP: the old rules still fire" grep -q nan_hook "$T/hook.out"
check "collector still running and stops cleanly" stop_collector

# 4. A run that ends normally is finished, not stalled; a killed one is.
cat >"$T/stall.rules" <<RULES
rule quick_stall {
	metric   = '^step_time\$'
	detector = stall
	floor    = 3s
	ceiling  = 3s
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
# Killed once both ranks have stored samples (however slow the start).
emitters_of() {
	[ "$("$BIN/vitals" emitters --db "$DB" --run "$1" | wc -l)" -ge "$2" ]
}
wait_for 60 emitters_of killed 3
pkill -9 -g "$KPID"
wait "$KPID" 2>/dev/null
stalled() {
	"$BIN/vitals" alerts --db "$DB" --run "$1" --format jsonl \
		| grep -q '"kind":"stall","severity":"[a-z]*","state":"firing"'
}
# The finished run's last sample came before the killed run's first, so
# when the killed one stalls (3 s after its last sample) the finished
# one is past its largest threshold (3 s) too.
check "a killed run is flagged as stalled" wait_for 60 stalled killed
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
# 5. Live equals replay on issue 9's cases, with the built-in rules:
# trainers of tests/helpers/scenario.py (Python binding, real sleeps) log
# a crash and restart, checkpoint phases, a slow divergence and a
# heartbeat hang; the export of each run (every sample, and the ends of
# the emitters that closed) replays to the alerts vitalsd stored.
PY=${PYTHON:-python3}
export PYTHONPATH="$(pwd)/emitter/python" PYTHONDONTWRITEBYTECODE=1
export VITALS_LIB="$BIN/libvitals.so"
# A sanitizer build of the library needs its runtime loaded first.
for rt in asan ubsan; do
	so=$(ldd "$VITALS_LIB" 2>/dev/null | awk "/lib$rt\\./ {print \$3}")
	[ -n "$so" ] && export ASAN_OPTIONS=detect_leaks=0 PRELOAD="${PRELOAD:+$PRELOAD:}$so"
done
rm -rf "$DB"
start_collector
pids=
for k in restart ckpt diverge hang; do
	LD_PRELOAD=${PRELOAD:-} "$PY" tests/helpers/scenario.py $k s_$k \
		>"$T/scenario.$k" 2>&1 &
	pids="$pids $!"
done
for p in $pids; do wait "$p"; done
check "collector stops cleanly after the scenarios" stop_collector
for k in restart ckpt diverge hang; do
	"$BIN/vitals" alerts --db "$DB" --run s_$k --format jsonl \
		| sort >"$T/s_$k.live"
	"$BIN/vitals" export --db "$DB" --run s_$k >"$T/s_$k.csv"
	"$BIN/vitals" replay "$T/s_$k.csv" | sort >"$T/s_$k.replay"
	check "$k: the replay of the export gives the live alerts" \
		same_alerts "$T/s_$k.replay" "$T/s_$k.live"
done
"$BIN/vitals" export --db "$DB" --run s_restart --latest >"$T/latest.csv"
check "export: both attempts of a redone step, --latest only the last" sh -c "
	[ \$(grep -c '^[0-9.]*,250,0,loss,' '$T/s_restart.csv') = 2 ] &&
	[ \$(grep -c '^[0-9.]*,250,0,loss,' '$T/latest.csv') = 1 ] &&
	[ \$(grep -c ',vitals/end,' '$T/s_restart.csv') = 1 ] &&
	! grep -q ',vitals/end,' '$T/latest.csv'"
"$BIN/vitals" export --db "$DB" --run s_restart --latest --all-samples \
	>/dev/null 2>"$T/both.err"
check "export --latest --all-samples: a usage error" \
	sh -c "[ $? = 2 ] && grep -q 'opposite' '$T/both.err'"
# s KIND PYTHON: run PYTHON with `a` the live alerts of the scenario; its
# exit status is the check's.
s() {
	"$PY" -c '
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def firing(rule=None, kind=None):
    return [x for x in a if x["state"] == "firing"
            and rule in (None, x["rule"]) and kind in (None, x["kind"])]
exec(sys.argv[2])
' "$T/s_$1.live" "$2"
}
check "restart: one firing info event with the rollback point and steps lost" s restart '
r = firing("restart")
assert len(r) == 1 and r[0]["severity"] == "info", a
assert r[0]["step"] == 200 and r[0]["baseline"] == 299 and r[0]["value"] == 99, r
'
# A busy machine may hold a trainer back long enough for a stall note
# (info) elsewhere: the checks look at the steps of the incident.
check "restart: the stall of the downtime resolves as restarted at step 200" s restart '
st = [x for x in a if x["rule"] == "stall"]
assert len([x for x in firing("stall") if x["step"] == 299]) == 1, st
assert [x for x in st if x["state"] == "resolved"
        and "restarted at step 200" in x["message"]], st
'
check "checkpoint phases: no warning or critical" s ckpt '
assert not [x for x in a if x["severity"] != "info"], a
'
check "slow divergence: critical before the NaN, within 200 steps of its start" s diverge '
d = firing("loss_spike", "divergence")
assert d and d[0]["severity"] == "critical", a
assert 400 < d[0]["step"] < 600, d
'
check "heartbeat hang: one alert" s hang '
h = [x for x in firing() if x["step"] == 199]
assert len(h) == 1 and h[0]["kind"] == "progress_stall", a
assert not [x for x in firing() if x["severity"] != "info"], a
'
check "every scenario run finished with nothing firing" sh -c '
for k in restart ckpt diverge hang; do
	python3 - "$0/s_$k.live" <<PY || exit 1
import json, sys
open_ = {}
for x in map(json.loads, open(sys.argv[1])):
    key = x["rule"]  # one incident per rule and run
    open_[key] = open_.get(key, 0) + (1 if x["state"] == "firing" else -1)
assert all(v <= 0 for v in open_.values()), (sys.argv[1], open_)
PY
done' "$T"
finish
