#!/bin/sh
# Runs every test program (build/tests/test_*) and integration script
# (tests/it_*.sh), each printing "N passed, N failed" as its last line, and
# prints the total the same way as the last line of all.
B=${B:-build}
export B
export VITALS_BIN="$(pwd)/$B"
passed=0
failed=0
for t in "$B"/tests/test_* tests/it_*.sh; do
	[ -e "$t" ] || continue
	case "$t" in *.o|*.d) continue ;; esac
	echo "== $t"
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
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
