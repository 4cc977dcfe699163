# make install as a user meets it: a trainer built with pkg-config alone,
# run against the installed vitalsd and read back with the installed
# vitals; the man pages open and tell the truth about the options; the
# systemd unit names the installed vitalsd; DESTDIR stages; make
# uninstall leaves nothing behind.
. tests/lib.sh

B=${B:-build}
SRC=$(pwd)
P=$T/prefix
# Called from `make test`: our make is not part of its job server.
unset MAKEFLAGS MFLAGS MAKELEVEL
mk() { make --no-print-directory -s B="$B" "$@"; }
# Files and links under a folder, relative to it, sorted.
files() { (cd "$1" && find . ! -type d | sort); }

mk install PREFIX="$P" >"$T/install.out" 2>&1
check "make install PREFIX=... succeeds" [ $? = 0 ]
cat >"$T/want" <<EOW
./bin/vitals
./bin/vitalsd
./include/vitals.h
./lib/libvitals.a
./lib/libvitals.so
./lib/libvitals.so.0
./lib/libvitals.so.0.1.0
./lib/pkgconfig/vitals.pc
./lib/systemd/system/vitalsd.service
./share/man/man1/vitals.1
./share/man/man3/libvitals.3
./share/man/man8/vitalsd.8
EOW
files "$P" >"$T/got"
check "install: exactly the expected files" cmp -s "$T/want" "$T/got"
[ -f "$T/got" ] && diff "$T/want" "$T/got"
check "install: the soname link and the dev link lead to the versioned file" \
	sh -c "[ \$(readlink '$P/lib/libvitals.so.0') = libvitals.so.0.1.0 ] &&
	       [ \$(readlink '$P/lib/libvitals.so') = libvitals.so.0 ] &&
	       readelf -d '$P/lib/libvitals.so.0.1.0' | grep -q 'SONAME.*\\[libvitals.so.0\\]'"
ver=$(sed -n 's/^#define VT_VERSION_STR "\(.*\)"/\1/p' include/vitals.h)
check "install: the versioned file follows VT_VERSION_STR ($ver)" \
	test -f "$P/lib/libvitals.so.$ver"

# pkg-config alone: no -I or -L of ours, nothing from the source tree.
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
check "pkg-config: version of vitals.h" [ "$(pkg-config --modversion vitals)" = "$ver" ]
check "pkg-config: --static adds libzmq" sh -c "pkg-config --static --libs vitals | grep -q -- -lzmq"
mkdir -p "$T/trainer" && cd "$T/trainer" || exit 1
cat >trainer.c <<'EOC'
#include <stdio.h>
#include <vitals.h>

int
main(int argc, char **argv)
{
	vt_opts     o;
	vt_emitter *em;
	int         rc;

	vt_opts_init(&o);
	o.run = argc > 1 ? argv[1] : "installed";
	if ((rc = vt_open(&o, &em)) != 0) {
		fprintf(stderr, "vt_open: %s\n", vt_strerror(rc));
		return 1;
	}
	for (uint64_t step = 0; step < 100; step++)
		vt_emit(em, "loss", step, 1.0 / (double) (step + 1));
	rc = vt_flush(em, 10000);
	vt_close(em);
	printf("version %u.%u.%u\n", vt_version() >> 16,
	    (vt_version() >> 8) & 0xff, vt_version() & 0xff);
	return rc != 0;
}
EOC
# shellcheck disable=SC2046
cc -Wall -Werror trainer.c $(pkg-config --cflags --libs vitals) -o trainer 2>"$T/cc.err"
check "a trainer builds with pkg-config --cflags --libs vitals alone" [ -x trainer ]
cat "$T/cc.err"
# shellcheck disable=SC2046
cc -Wall -Werror trainer.c $(pkg-config --cflags vitals) "$P/lib/libvitals.a" \
	$(pkg-config --static --libs vitals | sed 's/-lvitals//') -o trainer-static 2>"$T/cc.err"
check "a trainer links libvitals.a with pkg-config --static" \
	sh -c "[ -x trainer-static ] && ! ldd trainer-static | grep -q libvitals"
cat "$T/cc.err"
cd "$SRC" || exit 1

# The installed vitalsd, the trainer on the installed library, the
# installed vitals reading back.
BIN=$P/bin
start_collector
LD_LIBRARY_PATH="$P/lib" "$T/trainer/trainer" inst >"$T/trainer.out" 2>&1
check "trainer: ran and its samples were acknowledged" [ $? = 0 ]
check "trainer: loaded the installed libvitals.so.0 ($ver)" \
	sh -c "LD_LIBRARY_PATH='$P/lib' ldd '$T/trainer/trainer' | grep -q '$P/lib/libvitals.so.0' &&
	       grep -qx 'version $ver' '$T/trainer.out'"
"$T/trainer/trainer-static" inst-static >/dev/null 2>&1
check "static trainer: ran and its samples were acknowledged" [ $? = 0 ]
"$P/bin/vitals" query --db "$DB" --run inst --metric loss >"$T/q.csv"
check "installed vitals: 100 samples of the trainer, exact" \
	sh -c "[ \$(tail -n +2 '$T/q.csv' | grep -c '') = 100 ] &&
	       grep -q '^[0-9.]*,3,0,loss,0.25,inst,' '$T/q.csv'"
check "installed vitals: the static trainer's samples too" \
	sh -c "'$P/bin/vitals' query --db '$DB' --run inst-static --metric loss | tail -n +2 | grep -c '' | grep -qx 100"
check "installed vitalsd stops cleanly" stop_collector

# The man pages open without a terminal, without warnings, and say what
# the programs do.
for page in man1/vitals.1:vitals man8/vitalsd.8:vitalsd man3/libvitals.3:libvitals; do
	f=$P/share/man/${page%%:*}
	pg=${page#*:}
	MANWIDTH=80 man --warnings -l "$f" >"$T/man.out" 2>"$T/man.err"
	rc=$?
	check "man -l $pg: renders (exit 0, no warnings, NAME section)" \
		sh -c "[ $rc = 0 ] && [ ! -s '$T/man.err' ] && grep -q '^NAME' '$T/man.out' &&
		       grep -q '^       $pg' '$T/man.out'"
	cat "$T/man.err"
	check "man -l $pg | head works without a terminal" \
		sh -c "man -l '$f' </dev/null 2>/dev/null | head -n 3 | grep -q ."
done
# True to the programs: every option vitalsd --help lists, every command
# vitals help lists, every function vitals.h declares is in its page.
missing=
for o in $("$P/bin/vitalsd" --help | grep -o -- '--[a-z-]*' | grep -vx -- --opt | sort -u); do
	grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$P/share/man/man8/vitalsd.8" || missing="$missing $o"
done
check "vitalsd(8) documents every option of vitalsd --help" [ -z "$missing" ]
[ -n "$missing" ] && echo "missing in vitalsd.8:$missing"
missing=
for c in $("$P/bin/vitals" help | sed -n 's/^  \([a-z]\{2,\}\) .*/\1/p;s/^  \([a-z]\{2,\}\)$/\1/p'); do
	grep -q "^\.B $c\( \|$\)\|^\.BR $c " "$P/share/man/man1/vitals.1" || missing="$missing $c"
done
check "vitals(1) documents every command of vitals help" [ -z "$missing" ]
[ -n "$missing" ] && echo "missing in vitals.1:$missing"
missing=
for fn in $(grep -o '^[a-z].* \**\(vt_[a-z_]*\)(' include/vitals.h | grep -o 'vt_[a-z_]*(' | tr -d '('); do
	grep -q "^\.BR $fn ()" "$P/share/man/man3/libvitals.3" &&
		grep -Eq "^\.BI? .*[ *]$fn\(" "$P/share/man/man3/libvitals.3" || missing="$missing $fn"
done
check "libvitals(3) has the prototype and a description of every function" [ -z "$missing" ]
[ -n "$missing" ] && echo "missing in libvitals.3:$missing"

# The systemd unit runs the installed vitalsd on /var/lib/vitals.
U=$P/lib/systemd/system/vitalsd.service
check "unit: ExecStart is the installed vitalsd on /var/lib/vitals" \
	grep -q "^ExecStart=$P/bin/vitalsd .*--db /var/lib/vitals" "$U"
check "unit: state directory, own user, restart, hardening" \
	sh -c "grep -qx StateDirectory=vitals '$U' && grep -qx DynamicUser=yes '$U' &&
	       grep -qx Restart=on-failure '$U' && grep -qx NoNewPrivileges=yes '$U' &&
	       grep -qx ProtectSystem=strict '$U'"
if command -v systemd-analyze >/dev/null 2>&1; then
	MANPATH=$P/share/man systemd-analyze verify "$U" >"$T/verify.out" 2>&1
	check "unit: systemd-analyze verify finds nothing" \
		sh -c "[ $? = 0 ] && [ ! -s '$T/verify.out' ]"
	cat "$T/verify.out"
fi

# The Python package is self-contained: pip-installed into a venv,
# offline, from a copy of the source tree that is then deleted, it logs
# with the libvitals.so it bundles. From a copy of emitter/python alone,
# it uses the library installed above through the system loader.
PY=${PYTHON:-python3}
pyrun() {
	(cd "$T" && env -u PYTHONPATH -u VITALS_LIB -u LD_LIBRARY_PATH -u LD_PRELOAD \
		"$@" "$T/venv/bin/python" -c '
import sys, vitals
print(vitals.library_path)
for s in range(50):
    vitals.log(s, loss=1.0 / (s + 1), lr=3e-4)
print("available" if vitals.available() else "unavailable")
')
}
rows() { "$P/bin/vitals" query --db "$DB" --run "$1" --metric loss | tail -n +2 | grep -c ''; }
if ! "$PY" -m venv "$T/venv" >"$T/venv.out" 2>&1; then
	cat "$T/venv.out"
	fail "python3 -m venv (Debian: apt-get install python3-venv)"
else
	BIN=$P/bin
	start_collector
	mkdir "$T/src"
	tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$T/src"
	"$T/venv/bin/pip" install --no-index --no-cache-dir -q "$T/src/emitter/python" >"$T/pip.out" 2>&1
	check "pip install from a copy of the tree into a venv, offline" [ $? = 0 ]
	cat "$T/pip.out"
	rm -rf "$T/src"
	VITALS_RUN=venv pyrun >"$T/py.out" 2>&1
	cat "$T/py.out"
	check "venv: the tree gone, the package loads the library it bundles" \
		sh -c "sed -n 1p '$T/py.out' | grep -q '^$T/venv/lib/python.*/site-packages/vitals/libvitals.so$' &&
		       grep -qx available '$T/py.out'"
	n=$(rows venv)
	check "venv: its samples are stored, exact ($n of 50)" \
		sh -c "[ $n = 50 ] &&
		       '$P/bin/vitals' query --db '$DB' --run venv --metric loss --steps 3 | grep -q ',3,0,loss,0.25,venv,'"

	cp -r emitter/python "$T/pyonly"
	"$T/venv/bin/pip" install --no-index --no-cache-dir -q --force-reinstall "$T/pyonly" >"$T/pip.out" 2>&1
	check "pip install from a copy of emitter/python alone" [ $? = 0 ]
	rm -rf "$T/pyonly"
	check "no tree: nothing bundled" sh -c "! ls '$T'/venv/lib/python*/site-packages/vitals | grep -q '\\.so'"
	VITALS_RUN=venv-sys pyrun LD_LIBRARY_PATH="$P/lib" >"$T/py.out" 2>&1
	cat "$T/py.out"
	n=$(rows venv-sys)
	check "no tree: the installed libvitals.so.0 through the system loader ($n of 50)" \
		sh -c "sed -n 1p '$T/py.out' | grep -qx libvitals.so.0 && grep -qx available '$T/py.out' &&
		       [ $n = 50 ]"
	VITALS_RUN=venv-nolib pyrun >"$T/py.out" 2>&1
	check "no tree, no library: logging is a no-op, one warning" \
		sh -c "grep -qx unavailable '$T/py.out' && [ \$(grep -c VITALS_LIB '$T/py.out') = 1 ]"
	stop_collector
fi

# DESTDIR stages: files under it, paths inside them without it.
mk install DESTDIR="$T/stage" PREFIX=/opt/vt >>"$T/install.out" 2>&1
check "make install DESTDIR=... PREFIX=/opt/vt stages under DESTDIR" \
	cmp -s "$T/want" "$(files "$T/stage/opt/vt" >"$T/got2"; echo "$T/got2")"
check "staged: vitals.pc and the unit name /opt/vt, not DESTDIR" \
	sh -c "grep -qx prefix=/opt/vt '$T/stage/opt/vt/lib/pkgconfig/vitals.pc' &&
	       grep -q '^ExecStart=/opt/vt/bin/vitalsd ' '$T/stage/opt/vt/lib/systemd/system/vitalsd.service' &&
	       ! grep -rq '$T' '$T/stage/opt/vt/lib/pkgconfig' '$T/stage/opt/vt/lib/systemd'"
mk uninstall DESTDIR="$T/stage" PREFIX=/opt/vt >>"$T/install.out" 2>&1
check "make uninstall DESTDIR=...: no file left" [ -z "$(files "$T/stage")" ]

mk uninstall PREFIX="$P" >>"$T/install.out" 2>&1
check "make uninstall PREFIX=...: no file left" [ -z "$(files "$P")" ]
files "$P"
[ "$FAILED" != 0 ] && cat "$T/install.out"
finish
