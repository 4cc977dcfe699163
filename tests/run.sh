#!/bin/sh
# Runs every test program ($B/tests/test_*) and integration script
# (tests/it_*.sh), each printing "N passed, N failed" as its last line, and
# prints the total the same way as the last line of all.
#
# SAN_B names a sanitizer build folder (make test-ci): its test programs
# and the integration scripts in SAN_SCRIPTS run again against it, and
# count in the same total.
B=${B:-build}
SAN_SCRIPTS=${SAN_SCRIPTS:-"it_e2e it_cli it_detect it_faults it_replay it_remote_write it_spool"}
passed=0
failed=0
# Emitters the tests close without a collector spool their samples
# (emitter/spool.h): into a folder of the run's own, not $HOME.
VITALS_SPOOL_DIR=$(mktemp -d /tmp/vitals-spool.XXXXXX)
export VITALS_SPOOL_DIR
trap 'rm -rf "$VITALS_SPOOL_DIR"' EXIT

# run_one FILE BUILD_DIR
run_one() {
	t=$1
	export B=$2
	export VITALS_BIN="$(pwd)/$2"
	echo "== $t ($2)"
	log=$(mktemp)
	if [ "${t%.sh}" != "$t" ]; then
		sh "$t" >"$log" 2>&1
	else
		"$t" >"$log" 2>&1
	fi
	rc=$?
	cat "$log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	rm -f "$log"
	if [ -n "$line" ]; then
		p=${line%% passed*}
		f=${line#*passed, }
		f=${f%% failed}
		passed=$((passed + p))
		failed=$((failed + f))
		if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
			echo "$t exited with status $rc"
			failed=$((failed + 1))
		fi
	else
		echo "$t ended (status $rc) without a summary line"
		failed=$((failed + 1))
	fi
}

for t in "$B"/tests/test_* tests/it_*.sh; do
	[ -e "$t" ] || continue
	case "$t" in *.o|*.d) continue ;; esac
	run_one "$t" "$B"
done
if [ -n "${SAN_B:-}" ]; then
	for t in "$SAN_B"/tests/test_*; do
		case "$t" in *.o|*.d) continue ;; esac
		run_one "$t" "$SAN_B"
	done
	for s in $SAN_SCRIPTS; do
		run_one "tests/$s.sh" "$SAN_B"
	done
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
