#!/bin/sh
# make bench-peers: the same realistic samples into VictoriaMetrics (from
# Debian, loopback only) and into vitals, in the same run; both ingest
# rates and both sizes on disk.
#
# VictoriaMetrics takes its JSON line bulk import (/api/v1/import) and
# answers before its data is on disk; vitals is timed until every sample
# is acknowledged, which it does only after the LMDB commit.
#
# What the rates leave out, so that both sides are seen alike: the
# import file is made before VictoriaMetrics' clock starts (its client's
# cost, formatting JSON, is not timed), while vitals' clock runs the
# emitters (the client library: names, batches, sends), which share the
# machine's cores with vitalsd. So each server's own CPU per sample is
# printed too (VictoriaMetrics' until the import is answered, and with
# its flush and merge after), which the machine's load changes less than
# the rates. PEERS_RUNS runs each side that many times, alternating, and
# prints the medians.
#
# --wide (make bench-peers-wide): a wide run instead (3 runs), 8 ranks x 6,250
# per-layer series x 20 steps (1,000,000 samples in 50,000 series, the
# shape of issue 11's measurement); PEERS_RANKS, PEERS_STEPS and
# PEERS_METRICS (series per rank) change either shape.
B=${B:-build}
if [ "$1" = --wide ]; then
	RANKS=${PEERS_RANKS:-8}
	STEPS=${PEERS_STEPS:-20}
	METRICS=${PEERS_METRICS:-6250}
	RUNS=${PEERS_RUNS:-3}
else
	RANKS=${PEERS_RANKS:-4}
	STEPS=${PEERS_STEPS:-100000}
	METRICS=${PEERS_METRICS:-6}
	RUNS=${PEERS_RUNS:-1}
fi
for f in bench/bench_peers vitalsd vitals; do
	[ -x "$B/$f" ] || {
		echo "bench-peers: $B/$f is not built (make bench-peers builds it)" >&2
		exit 1
	}
done
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
echo "clocks: victoria-metrics' from sending the import file (made before, its JSON not timed) until the HTTP answer (before its data is on disk); vitals' from the emitters' first call until every sample is committed to LMDB and acknowledged (the emitters' work included, on the same cores as vitalsd)"

# One import into a fresh VictoriaMetrics: appends "rate cpu_answer
# cpu_all bytes count" to $T/vm.runs and prints the run's line.
run_vm() {
	rm -rf "$T/vm"
	victoria-metrics -storageDataPath "$T/vm" -httpListenAddr 127.0.0.1:$VMPORT \
		-retentionPeriod 100y >"$T/vm.log" 2>&1 &
	VMPID=$!
	i=0
	until curl -sf http://127.0.0.1:$VMPORT/health >/dev/null; do
		sleep 0.1; i=$((i + 1)); [ $i -gt 100 ] && { echo "victoria-metrics did not start"; cat "$T/vm.log"; exit 1; }
	done
	c0=$(proc_cpu $VMPID)
	t0=$(date +%s%N)
	curl -sf --data-binary @"$T/import.jsonl" http://127.0.0.1:$VMPORT/api/v1/import
	t1=$(date +%s%N)
	c1=$(proc_cpu $VMPID)
	curl -sf http://127.0.0.1:$VMPORT/internal/force_flush
	sleep 2
	curl -sf http://127.0.0.1:$VMPORT/internal/force_merge
	sleep 5
	count=$(curl -sf "http://127.0.0.1:$VMPORT/api/v1/query" --data-urlencode 'query=sum(count_over_time({run="peers"}[2d]))' | sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p')
	c2=$(proc_cpu $VMPID)
	vmbytes=$(du -sb "$T/vm/data" | cut -f1)
	kill $VMPID; wait $VMPID 2>/dev/null; VMPID=
	awk -v n=$N -v ns=$((t1 - t0)) -v b=$vmbytes -v c="$count" -v c0=$c0 -v c1=$c1 -v c2=$c2 'BEGIN {
		r = n / (ns / 1e9) / 1e6
		printf "victoria-metrics: %.2f M samples/s (import answered), %.2f bytes/sample on disk (%d bytes), %s samples queryable, CPU %.3f us/sample to answer (%.3f with the flush and merge after)\n", r, b / n, b, c, (c1 - c0) / n * 1e6, (c2 - c0) / n * 1e6
		printf "%f %f %f %d %s\n", r, (c1 - c0) / n * 1e6, (c2 - c0) / n * 1e6, b, c >> "'"$T/vm.runs"'" }'
}

# One run of the emitters into a fresh vitalsd: appends "rate cpu
# emitters_cpu bytes stored" to $T/vitals.runs and prints the run's lines.
run_vitals() {
	rm -rf "$T/vitals"
	EP=ipc://$T/collector.sock
	"$B/vitalsd" --listen "$EP" --db "$T/vitals" --quiet >"$T/alerts.jsonl" 2>"$T/vitalsd.log" &
	VPID=$!
	sleep 0.3
	c0=$(proc_cpu $VPID)
	rate=$(VITALS_ENDPOINT=$EP "$B/bench/bench_peers" emit $RANKS $STEPS $T0 $METRICS) || echo "vitals: not every sample acknowledged"
	# vitalsd's CPU (user + system) once detection caught up: the rate
	# is the wall time, which a shared machine stretches.
	sleep 1
	c1=$(proc_cpu $VPID)
	kill -TERM $VPID; wait $VPID; VPID=
	stored=$("$B/vitals" runs --db "$T/vitals" | awk -F, '$1 == "peers" { print $6 }')
	vbytes=$(du -sb "$T/vitals" | cut -f1)
	awk -v n=$N -v r="$rate" -v b=$vbytes -v c="$stored" -v cpu="$(echo "$c1 $c0" | awk '{ print $1 - $2 }')" 'BEGIN {
		split(r, f, " ");
		printf "vitals:           %.2f M samples/s (all committed and acknowledged), %.2f bytes/sample on disk (%d bytes, data.mdb + lock.mdb), %s samples stored, vitalsd CPU %.2f s (%.3f us/sample)\n", f[1], b / n, b, c, cpu, cpu / n * 1e6
		e = 0
		# The emitters share the machine with vitalsd: their own CPU,
		# as bench_peers printed it.
		if (match(r, /emitters. CPU [0-9.]+ s \([0-9.]+ us/)) {
			s = substr(r, RSTART + 9, RLENGTH - 9)
			printf "vitals emitters: %s/sample, every emitting thread)\n", s
			sub(/.*\(/, "", s); sub(/ us/, "", s); e = s
		}
		printf "%f %f %f %d %s\n", f[1], cpu / n * 1e6, e, b, c >> "'"$T/vitals.runs"'" }'
}

# CPU (user + system) of a process so far, in s.
proc_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' /proc/$1/stat
}

# The median of column $2 of file $1.
median() {
	awk -v k=$2 '{ print $k }' "$1" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Each side PEERS_RUNS times, alternating (3 for --wide, whose 1,000,000
# samples take about a second: one run on a shared machine says little),
# then the medians and their ratio.
for r in $(seq $RUNS); do
	[ $RUNS -gt 1 ] && echo "-- run $r of $RUNS"
	run_vm
	run_vitals
done
if [ $RUNS -gt 1 ]; then
	awk -v vr="$(median "$T/vm.runs" 1)" -v vc="$(median "$T/vm.runs" 2)" \
		-v va="$(median "$T/vm.runs" 3)" -v ir="$(median "$T/vitals.runs" 1)" \
		-v ic="$(median "$T/vitals.runs" 2)" -v ie="$(median "$T/vitals.runs" 3)" -v n=$RUNS 'BEGIN {
		printf "medians of %d runs: victoria-metrics %.2f M samples/s, CPU %.3f us/sample to answer (%.3f in all); vitals %.2f M samples/s (%.2fx), vitalsd CPU %.3f us/sample, emitters %.3f us/sample\n", n, vr, vc, va, ir, ir / vr, ic, ie }'
fi
