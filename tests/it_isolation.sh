# Isolation and bounds (issue 15) with real processes: one client must not
# blind, starve or exhaust the collector for the others. A hostile client
# (tests/helpers/hostile.c) attacks while a healthy trainer runs; each
# section prints its figures (bound, peak RSS, what the healthy run saw).
. tests/lib.sh

# ONLY=N runs section N alone (while working on it).
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

# vitalsd on tcp://127.0.0.1:$PORT with a descriptor limit of $1 (soft
# and hard) and the options after it.
start_tcp() {
	lim=$1
	shift
	PORT=$((20000 + ($$ + ${SECTION:-0}) % 20000))
	EP=tcp://127.0.0.1:$PORT
	export VITALS_ENDPOINT=$EP
	(
		ulimit -n "$lim"
		exec "$BIN/vitalsd" --listen "$EP" --db "$DB" "$@"
	) >>"$T/vitalsd.log" 2>&1 &
	VPID=$!
	sleep 0.5
}

# The collector's peak RSS (VmHWM) in KiB.
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$VPID/status"; }

# A healthy trainer of run $1; prints how long it took.
healthy() {
	t0=$(now_ms)
	VITALS_RUN=$1 "$BIN/tests/trainer" emit --ranks 1 --metrics 5 \
		--steps 2000 --step-us 500 --flush-ms 20000 >"$T/healthy.$1"
	rc=$?
	echo "healthy run $1: $(cat "$T/healthy.$1"), $(($(now_ms) - t0)) ms"
	return $rc
}

# ---------------------------------------------------------------------
# 1. 1,100 connections that handshake and stay silent, from one address,
# against a collector with 1,024 descriptors.
if want 1; then
SECTION=1
start_tcp 1024 --no-detect
"$BIN/tests/hostile" idle "tcp://127.0.0.2:0;127.0.0.1:$PORT" 1100 12 \
	>"$T/idle.out" &
HOST=$!
sleep 4
fds=$(ls "/proc/$VPID/fd" | wc -l)
echo "figures: idle: vitalsd holds $fds descriptors under 1,100 idle" \
	"connections"
healthy idle1
check "idle x1100: healthy trainer acknowledged meanwhile" [ $? = 0 ]
check "idle x1100: collector below its descriptor limit" [ "$fds" -lt 1000 ]
check "idle x1100: collector still running" kill -0 "$VPID"
wait $HOST
cat "$T/idle.out"
check "idle x1100: refusals logged with the address" \
	grep -q "refused a connection from 127.0.0.2" "$T/vitalsd.log"
echo "figures: idle: peak RSS (VmHWM) $(($(hwm_kb) / 1024)) MiB"
check "idle x1100: collector stops cleanly" stop_collector
grep "vitalsd: connections:" "$T/vitalsd.log" | tail -n 1
check "idle x1100: per-peer refusals counted" \
	sh -c "grep 'vitalsd: connections:' \"\$1\" | tail -n 1 |
		grep -vq ' 0 past --max-connections-per-peer'" - "$T/vitalsd.log"
EP=ipc://$T/collector.sock
export VITALS_ENDPOINT=$EP
fi

# ---------------------------------------------------------------------
# 2. Connections silent past --idle-timeout-ms are closed; an emitter that
# keeps sending is not.
if want 2; then
SECTION=2
: >"$T/vitalsd.log"
start_collector --no-detect --idle-timeout-ms 1000
"$BIN/tests/hostile" idle "$EP" 5 4 >"$T/idle.out"
cat "$T/idle.out"
healthy idle2
check "idle timeout: healthy trainer acknowledged" [ $? = 0 ]
check "idle timeout: silent connections closed and logged" \
	grep -q "no message for 1000 ms" "$T/vitalsd.log"
check "idle timeout: collector stops cleanly" stop_collector
grep "vitalsd: connections:" "$T/vitalsd.log" | tail -n 1
fi

finish
