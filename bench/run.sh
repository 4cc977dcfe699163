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
echo "== vitals.torch: instrumentation per training step (CPU, DDP over gloo)"
PYT=${PYTHON:-python3}
"$PYT" -c 'import torch' 2>/dev/null || PYT=/usr/bin/python3
VITALS_LIB="$B/libvitals.so" VITALS_BIN="$B" "$PYT" bench/bench_torch.py

echo
echo "== block codec"
"$B/bench/bench_block"

echo
echo "== store: size, ingest without network, LMDB ceilings, read"
"$B/bench/bench_store" "$T/store"

echo
echo "== vitals top: frame time and CPU share at 1,024 series x 64 ranks"
"$B/bench/bench_top" "$T/top"

echo
echo "== end-to-end ingest: emitter processes -> vitalsd -> LMDB (committed, acknowledged)"
EP=ipc://$T/collector.sock
"$B/bench/bench_zmq" "ipc://$T/zmq.sock" 20000 | tee "$T/zmq.out"
# Realistic series (bench/realistic.c), 4 ranks x 6 metrics, one emitter
# thread per rank, from the first call until every sample is acknowledged;
# vitalsd with the built-in rules (as it runs by default) and with
# --no-detect.
for mode in detect no-detect; do
	rm -rf "$T/db"
	flag=
	[ $mode = no-detect ] && flag=--no-detect
	"$B/vitalsd" --listen "$EP" --db "$T/db" --quiet $flag >/dev/null 2>"$T/vitalsd.log" &
	VPID=$!
	sleep 0.3
	rate=$(VITALS_ENDPOINT=$EP "$B/bench/bench_peers" emit 4 200000 1700000000000)
	kill -TERM $VPID
	wait $VPID
	awk -v m=$mode -v r="$rate" \
		-v z="$(sed -n 's/.*= \([0-9.]*\) M samples.*/\1/p' "$T/zmq.out")" \
		'BEGIN { split(r, f, " "); printf "end to end (vitalsd %s), 4 emitters: %s = %.0f%% of the zeromq ceiling\n", m, r, 100 * f[1] / z }'
done

echo
echo "== vitalsd --http: a /metrics scrape of 100,000 series while batches are published"
"$B/bench/bench_scrape"
echo "== wide runs: cost per sample against series per step (write path in-process, fsync per commit)"
"$B/bench/bench_wide" "$T/wide" 1000000
echo "== wide runs end to end: vitalsd's CPU and bytes per sample against series per step (vt_flush each step)"
"$B/bench/bench_wide_e2e" "$B/vitalsd" "$T/wide_e2e"

echo
echo "== rules: parse time per rule as the file grows (linear: flat per rule)"
"$B/bench/bench_rules"
echo
echo "== vitalsd --remote-write to a local VictoriaMetrics: ingest with and without, forwarding rate"
B=$B sh bench/remote_write.sh
