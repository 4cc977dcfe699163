# The spool: a trainer that ends while vitalsd is away keeps its samples
# on disk and says so; `vitals spool send` delivers them exactly once;
# a full or unwritable spool folder is reported, never fatal.
. tests/lib.sh

export VITALS_SPOOL_DIR=$T/spool VITALS_CLOSE_TIMEOUT_MS=300
TR=$BIN/tests/trainer
q() { "$BIN/vitals" export --db "$DB" --run "$1" --format csv --all-samples; }

# No collector: each rank exits within its close timeout (plus the
# trainer's own 100 ms flush), and prints one line with its count.
t0=$(now_ms)
VITALS_RUN=spooled "$TR" emit --ranks 2 --steps 500 --metrics 4 --flush-ms 100 \
	>"$T/tr.out" 2>"$T/tr.err"
rc=$?
t1=$(now_ms)
cat "$T/tr.err"
echo "exit without a collector took $((t1 - t0)) ms"
check "no collector: the trainer ends on its own (status 3: not acknowledged)" [ $rc = 3 ]
# Each rank waits 100 ms (its flush) and 300 ms (the close timeout), in
# parallel, plus process start and exit: the bound only tells a bounded
# exit from a hang, on however loaded a machine.
check "no collector: exits on its own, without hanging (< 20 s)" [ $((t1 - t0)) -lt 20000 ]
check "one spool line per rank: 2000 samples, the endpoint, the file" \
	sh -c "[ \$(grep -c '^vitals: 2000 samples not acknowledged by $EP within the close timeout: spooled to $T/spool/[0-9a-f]*\\.vtspool' '$T/tr.err') = 2 ]"
check "two spool files, private" \
	sh -c "[ \$(ls '$T/spool' | grep -c '\\.vtspool\$') = 2 ] && [ \$(stat -c %a '$T/spool') = 700 ] &&
	       ! ls -l '$T/spool' | grep -q '^-...r'"
"$BIN/vitals" spool list >"$T/list.out" 2>&1
check "spool list names the run, rank and sample count" \
	sh -c "grep -q 'run spooled, rank 0, .*: 2000 samples' '$T/list.out' &&
	       grep -q 'run spooled, rank 1, .*: 2000 samples' '$T/list.out'"
mkdir "$T/copy" && cp "$T"/spool/*.vtspool "$T/copy/"

# The collector comes back: spool send stores every sample once.
start_collector
"$BIN/vitals" spool send >"$T/send.out" 2>&1
rc=$?
cat "$T/send.out"
check "spool send: exit 0, 2000 stored per file" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c ': 2000 stored, 0 already stored, 0 refused' '$T/send.out') = 2 ]"
check "spool send: the files are gone" sh -c "! ls '$T/spool' | grep -q vtspool"
q spooled >"$T/q1.csv"
check "every sample stored exactly once, bit-exact" \
	sh -c "'$TR' verify --ranks 2 --steps 500 --metrics 4 <'$T/q1.csv'"
"$BIN/vitals" emitters --db "$DB" --run spooled >"$T/em.csv"
check "the goodbye was spooled too: both ranks ended normally" \
	sh -c "[ \$(tail -n +2 '$T/em.csv' | grep -c ',[0-9][0-9.]*\$') = 2 ]"
"$BIN/vitals" spool send >"$T/send2.out" 2>&1
check "a second send has nothing to send" \
	sh -c "[ $? = 0 ] && grep -q 'nothing in $T/spool' '$T/send2.out'"
# The same files again (a send cut short after the collector stored
# them): acknowledged as already stored, nothing stored twice.
"$BIN/vitals" spool send "$T/copy" >"$T/send3.out" 2>&1
cat "$T/send3.out"
check "the same files sent again: 0 stored, 2000 already stored" \
	sh -c "[ \$(grep -c ': 0 stored, 2000 already stored' '$T/send3.out') = 2 ]"
q spooled >"$T/q2.csv"
check "still exactly once" cmp -s "$T/q1.csv" "$T/q2.csv"
stop_collector

# vitalsd away when spool send runs: the file stays for the next try.
VITALS_RUN=later "$TR" emit --ranks 1 --steps 10 --metrics 1 --flush-ms 50 >/dev/null 2>&1
"$BIN/vitals" spool send --timeout-ms 300 >"$T/send4.out" 2>&1
check "spool send without a collector: exit 1, file kept" \
	sh -c "[ $? = 1 ] && grep -q 'not acknowledged within 300 ms; kept' '$T/send4.out' &&
	       [ \$(ls '$T/spool' | grep -c vtspool) = 1 ]"
rm -f "$T"/spool/*.vtspool

# A full folder and an unwritable one: said so, the trainer unharmed.
VITALS_SPOOL_MAX=1K VITALS_RUN=full "$TR" emit --ranks 1 --steps 500 --metrics 4 --flush-ms 50 \
	>/dev/null 2>"$T/full.err"
rc=$?
cat "$T/full.err"
check "full spool folder: reported with the limit, nothing written, exit as usual" \
	sh -c "[ $rc = 3 ] && grep -q '^vitals: 2000 samples .* are lost: the spool folder $T/spool is full (.*VITALS_SPOOL_MAX 1024)' '$T/full.err' &&
	       ! ls '$T/spool' | grep -q vtspool"
touch "$T/afile"
VITALS_SPOOL_DIR=$T/afile/spool VITALS_RUN=nowhere "$TR" emit --ranks 1 --steps 10 --metrics 1 --flush-ms 50 \
	>/dev/null 2>"$T/unw.err"
rc=$?
cat "$T/unw.err"
check "unwritable spool folder: reported with the reason, exit as usual" \
	sh -c "[ $rc = 3 ] && grep -q '^vitals: 10 samples .* are lost: cannot create the spool folder $T/afile/spool: Not a directory' '$T/unw.err'"
VITALS_SPOOL_DIR=off VITALS_RUN=off "$TR" emit --ranks 1 --steps 10 --metrics 1 --flush-ms 50 \
	>/dev/null 2>"$T/off.err"
check "VITALS_SPOOL_DIR=off: no file, one line saying so" \
	sh -c "grep -q 'are lost: spooling is off' '$T/off.err' && ! ls '$T/spool' | grep -q vtspool"

# With the collector there, nothing is spooled and nothing printed.
start_collector
VITALS_RUN=fine "$TR" emit --ranks 1 --steps 100 --metrics 2 --flush-ms 5000 >/dev/null 2>"$T/fine.err"
check "collector up: exit 0, no spool line, no file" \
	sh -c "[ $? = 0 ] && [ ! -s '$T/fine.err' ] && ! ls '$T/spool' | grep -q vtspool"
stop_collector

# A spool sent after the run went on (the job restarted while vitalsd
# was away; `vitals spool send` ran later): its samples are older and at
# lower steps than those stored since. Stored; no restart alert, and
# vitalsd counts them as late when it stops.
VITALS_RUN=went_on "$TR" emit --ranks 2 --steps 300 --metrics 3 --step-us 1000 --flush-ms 50 \
	>/dev/null 2>/dev/null
start_collector
VITALS_RUN=went_on "$TR" emit --ranks 2 --steps 300 --first-step 300 --metrics 3 --step-us 1000 \
	--flush-ms 50 >/dev/null 2>&1
"$BIN/vitals" spool send >"$T/send5.out" 2>&1
check "late spool: stored" sh -c "[ \$(grep -c ': 900 stored, 0 already stored' '$T/send5.out') = 2 ]"
stop_collector
q went_on >"$T/went_on.csv"
check "late spool: both attempts' samples there (3,600)" \
	sh -c "[ \$(tail -n +2 '$T/went_on.csv' | grep -vc ',vitals/end,') = 3600 ]"
"$BIN/vitals" alerts --db "$DB" --run went_on >"$T/went_on_alerts.csv" 2>&1
check "late spool: no restart alert (steps went back at earlier times)" \
	sh -c "! grep -q restart '$T/went_on_alerts.csv'"
check "late spool: vitalsd counted the 1,800 late samples" \
	grep -q 'detection: 1800 late samples' "$T/vitalsd.log"
finish
