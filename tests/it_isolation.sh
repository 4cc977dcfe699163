# Isolation and bounds (issue 15) with real processes: one client must not
# blind, starve or exhaust the collector for the others. A hostile client
# (tests/helpers/hostile.c) attacks while a healthy trainer runs; each
# section prints its figures (bound, peak RSS, what the healthy run saw).
. tests/lib.sh

# ONLY=N runs section N alone (while working on it).
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

# vitalsd on tcp://127.0.0.1:$PORT with a descriptor limit of $1 (soft
# and hard) and the options after it.
# A port another process holds makes vitalsd exit at once: the next
# port is tried then (up to 10).
start_tcp() {
	lim=$1
	shift
	PORT=$((20000 + ($$ + ${SECTION:-0}) % 20000))
	tries=0
	while :; do
		EP=tcp://127.0.0.1:$PORT
		export VITALS_ENDPOINT=$EP
		(
			ulimit -n "$lim"
			exec "$BIN/vitalsd" --listen "$EP" --db "$DB" "$@"
		) >>"$T/vitalsd.log" 2>&1 &
		VPID=$!
		sleep 0.5
		tries=$((tries + 1))
		kill -0 "$VPID" 2>/dev/null && break
		[ $tries -ge 10 ] && break
		echo "vitalsd could not start on port $PORT; trying the next"
		PORT=$((PORT + 1))
	done
}

# The collector's peak RSS (VmHWM) in KiB.
hwm_kb() {
	h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$VPID/status" 2>/dev/null)
	echo "${h:-0}"
}

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

# ---------------------------------------------------------------------
# 3. One client sends 16 MiB batches of 65,535 names and no sample in a
# loop, with detection on. docs/limits.md: RSS <= B + P + Q + 2 M + what
# ZeroMQ queues, at most what the flood sent: 256 MiB (caches at their
# defaults) + 64 MiB pending + 64 MiB detection queue + (sent + 2) x 16.
if want 3; then
SECTION=3
start_collector --max-connections 8 --max-pending-mib 64 \
	--detect-queue-mib 64
"$BIN/tests/hostile" flood "$EP" 10 >"$T/flood.out" &
HOST=$!
sleep 2
healthy flood1
check "names flood: healthy trainer acknowledged meanwhile" [ $? = 0 ]
wait $HOST
cat "$T/flood.out"
sent=$(awk '{ print $3 }' "$T/flood.out")
bound_mib=$((256 + 64 + 64 + (${sent:-0} + 2) * 16))
peak=$(($(hwm_kb) / 1024))
echo "figures: names flood: vitalsd peak RSS (VmHWM) $peak MiB," \
	"bound $bound_mib MiB"
check "names flood: peak RSS under the documented bound" \
	[ "$peak" -gt 0 -a "$peak" -lt "$bound_mib" ]
check "names flood: collector still running" kill -0 "$VPID"
check "names flood: collector stops cleanly" stop_collector
"$BIN/vitals" runs --db "$DB" --format jsonl | grep '"run":"flood"'
check "names flood: names without samples created no series" \
	sh -c "\"\$1\" runs --db \"\$2\" --format jsonl | grep '\"run\":\"flood\"' |
		grep -q '\"samples\":0,\"series\":0,'" - "$BIN/vitals" "$DB"
fi

# ---------------------------------------------------------------------
# 4. An alert storm: 200 NaN alerts at once, each paging through a hook
# that takes a second. Every page is run, or counted and stored.
if want 4; then
SECTION=4
: >"$T/pages"
cat >"$T/rules" <<RULES
rule page_nan {
	metric   = '^m'
	detector = nonfinite
	severity = critical
	exec     = ["sh", "-c", "sleep 1; cat >> $T/pages"]
	timeout  = 10s
}
RULES
start_collector --rules "$T/rules"
# 200 runs, since the NaN alerts of one run are one incident (one page).
# Each call waits up to 5 minutes for its ack (it returns at the ack): 200
# processes at once on a loaded 2-core machine took more than 60 s.
: >"$T/emit.fail"
i=0
pids=
while [ $i -lt 200 ]; do
	{ "$BIN/vitals" emit --timeout-ms 300000 --run "storm$i" --step 1 m=nan ||
		echo "$i" >>"$T/emit.fail"; } &
	pids="$pids $!"
	i=$((i + 1))
done
# shellcheck disable=SC2086
wait $pids
check "storm: 200 NaN samples stored" [ ! -s "$T/emit.fail" ]
# 16 at once, a second each: wait until no page has been run for 3 s
# (the queues are empty), at most 60 s.
i=0
last=-1
still=0
while [ $i -lt 600 ] && [ $still -lt 30 ]; do
	ran=$(wc -l <"$T/pages")
	if [ "$ran" = "$last" ]; then
		still=$((still + 1))
	else
		still=0
		last=$ran
	fi
	sleep 0.1
	i=$((i + 1))
done
ran=$(wc -l <"$T/pages")
check "storm: collector stops cleanly" stop_collector
dropped=$("$BIN/vitals" alerts --db "$DB" --format jsonl |
	grep -c '"rule":"hook_dropped"')
echo "figures: storm: 200 pages, $ran run, $dropped dropped and stored" \
	"as hook_dropped alerts"
grep "hook runs dropped in all" "$T/vitalsd.log"
check "storm: more pages run than hooks at once (queued ones ran)" \
	[ "$ran" -gt 16 ]
check "storm: every page run or counted" [ $((ran + dropped)) = 200 ]
# vitalsd writes the line only when something was dropped: on a machine
# fast enough to run all 200 pages, no line is the right count.
if [ "$dropped" = 0 ]; then
	check "storm: drops counted in the log (none, no line)" \
		sh -c '! grep -q "hook runs dropped in all" "$1"' - "$T/vitalsd.log"
else
	check "storm: drops counted in the log" \
		grep -q "^vitalsd: $dropped hook runs dropped in all" "$T/vitalsd.log"
fi
fi

# ---------------------------------------------------------------------
# 5. vitals tail: a file truncated and rewritten past its old size within
# one poll is read again from its start (the size alone cannot tell).
if want 5; then
SECTION=5
start_collector --no-detect
line() {
	echo "step:$1/9999 train_loss:5.$1 train_time:$(($1 * 100))ms step_avg:100.00ms"
}
for s in $(seq 1 500); do line "$s"; done >"$T/train.log"
for s in $(seq 1001 2000); do line "$s"; done >"$T/new.log"
"$BIN/vitals" tail --preset nanogpt --run rewrite "$T/train.log" \
	>/dev/null 2>"$T/tail.err" &
TPID=$!
count() {
	"$BIN/vitals" query --db "$DB" --run rewrite --metric loss 2>/dev/null |
		tail -n +2 | grep -c ''
}
i=0
while [ "$(count)" -lt 500 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
# Truncate and write 1,000 longer lines at once: well within one poll.
cat "$T/new.log" >"$T/train.log"
i=0
while [ "$(count)" -lt 1500 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
n=$(count)
kill -TERM $TPID
wait $TPID
echo "tail: $n of 1500 lines stored after the rewrite"
check "tail: rewritten file read from its start, no line lost" [ "$n" = 1500 ]
check "tail: collector stops cleanly" stop_collector
fi

# ---------------------------------------------------------------------
# 6. Small ones: a port out of range is refused; times before the epoch
# print with their sign (-1 ms is -0.001000000, not -1.999000000).
if want 6; then
SECTION=6
"$BIN/vitalsd" --listen tcp://127.0.0.1:99999 --db "$DB" 2>"$T/err" &
LP=$!
sleep 1
if kill -0 $LP 2>/dev/null; then
	kill $LP
	wait $LP
	rc=running
else
	wait $LP
	rc=$?
fi
cat "$T/err"
check "listen: port 99999 refused with exit status 2" [ "$rc" = 2 ]
check "listen: the message names the port" grep -q "'99999'" "$T/err"
start_collector --no-detect
"$BIN/tests/hostile" sample "$EP" epoch -1000000
check "time -1 ms: stored" [ $? = 0 ]
"$BIN/vitals" query --db "$DB" --run epoch --metric t >"$T/q.csv"
cat "$T/q.csv"
check "time -1 ms: printed as -0.001000000" \
	grep -q -- "^-0.001000000," "$T/q.csv"
check "small ones: collector stops cleanly" stop_collector
fi

# ---------------------------------------------------------------------
# 7. vitals replay: a 256 MiB line is refused where it starts, without
# holding it; a step past 2^64-1 is refused at its column, not clamped.
if want 7; then
SECTION=7
{
	echo '{"run":"r","metric":"loss","step":1,"time":1,"value":1}'
	printf '{"run":"'
	head -c 268435456 /dev/zero | tr '\0' x
	echo '"}'
} >"$T/long.jsonl"
/usr/bin/time -f "%M" -o "$T/rss" "$BIN/vitals" replay "$T/long.jsonl" \
	>/dev/null 2>"$T/err"
rc=$?
cat "$T/err"
rss=$(tail -n 1 "$T/rss")
echo "figures: replay of a 256 MiB line: peak RSS $((rss / 1024)) MiB"
check "replay: long line refused at its line, exit 1" \
	sh -c "[ $rc = 1 ] && grep -q 'long.jsonl:2: expected a line of at most 1 MiB' '$T/err'"
check "replay: the long line was not held (peak RSS < 64 MiB)" \
	[ "$rss" -lt 65536 ]
printf '{"run":"r","metric":"loss","step":99999999999999999999999,"time":1,"value":1}\n' \
	>"$T/big.jsonl"
"$BIN/vitals" replay "$T/big.jsonl" >/dev/null 2>"$T/err"
rc=$?
cat "$T/err"
check "replay: step past 2^64-1 refused at file:line:col" \
	sh -c "[ $rc = 1 ] && grep -q 'big.jsonl:1:35: expected \"step\" from 0' '$T/err'"
printf '{"run":"r","metric":"loss","step":18446744073709551615,"time":1,"value":1}\n' \
	>"$T/max.jsonl"
"$BIN/vitals" replay "$T/max.jsonl" >/dev/null
check "replay: step 2^64-1 itself is taken" [ $? = 0 ]
fi

# ---------------------------------------------------------------------
# 8. One run creates 10,000 series (detection keeps at most 3,000 in all)
# while a healthy trainer runs; then another run sends a NaN. The noisy
# run stops at its budget of 1,000 series with one detect_budget alert;
# the victim still gets its alert. (Without the budget the noisy run took
# all 3,000 and the NaN raised nothing: issue 15, item 1.)
if want 8; then
SECTION=8
: >"$T/vitalsd.log"
cat >"$T/rules8" <<RULES
max_series = 3000
rule nan { metric = '.*' detector = nonfinite severity = critical }
RULES
start_collector --rules "$T/rules8" --detect-max-series-per-run 1000
"$BIN/tests/hostile" wide "$EP" noisy 10000 &
HOST=$!
healthy budget8
check "budget: healthy trainer acknowledged meanwhile" [ $? = 0 ]
wait $HOST
check "budget: the noisy run's 10,000 series stored" [ $? = 0 ]
"$BIN/vitals" emit --run victim --step 7 loss=nan
check "budget: the victim's NaN stored" [ $? = 0 ]
alerts() { "$BIN/vitals" alerts --db "$DB" --format jsonl; }
i=0
until alerts | grep '"run":"victim"' | grep -q '"rule":"nan"' ||
	[ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
peak=$(($(hwm_kb) / 1024))
check "budget: collector stops cleanly" stop_collector
alerts | grep '"run":"victim"' | cut -c1-160
check "budget: the victim run gets its NaN alert" \
	sh -c "\"\$1\" alerts --db \"\$2\" --format jsonl | grep '\"run\":\"victim\"' |
		grep -q '\"rule\":\"nan\",\"kind\":\"nonfinite\",\"severity\":\"critical\"'" \
	- "$BIN/vitals" "$DB"
nb=$(alerts | grep -c '"rule":"detect_budget"')
alerts | grep '"rule":"detect_budget"' | cut -c1-200
check "budget: one detect_budget alert, naming the noisy run" \
	sh -c "[ $nb = 1 ] && \"\$1\" alerts --db \"\$2\" --format jsonl |
		grep '\"rule\":\"detect_budget\"' | grep -q '\"run\":\"noisy\"'" \
	- "$BIN/vitals" "$DB"
grep "vitalsd: detection:" "$T/vitalsd.log"
check "budget: 9,000 samples of the noisy run not checked, counted" \
	grep -q "9000 samples of runs over their series budget" "$T/vitalsd.log"
# B + P + Q + 2 M (docs/limits.md); the batches here are about 2 MiB.
echo "figures: budget: vitalsd peak RSS (VmHWM) $peak MiB, bound 416 MiB"
check "budget: peak RSS under the documented bound" \
	[ "$peak" -gt 0 -a "$peak" -lt 416 ]
fi

# ---------------------------------------------------------------------
# 9. Run churn: 5,000 runs of one series each, one batch and one new
# emitter per run, with detection keeping at most 2,000 series. Series
# idle past --detect-series-idle-s are forgotten, least recently fed
# first, so a NaN of another run afterwards is still caught; the "new
# emitter" lines are rate-limited with a count.
if want 9; then
SECTION=9
: >"$T/vitalsd.log"
cat >"$T/rules9" <<RULES
max_series = 2000
rule nan { metric = '.*' detector = nonfinite severity = critical }
RULES
start_collector --rules "$T/rules9" --detect-series-idle-s 2
"$BIN/tests/hostile" churn "$EP" 5000 >"$T/churn.out" &
HOST=$!
healthy churn9
check "churn: healthy trainer acknowledged meanwhile" [ $? = 0 ]
wait $HOST
check "churn: 5,000 runs stored" [ $? = 0 ]
cat "$T/churn.out"
sleep 3 # the churned series are idle past 2 s now
"$BIN/vitals" emit --run victim --step 7 loss=nan
check "churn: the victim's NaN stored" [ $? = 0 ]
alerts() { "$BIN/vitals" alerts --db "$DB" --format jsonl; }
i=0
until alerts | grep '"run":"victim"' | grep -q '"rule":"nan"' ||
	[ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
peak=$(($(hwm_kb) / 1024))
check "churn: collector stops cleanly" stop_collector
check "churn: the victim run gets its NaN alert" \
	sh -c "\"\$1\" alerts --db \"\$2\" --format jsonl |
		grep '\"run\":\"victim\"' | grep -q '\"rule\":\"nan\"'" \
	- "$BIN/vitals" "$DB"
grep "vitalsd: detection:" "$T/vitalsd.log"
check "churn: idle series forgotten to make room, counted" \
	sh -c "grep 'vitalsd: detection:' \"\$1\" | grep -vq '^vitalsd: detection: 0 idle'" \
	- "$T/vitalsd.log"
lines=$(grep -c "new emitter run=churn" "$T/vitalsd.log")
grep "more new emitters not shown" "$T/vitalsd.log" | head -n 3
echo "figures: churn: $lines 'new emitter' lines for 5,001 emitters"
check "churn: 'new emitter' lines rate-limited" [ "$lines" -lt 200 ]
check "churn: the lines not written are counted" \
	grep -q "more new emitters not shown" "$T/vitalsd.log"
echo "figures: churn: vitalsd peak RSS (VmHWM) $peak MiB, bound 416 MiB"
check "churn: peak RSS under the documented bound" \
	[ "$peak" -gt 0 -a "$peak" -lt 416 ]
fi

# ---------------------------------------------------------------------
# 10. A batch whose name table holds 65,535 names and one sample: one
# series, not 65,535 (issue 15, item 3).
if want 10; then
SECTION=10
start_collector --no-detect
"$BIN/tests/hostile" names "$EP" phantom 65535
check "phantom names: the batch is stored" [ $? = 0 ]
"$BIN/vitals" runs --db "$DB" --format jsonl | grep '"run":"phantom"'
check "phantom names: one series, from the one sample" \
	sh -c "\"\$1\" runs --db \"\$2\" --format jsonl | grep '\"run\":\"phantom\"' |
		grep -q '\"samples\":1,\"series\":1,'" - "$BIN/vitals" "$DB"
n=$("$BIN/vitals" metrics --db "$DB" --run phantom | tail -n +2 | grep -c '')
check "phantom names: vitals metrics lists that one" [ "$n" = 1 ]
echo "figures: phantom names: vitalsd peak RSS (VmHWM) $(($(hwm_kb) / 1024)) MiB"
check "phantom names: collector stops cleanly" stop_collector
fi

# ---------------------------------------------------------------------
# 11. An emitter that logs a new name every step: past 65,535 names its
# samples are refused (VT_ETOOMANY), and 10 invalid names (VT_ENAME). The
# count travels in the batch headers and shows in vitals emitters and
# vitals runs (issue 15, item 6).
if want 11; then
SECTION=11
: >"$T/vitalsd.log"
start_collector --no-detect
"$BIN/tests/hostile" refuse refusing 70000 >"$T/refuse.out" &
HOST=$!
healthy refuse11
check "refusals: healthy trainer acknowledged meanwhile" [ $? = 0 ]
wait $HOST
check "refusals: the emitter closed, everything acknowledged" [ $? = 0 ]
cat "$T/refuse.out"
"$BIN/vitals" emitters --db "$DB" --run refusing --format jsonl | cut -c1-400
check "refusals: vitals emitters shows 4,475 refused" \
	sh -c "\"\$1\" emitters --db \"\$2\" --run refusing --format jsonl |
		grep -q '\"refused\":4475}'" - "$BIN/vitals" "$DB"
"$BIN/vitals" runs --db "$DB" | grep -e '^run,' -e '^refusing,'
check "refusals: vitals runs shows them for the run" \
	sh -c "\"\$1\" runs --db \"\$2\" | grep -q '^refusing,.*,4475\$'" \
	- "$BIN/vitals" "$DB"
check "refusals: the healthy run shows none" \
	sh -c "\"\$1\" runs --db \"\$2\" | grep -q '^refuse11,.*,0,0,true,0\$'" \
	- "$BIN/vitals" "$DB"
echo "figures: refusals: vitalsd peak RSS (VmHWM) $(($(hwm_kb) / 1024)) MiB"
check "refusals: collector stops cleanly" stop_collector
check "refusals: counted in vitalsd's last line" \
	grep -q "4475 refused by emitters" "$T/vitalsd.log"
fi

# ---------------------------------------------------------------------
# 12. Fairness in the detection queue: while detection waits (for its
# rules, read again from a FIFO on SIGHUP: it holds the FIFO open while
# it waits for the text), one client stores 50 batches, each a NaN of a
# run of its own; then another process stores a NaN. Detection takes the
# senders in turn, so the victim's alert is the second raised, not the
# 51st behind the backlog.
if want 12; then
SECTION=12
: >"$T/vitalsd.log"
cat >"$T/rules12.txt" <<RULES
rule nan { metric = '.*' detector = nonfinite severity = critical }
RULES
mkfifo "$T/rules12"
cat "$T/rules12.txt" >"$T/rules12" &
start_collector --rules "$T/rules12"
# SIGHUP before vitalsd handles it would end it.
i=0
until grep -q "listening on" "$T/vitalsd.log" || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
# Read and write: opening does not wait for a reader, closing is the
# end of the text.
exec 3<>"$T/rules12"
kill -HUP "$VPID"
waiting() { ls -l "/proc/$VPID/fd" 2>/dev/null | grep -q rules12; }
i=0
until waiting || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "fairness: detection waits for its rules" waiting
"$BIN/tests/hostile" churn "$EP" 50 nan >"$T/churn.out"
check "fairness: 50 batches of one client stored while detection waits" \
	[ $? = 0 ]
"$BIN/vitals" emit --run victim --step 7 loss=nan
check "fairness: the victim's NaN stored meanwhile" [ $? = 0 ]
cat "$T/rules12.txt" >&3
exec 3>&-
firing() { grep '"rule":"nan"' "$T/vitalsd.log" | grep '"state":"firing"'; }
i=0
until [ "$(firing | grep -c '')" -ge 51 ] || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
pos=$(firing | grep -n '"run":"victim"' | cut -d: -f1)
echo "figures: fairness: the victim's alert raised ${pos:-never} of" \
	"$(firing | grep -c '') (50 of the other client queued before it)"
echo "figures: fairness: vitalsd peak RSS (VmHWM) $(($(hwm_kb) / 1024)) MiB"
check "fairness: every NaN raised its alert" [ "$(firing | grep -c '')" = 51 ]
check "fairness: the victim's alert comes second, not behind the backlog" \
	[ "${pos:-99}" -le 2 ]
check "fairness: collector stops cleanly" stop_collector
fi

finish
