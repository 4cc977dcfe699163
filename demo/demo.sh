#!/bin/sh
# The demo: vitalsd on a fresh database in a temporary folder, a simulated
# 4-rank run with a loss spike and a stall, its progress printed live, and
# then what vitals reads back. Ctrl-C stops it early.
B=${B:-build}
T=$(mktemp -d /tmp/vitals-demo.XXXXXX)
DB=$T/db
export VITALS_ENDPOINT=ipc://$T/collector.sock
export VITALS_RUN=demo-$(date +%H%M%S)
STEPS=${DEMO_STEPS:-600}

cleanup() {
	[ -n "${TPID:-}" ] && kill "$TPID" 2>/dev/null
	[ -n "${VPID:-}" ] && kill -TERM "$VPID" 2>/dev/null && wait "$VPID"
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

echo "== vitalsd on $VITALS_ENDPOINT, database $DB"
"$B/vitalsd" --listen "$VITALS_ENDPOINT" --db "$DB" >"$T/alerts.jsonl" 2>"$T/vitalsd.log" &
VPID=$!
sleep 0.3

echo "== simulated run $VITALS_RUN: 4 ranks, $STEPS steps, a loss spike at step 300, rank 3 stalls 3 s at step 450"
"$B/vt-simtrainer" --ranks 4 --steps "$STEPS" --step-ms 25 \
	--spike-at 300 --stall-at 450 --stall-s 3 &
TPID=$!
while kill -0 "$TPID" 2>/dev/null; do
	sleep 2
	[ -e "$DB/data.mdb" ] || continue
	printf '\n-- %s  latest per series (metric,rank,samples,first_step,last_step,last_time,last_value)\n' "$(date +%T)"
	"$B/vitals" metrics --db "$DB" --run "$VITALS_RUN" | grep -E '^(loss|grad_norm|tokens_per_sec),' || true
done
wait "$TPID"
TPID=

echo
echo "== vitals runs"
"$B/vitals" runs --db "$DB"
echo
echo "== vitals emitters (one per rank: host, pid, received, dropped)"
"$B/vitals" emitters --db "$DB" --run "$VITALS_RUN"
echo
echo "== vitals query --metric loss --rank 0 --steps 290:310 (the spike)"
"$B/vitals" query --db "$DB" --run "$VITALS_RUN" --metric loss --rank 0 --steps 290:310
echo
echo "== vitals alerts (what the built-in rules flagged)"
"$B/vitals" alerts --db "$DB" --run "$VITALS_RUN" | cut -d, -f1-4,6,8,9,13
echo
echo "== vitals query --metric grad_norm --rank 0 --steps 295:305 (grad-norm leads)"
"$B/vitals" query --db "$DB" --run "$VITALS_RUN" --metric grad_norm --rank 0 --steps 295:305
echo
echo "== vitalsd log"
kill -TERM "$VPID"; wait "$VPID"; VPID=
cat "$T/vitalsd.log"
