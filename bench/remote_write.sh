#!/bin/sh
# vitalsd --remote-write to a local VictoriaMetrics (make bench): ingest
# with and without forwarding, as a ratio in one run, and the forwarding
# rate of a backlog. Realistic samples (bench_peers emit: 4 ranks x 6
# metrics, one emitter thread per rank, from the first call until every
# sample is acknowledged), times ending now.
#
#	B=build sh bench/remote_write.sh
B=${B:-build}
RANKS=${RANKS:-4}
STEPS=${STEPS:-100000}
ROUNDS=${ROUNDS:-2}
T=$(mktemp -d /tmp/vitals-rw.XXXXXX)
VPID=
VMPID=
trap 'kill $VPID $VMPID 2>/dev/null; wait $VMPID 2>/dev/null; rm -rf "$T"' EXIT

command -v victoria-metrics >/dev/null || {
	echo "remote write: victoria-metrics is not installed (apt-get install victoria-metrics)"
	exit 0
}
VMPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
victoria-metrics -storageDataPath="$T/vm" -httpListenAddr="127.0.0.1:$VMPORT" \
	-retentionPeriod=100y -loggerLevel=ERROR >"$T/vm.log" 2>&1 &
VMPID=$!
i=0
until curl -sf "http://127.0.0.1:$VMPORT/health" >/dev/null; do
	sleep 0.1
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "remote write: victoria-metrics did not start"; exit 0; }
done
URL=http://127.0.0.1:$VMPORT/api/v1/write
EP=ipc://$T/collector.sock
N=$((RANKS * STEPS * 6))
T0=$(($(date +%s%3N) - STEPS * 505))

start() {
	db=$1
	shift
	"$B/vitalsd" --listen "$EP" --db "$db" --quiet --http 127.0.0.1:0 "$@" \
		>/dev/null 2>"$T/vitalsd.log" &
	VPID=$!
	i=0
	until grep -q 'listening on' "$T/vitalsd.log"; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 200 ] || break
	done
	PORT=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/vitalsd.log")
}
stop() {
	kill -TERM $VPID
	wait $VPID
	VPID=
}
# cpu PID [rw]: CPU ms of vitalsd's threads other than the forwarders
# (vt-rwrite), or of the forwarders only.
cpu() {
	t=0
	for d in /proc/$1/task/*; do
		n=$(cat "$d/comm" 2>/dev/null)
		c=$(awk '{ print $14 + $15 }' "$d/stat" 2>/dev/null)
		if [ "${2:-}" = rw ]; then [ "$n" = vt-rwrite ] || continue
		else [ "$n" = vt-rwrite ] && continue; fi
		t=$((t + ${c:-0}))
	done
	echo $((t * 10))
}
# wait_forwarded N TIMEOUT_MS: wait until vitalsd's /metrics counts N
# samples delivered; prints the wall clock (ms) when it saw it, or
# "timeout SAMPLES". One python3 polling every 20 ms on one connection:
# a curl and an awk per poll cost ~35 ms of CPU here, most of a core at
# that rate, taken from what is measured.
wait_forwarded() {
	python3 -c '
import http.client, sys, time
port, n, limit = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000
c, s, t0 = None, 0, time.time()
while time.time() - t0 < limit:
    try:
        if c is None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/metrics")
        for line in c.getresponse().read().decode().splitlines():
            if line.startswith("vitals_remote_write_samples_total"):
                s = int(float(line.split()[-1]))
                break
    except (OSError, http.client.HTTPException):
        c = None
    if s >= n:
        print(int(time.time() * 1000))
        sys.exit(0)
    time.sleep(0.02)
print("timeout", s)
' "$PORT" "$1" "$2"
}

# Ingest, alternating without and with --remote-write; the best of each.
best_plain=0
best_rw=0
for r in $(seq "$ROUNDS"); do
	for mode in plain rw; do
		rm -rf "$T/db"
		if [ $mode = plain ]; then
			start "$T/db"
		else
			start "$T/db" --remote-write "$URL?round=$r"
		fi
		rate=$(VITALS_ENDPOINT=$EP "$B/bench/bench_peers" emit $RANKS $STEPS $T0)
		echo "ingest $mode: $rate; vitalsd CPU: $(cpu $VPID) ms ingest, $(cpu $VPID rw) ms forwarding"
		m=${rate%% *}
		if [ $mode = rw ]; then
			# What the forwarder left for after the run: the time
			# it took to catch up, and its CPU over the whole run.
			t0=$(date +%s%3N)
			t1=$(wait_forwarded $N 120000)
			case $t1 in timeout*) echo "  forwarder: $t1 of $N after 120 s"; t1=$(date +%s%3N) ;; esac
			c=$(cpu $VPID rw)
			awk -v ms=$((t1 - t0)) -v c=$c -v n=$N 'BEGIN {
				printf "  forwarder: caught up %.2f s after the run ended; its CPU over the run %d ms (%.3f us per sample)\n", ms / 1000, c, c * 1000 / n }'
		fi
		if [ $mode = plain ]; then
			best_plain=$(awk -v a="$best_plain" -v b="$m" 'BEGIN { print (b > a ? b : a) }')
			rm -rf "$T/backlog"
		else
			best_rw=$(awk -v a="$best_rw" -v b="$m" 'BEGIN { print (b > a ? b : a) }')
		fi
		stop
		[ $mode = plain ] && cp -r "$T/db" "$T/backlog"
	done
done
awk -v a="$best_plain" -v b="$best_rw" 'BEGIN {
	printf "ingest with --remote-write = %.0f%% of ingest without it (%.3f vs %.3f M samples/s, best of each; target >= 90%%)\n", 100 * b / a, b, a }'

# Forwarding: a stored backlog of N samples, from vitalsd's start until
# every sample was delivered (VictoriaMetrics answered 2xx).
start "$T/backlog" --remote-write "$URL?backlog=1"
cpu_v0=$(awk '{ print $14 + $15 }' /proc/$VMPID/stat)
t0=$(date +%s%3N)
t1=$(wait_forwarded $N 120000)
case $t1 in timeout*) echo "forwarding: $t1 of $N after 120 s"; t1=$(date +%s%3N) ;; esac
cpu_d=$(cpu $VPID rw)
cpu_v=$(awk '{ print $14 + $15 }' /proc/$VMPID/stat)
stop
awk -v n=$N -v ms=$((t1 - t0)) 'BEGIN {
	printf "forwarding a backlog: %.2f M samples/s (%d samples in %.2f s, until VictoriaMetrics acknowledged all; target >= 1 M/s)\n", n / ms / 1000, n, ms / 1000 }'
awk -v n=$N -v d=$cpu_d -v v=$(((cpu_v - cpu_v0) * 10)) 'BEGIN {
	printf "  CPU meanwhile: the forwarder %d ms (%.2f M samples per CPU second), victoria-metrics %d ms\n", d, n / d / 1000, v }'

