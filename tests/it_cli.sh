# The vitals commands as a user meets them: emit from a shell, read back,
# and clear errors for bad input.
. tests/lib.sh

start_collector

check "emit: stored and acknowledged" \
	"$BIN/vitals" emit --run shell --step 10 loss=2.5 grad_norm=nan tps=inf
"$BIN/vitals" emit --run shell --step 11 loss=2.25 --rank 1
"$BIN/vitals" query --db "$DB" --run shell --metric loss >"$T/q.csv"
cat "$T/q.csv"
check "query: both ranks in order with their values" \
	sh -c "sed -n 2p '$T/q.csv' | grep -q '^[0-9.]*,10,0,loss,2.5,shell,' &&
	       sed -n 3p '$T/q.csv' | grep -q '^[0-9.]*,11,1,loss,2.25,shell,'"
"$BIN/vitals" query --db "$DB" --run shell --metric grad_norm --format jsonl >"$T/q.jsonl"
check "query jsonl: NaN written as Python's json does" \
	grep -q '"value":NaN}' "$T/q.jsonl"
"$BIN/vitals" metrics --db "$DB" --run shell >"$T/m.csv"
check "metrics: three series with latest values" \
	sh -c "grep -c '' '$T/m.csv' | grep -qx 5 && grep -q '^tps,0,1,10,10,.*,inf$' '$T/m.csv'"
check "query --steps selects a range" \
	sh -c "'$BIN/vitals' query --db '$DB' --run shell --metric loss --steps 11:11 | tail -n +2 | grep -c '' | grep -qx 1"

# Errors: exit codes and messages that say what is wrong.
"$BIN/vitals" emit --run shell --step 1 loss=abc 2>"$T/err"
check "emit: bad value is a usage error naming the argument" \
	sh -c "[ $? = 2 ] && grep -q \"argument 1 'loss=abc'\" '$T/err'"
"$BIN/vitals" query --db "$DB" --run nope --metric loss 2>"$T/err"
check "query: unknown run named" \
	sh -c "[ $? = 1 ] && grep -q \"no run 'nope'\" '$T/err'"
"$BIN/vitals" query --db "$DB" --run shell --metric nope 2>"$T/err"
check "query: unknown metric named" \
	sh -c "[ $? = 1 ] && grep -q \"no metric 'nope'\" '$T/err'"
"$BIN/vitals" runs --db "$T/missing" 2>"$T/err"
check "runs: missing database named" \
	sh -c "[ $? = 1 ] && grep -q 'no vitals database' '$T/err'"
"$BIN/vitals" query --db "$DB" --run shell --metric loss --steps 9:3 2>"$T/err"
check "query: reversed step range refused" [ $? = 2 ]
"$BIN/vitalsd" --listen "$EP" --db "$DB" --commit-ms x 2>"$T/err"
check "vitalsd: bad option value named" \
	sh -c "[ $? = 2 ] && grep -q 'commit-ms' '$T/err'"

stop_collector
# With no collector, emit gives up after its timeout and says so.
t0=$(now_ms)
"$BIN/vitals" emit --run shell --step 12 loss=2 --timeout-ms 500 2>"$T/err"
rc=$?
t1=$(now_ms)
check "emit without collector: fails within its timeout" \
	sh -c "[ $rc = 1 ] && [ $((t1 - t0)) -lt 2500 ] && grep -q 'not acknowledged' '$T/err'"
finish
