#!/bin/sh
# make fuzz: each target for FUZZ_SECONDS under ASan + UBSan, starting
# from the seed corpus in fuzz/corpus/<target> (new inputs go to a work
# folder, not into the tree). A crash leaves its input in
# $FZ/crashes/<target>/: copy it to fuzz/regress/<target>/ with the fix,
# so `make test` replays it forever.
FZ=${FZ:-build-fuzz}
S=${FUZZ_SECONDS:-60}
status=0
for t in "$@"; do
	mkdir -p "$FZ/work/$t" "$FZ/crashes/$t"
	echo "== fuzz_$t for ${S}s"
	"$FZ/fuzz_$t" -max_total_time="$S" -print_final_stats=1 \
		-artifact_prefix="$FZ/crashes/$t/" "$FZ/work/$t" "fuzz/corpus/$t" \
		2>"$FZ/$t.log"
	rc=$?
	grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$FZ/$t.log"
	if [ $rc != 0 ]; then
		echo "fuzz_$t: FOUND A CRASH (see $FZ/$t.log, input in $FZ/crashes/$t/)"
		tail -n 30 "$FZ/$t.log"
		status=1
	fi
done
exit $status
