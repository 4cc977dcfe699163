# Faults with real processes: a collector killed and restarted (on a
# narrow run and on a wide one), a collector that starts late, a cap
# exceeded, an exit with no collector, malformed messages, a second
# collector on the same database.
. tests/lib.sh

verify_export() {
	"$BIN/vitals" export --db "$DB" --run "$1" --all-samples >"$T/x.csv"
	shift
	"$BIN/tests/trainer" verify "$@" <"$T/x.csv"
}

# 1. SIGKILL at a random moment, then restart on the same --db.
start_collector
export VITALS_RUN=kill9
"$BIN/tests/trainer" emit --ranks 4 --metrics 5 --steps 20000 \
	--step-us 200 --flush-ms 60000 >"$T/emit.out" &
TPID=$!
delay=$(awk -v s=$$ 'BEGIN { srand(s); printf "%.2f", 0.5 + rand() * 2.5 }')
sleep "$delay"
kill_collector
echo "killed vitalsd after ${delay}s"
sleep 0.5
start_collector
wait $TPID
check "kill -9: trainer finished, every sample acknowledged" [ $? = 0 ]
check "kill -9: store has every sample exactly once" \
	verify_export kill9 --ranks 4 --metrics 5 --steps 20000

# 1b. The same on a wide run: 512 series, more than the collector may
# keep encoders for, so each commit unloads and reloads tails.
stop_collector
start_collector --cache-encoders 64
export VITALS_RUN=kill9wide
"$BIN/tests/trainer" emit --ranks 8 --metrics 64 --steps 1500 \
	--step-us 1000 --flush-ms 60000 >"$T/emit.out" &
TPID=$!
delay=$(awk -v s=$$ 'BEGIN { srand(s + 1); printf "%.2f", 0.3 + rand() * 1.2 }')
sleep "$delay"
kill_collector
echo "killed vitalsd (wide run) after ${delay}s"
sleep 0.5
start_collector --cache-encoders 64
wait $TPID
check "kill -9, wide: trainer finished, every sample acknowledged" [ $? = 0 ]
check "kill -9, wide: store has every sample exactly once" \
	verify_export kill9wide --ranks 8 --metrics 64 --steps 1500

# 2. The collector starts 5 s after the trainer.
stop_collector
export VITALS_RUN=late
"$BIN/tests/trainer" emit --ranks 2 --metrics 3 --steps 2000 \
	--step-us 1000 --flush-ms 60000 >"$T/emit.out" &
TPID=$!
sleep 5
start_collector
wait $TPID
check "late collector: trainer got every sample acknowledged" [ $? = 0 ]
check "late collector: nothing lost" \
	verify_export late --ranks 2 --metrics 3 --steps 2000

# 3. Cap exceeded while the collector is down: dropped == missing.
stop_collector
export VITALS_RUN=capped
VITALS_MAX_BUFFER=262144 "$BIN/tests/trainer" emit --ranks 1 --metrics 5 \
	--steps 40000 --flush-ms 60000 >"$T/emit.out" &
TPID=$!
sleep 5
start_collector
wait $TPID
cat "$T/emit.out"
verify_export capped --ranks 1 --metrics 5 --steps 40000 --allow-missing \
	>"$T/verify.out"
cat "$T/verify.out"
missing=$(sed -n 's/.*missing \([0-9]*\) duplicate 0 wrong 0 disorder 0$/\1/p' "$T/verify.out")
dropped=$("$BIN/vitals" runs --db "$DB" | awk -F, '$1 == "capped" { print $9 }')
echo "missing=$missing dropped(stored)=$dropped"
check "cap exceeded: some samples dropped" [ "${dropped:-0}" -gt 0 ]
check "cap exceeded: stored dropped count equals samples missing" \
	[ "${missing:-x}" = "${dropped:-y}" ]

# 4. Exit while the collector is down: bounded by the close timeout.
stop_collector
export VITALS_RUN=exit-down
t0=$(now_ms)
VITALS_CLOSE_TIMEOUT_MS=1000 "$BIN/tests/trainer" emit --ranks 1 \
	--metrics 2 --steps 100 --flush-ms 0 >/dev/null
t1=$(now_ms)
echo "exit with collector down took $((t1 - t0)) ms (close timeout 1000)"
check "exit with collector down returns within the close timeout" \
	[ $((t1 - t0)) -lt 2500 ]

# 5. Malformed and truncated messages next to a healthy trainer.
start_collector
export VITALS_RUN=healthy
"$BIN/tests/trainer" emit --ranks 2 --metrics 3 --steps 5000 \
	--step-us 100 --flush-ms 60000 >/dev/null &
TPID=$!
"$BIN/tests/badsender" "$EP" badrun 300
check "malformed: a valid batch after garbage is stored" [ $? = 0 ]
wait $TPID
check "malformed: healthy trainer acknowledged" [ $? = 0 ]
check "malformed: collector still running" kill -0 "$VPID"
check "malformed: healthy run complete" \
	verify_export healthy --ranks 2 --metrics 3 --steps 5000
check "malformed: logged with the sender" \
	grep -q "malformed message from" "$T/vitalsd.log"

# A second collector on the same database refuses to start, naming the
# first; the first goes on serving.
"$BIN/vitalsd" --listen "ipc://$T/second.sock" --db "$DB" \
	>"$T/second.log" 2>&1
rc=$?
check "second vitalsd on the database: exit 1, naming the first's pid" \
	sh -c "[ $rc = 1 ] && grep -q 'in use by another writer (pid $VPID)' '$T/second.log'"
"$BIN/vitals" emit --run after-second --step 1 loss=1
check "second vitalsd: the first still stores" [ $? = 0 ]
check "collector stops cleanly" stop_collector
finish
