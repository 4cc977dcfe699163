#!/bin/sh
# make bench: every benchmark, figures printed (never asserted). Run on a
# shared machine, so each figure that matters is printed next to a ceiling
# measured in the same run.
B=${B:-build}
T=$(mktemp -d /tmp/vitals-bench.XXXXXX)
trap 'kill $VPID 2>/dev/null; rm -rf "$T"' EXIT

echo "== emitter: ns per vt_emit call"
"$B/bench/bench_emitter"

echo
echo "== block codec"
"$B/bench/bench_block"

echo
echo "== store: size, ingest without network, LMDB ceilings, read"
"$B/bench/bench_store" "$T/store"

echo
echo "== end-to-end ingest: emitter processes -> vitalsd -> LMDB (committed, acknowledged)"
EP=ipc://$T/collector.sock
"$B/bench/bench_zmq" "ipc://$T/zmq.sock" 20000 | tee "$T/zmq.out"
for ranks in 1 2; do
	rm -rf "$T/db"
	"$B/vitalsd" --listen "$EP" --db "$T/db" --quiet 2>"$T/vitalsd.log" &
	VPID=$!
	sleep 0.3
	steps=$((4000000 / ranks / 8))
	t0=$(date +%s%N)
	VITALS_ENDPOINT=$EP VITALS_RUN=bench VITALS_MAX_BUFFER=1073741824 \
		"$B/tests/trainer" emit --ranks $ranks --metrics 8 \
		--steps $steps --flush-ms 120000 >"$T/emit.out"
	t1=$(date +%s%N)
	kill -TERM $VPID
	wait $VPID
	dropped=$(awk '{ d += $6 } END { print d }' "$T/emit.out")
	total=$((ranks * steps * 8))
	awk -v n=$total -v ns=$((t1 - t0)) -v r=$ranks -v d="$dropped" \
		-v z="$(sed -n 's/.*= \([0-9.]*\) M samples.*/\1/p' "$T/zmq.out")" \
		'BEGIN { rate = n / (ns / 1e9) / 1e6;
		 printf "end to end, %d emitter process(es), %d samples (dropped %d): %.2f M samples/s = %.0f%% of the zeromq ceiling\n", r, n, d, rate, 100 * rate / z }'
done
