# vitals tail: log lines become stored samples, from a pipe, a command
# and a followed file (growing, rotated, truncated), with output passed
# through unchanged.
. tests/lib.sh

# query RUN METRIC [more options]: the rows without the header.
q() {
	run=$1 metric=$2
	shift 2
	"$BIN/vitals" query --db "$DB" --run "$run" --metric "$metric" "$@" |
		tail -n +2
}
# rows RUN METRIC [options]: "step,rank,value" of each row, on one line.
rows() {
	q "$@" | cut -d, -f2,3,5 | tr '\n' ' ' | sed 's/ $//'
}
# wait_rows N RUN METRIC: until N rows are stored (5 s at most).
wait_rows() {
	i=0
	while [ "$(q "$2" "$3" 2>/dev/null | grep -c '')" -lt "$1" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

start_collector

# A pipe: Megatron lines of two ranks (torchrun prefixes), other lines,
# a malformed number. Output is the input, byte for byte.
cat >"$T/mega.log" <<'EOF'
> building train, validation, and test datasets ...
[default0]: iteration        1/     100 | consumed samples:          512 | elapsed time per iteration (s): 1.25 | learning rate: 5.000E-05 | global batch size:   512 | lm loss: 7.500000E+00 | grad norm: 12.5 | number of skipped iterations:   0 |
[default1]: iteration        1/     100 | consumed samples:          512 | elapsed time per iteration (s): 1.26 | learning rate: 5.000E-05 | global batch size:   512 | lm loss: 7.510000E+00 | grad norm: 12.25 | number of skipped iterations:   0 |
[default0]: iteration        2/     100 | consumed samples:         1024 | elapsed time per iteration (s): 1.24 | learning rate: 5.279E-05 | global batch size:   512 | lm loss: 7.250000E+00 | grad norm: 1e-x | number of skipped iterations:   0 |
[default1]: iteration        2/     100 | consumed samples:         1024 | elapsed time per iteration (s): 1.27 | learning rate: 5.279E-05 | global batch size:   512 | lm loss: 7.260000E+00 | grad norm: 9.75 | number of skipped iterations:   0 |
EOF
"$BIN/vitals" tail --preset megatron --run pipe <"$T/mega.log" >"$T/pipe.out" 2>"$T/pipe.err"
check "pipe: exits 0" [ $? = 0 ]
check "pipe: output is the input unchanged" cmp -s "$T/mega.log" "$T/pipe.out"
check "pipe: loss of both ranks stored exactly" \
	[ "$(rows pipe loss --rank 0)|$(rows pipe loss --rank 1)" = "1,0,7.5 2,0,7.25|1,1,7.51 2,1,7.26" ]
check "pipe: lr in E notation, iteration time, batch size" \
	[ "$(rows pipe lr --rank 0)|$(rows pipe iteration_time_s --rank 1)|$(rows pipe global_batch_size --rank 0)" = \
	  "1,0,5e-05 2,0,5.279e-05|1,1,1.26 2,1,1.27|1,0,512 2,0,512" ]
check "pipe: a malformed number is skipped and counted" \
	[ "$(rows pipe grad_norm --rank 0)" = "1,0,12.5" ]
check "pipe: the summary counts lines, matches and malformed values" \
	grep -q '5 lines, 4 matched, 27 samples sent, 0 not sent, 1 malformed values' "$T/pipe.err"

# A command: stdout and stderr passed through, its exit status returned,
# lines from both scraped (torchtitan, with colours and separators).
"$BIN/vitals" tail --preset torchtitan --run cmd -- sh -c '
	printf "\033[31mstep:  1  \033[32mloss: 10.5  \033[34mtps: 1,234,567  \033[35mmfu: 25.94%%\033[39m\n"
	printf "step:  2  loss:  9.75  tps: 1,200,000\n" >&2
	printf "no newline at the end: step: 3  loss: 9.5"
	exit 7' >"$T/cmd.out" 2>"$T/cmd.err"
rc=$?
check "command: its exit status is ours" [ $rc = 7 ]
check "command: stdout passed through unchanged" \
	sh -c "printf '\033[31mstep:  1  \033[32mloss: 10.5  \033[34mtps: 1,234,567  \033[35mmfu: 25.94%%\033[39m\nno newline at the end: step: 3  loss: 9.5' | cmp -s - '$T/cmd.out'"
check "command: stderr passed through" grep -q '^step:  2  loss:  9.75' "$T/cmd.err"
check "command: samples from stdout and stderr, last line without newline" \
	[ "$(rows cmd loss)|$(rows cmd tps)|$(rows cmd mfu)" = \
	  "1,0,10.5 2,0,9.75 3,0,9.5|1,0,1234567 2,0,1200000|1,0,25.94" ]
"$BIN/vitals" tail --preset hf --run cmd -- /nonexistent/trainer 2>"$T/err"
check "command: one that cannot start gives 127" [ $? = 127 ]
# A batch system's SIGTERM to us reaches the command, which may clean up.
"$BIN/vitals" tail --preset hf --run cmd -- sh -c \
	'trap "echo cleaned up; exit 5" TERM; echo ready; while :; do sleep 0.05; done' \
	>"$T/sig.out" 2>/dev/null &
SPID=$!
i=0
while ! grep -q ready "$T/sig.out" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -TERM $SPID
wait $SPID
rc=$?
check "command: SIGTERM passed on; its status returned" \
	sh -c "[ $rc = 5 ] && grep -q 'cleaned up' '$T/sig.out'"

# Following a file: it does not exist yet, grows, is rotated (renamed and
# a new one made, with lines still appended to the old one first), and
# is truncated in place (copytruncate).
"$BIN/vitals" tail --preset nanogpt --run follow "$T/train.log" >"$T/follow.out" 2>"$T/follow.err" &
FPID=$!
i=0
while ! grep -q 'waiting for' "$T/follow.err" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
for s in 1 2 3; do
	echo "step:$s/100 train_loss:5.$s train_time:$((s * 100))ms step_avg:100.00ms" >>"$T/train.log"
done
wait_rows 3 follow loss
check "follow: waits for the file, then reads it as it grows" \
	[ "$(rows follow loss)" = "1,0,5.1 2,0,5.2 3,0,5.3" ]
check "follow: step time derived from train_time" \
	[ "$(rows follow step_time_ms)" = "2,0,100 3,0,100" ]
mv "$T/train.log" "$T/train.log.1"
echo "step:4/100 train_loss:5.4 train_time:400ms step_avg:100.00ms" >>"$T/train.log.1"
sleep 0.1
for s in 5 6; do
	echo "step:$s/100 train_loss:5.$s train_time:$((s * 100))ms step_avg:100.00ms" >>"$T/train.log"
done
wait_rows 6 follow loss
check "follow: rotation: the old file's last line and the new file read" \
	[ "$(rows follow loss | sed 's/,0,5\.[0-9]//g')" = "1 2 3 4 5 6" ]
sleep 0.3
: >"$T/train.log"
echo "step:7/100 train_loss:5.7 train_time:700ms step_avg:100.00ms" >>"$T/train.log"
wait_rows 7 follow loss
check "follow: truncation: read again from the start" \
	sh -c "'$BIN/vitals' query --db '$DB' --run follow --metric loss | grep -q ',7,0,loss,5.7,'"
check "follow: nothing read twice" [ "$(q follow loss | grep -c '')" = 7 ]
kill -TERM $FPID
wait $FPID
rc=$?
check "follow: SIGTERM ends it cleanly with a summary" \
	sh -c "[ $rc = 0 ] && grep -q 'waiting for' '$T/follow.err' && grep -q 'samples sent, 0 not sent' '$T/follow.err' && [ ! -s '$T/follow.out' ]"

# A custom pattern with a rank group.
printf 'epoch 1 it 10 rank 3 loss=0.5 acc=91.5%%\nepoch 1 it 11 rank 3 loss=0.4 acc=92%%\n' |
	"$BIN/vitals" tail --run custom \
	--pattern 'it (?<step>\d+) rank (?<rank>\d+) loss=(?<loss>\S+) acc=(?<acc>\S+)' >/dev/null 2>&1
check "pattern: named groups give step, rank and metrics" \
	[ "$(rows custom acc --rank 3)|$(rows custom loss --rank 3)" = "10,3,91.5 11,3,92|10,3,0.5 11,3,0.4" ]

# Usage errors.
"$BIN/vitals" tail --preset nope </dev/null 2>"$T/err"
check "bad preset: usage error naming the presets" \
	sh -c "[ $? = 2 ] && grep -q \"unknown preset 'nope'\" '$T/err'"
"$BIN/vitals" tail --pattern '(?<step>\d+' </dev/null 2>"$T/err"
check "bad pattern: usage error with the offset" \
	sh -c "[ $? = 2 ] && grep -q 'pattern: at offset' '$T/err'"
"$BIN/vitals" tail </dev/null 2>"$T/err"
check "no preset nor pattern: usage" [ $? = 2 ]

# Volume: 20,000 lines pass through unchanged and all are stored.
awk 'BEGIN { for (i = 1; i <= 20000; i++)
	printf "step %d: train loss %.6f (took %.3f ms)\n", i, 5 - i / 10000, 100 + i % 7 }' >"$T/big.log"
"$BIN/vitals" tail --preset llmc --run big <"$T/big.log" >"$T/big.out" 2>/dev/null
check "volume: 20000 lines unchanged" cmp -s "$T/big.log" "$T/big.out"
check "volume: 20000 samples of each metric stored" \
	[ "$(q big loss | grep -c '')|$(q big step_time_ms | grep -c '')" = "20000|20000" ]

stop_collector
finish
