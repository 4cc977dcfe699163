# A real PyTorch trainer (demo/torch_train.py, a character-level
# transformer on the CPU) with the one-line Python binding, against a real
# vitalsd with the built-in rules:
#   a clean run of 3 ranks (with DataLoader worker processes) stores every
#   sample and raises no alert at warning or above;
#   a run of 4 ranks with real faults raises the expected alerts: a slow
#   rank (straggler), a NaN (nonfinite, at its step), a learning-rate
#   blow-up (loss spike or divergence) and a rank that sleeps (stall).
# Skipped, not failed, where torch cannot be imported (Debian:
# apt-get install python3-torch). About a minute.
. tests/lib.sh

PY=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
	if "$p" -c 'import torch' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ]; then
	echo "skip: torch cannot be imported by ${PYTHON:-python3} or /usr/bin/python3 (Debian: apt-get install python3-torch)"
	finish
	exit 0
fi
export PYTHONPATH="$(pwd)/emitter/python" PYTHONDONTWRITEBYTECODE=1
export VITALS_LIB="$BIN/libvitals.so"
# Under a sanitizer runtime torch runs several times slower and the paced
# step times this test relies on are lost; the binding itself is tested
# with sanitizers by it_python.sh.
if ldd "$VITALS_LIB" 2>/dev/null | grep -q 'lib[a-z]*san\.'; then
	echo "skip: $VITALS_LIB is built with a sanitizer (the torch test runs with the plain build)"
	finish
	exit 0
fi
# Steps last at least 50-60 ms (--pace-ms), as in synchronous data-parallel
# training, so that step times stay steady on a shared 2-CPU CI machine
# (a step computes in about 10 ms there). The ranks start together, once
# all have imported torch.

# Alerts of a run as JSON Lines, empty if none; 1 if `vitals alerts`
# is missing.
alerts() {
	"$BIN/vitals" alerts --db "$DB" --run "$1" --format jsonl >"$T/alerts.$1" 2>"$T/alerts.err"
	rc=$?
	[ $rc = 0 ] || grep -q "no run\|no alerts" "$T/alerts.err"
}
# has RUN PYTHON-EXPRESSION: an alert `a` of the run makes it true.
has() {
	"$PY" -c '
import json, sys
alerts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if any(eval(sys.argv[2], {}, {"a": a}) for a in alerts) else 1)
' "$T/alerts.$1" "$2"
}
not() { ! "$@"; }
# rows RUN METRIC RANK: stored samples of one series.
rows() {
	"$BIN/vitals" query --db "$DB" --run "$1" --metric "$2" --rank "$3" |
		tail -n +2 | grep -c ''
}
# steps OUT RANK: the steps rank RANK reported having made.
steps() { sed -n "s/^rank $2: \\([0-9]*\\) steps.*/\\1/p" "$1"; }

# ---- a clean run -----------------------------------------------------------
start_collector
t0=$(now_ms)
VITALS_RUN=clean timeout 120 "$PY" demo/torch_train.py --nprocs 3 \
	--steps 150 --duration 30 --pace-ms 60 --workers 1 \
	>"$T/clean.out" 2>&1
rc=$?
t1=$(now_ms)
stop_collector
cat "$T/clean.out"
echo "clean run: $((t1 - t0)) ms"
check "clean: 3 ranks made 150 steps and exited 0, without hanging at exit" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c '^rank [0-2]: 150 steps' '$T/clean.out') = 3 ] && [ $((t1 - t0)) -lt 45000 ]"
check "clean: the loss fell" \
	sh -c "grep '^rank 0:' '$T/clean.out' | awk '{ if (\$6 + 0 <= \$8 + 0) exit 1 }'"
ok_all=1
for r in 0 1 2; do
	n=$(steps "$T/clean.out" $r)
	for m in loss grad_norm lr tokens_per_sec step_time_ms; do
		[ "$(rows clean $m $r)" = "$n" ] || {
			echo "rank $r $m: $(rows clean $m $r) stored, $n steps"
			ok_all=0
		}
	done
done
check "clean: every sample of every rank stored" [ $ok_all = 1 ]
check "clean: DataLoader workers (fork) logged from their processes" \
	sh -c "[ \$('$BIN/vitals' query --db '$DB' --run clean --metric loader0_batches --rank 1 | tail -n +2 | grep -c '') -gt 10 ]"
if alerts clean; then
	grep . "$T/alerts.clean"
	check "clean: no alert at warning or above" \
		sh -c "! grep -q '\"severity\":\"\\(warning\\|critical\\)\"' '$T/alerts.clean'"
else
	echo "skip: alert checks (vitals alerts failed: $(cat "$T/alerts.err"))"
fi

# ---- real faults ------------------------------------------------------------
# rank 0 slow by 15%, rank 1's learning rate x100 at step 100, rank 2
# poisoned with NaN at step 80, rank 3 asleep for 7 s at step 40.
start_collector
VITALS_RUN=faults timeout 120 "$PY" demo/torch_train.py --nprocs 4 \
	--duration 16 --steps 100000 --pace-ms 50 \
	--slow-rank 0 --slow-factor 1.15 \
	--lr-blowup-at 100 --lr-blowup-rank 1 \
	--nan-at 80 --nan-rank 2 \
	--stall-rank 3 --stall-at 40 --stall-s 7 >"$T/faults.out" 2>&1
rc=$?
stop_collector
cat "$T/faults.out"
check "faults: 4 ranks ran to the end" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c '^rank [0-3]: [0-9]* steps' '$T/faults.out') = 4 ]"
"$BIN/vitals" query --db "$DB" --run faults --metric loss --rank 2 >"$T/nan.csv"
check "faults: samples stored, NaN included, from step 80 on" \
	sh -c "grep -q ',79,2,loss,[0-9]' '$T/nan.csv' && grep -q ',80,2,loss,nan,' '$T/nan.csv'"
if alerts faults; then
	cut -c1-200 "$T/alerts.faults"
	check "faults: NaN caught at its step and rank (critical)" \
		has faults 'a["kind"] == "nonfinite" and a["rank"] == 2 and a["metric"] == "loss" and a["step"] == 80 and a["severity"] == "critical"'
	check "faults: learning-rate blow-up: loss spike or divergence on rank 1" \
		has faults 'a["kind"] in ("spike", "divergence") and a["rank"] == 1 and a["metric"] == "loss" and a["step"] >= 100 and a["severity"] in ("warning", "critical") and a["state"] == "firing"'
	check "faults: stalled rank 3 fired" \
		has faults 'a["kind"] == "stall" and a["rank"] == 3 and a["state"] == "firing" and a["step"] in (39, 40)'
	check "faults: stalled rank 3 resolved" \
		has faults 'a["kind"] == "stall" and a["rank"] == 3 and a["state"] == "resolved"'
	check "faults: the slow rank is a straggler" \
		has faults 'a["kind"] == "straggler" and a["rank"] == 0 and a["metric"] in ("step_time_ms", "tokens_per_sec")'
	check "faults: no NaN alert on ranks without a NaN" \
		not has faults 'a["kind"] == "nonfinite" and a["rank"] in (0, 3)'
else
	echo "skip: alert checks (vitals alerts failed: $(cat "$T/alerts.err"))"
fi
finish
