# vitals top as a user meets it: driven in tmux (send-keys, capture-pane)
# against vitalsd receiving a live simulated run.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
	echo "skipped: tmux is not installed"
	echo "0 passed, 0 failed"
	exit 0
fi

# A private tmux server, so that a user's own sessions are never touched.
tm() { tmux -S "$T/tmux.sock" "$@"; }
# The trainer forks one process per rank: stop them by their ids too.
stop_trainer() {
	[ -n "${TPID:-}" ] || return 0
	kill $(pgrep -P "$TPID") "$TPID" 2>/dev/null
	wait "$TPID" 2>/dev/null
	TPID=
}
trap 'tm kill-server 2>/dev/null; stop_trainer; cleanup' EXIT
screen() { tm capture-pane -p -t "$1"; }

# wait_for SESSION SECONDS EXTENDED-REGEX: polls the pane every 0.1 s.
wait_for() {
	end=$(($(now_ms) + $2 * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		screen "$1" | grep -Eq -- "$3" && return 0
		sleep 0.1
	done
	echo "--- $1: no /$3/ within $2 s; the pane shows:"
	screen "$1"
	return 1
}

# run_top SESSION COLS ROWS ARGS...: vitals top in a shell that records the
# terminal modes before and after, and the exit status.
run_top() {
	s=$1 x=$2 y=$3
	shift 3
	tm new-session -d -s "$s" -x "$x" -y "$y" \
		"cd '$T'; export LANG=C.UTF-8; stty -g >$s.stty0;
		 '$BIN/vitals' top $*; echo \"vitals-exit=\$?\";
		 stty -g >$s.stty1; sleep 600"
}

# The terminal after vitals top ended: status as expected, the alternate
# screen left, every terminal mode as it was before.
restored() {
	s=$1 want=$2
	wait_for "$s" 10 "vitals-exit=$want" >/dev/null &&
		[ "$(tm display -p -t "$s" '#{alternate_on}')" = 0 ] &&
		cmp -s "$T/$s.stty0" "$T/$s.stty1" &&
		! screen "$s" | grep -q "vitals top"
}

start_collector

# --- Exact figures: a finished run with known values per rank. ---------
for r in 0 1 2; do
	for s in 1 2 3; do
		case $r in
		0) l=2.5 t=1000 ;;
		1) l=3.5 t=900 ;;
		2) l=3.0 t=1100 ;;
		esac
		"$BIN/vitals" emit --run fixed --rank $r --step $s loss=$l \
			tokens_per_sec=$t lr=0.001
	done
done
run_top fixed 120 40 --db "$DB" --run fixed
wait_for fixed 10 "tokens_per_sec" >/dev/null
screen fixed >"$T/fixed.txt"
cat "$T/fixed.txt"
check "overview: loss folded to median 3, min 2.5, max 3.5, worst rank 1" \
	grep -Eq '^ +loss +3 .* 2\.5 +3\.5 +r1 ' "$T/fixed.txt"
check "overview: for throughput the worst rank is the slowest (r1)" \
	grep -Eq '^ +tokens_per_sec +1000 .* 900 +1100 +r1 ' "$T/fixed.txt"
check "overview: header names the run, its step and 3 ranks" \
	sh -c "grep -q 'run fixed' '$T/fixed.txt' &&
	       grep -q 'step 3' '$T/fixed.txt' && grep -q 'ranks 3' '$T/fixed.txt'"
check "header: a run whose ranks all closed normally reads FINISHED" \
	grep -q 'FINISHED' "$T/fixed.txt"
tm send-keys -t fixed q
check "q: exits 0, alternate screen left, terminal modes restored" \
	restored fixed 0

# --- A live run: spike at 300, NaN at 600, rank 3 stalls at 900. --------
export VITALS_RUN=live
"$BIN/vt-simtrainer" --ranks 4 --steps 6000 --step-ms 20 \
	--spike-at 300 --nan-at 600 --stall-at 900 --stall-s 8 \
	>"$T/sim.log" 2>&1 &
TPID=$!
i=0
until "$BIN/vitals" runs --db "$DB" 2>/dev/null | grep -q '^live,'; do
	sleep 0.1
	i=$((i + 1))
	[ $i -gt 100 ] && break
done
run_top live 120 40 --db "$DB" --run live
check "overview: every metric of the trainer listed with a value" \
	wait_for live 10 '^ +!? ?tokens_per_sec +[0-9.]+M'
screen live >"$T/live.txt"
cat "$T/live.txt"
check "overview: loss, grad_norm, step_time, entropy and lr rows with numbers" \
	sh -c "for m in loss grad_norm step_time entropy lr; do
		grep -Eq \"^ +!? ?\$m +-?[0-9.]+(e-?[0-9]+)? \" '$T/live.txt' || exit 1
	done"
s1=$(screen live | sed -n 's/.*step \([0-9]*\) .*/\1/p' | head -n 1)
sleep 1.5
s2=$(screen live | sed -n 's/.*step \([0-9]*\) .*/\1/p' | head -n 1)
check "overview: the step in the header advances ($s1 -> $s2)" \
	[ "${s2:-0}" -gt "${s1:-0}" ]

# The NaN at step 600 (rank 0): on screen within 2 s of the trainer
# logging it (the sample's own time stamp).
shown=
end=$(($(now_ms) + 60000))
while [ "$(now_ms)" -lt "$end" ]; do
	if screen live | grep -q nonfinite; then
		shown=$(now_ms)
		break
	fi
	sleep 0.1
done
nan_ms=$("$BIN/vitals" query --db "$DB" --run live --metric loss --rank 0 \
	--steps 600:600 | awk -F, 'NR == 2 && $5 == "nan" { printf "%.0f", $1 * 1000 }')
if [ -n "$shown" ]; then
	screen live
	echo "NaN logged at $nan_ms ms, alert on screen at $shown ms: $((shown - nan_ms)) ms"
	within_2s() { [ -n "$nan_ms" ] && [ $((shown - nan_ms)) -le 2000 ]; }
	check "alert: the NaN shows on screen as an alert within 2 s" within_2s
elif [ -n "$nan_ms" ] && [ -z "$("$BIN/vitals" alerts --db "$DB" \
	--run live 2>/dev/null | tail -n +2)" ]; then
	echo "skipped: vitalsd raises no alerts yet"
else
	fail "alert: the NaN shows on screen as an alert within 2 s"
	screen live
fi

# Detail: filter to the loss, open its chart.
tm send-keys -t live / '^loss$' Enter
wait_for live 5 '^ +!? ?loss ' >/dev/null
tm send-keys -t live Enter
check "detail: a chart of the loss with labelled axes" \
	wait_for live 5 '^ loss  rank [0-9]+ \(4 ranks'
screen live >"$T/detail.txt"
cat "$T/detail.txt"
check "detail: value labels, step axis and step labels" \
	sh -c "grep -Eq '^ +[0-9.]+ [┤+]' '$T/detail.txt' &&
	       grep -Eq '^step +[0-9]' '$T/detail.txt'"
tm send-keys -t live l
check "detail: l switches to a log scale" wait_for live 5 '^ loss .* log '
tm send-keys -t live z
check "detail: z zooms to the last N steps" wait_for live 5 '\(last N\)'
rank_shown() { screen live | sed -n 's/^ loss  rank \([0-9]*\) .*/\1/p'; }
r1=$(rank_shown)
if [ "$r1" = 3 ]; then tm send-keys -t live Left; else tm send-keys -t live Right; fi
moved() { sleep 0.7; [ -n "$r1" ] && [ -n "$(rank_shown)" ] && [ "$(rank_shown)" != "$r1" ]; }
check "detail: left/right arrows move to another rank (from rank $r1)" moved

# Ranks: of step_time, while rank 3 stalls (step 900, 8 s).
tm send-keys -t live Escape Escape / '^step_time$' Enter
wait_for live 5 '^ +!? ?step_time ' >/dev/null
tm send-keys -t live 3
check "ranks: the step_time heat map lists ranks 0 to 3" \
	wait_for live 5 '^ +3 .* (ok|STALLED|restarted|alert) '
screen live >"$T/ranks.txt"
cat "$T/ranks.txt"
check "ranks: one row per rank" \
	sh -c "for r in 0 1 2 3; do grep -Eq \"^ +\$r .* (ok|STALLED|restarted|alert|NaN/inf) \" '$T/ranks.txt' || exit 1; done"
check "ranks: the stalled rank 3 is flagged STALLED" \
	wait_for live 60 '^ +3 .*STALLED'
screen live

# Alerts view.
tm send-keys -t live 4
if [ -n "$shown" ]; then
	check "alerts: the NaN is listed with its rule, step and rank" \
		wait_for live 5 'nonfinite +loss'
fi

# 80x24: everything still fits and reads.
tm send-keys -t live Escape Escape
tm resize-window -t live -x 80 -y 24
sleep 1
screen live >"$T/small.txt"
cat "$T/small.txt"
check "80x24: header, metric rows and key help fit in 80 columns" \
	sh -c "grep -q 'vitals top' '$T/small.txt' &&
	       grep -Eq '^ +!? ?loss +[0-9.]+ ' '$T/small.txt' &&
	       grep -q 'q quit' '$T/small.txt' &&
	       python3 -c \"import sys; sys.exit(max(len(l) for l in open('$T/small.txt', encoding='utf-8').read().split('\\n')) > 80)\" &&
	       [ \$(grep -c '' '$T/small.txt') = 24 ]"
tm send-keys -t live 2
check "80x24: the detail chart still draws" \
	wait_for live 5 '^step +[0-9]'
tm send-keys -t live q
check "q after resize: exits 0 and restores the terminal" restored live 0

# Signals: the terminal comes back after Ctrl-C and SIGTERM.
run_top sigint 100 30 --db "$DB" --run live
wait_for sigint 10 'vitals top' >/dev/null
tm send-keys -t sigint C-c
check "Ctrl-C: exit status 130, terminal restored" restored sigint 130
run_top sigterm 100 30 --db "$DB" --run live
wait_for sigterm 10 'vitals top' >/dev/null
pid=$(pgrep -P "$(tm display -p -t sigterm '#{pane_pid}')" -x vitals)
[ -n "$pid" ] && kill -TERM "$pid"
check "SIGTERM: exit status 143, terminal restored" restored sigterm 143

# No usable terminal: a clear error and a non-zero status.
tm new-session -d -s dumb -x 100 -y 30 \
	"TERM=dumb '$BIN/vitals' top --db '$DB'; echo \"vitals-exit=\$?\"; sleep 600"
check "TERM=dumb: a clear error, exit 1" \
	wait_for dumb 10 "TERM is 'dumb'"
check "TERM=dumb: exit status 1" wait_for dumb 5 "vitals-exit=1"
"$BIN/vitals" top --db "$DB" </dev/null >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "no terminal: exit 1, says it needs a terminal, writes nothing" \
	sh -c "[ $rc = 1 ] && grep -q 'needs a terminal' '$T/err' && [ ! -s '$T/out' ]"
"$BIN/vitals" top --db "$T/missing" 2>"$T/err"
rc=$?
cat "$T/err"
check "missing database: exit 1, named" \
	sh -c "[ $rc = 1 ] && grep -q '$T/missing' '$T/err'"

stop_trainer
check "collector stops cleanly on SIGTERM" stop_collector
finish
