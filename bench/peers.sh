#!/bin/sh
# make bench-peers: the same realistic samples into VictoriaMetrics (from
# Debian, loopback only) and into vitals, in the same run; both ingest
# rates and both sizes on disk.
#
# VictoriaMetrics takes its JSON line bulk import (/api/v1/import) and
# answers before its data is on disk; vitals is timed until every sample
# is acknowledged, which it does only after the LMDB commit.
#
# --wide (make bench-peers-wide): a wide run instead, 8 ranks x 6,250
# per-layer series x 20 steps (1,000,000 samples in 50,000 series, the
# shape of issue 11's measurement); PEERS_RANKS, PEERS_STEPS and
# PEERS_METRICS (series per rank) change either shape.
B=${B:-build}
if [ "$1" = --wide ]; then
	RANKS=${PEERS_RANKS:-8}
	STEPS=${PEERS_STEPS:-20}
	METRICS=${PEERS_METRICS:-6250}
else
	RANKS=${PEERS_RANKS:-4}
	STEPS=${PEERS_STEPS:-100000}
	METRICS=${PEERS_METRICS:-6}
fi
T=$(mktemp -d /tmp/vitals-peers.XXXXXX)
trap 'kill $VMPID $VPID 2>/dev/null; rm -rf "$T"' EXIT

if [ "$(id -u)" = 0 ]; then
	for p in victoria-metrics curl; do
		dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q $p >/dev/null
	done
fi
command -v victoria-metrics >/dev/null || {
	echo "bench-peers: victoria-metrics is not installed (apt-get install victoria-metrics)"
	exit 1
}

# A port nothing answers on: other benchmarks (remote_write.sh, another
# checkout's peers.sh) may run a VictoriaMetrics of their own meanwhile,
# and importing into theirs would measure theirs.
VMPORT=${PEERS_VM_PORT:-$((18428 + $$ % 500))}
while curl -s -o /dev/null --max-time 1 http://127.0.0.1:$VMPORT/; do
	VMPORT=$((VMPORT + 1))
done

N=$((RANKS * STEPS * METRICS))
# Times end a minute ago: VictoriaMetrics keeps only its retention period,
# and its queries leave out the last 30 s (-search.latencyOffset).
T0=$(( $(date +%s%3N) - STEPS * 505 - 60000 ))
"$B/bench/bench_peers" vm $RANKS $STEPS $T0 $METRICS >"$T/import.jsonl"
echo "samples: $N ($RANKS ranks x $METRICS metrics x $STEPS steps), import file $(du -h "$T/import.jsonl" | cut -f1)"

victoria-metrics -storageDataPath "$T/vm" -httpListenAddr 127.0.0.1:$VMPORT \
	-retentionPeriod 100y >"$T/vm.log" 2>&1 &
VMPID=$!
i=0
until curl -sf http://127.0.0.1:$VMPORT/health >/dev/null; do
	sleep 0.1; i=$((i + 1)); [ $i -gt 100 ] && { echo "victoria-metrics did not start"; cat "$T/vm.log"; exit 1; }
done
t0=$(date +%s%N)
curl -sf --data-binary @"$T/import.jsonl" http://127.0.0.1:$VMPORT/api/v1/import
t1=$(date +%s%N)
curl -sf http://127.0.0.1:$VMPORT/internal/force_flush
sleep 2
curl -sf http://127.0.0.1:$VMPORT/internal/force_merge
sleep 5
count=$(curl -sf "http://127.0.0.1:$VMPORT/api/v1/query" --data-urlencode 'query=sum(count_over_time({run="peers"}[2d]))' | sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p')
vmbytes=$(du -sb "$T/vm/data" | cut -f1)
kill $VMPID; wait $VMPID 2>/dev/null; VMPID=
awk -v n=$N -v ns=$((t1 - t0)) -v b=$vmbytes -v c="$count" 'BEGIN {
	printf "victoria-metrics: %.2f M samples/s (import answered), %.2f bytes/sample on disk (%d bytes), %s samples queryable\n", n / (ns / 1e9) / 1e6, b / n, b, c }'

EP=ipc://$T/collector.sock
"$B/vitalsd" --listen "$EP" --db "$T/vitals" --quiet >"$T/alerts.jsonl" 2>"$T/vitalsd.log" &
VPID=$!
sleep 0.3
rate=$(VITALS_ENDPOINT=$EP "$B/bench/bench_peers" emit $RANKS $STEPS $T0 $METRICS) || echo "vitals: not every sample acknowledged"
# vitalsd's CPU (user + system) once detection caught up: the rate is
# the wall time, which a shared machine stretches.
sleep 1
vcpu=$(awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' /proc/$VPID/stat)
kill -TERM $VPID; wait $VPID; VPID=
stored=$("$B/vitals" runs --db "$T/vitals" | awk -F, '$1 == "peers" { print $6 }')
vbytes=$(du -sb "$T/vitals" | cut -f1)
awk -v n=$N -v r="$rate" -v b=$vbytes -v c="$stored" -v cpu="$vcpu" 'BEGIN {
	split(r, f, " ");
	printf "vitals:           %.2f M samples/s (all committed and acknowledged), %.2f bytes/sample on disk (%d bytes, data.mdb + lock.mdb), %s samples stored, vitalsd CPU %.2f s (%.2f us/sample)\n", f[1], b / n, b, c, cpu, cpu / n * 1e6
	# The emitters share the machine with vitalsd: their own CPU, as
	# bench_peers printed it.
	if (match(r, /emitters. CPU [0-9.]+ s \([0-9.]+ us/))
		printf "vitals emitters: %s/sample, every emitting thread)\n", substr(r, RSTART + 9, RLENGTH - 9) }'
