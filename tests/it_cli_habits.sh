# The vitals command line as one expects of a packaged tool: --help
# everywhere, --opt=value, one error for an unknown run, nothing on stdout
# when a command fails, and vitalsd touching nothing when it cannot listen.
. tests/lib.sh

# --help on vitals, every command and vitalsd: usage on stdout, exit 0.
for c in runs metrics emitters query export emit top alerts replay rules \
	tail keygen completion; do
	"$BIN/vitals" "$c" --help >"$T/out" 2>"$T/err"
	rc=$?
	check "vitals $c --help: usage on stdout, exit 0" \
		sh -c "[ $rc = 0 ] && grep -q '^usage: vitals $c' '$T/out' && [ ! -s '$T/err' ]"
done
"$BIN/vitals" emit -h >"$T/out" 2>&1
check "vitals emit -h: usage, exit 0" \
	sh -c "[ $? = 0 ] && grep -q '^usage: vitals emit' '$T/out'"
"$BIN/vitals" --help >"$T/out" 2>&1
check "vitals --help: every command listed" \
	sh -c "[ $? = 0 ] && grep -q '  completion' '$T/out' && grep -q '  emitters' '$T/out'"
"$BIN/vitalsd" --help >"$T/out" 2>&1
check "vitalsd --help: usage, exit 0" \
	sh -c "[ $? = 0 ] && grep -q '^usage: vitalsd' '$T/out'"
"$BIN/vitals" --version >"$T/out"
check "vitals --version names the library's version" \
	grep -Eq '^vitals [0-9]+\.[0-9]+\.[0-9]+ \(libvitals [0-9]+\.[0-9]+\.[0-9]+\)$' "$T/out"

# --opt=value and --opt value alike.
start_collector
check "emit --run=R --step=N" \
	"$BIN/vitals" emit --run=habits --step=5 loss=1.5 --timeout-ms=3000
"$BIN/vitals" emit --run habits --step 6 loss=1.25
"$BIN/vitals" query --db="$DB" --run=habits --metric=loss --format=jsonl >"$T/q"
check "query --db=D --run=R --metric=M --format=jsonl: both samples" \
	sh -c "grep -c '\"metric\":\"loss\"' '$T/q' | grep -qx 2"
"$BIN/vitals" query --db "$DB" --run habits --metric=loss --steps=6: >"$T/q"
check "query --steps=6: selects step 6" \
	sh -c "tail -n +2 '$T/q' | grep -c '' | grep -qx 1 && grep -q ',6,0,loss,1.25,' '$T/q'"
"$BIN/vitalsd" --db="$T/other" --commit-ms=x 2>"$T/err"
check "vitalsd --commit-ms=x: value checked" \
	sh -c "[ $? = 2 ] && grep -q 'commit-ms' '$T/err'"

# An unknown run: the same message and exit status everywhere, nothing on
# stdout, and the known runs listed.
"$BIN/vitals" query --db "$DB" --run nosuch --metric loss >"$T/query.out" 2>"$T/query.err"
echo $? >"$T/query.rc"
# metrics, alerts, emitters and export take no --metric: run them without.
for c in alerts emitters metrics export; do
	"$BIN/vitals" "$c" --db "$DB" --run nosuch >"$T/$c.out" 2>"$T/$c.err"
	echo $? >"$T/$c.rc"
done
for c in alerts emitters metrics query export; do
	check "$c --run nosuch: exit 1, nothing on stdout, known runs named" \
		sh -c "[ \$(cat '$T/$c.rc') = 1 ] && [ ! -s '$T/$c.out' ] &&
		       grep -q \"no run 'nosuch'\" '$T/$c.err' && grep -q 'known runs: habits' '$T/$c.err'"
	check "$c --run nosuch: same message as query" cmp -s "$T/$c.err" "$T/query.err"
done
"$BIN/vitals" query --db "$DB" --run habits --metric nope >"$T/out" 2>"$T/err"
check "query of an unknown metric: nothing on stdout" \
	sh -c "[ $? = 1 ] && [ ! -s '$T/out' ] && grep -q \"no metric 'nope'\" '$T/err'"
"$BIN/vitals" top --db "$DB" --run nosuch </dev/null >"$T/out" 2>"$T/err"
check "top --run nosuch: says so before the screen, lists the runs" \
	sh -c "[ $? = 1 ] && grep -q \"no run 'nosuch'\" '$T/err' && grep -q 'habits' '$T/err'"

# Alert times: nine decimals in CSV as in JSON and every other command.
"$BIN/vitals" emit --run habits --step 7 loss=nan
i=0
until "$BIN/vitals" alerts --db "$DB" --run habits --format jsonl 2>/dev/null | grep -q .; do
	[ $i -lt 100 ] || break
	sleep 0.1
	i=$((i + 1))
done
"$BIN/vitals" alerts --db "$DB" --run habits >"$T/al.csv"
"$BIN/vitals" alerts --db "$DB" --run habits --format jsonl >"$T/al.jsonl"
check "alerts: CSV time as in JSON, nine decimals" \
	sh -c "t=\$(grep -o '\"time\":[0-9.]*' '$T/al.jsonl' | head -n 1 | cut -d: -f2) &&
	       echo \"\$t\" | grep -Eq '^[0-9]+\\.[0-9]{9}$' && grep -q \",\$t,\" '$T/al.csv'"

# Emitters in the order they were first seen (ids are random).
for i in 1 2 3 4 5 6; do
	"$BIN/vitals" emit --run order --step $i --rank $i loss=1
done
"$BIN/vitals" emitters --db "$DB" --run order --format jsonl >"$T/em"
check "emitters: ordered by first seen" \
	sh -c "grep -o '\"rank\":[0-9]*' '$T/em' | tr -d '\"rank:' | tr '\n' ' ' | grep -qx '1 2 3 4 5 6 '"

# vitals top in tmux (a private server): "1 step", every column in the
# help, and the too-small message whole at any width.
if command -v tmux >/dev/null 2>&1; then
	tm() { tmux -S "$T/tmux.sock" "$@"; }
	trap 'tm kill-server 2>/dev/null; cleanup' EXIT
	wait_pane() {
		end=$(($(now_ms) + 10000))
		while [ "$(now_ms)" -lt "$end" ]; do
			tm capture-pane -p -t "$1" | grep -Eq -- "$2" && return 0
			sleep 0.1
		done
		tm capture-pane -p -t "$1"
		return 1
	}
	# Two emitters (the second with a state of its own, as a restarted
	# job would be): a restart that redoes step 5. Calls sharing their
	# state are one emitter, no restart (tests/it_emit.sh).
	"$BIN/vitals" emit --run twice --step 5 loss=1
	XDG_STATE_HOME=$T/restarted "$BIN/vitals" emit --run twice --step 5 loss=2
	tm new-session -d -s big -x 120 -y 40 \
		"LANG=C.UTF-8 '$BIN/vitals' top --db '$DB' --run twice; sleep 600"
	check "top: one step redone reads \"1 step\"" \
		wait_pane big 'restarts 1 \(1 step redone\)'
	tm send-keys -t big '?'
	check "top: the help explains CHANGE, ALERT, DEV and ACK" \
		sh -c "$(command -v tmux) -S '$T/tmux.sock' capture-pane -p -t big >'$T/help.txt';
		       sleep 1; $(command -v tmux) -S '$T/tmux.sock' capture-pane -p -t big >'$T/help.txt';
		       grep -q CHANGE '$T/help.txt' && grep -q 'ALERT kind' '$T/help.txt' &&
		       grep -q 'DEV its' '$T/help.txt' && grep -q 'ACK muted' '$T/help.txt'"
	tm new-session -d -s small -x 20 -y 8 \
		"LANG=C.UTF-8 '$BIN/vitals' top --db '$DB' --run twice; sleep 600"
	check "top: the too-small message whole in 20 columns" \
		wait_pane small 'least\)'
	tm kill-server 2>/dev/null
fi
stop_collector

# A long rule name is shown whole in the alerts view at 120 columns.
if command -v tmux >/dev/null 2>&1; then
	"$BIN/vitals" rules default |
		sed 's/^rule nonfinite {/rule loss_became_not_a_finite_number_here {/' >"$T/long.rules"
	start_collector --rules "$T/long.rules"
	"$BIN/vitals" emit --run longrule --step 1 loss=1
	"$BIN/vitals" emit --run longrule --step 2 loss=nan
	i=0
	until "$BIN/vitals" alerts --db "$DB" --run longrule 2>/dev/null | grep -q longrule; do
		[ $i -lt 100 ] || break
		sleep 0.1
		i=$((i + 1))
	done
	tm new-session -d -s rules -x 120 -y 30 \
		"LANG=C.UTF-8 '$BIN/vitals' top --db '$DB' --run longrule; sleep 600"
	wait_pane rules 'longrule' >/dev/null
	# The run ends normally after each emit, which resolves the alert:
	# show every transition (A), not only what fires.
	tm send-keys -t rules '4'
	tm send-keys -t rules 'A'
	check "top: a 39-character rule name whole at 120 columns" \
		wait_pane rules '(firing|resolved) .* loss_became_not_a_finite_number_here '
	tm kill-server 2>/dev/null
fi

# Completion: generated from the parser's table, so it knows --format's
# values and every command.
"$BIN/vitals" completion bash >"$T/comp.bash"
check "completion bash: valid bash" bash -n "$T/comp.bash"
check "completion bash: completes commands and option values" \
	bash -c ". '$T/comp.bash'
		COMP_WORDS=(vitals emi); COMP_CWORD=1; _vitals
		[ \"\${COMPREPLY[*]}\" = 'emitters emit' ] || exit 1
		COMP_WORDS=(vitals query --format ''); COMP_CWORD=3; _vitals
		[ \"\${COMPREPLY[*]}\" = 'csv jsonl' ] || exit 1
		COMP_WORDS=(vitals query --m); COMP_CWORD=2; _vitals
		[ \"\${COMPREPLY[*]}\" = '--metric' ]"
stop_collector

# vitalsd that cannot listen creates nothing in --db.
"$BIN/vitalsd" --listen "ipc://$T/no/such/dir/sock" --db "$T/fresh" 2>"$T/err"
check "vitalsd: cannot listen: exit 1, said, no --db folder left" \
	sh -c "[ $? = 1 ] && grep -q 'cannot listen' '$T/err' && [ ! -e '$T/fresh' ]"
mkdir "$T/empty"
"$BIN/vitalsd" --listen "tcp://127.0.0.1:notaport" --db "$T/empty" 2>"$T/err"
check "vitalsd: bad tcp endpoint leaves an existing --db empty" \
	sh -c "[ $? -ne 0 ] && grep -q notaport '$T/err' && [ -z \"\$(ls -A '$T/empty')\" ]"
finish
