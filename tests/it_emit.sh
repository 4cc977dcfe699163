# vitals emit as a shell script uses it: the calls for one run and rank are
# one emitter (not restarts), a step sent twice shows once with the value
# sent last, a failed call leaves its samples deliverable exactly once.
# Also the small CLI fixes of issue 15 (--rank range, a database this
# user may not read).
. tests/lib.sh

V=$BIN/vitals
start_collector

# --- one emitter across calls ------------------------------------------
"$V" emit --run sh --step 1 loss=2.5 &&
	"$V" emit --run sh --step 2 loss=2.25 &&
	"$V" emit --run sh --step 2 loss=2.0 grad_norm=0.5
check "emit: three calls succeed" [ $? = 0 ]
"$V" emitters --db "$DB" --run sh >"$T/em.csv"
cat "$T/em.csv"
check "emitters: three calls are one emitter, 4 samples, no duplicates" \
	sh -c "[ \$(tail -n +2 '$T/em.csv' | grep -c '') = 1 ] &&
	       tail -n 1 '$T/em.csv' | awk -F, '\$11 == 4 && \$12 == 0 { ok = 1 } END { exit !ok }'"
"$V" runs --db "$DB" >"$T/runs.csv"
check "runs: the run has 1 emitter" \
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
		$1 == "sh" && $c["emitters"] == 1 { ok = 1 } END { exit !ok }' \
	"$T/runs.csv"
"$V" alerts --db "$DB" --run sh >"$T/alerts.csv" 2>&1
check "alerts: no restart raised" sh -c "! grep -q restart '$T/alerts.csv'"

# What `vitals top` made of it (the issue: "restarts 1 (1 steps redone)").
if command -v tmux >/dev/null 2>&1; then
	tm() { tmux -S "$T/tmux.sock" "$@"; }
	tm new-session -d -s top -x 120 -y 30 \
		"export LANG=C.UTF-8; '$V' top --db '$DB' --run sh; sleep 600"
	i=0
	while [ $i -lt 100 ] && ! tm capture-pane -p -t top | grep -q restarts; do
		sleep 0.1
		i=$((i + 1))
	done
	tm capture-pane -p -t top >"$T/top.txt"
	tm kill-server 2>/dev/null
	head -n 3 "$T/top.txt"
	check "top: the three calls are no restart" \
		sh -c "grep -q 'restarts 0' '$T/top.txt' && ! grep -q redone '$T/top.txt'"
else
	echo "skipped: vitals top check (tmux is not installed)"
fi

# --- a step sent twice: the last value wins ----------------------------
"$V" query --db "$DB" --run sh --metric loss >"$T/q.csv"
cat "$T/q.csv"
check "query: step 2 once, with the value sent last" \
	sh -c "[ \"\$(cut -d, -f2,5 '$T/q.csv' | tail -n +2 | tr '\n' ' ')\" = '1,2.5 2,2 ' ]"
"$V" query --db "$DB" --run sh --metric loss --format jsonl >"$T/q.jsonl"
check "query jsonl: step 2 once, value 2" \
	python3 -c "
import json
rows = [json.loads(l) for l in open('$T/q.jsonl')]
assert [(r['step'], r['value']) for r in rows] == [(1, 2.5), (2, 2.0)], rows
"
"$V" export --db "$DB" --run sh --latest >"$T/x.csv"
check "export --latest: step 2 of loss once, with the value sent last" \
	sh -c "[ \$(grep -c ',loss,' '$T/x.csv') = 2 ] &&
	       grep -q ',2,0,loss,2,' '$T/x.csv' && ! grep -q ',loss,2.25,' '$T/x.csv'"
"$V" export --db "$DB" --run sh >"$T/xa.csv"
check "export: every sample, both values of step 2 in the order sent" \
	sh -c "[ \"\$(grep ',loss,' '$T/xa.csv' | cut -d, -f5 | tr '\n' ' ')\" = '2.5 2.25 2 ' ]"
"$V" export --db "$DB" --run sh --all-samples >"$T/xb.csv"
check "export --all-samples (the default now): the same" cmp -s "$T/xa.csv" "$T/xb.csv"
"$V" query --db "$DB" --run sh --metric loss --all-samples >"$T/qa.csv"
check "query --all-samples: 3 samples" \
	sh -c "[ \$(tail -n +2 '$T/qa.csv' | grep -c '') = 3 ]"

# --- ranks, and calls at once ------------------------------------------
"$V" emit --run two --rank 0 --step 1 loss=1 &&
	"$V" emit --run two --rank 1 --step 1 loss=1 &&
	"$V" emit --run two --rank 1 --step 2 loss=1 &&
	RANK=1 "$V" emit --run two --step 3 loss=1
check "emit: ranks from --rank and \$RANK" [ $? = 0 ]
"$V" emitters --db "$DB" --run two >"$T/two.csv"
check "emitters: one per rank (rank 1 from --rank and \$RANK alike)" \
	sh -c "[ \"\$(tail -n +2 '$T/two.csv' | cut -d, -f5 | sort | tr '\n' ' ')\" = '0 1 ' ]"

pids=
for s in 1 2 3 4 5 6 7 8; do
	"$V" emit --run many --step $s loss=$s >"$T/many.$s" 2>&1 &
	pids="$pids $!"
done
ok_all=0
for p in $pids; do wait $p || ok_all=1; done
check "8 emits at once all succeed" [ $ok_all = 0 ]
"$V" emitters --db "$DB" --run many >"$T/many.csv"
cat "$T/many.csv"
check "8 emits at once: one emitter, 8 samples, no duplicate discarded" \
	sh -c "[ \$(tail -n +2 '$T/many.csv' | grep -c '') = 1 ] &&
	       tail -n 1 '$T/many.csv' | awk -F, '\$11 == 8 && \$12 == 0 { ok = 1 } END { exit !ok }'"
check "8 emits at once: steps 1 to 8 stored" \
	sh -c "[ \"\$('$V' query --db '$DB' --run many --metric loss | tail -n +2 | cut -d, -f2 | tr '\n' ' ')\" = '1 2 3 4 5 6 7 8 ' ]"

# --- a failed call: spooled, and the next call is a new emitter --------
stop_collector
"$V" emit --run sh --step 3 loss=1.5 --timeout-ms 200 2>"$T/fail.err"
rc=$?
cat "$T/fail.err"
check "collector down: emit fails (exit 1) and spools its sample" \
	sh -c "[ $rc = 1 ] && grep -q 'spool' '$T/fail.err'"
start_collector
"$V" emit --run sh --step 4 loss=1.25
check "collector back: the next emit succeeds" [ $? = 0 ]
"$V" spool send >"$T/send.out" 2>&1
check "spool send delivers the failed call's sample" [ $? = 0 ]
check "steps 1 to 4 of loss, each once, after the spool" \
	sh -c "[ \"\$('$V' query --db '$DB' --run sh --metric loss --all-samples | tail -n +2 | cut -d, -f2,5 | tr '\n' ' ')\" = '1,2.5 2,2.25 2,2 3,1.5 4,1.25 ' ]"
"$V" spool send >/dev/null 2>&1
check "a second spool send stores nothing new" \
	sh -c "[ \$('$V' query --db '$DB' --run sh --metric loss --all-samples | tail -n +2 | grep -c '') = 5 ]"

# --- no state folder: still delivered, as an emitter of its own --------
: >"$T/afile"
XDG_STATE_HOME=$T/afile "$V" emit --run nostate --step 1 loss=1 2>"$T/ns.err"
rc=$?
cat "$T/ns.err"
check "state folder unusable: emit still stores (exit 0) and says why" \
	sh -c "[ $rc = 0 ] && grep -q 'emitter of its own' '$T/ns.err' &&
	       '$V' query --db '$DB' --run nostate --metric loss | grep -q ',1,0,loss,1,'"

# --- --rank: -1 exists, beyond int32 is named --------------------------
"$BIN/tests/rankless" "$EP" norank loss 4.5
check "a client without a rank stores rank -1 samples" [ $? = 0 ]
"$V" query --db "$DB" --run norank --metric loss --rank -1 >"$T/r1.csv" 2>"$T/r1.err"
rc=$?
cat "$T/r1.csv" "$T/r1.err"
check "query --rank -1 lists the rank -1 series" \
	sh -c "[ $rc = 0 ] && grep -q ',2,-1,loss,4.5,' '$T/r1.csv'"
"$V" query --db "$DB" --run norank --metric loss --rank 99999999999 >"$T/big.out" 2>"$T/big.err"
rc=$?
cat "$T/big.err"
check "query --rank 99999999999: usage error naming the value as out of range" \
	sh -c "[ $rc = 2 ] && [ ! -s '$T/big.out' ] &&
	       grep -q -- '--rank: 99999999999 is out of range' '$T/big.err'"
"$V" emit --run sh --rank -1 --step 9 loss=1 2>"$T/em1.err"
check "emit --rank -1 is refused with a message" \
	sh -c "[ $? = 2 ] && grep -q 'rank' '$T/em1.err'"

# --- rules check: rule names are checked through a table that grows ----
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "rule r%d { metric = '"'"'m'"'"' detector = nonfinite }\n", i;
	     print "rule r17 { metric = '"'"'m'"'"' detector = nonfinite }" }' >"$T/many.rules"
"$V" rules check "$T/many.rules" >/dev/null 2>"$T/rules.err"
rc=$?
cat "$T/rules.err"
check "rules check: a name repeated after 5,000 rules, with its line and column" \
	sh -c "[ $rc = 1 ] && grep -q 'many.rules:5001:6: expected a new rule name, found .r17. again' '$T/rules.err'"
head -n 5000 "$T/many.rules" >"$T/ok.rules"
check "rules check: 5,000 distinct names are valid" \
	sh -c "'$V' rules check '$T/ok.rules' | head -n 1 | grep -q '5000 rules, valid'"

# --- a database this user may not read ---------------------------------
stop_collector
perm_checks=1
if [ "$(id -u)" = 0 ]; then
	# root reads everything: ask as nobody, through a folder it may enter.
	as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	chmod 755 "$T"
	chmod 700 "$DB"
	as_other "$V" --version >/dev/null 2>&1 || perm_checks=0
else
	as_other() { "$@"; }
	chmod 000 "$DB"
fi
if [ $perm_checks = 1 ]; then
	as_other "$V" runs --db "$DB" >"$T/perm.out" 2>"$T/perm.err"
	rc=$?
	cat "$T/perm.err"
	check "unreadable database folder: permission denied, naming the path" \
		sh -c "[ $rc = 1 ] && grep -q '$DB/data.mdb: permission denied' '$T/perm.err' &&
		       ! grep -q 'no data.mdb' '$T/perm.err'"
	chmod 755 "$DB"
	chmod 600 "$DB"/*.mdb
	[ "$(id -u)" = 0 ] || chmod 000 "$DB"/lock.mdb
	as_other "$V" runs --db "$DB" >"$T/perm.out" 2>"$T/perm.err"
	rc=$?
	cat "$T/perm.err"
	check "unreadable database files: permission denied, naming the folder" \
		sh -c "[ $rc = 1 ] && grep -q '$DB: permission denied' '$T/perm.err'"
else
	echo "skipped: permission checks (nobody cannot run $V)"
fi
chmod -R u+rwX "$DB"

finish
