# The README's first command ends in demo/demo.sh: a collector, a
# simulated run and what was stored. Without a terminal it prints instead
# of showing `vitals top`. Whichever way it ends (the run finishing, or
# the terminal closing under it), it leaves no collector, trainer or
# temporary folder behind.
. tests/lib.sh

# The demo's own folder, from its first line ("== vitalsd on ipc://DIR/...").
demo_dir() {
	sed -n 's|^== vitalsd on ipc://\(.*\)/collector.sock.*|\1|p' "$1" | head -n 1
}

# A short run to its end: the spike at step 300 is stored and alerted.
DEMO_STEPS=400 B=$BIN sh demo/demo.sh >"$T/demo.out" 2>&1
rc=$?
check "run to its end: exit 0" [ $rc = 0 ]
check "run to its end: prints the loss spike's alert" \
	grep -q '^loss_spike,spike,warning,firing,[0-3],loss,' "$T/demo.out"
check "run to its end: prints the run, 4 emitters, finished" \
	grep -Eq '^demo-[0-9]+,1,400,.*,24,4,0,0,true,0$' "$T/demo.out"
D=$(demo_dir "$T/demo.out")
check "run to its end: its folder is named" [ -n "$D" ]
check "run to its end: no process and no folder left" \
	sh -c "[ -n '$D' ] && [ ! -e '$D' ] && ! pgrep -f '[v]italsd.*$D' >/dev/null"

# A closed terminal (an SSH session that drops) sends HUP to the demo's
# shell; vitalsd takes HUP as "reload the rules" and would stay.
DEMO_STEPS=100007 B=$BIN sh demo/demo.sh >"$T/hup.out" 2>&1 &
DPID=$!
wait_for 10 sh -c "D=\$(sed -n 's|^== vitalsd on ipc://\(.*\)/collector.sock.*|\1|p' '$T/hup.out'); [ -n \"\$D\" ] && [ -S \"\$D/collector.sock\" ] && pgrep -f \"[v]italsd.*\$D\" >/dev/null"
D=$(demo_dir "$T/hup.out")
check "hangup: the demo's collector was up" \
	sh -c "[ -n '$D' ] && pgrep -f '[v]italsd.*$D/collector.sock' >/dev/null"
kill -HUP $DPID
wait_for 20 sh -c "! kill -0 $DPID"
check "hangup: the demo ended" sh -c "! kill -0 $DPID 2>/dev/null"
# The collector's command line names the folder; the trainer's, its
# step count. ("[v]italsd" does not match the checking shell's own
# command line, which holds the pattern.)
check "hangup: no collector or trainer left, folder removed" \
	wait_for 10 sh -c "[ -n '$D' ] && [ ! -e '$D' ] && ! pgrep -f '[v]italsd.*$D' >/dev/null &&
	                    ! pgrep -f '[s]teps 100007' >/dev/null"
# What a failed check left running would outlive the test.
[ -n "$D" ] && pkill -9 -f "$D" 2>/dev/null
pkill -9 -f 'steps 100007' 2>/dev/null

finish
