# The Python binding as a trainer meets it: one line per step, values of
# any number-like type, never an exception, fork and multiprocessing
# children, exit without hanging, an explicit Emitter, a missing library,
# and `pip install` offline.
. tests/lib.sh

PY=${PYTHON:-python3}
if ! "$PY" -c 'import ctypes' 2>/dev/null; then
	echo "skip: no python3 with ctypes ($PY)"
	finish
	exit 0
fi
export PYTHONPATH="$(pwd)/emitter/python" PYTHONDONTWRITEBYTECODE=1
export VITALS_LIB="$BIN/libvitals.so"
# A sanitizer build of the library needs its runtime loaded first.
for rt in asan ubsan; do
	so=$(ldd "$VITALS_LIB" 2>/dev/null | awk "/lib$rt\\./ {print \$3}")
	[ -n "$so" ] && export LD_PRELOAD="$so" ASAN_OPTIONS=detect_leaks=0
done
q() { "$BIN/vitals" query --db "$DB" "$@" | tail -n +2; }

start_collector

# One line per step; the values are what was logged, bit for bit.
VITALS_RUN=py "$PY" - <<'EOF' >"$T/basic.out" 2>&1
import vitals
assert vitals.available(), vitals._load_error
for step in range(100):
    vitals.log(step, loss=1.0 / (step + 1), grad_norm=step * 0.5,
               tokens_per_sec=1000 + step, lr=3e-4)
vitals.log(7, {"train/loss": 0.125})
print("done", vitals.library_path)
EOF
check "basic: script ran" grep -q "^done $VITALS_LIB" "$T/basic.out"
check "basic: 100 steps of each metric stored" \
	sh -c "[ \$('$BIN/vitals' query --db '$DB' --run py --metric loss | tail -n +2 | grep -c '') = 100 ] &&
	       [ \$('$BIN/vitals' query --db '$DB' --run py --metric lr | tail -n +2 | grep -c '') = 100 ]"
check "basic: values exact (1/4 at step 3, 0.01 at step 99)" \
	sh -c "q() { '$BIN/vitals' query --db '$DB' --run py --metric loss --steps \$1; };
	       q 3 | grep -q ',3,0,loss,0.25,py' && q 99 | grep -q ',99,0,loss,0.01,py'"
check "basic: a dict for names that are not identifiers" \
	sh -c "'$BIN/vitals' query --db '$DB' --run py --metric train/loss | grep -q ',7,0,train/loss,0.125,'"

# Number-like values without importing torch or numpy; bad ones skipped,
# counted and reported once; log() never raises, even under -W error.
VITALS_RUN=types "$PY" -W error - <<'EOF' >"$T/types.out" 2>"$T/types.err"
import vitals, sys
class Scalar:          # a 0-d tensor or numpy scalar, as far as we know
    def __init__(self, v): self.v = v
    def item(self): return self.v
class Floaty:
    def __float__(self): return 2.5
class Broken:
    def __float__(self): raise RuntimeError("device lost")
    def item(self): raise RuntimeError("device lost")
class Index:           # a numpy integer step
    def __index__(self): return 5
for i in range(100):
    vitals.log(i, a=3, b=True, c=Scalar(0.75), d=Floaty(), e=None,
               bad="abc", broken=Broken(), lst=[1, 2])
vitals.log(-1, a=1)
vitals.log(2 ** 64, a=1)
vitals.log("x", a=1)
vitals.log(Index(), idx=1.0)
vitals.log(6.0, idx=2.0)
vitals.log(1, **{"n" * 300: 1.0})
vitals.log(1, {3: 4.0})
st = vitals.stats()
print("problems", sorted(st["problems"].items()))
print("done")
EOF
check "types: never raised, even with -W error" grep -q "^done" "$T/types.out"
check "types: int, bool, .item(), __float__ stored" \
	sh -c "q() { '$BIN/vitals' query --db '$DB' --run types --metric \$1 --steps 42; };
	       q a | grep -q ',a,3,' && q b | grep -q ',b,1,' &&
	       q c | grep -q ',c,0.75,' && q d | grep -q ',d,2.5,'"
check "types: bad values not stored, None skipped" \
	sh -c "! '$BIN/vitals' query --db '$DB' --run types --metric bad 2>/dev/null | grep -q ,bad, &&
	       ! '$BIN/vitals' query --db '$DB' --run types --metric e 2>/dev/null | grep -q ,e,"
check "types: numpy-like and integral float steps accepted" \
	sh -c "q() { '$BIN/vitals' query --db '$DB' --run types --metric idx; };
	       q | grep -q ',5,0,idx,1,' && q | grep -q ',6,0,idx,2,'"
check "types: each problem counted" \
	grep -q "('bad_name', 1), ('bad_step', 3), ('bad_value', 300)" "$T/types.out"
check "types: each kind of problem reported once" \
	sh -c "[ \$(grep -c 'not a number' '$T/types.err') = 1 ] &&
	       [ \$(grep -c 'step' '$T/types.err') = 1 ] &&
	       grep -q 'name' '$T/types.err'"
check "types: a non-text name is converted" \
	sh -c "'$BIN/vitals' query --db '$DB' --run types --metric 3 | grep -q ',1,0,3,4,'"

# fork(): the parent's emitter is not touched in the child; os.fork and
# multiprocessing children get their own, and a multiprocessing child's
# samples are flushed at its end without a call (it ends with _exit).
VITALS_RUN=fork "$PY" - <<'EOF' >"$T/fork.out" 2>&1
import multiprocessing as mp, os, vitals
for s in range(10):
    vitals.log(s, parent=s)
def child():
    for s in range(10):
        vitals.log(s, mp_child=s)
e = vitals.Emitter(run="fork", rank=9)
e.log(0, explicit=1.0)
pid = os.fork()
if pid == 0:
    for s in range(10):
        vitals.log(s, os_child=s)
    e.log(1, explicit=2.0)      # reopened in the child
    ok = vitals.flush(5.0) and e.flush(5.0)
    os._exit(0 if ok else 3)
_, st = os.waitpid(pid, 0)
p = mp.get_context("fork").Process(target=child)
p.start(); p.join()
for s in range(10, 20):
    vitals.log(s, parent=s)
e.log(2, explicit=3.0)
e.close()
print("done", os.waitstatus_to_exitcode(st), p.exitcode)
EOF
check "fork: children ended cleanly" grep -q "^done 0 0" "$T/fork.out"
check "fork: parent, os.fork child and multiprocessing child all stored" \
	sh -c "n() { '$BIN/vitals' query --db '$DB' --run fork --metric \$1 | tail -n +2 | grep -c ''; };
	       [ \$(n parent) = 20 ] && [ \$(n os_child) = 10 ] && [ \$(n mp_child) = 10 ] && [ \$(n explicit) = 3 ]"
check "fork: each process its own incarnation" \
	sh -c "[ \$('$BIN/vitals' emitters --db '$DB' --run fork | tail -n +2 | grep -c '') -ge 5 ]"

# Exit flushes what was logged, with no call.
VITALS_RUN=exit "$PY" -c '
import vitals
for s in range(1000):
    vitals.log(s, loss=s * 0.001)
'
check "exit: the last samples are stored without a flush call" \
	sh -c "[ \$('$BIN/vitals' query --db '$DB' --run exit --metric loss | tail -n +2 | grep -c '') = 1000 ]"
"$PY" -c '
import vitals
e = vitals.Emitter(run="exit2", rank=1)
for s in range(1000):
    e.log(s, loss=s * 0.001)
'
check "exit: an explicit emitter left open is flushed too" \
	sh -c "[ \$('$BIN/vitals' query --db '$DB' --run exit2 --metric loss | tail -n +2 | grep -c '') = 1000 ]"

# An explicit emitter; errors at open raise, log never does.
"$PY" - <<EOF >"$T/explicit.out" 2>&1
import vitals
with vitals.Emitter(run="explicit", endpoint="$EP", rank=5) as e:
    for s in range(10):
        e.log(s, loss=2.0 - s * 0.1, grad_norm=0.5)
    e.log_at(10, 1700000000123456789, loss=1.0)
    assert e.flush(5.0)
    print("incarnation", e.incarnation != 0)
e.log(11, loss=1.0)            # closed: counted, not raised
try:
    vitals.Emitter(run="x", endpoint="nonsense://nowhere")
    print("no error")
except vitals.VitalsError as err:
    print("error", err.code)
print("done")
EOF
check "explicit: run, rank and endpoint used" \
	sh -c "[ \$('$BIN/vitals' query --db '$DB' --run explicit --metric loss --rank 5 | tail -n +2 | grep -c '') = 11 ]"
check "explicit: log_at keeps its time" \
	sh -c "'$BIN/vitals' query --db '$DB' --run explicit --metric loss --steps 10 | grep -q '^1700000000.123'"
check "explicit: bad endpoint raises VitalsError at open; log after close does not raise" \
	sh -c "grep -q '^error 6' '$T/explicit.out' && grep -q '^done' '$T/explicit.out' && grep -q 'incarnation True' '$T/explicit.out'"

# Ending: a normal exit and Ctrl-C say goodbye (the emitter is shown
# ended, no stall will be raised); an unhandled exception does not, nor
# does an explicit mark_failed().
for how in normal interrupt exception failed; do
	VITALS_RUN=end-$how "$PY" - "$how" <<'EOF' >"$T/end-$how.out" 2>&1
import sys, vitals
vitals.log(1, loss=1.0)
how = sys.argv[1]
if how == "interrupt":
    raise KeyboardInterrupt
if how == "exception":
    raise RuntimeError("the trainer crashed")
if how == "failed":
    vitals.mark_failed()
    sys.exit(1)
EOF
done
ended() {
	"$BIN/vitals" emitters --db "$DB" --run "end-$1" --format jsonl |
		python3 -c "import json, sys; print(json.loads(sys.stdin.readline())['ended'] is not None)"
}
got="$(ended normal) $(ended interrupt) $(ended exception) $(ended failed)"
echo "ended (normal, Ctrl-C, exception, mark_failed): $got"
check "ending: a normal exit and Ctrl-C end the emitter; a crash and mark_failed() do not" \
	test "$got" = "True True False False"
check "ending: the crash's sample is stored all the same" \
	sh -c "[ \$('$BIN/vitals' query --db '$DB' --run end-exception --metric loss | tail -n +2 | grep -c '') = 1 ]"

stop_collector

# No collector: exit waits at most the close timeout.
t0=$(now_ms)
VITALS_ENDPOINT=ipc://$T/nobody.sock VITALS_CLOSE_TIMEOUT_MS=300 VITALS_RUN=lost \
	"$PY" -c '
import vitals
for s in range(1000):
    vitals.log(s, loss=1.0)
print("done")' >"$T/nocoll.out" 2>&1
rc=$?
t1=$(now_ms)
echo "exit without a collector took $((t1 - t0)) ms"
check "no collector: exits 0 within the close timeout" \
	sh -c "[ $rc = 0 ] && [ $((t1 - t0)) -lt 3000 ] && grep -q done '$T/nocoll.out'"

# No library: telemetry is off, training goes on, one warning says why.
mkdir -p "$T/pkg" && cp -r emitter/python/vitals "$T/pkg/"
rm -f "$T/pkg/vitals/_where.py"
VITALS_LIB=/nonexistent/libvitals.so PYTHONPATH="$T/pkg" LD_PRELOAD= "$PY" -c '
import vitals
assert not vitals.available()
for s in range(100):
    vitals.log(s, loss=1.0)
print("done", vitals.stats()["problems"])' >"$T/nolib.out" 2>"$T/nolib.err"
check "no library: log is a no-op that does not raise" grep -q "^done {'no_library': 100}" "$T/nolib.out"
check "no library: one warning naming VITALS_LIB" \
	sh -c "[ \$(grep -c 'VITALS_LIB' '$T/nolib.err') = 1 ]"

# pip install, offline: the in-tree build backend needs nothing, and
# bundles the library it builds (tests/it_install.sh removes the tree).
if "$PY" -m pip --version >/dev/null 2>&1; then
	"$PY" -m pip install --no-index --no-cache-dir --quiet \
		--target "$T/site" ./emitter/python >"$T/pip.out" 2>&1
	check "pip install --no-index --target works" test -f "$T/site/vitals/__init__.py"
	PYTHONPATH="$T/site" VITALS_LIB= "$PY" -c '
import vitals, os
print(vitals.__file__)
print(vitals.library_path)' >"$T/pipimp.out" 2>&1
	check "installed package imports from the install folder" \
		grep -q "^$T/site/vitals/__init__.py" "$T/pipimp.out"
	check "installed package loads the libvitals.so it bundles" \
		grep -qx "$T/site/vitals/libvitals.so" "$T/pipimp.out"
	check "pip left nothing in the source tree" \
		sh -c "! ls -a emitter/python emitter/python/vitals | grep -q 'egg-info\\|^build\$\\|_where.py'"
else
	echo "skip: pip not available for $PY (Debian: apt-get install python3-pip)"
fi
finish
