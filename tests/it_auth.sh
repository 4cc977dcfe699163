# Authenticated network collection: vitals keygen, vitalsd with CURVE
# (--curve-secret, --allow) on loopback TCP, emitters with and without an
# allowed key, the allow file reread on SIGHUP, and the refusal to listen
# beyond loopback in plain text.
. tests/lib.sh

PORT=$((20000 + $$ % 20000))
TEP=tcp://127.0.0.1:$PORT
K=$T/keys
mkdir -p "$K"

# mode FILE: the permission bits, octal.
mode() { stat -c %a "$1"; }

# Start vitalsd with the given options; waits for its "listening" line
# (or its exit). Returns 0 if it is running.
start_tcp() {
	: >"$T/vitalsd.log"
	"$BIN/vitalsd" --db "$DB" "$@" >>"$T/vitalsd.log" 2>&1 &
	VPID=$!
	i=0
	while ! grep -q 'listening on' "$T/vitalsd.log" && [ $i -lt 100 ]; do
		kill -0 "$VPID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	grep -q 'listening on' "$T/vitalsd.log"
}

# samples RUN: how many samples of RUN are stored (0 if the run is absent).
samples() {
	"$BIN/vitals" runs --db "$DB" |
		awk -F, -v r="$1" '$1 == r { n = $6 } END { print n + 0 }'
}

# ---- keygen ----------------------------------------------------------------
(cd "$K" && "$BIN/vitals" keygen >"$T/keygen.out")
check "keygen: default prefix writes vitals.key and vitals.pub" \
	[ -f "$K/vitals.key" -a -f "$K/vitals.pub" ]
"$BIN/vitals" keygen --out "$K/server" >/dev/null &&
	"$BIN/vitals" keygen --out "$K/client" >/dev/null &&
	"$BIN/vitals" keygen --out "$K/other" >/dev/null
check "keygen: three more pairs" [ $? = 0 ]
check "keygen: secret key file is mode 600" [ "$(mode "$K/server.key")" = 600 ]
check "keygen: keys are one 40-character Z85 line each" \
	sh -c "[ \$(wc -c <'$K/client.key') = 41 ] && [ \$(wc -c <'$K/client.pub') = 41 ]"
check "keygen: the printed public key is the .pub file's" \
	grep -qF -e "$(cat "$K/vitals.pub")" "$T/keygen.out"
cp "$K/server.key" "$T/server.key.before"
"$BIN/vitals" keygen --out "$K/server" 2>"$T/keygen.err"
rc=$?
check "keygen: refuses to overwrite (exit 1, file unchanged)" \
	sh -c "[ $rc = 1 ] && cmp -s '$K/server.key' '$T/server.key.before' && grep -q exists '$T/keygen.err'"

{
	echo "# clients allowed to send to this vitalsd"
	echo
	echo "$(cat "$K/client.pub") trainer nodes"
} >"$K/allowed"

# ---- CURVE collector ----------------------------------------------------------
start_tcp --listen "$TEP" --curve-secret "$K/server.key" --allow "$K/allowed"
check "curve: vitalsd starts on $TEP with --curve-secret and --allow" [ $? = 0 ]
check "curve: vitalsd logs its public key" \
	grep -qF -e "$(cat "$K/server.pub")" "$T/vitalsd.log"

VITALS_SERVER_KEY_FILE=$K/server.pub VITALS_KEY_FILE=$K/client.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run allowed --step 7 loss=1.25
check "curve: an allowed client's emit is acknowledged" [ $? = 0 ]
check "curve: and its sample is stored" \
	sh -c "'$BIN/vitals' query --db '$DB' --run allowed --metric loss | grep -q '^[0-9.]*,7,0,loss,1.25,'"

VITALS_SERVER_KEY_FILE=$K/server.pub VITALS_KEY_FILE=$K/other.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run other --step 1 loss=9 \
	--timeout-ms 1500 2>"$T/other.err"
check "curve: a client with another key times out (exit 1)" [ $? = 1 ]
check "curve: vitalsd logs the refusal with the peer address and key" \
	grep -qF -e "from 127.0.0.1: client key $(cat "$K/other.pub") is not in" \
	"$T/vitalsd.log"

env -u VITALS_SERVER_KEY_FILE -u VITALS_KEY_FILE \
	"$BIN/vitals" emit --endpoint "$TEP" --run plain --step 1 loss=9 \
	--timeout-ms 1500 2>/dev/null
check "curve: a plain-text client (no keys) times out (exit 1)" [ $? = 1 ]
check "curve: vitalsd logs the plain-text attempt" \
	grep -q "refused a connection on $TEP" "$T/vitalsd.log"

VITALS_SERVER_KEY_FILE=$K/other.pub VITALS_KEY_FILE=$K/client.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run wrongserver --step 1 \
	loss=9 --timeout-ms 1500 2>/dev/null
check "curve: an allowed client with the wrong server key times out" \
	[ $? = 1 ]

VITALS_SERVER_KEY_FILE=$K/server.pub VITALS_KEY_FILE=$K/missing.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run badfile --step 1 loss=9 \
	2>"$T/badfile.err"
check "emitter: a missing key file is an error from vt_open (exit 1)" \
	sh -c "[ $? = 1 ] && grep -q 'CURVE key file' '$T/badfile.err'"
echo "not a key" >"$K/garbage.key"
VITALS_SERVER_KEY_FILE=$K/server.pub VITALS_KEY_FILE=$K/garbage.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run badfile --step 1 loss=9 \
	2>"$T/badfile.err"
check "emitter: a key file without a key is an error" \
	sh -c "[ $? = 1 ] && grep -q 'CURVE key file' '$T/badfile.err'"
VITALS_KEY_FILE=$K/client.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run badfile --step 1 loss=9 \
	2>"$T/badfile.err"
check "emitter: a client key without the server key is an error" \
	sh -c "[ $? = 1 ] && grep -q 'CURVE key file' '$T/badfile.err'"

check "curve: collector stops cleanly on SIGTERM" stop_collector
check "curve: only the allowed client's run is in the store" \
	[ "$("$BIN/vitals" runs --db "$DB" | tail -n +2 | cut -d, -f1)" = allowed ]
check "curve: the refused runs stored nothing" \
	[ "$(samples other)$(samples plain)$(samples wrongserver)" = 000 ]
check "store: database files are mode 600" \
	sh -c "for f in '$DB'/*.mdb; do [ \$(stat -c %a \"\$f\") = 600 ] || exit 1; done"

# ---- SIGHUP rereads the allow file ------------------------------------------
start_tcp --listen "$TEP" --curve-secret "$K/server.key" --allow "$K/allowed"
# logged LINE: waits up to 5 s for vitalsd to log it.
logged() {
	i=0
	while ! grep -qF -e "$1" "$T/vitalsd.log" && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	grep -qF -e "$1" "$T/vitalsd.log"
}
echo "$(cat "$K/other.pub") a node added later" >>"$K/allowed"
kill -HUP "$VPID"
check "SIGHUP: vitalsd rereads the allow file and says how many keys" \
	logged "client keys allowed (were 1)"
VITALS_SERVER_KEY_FILE=$K/server.pub VITALS_KEY_FILE=$K/other.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run added --step 1 loss=3 \
	--timeout-ms 5000
check "SIGHUP: a key added to the allow file is let in" [ $? = 0 ]
mv "$K/allowed" "$K/allowed.moved"
kill -HUP "$VPID"
check "SIGHUP: a missing allow file keeps the keys in use, saying why" \
	logged "keeping the 2 client keys in use"
VITALS_SERVER_KEY_FILE=$K/server.pub VITALS_KEY_FILE=$K/client.key \
	"$BIN/vitals" emit --endpoint "$TEP" --run kept --step 1 loss=3 \
	--timeout-ms 5000
check "SIGHUP: and the allowed clients still store" [ $? = 0 ]
mv "$K/allowed.moved" "$K/allowed"
check "SIGHUP: collector stops cleanly" stop_collector

# ---- listening beyond loopback --------------------------------------------------
"$BIN/vitalsd" --db "$DB" --listen "tcp://0.0.0.0:$PORT" \
	>"$T/open.log" 2>&1
rc=$?
check "open: tcp://0.0.0.0 without --insecure or CURVE: refused (exit 2)" \
	[ $rc = 2 ]
check "open: with a message naming --insecure and --curve-secret" \
	sh -c "grep -q -- '--insecure' '$T/open.log' && grep -q -- '--curve-secret' '$T/open.log'"
"$BIN/vitalsd" --db "$DB" --listen "tcp://*:$PORT" >/dev/null 2>&1
check "open: tcp://*: refused too" [ $? = 2 ]
"$BIN/vitalsd" --db "$DB" --listen "$TEP" --curve-secret "$K/server.key" \
	>/dev/null 2>&1
check "open: --curve-secret without --allow: refused" [ $? = 2 ]
start_tcp --listen "tcp://0.0.0.0:$PORT" --insecure
check "open: tcp://0.0.0.0 with --insecure starts" [ $? = 0 ]
"$BIN/vitals" emit --endpoint "$TEP" --run insecure --step 1 loss=3
check "open: a plain-text client stores through it" [ $? = 0 ]
check "open: collector stops cleanly" stop_collector
check "open: the sample is stored" [ "$(samples insecure)" = 1 ]

finish
