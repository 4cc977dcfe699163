#!/bin/sh
# The demo: vitalsd on a fresh database in a temporary folder, a simulated
# 4-rank run (a loss spike at step 300, a NaN at step 900, rank 3 stalling
# 12 s at step 1500), watched live in `vitals top`. Press q to leave the
# view; the run's alerts are printed after. Without a terminal the demo
# prints the run's progress and what was stored instead.
B=${B:-build}
T=$(mktemp -d /tmp/vitals-demo.XXXXXX)
DB=$T/db
export VITALS_ENDPOINT=ipc://$T/collector.sock
export VITALS_RUN=demo-$(date +%H%M%S)
STEPS=${DEMO_STEPS:-3000}

cleanup() {
	if [ -n "${TPID:-}" ]; then
		pkill -P "$TPID" 2>/dev/null
		kill "$TPID" 2>/dev/null
	fi
	[ -n "${VPID:-}" ] && kill -TERM "$VPID" 2>/dev/null && wait "$VPID"
	rm -rf "$T"
}
# A closed terminal (an SSH session that drops) sends HUP, which vitalsd
# takes as "reload the rules": the demo stops it itself.
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== vitalsd on $VITALS_ENDPOINT, database $DB"
"$B/vitalsd" --listen "$VITALS_ENDPOINT" --db "$DB" >"$T/alerts.jsonl" 2>"$T/vitalsd.log" &
VPID=$!
sleep 0.3

echo "== simulated run $VITALS_RUN: 4 ranks, $STEPS steps of 20 ms; loss spike at 300, NaN at 900, rank 3 stalls 12 s at 1500"
"$B/vt-simtrainer" --ranks 4 --steps "$STEPS" --step-ms 20 \
	--spike-at 300 --nan-at 900 --stall-at 1500 --stall-s 12 &
TPID=$!

if [ -t 0 ] && [ -t 1 ] && [ "${TERM:-dumb}" != dumb ]; then
	sleep 1
	"$B/vitals" top --db "$DB" --run "$VITALS_RUN"
else
	echo "(no terminal: printing progress instead of vitals top)"
	while kill -0 "$TPID" 2>/dev/null; do
		sleep 5
		[ -e "$DB/data.mdb" ] || continue
		printf '\n-- %s  loss per rank (metric,rank,samples,first_step,last_step,last_time,last_value)\n' "$(date +%T)"
		"$B/vitals" metrics --db "$DB" --run "$VITALS_RUN" | grep -E '^loss,' || true
	done
fi

echo
echo "== vitals alerts --run $VITALS_RUN (rule,kind,severity,state,rank,metric,step,message)"
# From JSON Lines: a message may hold commas, which cut would split.
"$B/vitals" alerts --db "$DB" --run "$VITALS_RUN" --format jsonl | python3 -c '
import json, sys
for line in sys.stdin:
    a = json.loads(line)
    f = [a.get(k) for k in ("rule", "kind", "severity", "state", "rank",
         "metric", "step", "message")]
    print(",".join("" if v is None else str(v) for v in f))
'
echo
echo "== vitals runs"
"$B/vitals" runs --db "$DB"
echo
echo "== vitals query --metric loss --rank 0 --steps 295:310 (the spike)"
"$B/vitals" query --db "$DB" --run "$VITALS_RUN" --metric loss --rank 0 --steps 295:310
