# Shared helpers of the integration tests (tests/it_*.sh): a fresh
# temporary folder, a collector on an ipc:// endpoint inside it, checks
# that count, and the closing "N passed, N failed" line.
set -u
BIN=${VITALS_BIN:-$(pwd)/build}
T=$(mktemp -d /tmp/vitals-it.XXXXXX)
DB=$T/db
EP=ipc://$T/collector.sock
export VITALS_ENDPOINT=$EP
# Samples an emitter could not deliver are spooled here, not in $HOME.
export VITALS_SPOOL_DIR=$T/spool
# ... and `vitals emit` keeps its emitters' state here (cli/emit_state.h).
export XDG_STATE_HOME=$T/state
PASSED=0
FAILED=0
VPID=
SERVERS=

cleanup() {
	[ -n "$VPID" ] && kill -9 "$VPID" 2>/dev/null
	stop_servers
	# Children first: a trainer's forked ranks outlive a killed parent.
	for j in $(jobs -p); do
		pkill -9 -P "$j" 2>/dev/null
		kill -9 "$j" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

ok() { PASSED=$((PASSED + 1)); echo "ok   $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1"; }
# check NAME COMMAND...: passes if the command succeeds.
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else fail "$name"; fi
}

# Start vitalsd on $DB and $EP; waits until the socket exists.
start_collector() {
	"$BIN/vitalsd" --listen "$EP" --db "$DB" "$@" >>"$T/vitalsd.log" 2>&1 &
	VPID=$!
	i=0
	while [ ! -S "$T/collector.sock" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

stop_collector() {
	[ -n "$VPID" ] || return 0
	kill -TERM "$VPID" 2>/dev/null
	wait "$VPID"
	rc=$?
	VPID=
	return $rc
}

kill_collector() {
	kill -9 "$VPID" 2>/dev/null
	wait "$VPID" 2>/dev/null
	VPID=
	rm -f "$T/collector.sock"
}

# Milliseconds since the epoch.
now_ms() { date +%s%3N; }

# spawn COMMAND...: a server of the test's own (prometheus, a receiver) in
# the background, killed by stop_servers or at exit; its pid in LAST.
spawn() {
	"$@" &
	SERVERS="$SERVERS $!"
	LAST=$!
}
stop_servers() {
	for p in $SERVERS; do kill -9 "$p" 2>/dev/null; done
	SERVERS=
}

# A TCP port free on loopback now.
free_port() {
	"${PY:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for SECONDS COMMAND...: until the command succeeds.
wait_for() {
	end=$(($(now_ms) + $1 * 1000))
	shift
	while :; do
		"$@" 2>/dev/null && return 0
		[ "$(now_ms)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

finish() {
	if [ "$FAILED" != 0 ]; then
		echo "--- vitalsd log"
		tail -n 30 "$T/vitalsd.log" 2>/dev/null
	fi
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
}
