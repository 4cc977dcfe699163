# Hardening with real processes (issue 6, "Faults", "Limits", "Scale"):
# 20 SIGKILLs of the collector under several emitters (a narrow run and
# a wide one), a full disk, a slow
# reader, an emitter killed mid-batch next to half-written messages, name
# and message-size limits, a trainer logging a new metric every step, and
# 256 emitters at once. Prints the figures (sent, stored, dropped,
# duplicated, peak RSS) as it goes.
. tests/lib.sh

# ONLY=N runs section N alone (while working on it).
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

verify_export() {
	"$BIN/vitals" export --db "$DB" --run "$1" --all-samples >"$T/x.csv"
	shift
	"$BIN/tests/trainer" verify "$@" <"$T/x.csv"
}

# The field of a run in `vitals runs` (6 samples, 7 series, 8 emitters,
# 9 dropped, 10 refused, 11 finished).
run_field() {
	"$BIN/vitals" runs --db "$DB" | awk -F, -v r="$1" -v f="$2" \
		'$1 == r { print $f }'
}

# Sample the collector's memory every 0.2 s into $T/rss.$1 until it exits
# or the sampler is stopped: "VmHWM kB" and the largest RssAnon kB seen.
rss_start() {
	(
		peak=0
		while [ -r "/proc/$VPID/status" ]; do
			a=$(awk '/^RssAnon:/ { print $2 }' "/proc/$VPID/status")
			h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$VPID/status")
			[ -n "$a" ] && [ "$a" -gt "$peak" ] && peak=$a
			[ -n "$h" ] && echo "$h $peak" >"$T/rss.$1"
			sleep 0.2
		done
	) &
	RSSPID=$!
}
rss_stop() {
	kill "$RSSPID" 2>/dev/null
	wait "$RSSPID" 2>/dev/null
	read -r HWM ANON <"$T/rss.$1" || { HWM=0; ANON=0; }
	echo "figures: $1: vitalsd peak RSS (VmHWM) $((HWM / 1024)) MiB," \
		"peak anonymous RSS $((ANON / 1024)) MiB"
}

# Print "sent stored dropped duplicate" figures from trainer output and a
# verify line.
figures() {
	logged=$(awk '{ s += $4 } END { print s + 0 }' "$2")
	dropped=$(awk '{ s += $6 } END { print s + 0 }' "$2")
	acked=$(awk '{ s += $8 } END { print s + 0 }' "$2")
	echo "figures: $1: logged $logged acked $acked dropped $dropped;" \
		"store: $(cat "$3")"
}

# ---------------------------------------------------------------------
# 1. SIGKILL of the collector, 20 rounds, 4 emitter processes.
if want 1; then
start_collector --no-detect
export VITALS_RUN=kill20
"$BIN/tests/trainer" emit --ranks 4 --metrics 5 --steps 12000 \
	--step-us 2500 --flush-ms 60000 >"$T/emit.out" &
TPID=$!
opened=0
for round in $(seq 1 20); do
	sleep "$(awk -v s="$$$round" 'BEGIN { srand(s); printf "%.2f", 0.9 + rand() * 0.6 }')"
	kill_collector
	# The environment must open cleanly right after each kill.
	if "$BIN/vitals" runs --db "$DB" >/dev/null 2>&1 &&
		mdb_stat -e "$DB" >/dev/null 2>&1; then
		opened=$((opened + 1))
	fi
	start_collector --no-detect
done
echo "killed vitalsd 20 times; the store opened cleanly $opened times"
check "kill x20: store opens cleanly after every kill" [ "$opened" = 20 ]
wait $TPID
check "kill x20: trainers finished, every sample acknowledged" [ $? = 0 ]
verify_export kill20 --ranks 4 --metrics 5 --steps 12000 >"$T/v.out"
check "kill x20: every sample exactly once" [ $? = 0 ]
figures "kill x20" "$T/emit.out" "$T/v.out"
check "kill x20: mdb_stat reads the environment" \
	sh -c "mdb_stat -e \"\$1\" >/dev/null" - "$DB"
stop_collector
fi

# ---------------------------------------------------------------------
# 1w. The same 20 SIGKILLs on a wide run: 16 ranks x 64 metrics (1,024
# series, one sample of each per step), with --journal-samples 5000 (a
# journal of wide records holds 1,024 samples of each series, up to 4
# times that: 20,000 samples) so that a fold runs every few commits and the kills land in commits,
# in folds and between them. Every acknowledged sample exactly once,
# read back through the blocks and the journal alike. Its values are
# float32s (--float32, as a trainer's tensors log them), so that its
# commits write format 8's records (those with a NaN, format 7's).
if want 1w; then
start_collector --no-detect --journal-samples 5000
export VITALS_RUN=kill20wide
"$BIN/tests/trainer" emit --ranks 16 --metrics 64 --steps 3000 --float32 \
	--step-us 10000 --flush-ms 60000 >"$T/emit.out" &
TPID=$!
opened=0
for round in $(seq 1 20); do
	sleep "$(awk -v s="$$$round" 'BEGIN { srand(s + 7); printf "%.2f", 0.9 + rand() * 0.6 }')"
	kill_collector
	if "$BIN/vitals" runs --db "$DB" >/dev/null 2>&1 &&
		mdb_stat -e "$DB" >/dev/null 2>&1; then
		opened=$((opened + 1))
	fi
	start_collector --no-detect --journal-samples 5000
done
echo "killed vitalsd 20 times (wide run); the store opened cleanly $opened times"
check "kill x20, wide: store opens cleanly after every kill" [ "$opened" = 20 ]
wait $TPID
check "kill x20, wide: trainers finished, every sample acknowledged" [ $? = 0 ]
verify_export kill20wide --ranks 16 --metrics 64 --steps 3000 --float32 >"$T/v.out"
check "kill x20, wide: every sample exactly once" [ $? = 0 ]
figures "kill x20, wide" "$T/emit.out" "$T/v.out"
check "kill x20, wide: the journal was folded (blocks in the store)" \
	sh -c "mdb_stat -s blocks \"\$1\" | awk '/Entries:/ { exit !(\$2 > 0) }'" - "$DB"
stop_collector
fi

# ---------------------------------------------------------------------
# 2. Disk full: the store on a 4 MiB tmpfs, grown while the trainer waits.
if want 2; then
SMALL=$T/small
mkdir -p "$SMALL"
if mount -t tmpfs -o size=4m tmpfs "$SMALL" 2>/dev/null; then
	DB0=$DB
	DB=$SMALL/db
	start_collector --no-detect
	export VITALS_RUN=diskfull
	"$BIN/tests/trainer" emit --ranks 2 --metrics 20 --steps 20000 \
		--step-us 150 --flush-ms 60000 >"$T/emit.out" &
	TPID=$!
	i=0
	# The commit path's line, not the fold's: a fold needs more pages
	# than a commit, so it can fail first while commits still fit.
	while ! grep -q "disk full.*holding" "$T/vitalsd.log" \
		&& [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	check "disk full: vitalsd says the disk is full" \
		grep -q "disk full.*holding" "$T/vitalsd.log"
	grep "disk full.*holding" "$T/vitalsd.log" | head -n 1
	before=$(run_field diskfull 6)
	sleep 2
	check "disk full: nothing more committed while full" \
		[ "$(run_field diskfull 6)" = "$before" ]
	check "disk full: trainer still waiting (not acknowledged)" \
		kill -0 $TPID
	check "disk full: committed data readable meanwhile" \
		"$BIN/vitals" runs --db "$DB"
	held=$(run_field diskfull 6)
	echo "figures: disk full: $held samples stored before the disk filled"
	check "disk full: vitalsd still running" kill -0 "$VPID"
	mount -o remount,size=256m "$SMALL"
	wait $TPID
	check "disk full: after space returns every sample acknowledged" \
		[ $? = 0 ]
	check "disk full: vitalsd logged that it resumed" \
		grep -q "store writable again" "$T/vitalsd.log"
	verify_export diskfull --ranks 2 --metrics 20 --steps 20000 >"$T/v.out"
	check "disk full: every sample stored exactly once" [ $? = 0 ]
	figures "disk full" "$T/emit.out" "$T/v.out"
	grep -E "holding|writable" "$T/vitalsd.log"
	check "disk full: collector stops cleanly" stop_collector
	umount "$SMALL"
	DB=$DB0
else
	echo "SKIP disk full: cannot mount a tmpfs here (not root?)"
fi
fi

# ---------------------------------------------------------------------
# 3. A slow reader holding a read transaction. A small journal, folded
# every few commits, so that each phase's growth is its blocks' and not
# the journal filling up to its bound (docs/storage.md, "The journal").
if want 3; then
# A store of its own: the wide run's journal (1w) leaves counted wide
# records in the shared one, which make this journal a counted one
# (folded at 4 times its bound, docs/storage.md, "Counting before
# folding"), so its growth would be the journal's.
DB0=$DB
DB=$T/slowdb
start_collector --no-detect --journal-samples 20000
size() { stat -c %s "$DB/data.mdb"; }
phase() {
	VITALS_RUN=$1 "$BIN/tests/trainer" emit --ranks 2 --metrics 10 \
		--steps 4000 --step-us 500 --flush-ms 20000 >"$T/emit.$1"
}
s0=$(size)
phase slow1
s1=$(size)
# It holds until killed below (10 minutes at most), however long the
# phase next to it takes on a loaded machine.
"$BIN/tests/slowreader" "$DB" 600 >"$T/reader.out" &
RPID=$!
while ! grep -q holding "$T/reader.out"; do sleep 0.05; done
t0=$(now_ms)
phase slow2
rc=$?
t1=$(now_ms)
check "slow reader: trainer acknowledged while the reader holds" [ $rc = 0 ]
check "slow reader: the reader was still holding" kill -0 $RPID
echo "slow reader: trainer ran $((t1 - t0)) ms next to the reader"
s2=$(size)
# Killed, not ended: its reader slot stays in the lock file until vitalsd
# clears it (mdb_reader_check, once a second).
kill -9 $RPID 2>/dev/null
wait $RPID 2>/dev/null
sleep 1.5
phase slow3
s3=$(size)
phase slow4
s4=$(size)
g1=$((s1 - s0)); g2=$((s2 - s1)); g3=$((s3 - s2)); g4=$((s4 - s3))
echo "figures: slow reader: data.mdb growth per phase (KiB): no reader" \
	"$((g1 / 1024)), reader holding $((g2 / 1024)), after it left" \
	"$((g3 / 1024)), $((g4 / 1024))"
check "slow reader: vitalsd cleared the dead reader's slot" \
	grep -q "cleared 1 read transaction" "$T/vitalsd.log"
check "slow reader: growth after the reader left is no more than without" \
	[ $((g4)) -le $((g1 + g1 / 2 + 65536)) ]
bad=0
for r in slow1 slow2 slow3 slow4; do
	verify_export $r --ranks 2 --metrics 10 --steps 4000 >"$T/v.out" ||
		bad=$((bad + 1))
done
check "slow reader: all four runs complete, exactly once" [ "$bad" = 0 ]
stop_collector
DB=$DB0
fi

# ---------------------------------------------------------------------
# 4. An emitter killed mid-batch, half-written ZMTP messages, bad names,
# an oversize message: a healthy trainer next to them loses nothing.
if want 4; then
PORT=$((20000 + $$ % 20000))
EP0=$EP
EP=tcp://127.0.0.1:$PORT
export VITALS_ENDPOINT=$EP
"$BIN/vitalsd" --listen "$EP" --db "$DB" --no-detect >>"$T/vitalsd.log" 2>&1 &
VPID=$!
sleep 0.5
rss_start abuse
VITALS_RUN=healthy "$BIN/tests/trainer" emit --ranks 3 --metrics 5 \
	--steps 8000 --step-us 1000 --flush-ms 30000 >"$T/emit.out" &
HPID=$!
VITALS_RUN=victim "$BIN/tests/trainer" emit --ranks 2 --metrics 5 \
	--steps 100000 --step-us 50 --flush-ms 30000 >/dev/null &
VICTIM=$!
"$BIN/tests/abuser" halfzmtp 127.0.0.1 "$PORT" 6 &
HALF=$!
sleep 1.5
kids=$(pgrep -P $VICTIM)
kill -9 $kids $VICTIM 2>/dev/null
wait $VICTIM 2>/dev/null
echo "killed emitter processes $kids mid-run"
"$BIN/tests/abuser" badnames "$EP" badnames >"$T/bad.out"
check "names: invalid metric and run names refused, valid stored" [ $? = 0 ]
cat "$T/bad.out"
"$BIN/tests/abuser" oversize "$EP" big 17 >"$T/big.out"
check "oversize: 17 MiB message dropped, next batch stored" [ $? = 0 ]
cat "$T/big.out"
wait $HALF
wait $HPID
check "mid-batch kill: healthy trainer acknowledged" [ $? = 0 ]
verify_export healthy --ranks 3 --metrics 5 --steps 8000 >"$T/v.out"
check "mid-batch kill: healthy run complete, exactly once" [ $? = 0 ]
figures "abuse, healthy run" "$T/emit.out" "$T/v.out"
echo "figures: abuse: victim run stored $(run_field victim 6) samples" \
	"before its kill"
check "abuse: collector still running" kill -0 "$VPID"
rss_stop abuse
check "abuse: collector stops cleanly" stop_collector
EP=$EP0
export VITALS_ENDPOINT=$EP
fi

# ---------------------------------------------------------------------
# 5. A new metric name every step: 4 emitters x 40,000 names against the
# default per-run cap of 100,000 series.
if want 5; then
start_collector --no-detect
rss_start names
export VITALS_RUN=namebomb
t0=$(now_ms)
"$BIN/tests/abuser" names 4 40000 >"$T/names.out"
check "series cap: every sample settled at the emitters" [ $? = 0 ]
t1=$(now_ms)
cat "$T/names.out"
series=$(run_field namebomb 7)
stored=$(run_field namebomb 6)
alerts=$("$BIN/vitals" alerts --db "$DB" --run namebomb --format jsonl |
	grep -c '"rule":"series_limit"')
echo "figures: series cap: sent 160000 samples of 160000 new series in" \
	"$((t1 - t0)) ms; stored $stored in $series series;" \
	"refused $((160000 - ${stored:-0})); alerts $alerts"
check "series cap: exactly 100000 series stored" [ "$series" = 100000 ]
check "series cap: one sample per stored series" [ "$stored" = 100000 ]
check "series cap: one series_limit alert" [ "$alerts" = 1 ]
# Name nNNNNNNN is logged at step NNNNNNN: the alert's step is that of
# the first sample refused, the step in the name of its metric.
check "series cap: the alert names the metric and step of the first sample refused" \
	sh -c "'$BIN/vitals' alerts --db '$DB' --run namebomb --format jsonl |
	       grep '\"rule\":\"series_limit\"' |
	       python3 -c 'import json, sys; a = json.loads(sys.stdin.read()); sys.exit(not (a[\"metric\"][0] == \"n\" and int(a[\"metric\"][1:]) == a[\"step\"]))'"
check "series cap: vitals runs counts the 60000 refused samples" \
	[ "$(run_field namebomb 10)" = 60000 ]
check "series cap: logged once" \
	[ "$(grep -c 'series cap of 100000' "$T/vitalsd.log")" = 1 ]
rss_stop names
check "series cap: anonymous RSS below 256 MiB" [ "$ANON" -lt 262144 ]
# After a restart, more new series are refused without a second alert.
stop_collector
start_collector --no-detect
"$BIN/tests/abuser" names 5 100 >/dev/null
alerts=$("$BIN/vitals" alerts --db "$DB" --run namebomb --format jsonl |
	grep -c '"rule":"series_limit"')
check "series cap: still one alert after a restart" [ "$alerts" = 1 ]
check "series cap: still 100000 series" [ "$(run_field namebomb 7)" = 100000 ]
# 5 ranks x 100 names: those of series stored in the first round are
# stored again, the rest refused (rank 4's at least).
refused=$(run_field namebomb 10)
echo "refused after the restart: $refused"
check "series cap: refusals after the restart are added to the count" \
	[ "$refused" -ge 60100 -a "$refused" -le 60500 ]
# The same 500 names again, to the same collector: each sample of a name
# refused before is refused and counted again; the rest stored again.
stored=$(run_field namebomb 6)
"$BIN/tests/abuser" names 5 100 >/dev/null
check "series cap: the same names again: still 100000 series" \
	[ "$(run_field namebomb 7)" = 100000 ]
check "series cap: the same names again: as many refused as the first time" \
	[ "$(run_field namebomb 10)" = $((refused + refused - 60000)) ]
check "series cap: the same names again: the others stored again" \
	[ "$(run_field namebomb 6)" = $((stored + 500 - (refused - 60000))) ]
check "series cap: the same names again: still one alert" \
	[ "$("$BIN/vitals" alerts --db "$DB" --run namebomb --format jsonl |
		grep -c '"rule":"series_limit"')" = 1 ]
stop_collector
fi

# ---------------------------------------------------------------------
# 6. Scale: 256 emitters (threads of one process, each its own socket and
# incarnation), 1000 steps of 5 ms. The final flush may wait 5 minutes:
# it returns at the last ack, and on a loaded 2-core machine 256 I/O
# threads can take minutes to be acknowledged (CI saw more than 30 s).
if want 6; then
PORT=$((20000 + ($$ + 1) % 20000))
EP=tcp://127.0.0.1:$PORT
export VITALS_ENDPOINT=$EP
"$BIN/vitalsd" --listen "$EP" --db "$DB" --no-detect >>"$T/vitalsd.log" 2>&1 &
VPID=$!
sleep 0.5
rss_start scale
export VITALS_RUN=scale
t0=$(now_ms)
"$BIN/tests/trainer" emit --threads --ranks 256 --metrics 8 --steps 1000 \
	--step-us 5000 --flush-ms 300000 >"$T/emit.out"
rc=$?
t1=$(now_ms)
check "scale: 256 emitters, every sample acknowledged" [ $rc = 0 ]
verify_export scale --ranks 256 --metrics 8 --steps 1000 >"$T/v.out"
check "scale: every sample stored exactly once" [ $? = 0 ]
figures "scale" "$T/emit.out" "$T/v.out"
check "scale: 256 incarnations" [ "$(run_field scale 8)" = 256 ]
"$BIN/vitals" emitters --db "$DB" --run scale >"$T/em.csv"
col=$(head -n 1 "$T/em.csv" | tr , '\n' | grep -n -x -m1 'received\|samples' |
	cut -d: -f1)
bad=$(awk -F, -v c="${col:-0}" 'NR > 1 && $c != 8000' "$T/em.csv" | wc -l)
rows=$(($(wc -l <"$T/em.csv") - 1))
echo "scale: $rows emitters listed, $bad with a count other than 8000"
check "scale: each emitter stored 8000 samples" \
	[ -n "$col" -a "$bad" = 0 -a "$rows" = 256 ]
total=$((256 * 8 * 1000))
echo "figures: scale: $total samples from 256 emitters in $((t1 - t0)) ms:" \
	"$((total * 1000 / (t1 - t0))) samples/s"
rss_stop scale
check "scale: collector stops cleanly" stop_collector
fi

finish
