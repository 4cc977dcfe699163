# vitals in a fleet (docs/fleet.md), against the real servers started here
# on loopback with temporary folders: Debian's prometheus scrapes
# vitalsd --http and answers with the trainer's latest value; promtool
# accepts /metrics and the shipped rules; prometheus-alertmanager delivers
# vitals' alerts (and their resolution) to a webhook, also after being down
# while the alert fired; bad URLs are clear errors or counted failures.
# Parts whose server binary is missing are skipped and count nothing.
. tests/lib.sh

PY=${PYTHON:-python3}
# The interpreter itself: a version manager's shim can take seconds a call.
PY=$("$PY" -c 'import sys; print(sys.executable)' 2>/dev/null || echo "$PY")
export PYTHONPATH="$(pwd)/emitter/python" PYTHONDONTWRITEBYTECODE=1
export VITALS_LIB="$BIN/libvitals.so"
# A sanitizer build of the library needs its runtimes loaded first, in
# Python only (not in vitalsd, curl or the servers).
PY_PRELOAD=
for rt in asan ubsan; do
	so=$(ldd "$VITALS_LIB" 2>/dev/null | awk "/lib$rt\\./ {print \$3}")
	[ -n "$so" ] && PY_PRELOAD="${PY_PRELOAD:+$PY_PRELOAD:}$so"
done
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
ALERTMANAGER=${ALERTMANAGER:-/usr/bin/prometheus-alertmanager}
RULES=$(pwd)/docs/fleet

if ! command -v curl >/dev/null || ! "$PY" -c 'import ctypes' 2>/dev/null; then
	echo "skip: this test needs curl and python3 (apt-get install curl python3)"
	finish
	exit 0
fi

# start_vitalsd ARGS...: vitalsd on $EP and $DB; HTTP_PORT set when it
# serves http.
start_vitalsd() {
	: >"$T/vitalsd.log"
	"$BIN/vitalsd" --listen "$EP" --db "$DB" "$@" >"$T/alerts.out" 2>>"$T/vitalsd.log" &
	VPID=$!
	wait_for 10 grep -q 'listening on' "$T/vitalsd.log"
	HTTP_PORT=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/vitalsd.log")
}

metrics() { curl -sf "http://127.0.0.1:$HTTP_PORT/metrics"; }

# trainer RUN PYTHON: runs the statements with `vitals` imported and the
# run named RUN, then flushes.
trainer() {
	VITALS_RUN=$1 LD_PRELOAD=$PY_PRELOAD ASAN_OPTIONS=detect_leaks=0 "$PY" -c "
import math, time, vitals
assert vitals.available(), vitals._load_error
$2
assert vitals.flush(10.0), 'flush'
" >>"$T/trainer.log" 2>&1
}

# ---- /metrics and /healthz --------------------------------------------------
start_vitalsd --http 127.0.0.1:0
check "http: vitalsd logs the port it serves" [ -n "$HTTP_PORT" ]
trainer fleet '
for s in range(10):
    vitals.log(s, {"train/loss": 1.0 / (s + 1), "lr": 3e-4})
vitals.log(9, {"dé\"q\\\\x/ü": 2.5})
'
metrics >"$T/m1.txt"
check "metrics: the latest value of each series" \
	grep -qx 'vitals_value{run="fleet",metric="train/loss",rank="0",host="[^"]*"} 0.1' "$T/m1.txt"
check "metrics: step and last sample time of the run's rank" \
	sh -c "grep -qx 'vitals_step{run=\"fleet\",rank=\"0\"} 9' '$T/m1.txt' &&
	       grep -q '^vitals_last_sample_timestamp_seconds{run=\"fleet\",rank=\"0\"} 1[0-9]*' '$T/m1.txt'"
check "metrics: quote and backslash escaped, slash and non-ASCII letters as they are" \
	grep -qF 'vitals_value{run="fleet",metric="dé\"q\\\\x/ü",rank="0"' "$T/m1.txt"
check "metrics: the collector's health (stored, malformed, commit histogram, queue)" \
	sh -c "grep -qx 'vitals_samples_stored_total 21' '$T/m1.txt' &&
	       grep -qx 'vitals_messages_malformed_total 0' '$T/m1.txt' &&
	       grep -q '^vitals_commit_duration_seconds_bucket{le=\"+Inf\"} [1-9]' '$T/m1.txt' &&
	       grep -q '^vitals_detection_queue_bytes ' '$T/m1.txt' &&
	       grep -q '^vitals_database_size_bytes [1-9]' '$T/m1.txt'"
if [ -x "$PROMTOOL" ]; then
	check "promtool check metrics accepts /metrics" \
		sh -c "'$PROMTOOL' check metrics <'$T/m1.txt' >'$T/promtool.out' 2>&1"
else
	echo "skip: promtool checks: no $PROMTOOL (apt-get install prometheus)"
fi
curl -sf -H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5' \
	-D "$T/om.h" "http://127.0.0.1:$HTTP_PORT/metrics" >"$T/om.txt"
check "metrics: OpenMetrics when asked (content type, _total samples, # EOF)" \
	sh -c "grep -qi '^content-type: application/openmetrics-text; version=1.0.0' '$T/om.h' &&
	       grep -qx '# TYPE vitals_samples_stored counter' '$T/om.txt' &&
	       grep -qx 'vitals_samples_stored_total 21' '$T/om.txt' &&
	       [ \"\$(tail -n 1 '$T/om.txt')\" = '# EOF' ]"
check "healthz: 200 ok while the store takes writes" \
	sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$HTTP_PORT/healthz)\" = 200 ]"
check "http: other paths are 404" \
	sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$HTTP_PORT/x)\" = 404 ]"

# ---- Prometheus scrapes it -------------------------------------------------
if [ -x "$PROMETHEUS" ]; then
	PP=$(free_port)
	mkdir -p "$T/prom"
	cat >"$T/prom.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: vitals
    static_configs:
      - targets: ['127.0.0.1:$HTTP_PORT']
EOF
	spawn "$PROMETHEUS" --config.file="$T/prom.yml" --storage.tsdb.path="$T/prom" \
		--web.listen-address="127.0.0.1:$PP" >"$T/prometheus.log" 2>&1
	# has QUERY VALUE: the query's result holds one sample of that value.
	has() {
		curl -sf --data-urlencode "query=$1" "http://127.0.0.1:$PP/api/v1/query" |
			grep -q "\"value\":\[[0-9.]*,\"$2\"\]"
	}
	check "prometheus: a query returns the trainer's latest value of a metric" \
		wait_for 60 has 'vitals_value{run="fleet",metric="train/loss"}' 0.1
	check "prometheus: the series named with a quote, backslash and non-ASCII letters" \
		wait_for 10 has 'vitals_value{metric="dé\"q\\\\x/ü"}' 2.5
	check "prometheus: the target is up" wait_for 10 has 'up{job="vitals"}' 1
else
	echo "skip: prometheus scrape: no $PROMETHEUS (apt-get install prometheus)"
fi
stop_servers
stop_collector

# ---- shipped rules ---------------------------------------------------------
if [ -x "$PROMTOOL" ]; then
	check "promtool check rules docs/fleet/vitals.rules.yml" \
		"$PROMTOOL" check rules "$RULES/vitals.rules.yml"
	check "promtool test rules docs/fleet/vitals.rules.test.yml" \
		sh -c "cd '$RULES' && '$PROMTOOL' test rules vitals.rules.test.yml"
fi

# ---- bounds: --http-max-series and --http-metrics ---------------------------
rm -rf "$DB"
start_vitalsd --http 127.0.0.1:0 --http-max-series 2 --http-metrics '^train/'
trainer bounds '
for s in range(5):
    vitals.log(s, {"train/loss": 1.0, "train/acc": 0.5, "train/ppl": 3.0, "lr": 1e-3, "gpu_mem": 7.0})
'
metrics >"$T/m2.txt"
check "bounds: two series exposed, the filter and the limit counted" \
	sh -c "[ \$(grep -c '^vitals_value{' '$T/m2.txt') = 2 ] &&
	       grep -qx 'vitals_http_series_omitted{reason=\"filter\"} 2' '$T/m2.txt' &&
	       grep -qx 'vitals_http_series_omitted{reason=\"limit\"} 1' '$T/m2.txt' &&
	       grep -qx 'vitals_http_samples_omitted_total{reason=\"filter\"} 10' '$T/m2.txt' &&
	       grep -qx 'vitals_http_samples_omitted_total{reason=\"limit\"} 5' '$T/m2.txt' &&
	       ! grep -q 'metric=\"lr\"' '$T/m2.txt'"
stop_collector
"$BIN/vitalsd" --listen "$EP" --db "$DB" --http 0.0.0.0:0 >/dev/null 2>"$T/open.err"
rc=$?
check "http: refuses an address beyond loopback without --insecure" \
	sh -c "[ $rc = 2 ] && grep -q 'refusing to serve http on 0.0.0.0:0' '$T/open.err'"
"$BIN/vitalsd" --listen "$EP" --db "$DB" --http nonsense >/dev/null 2>"$T/open.err"
rc=$?
check "http: a malformed address is named" \
	sh -c "[ $rc = 2 ] && grep -q -- '--http nonsense: expected HOST:PORT' '$T/open.err'"
"$BIN/vitalsd" --listen "$EP" --db "$DB" --http 127.0.0.1:0 --http-metrics '(' >/dev/null 2>"$T/open.err"
rc=$?
check "http: a filter that does not compile is named" \
	sh -c "[ $rc = 2 ] && grep -q -- \"--http-metrics '(': at offset 1\" '$T/open.err'"

# ---- /healthz while the store refuses writes (a 4 MiB tmpfs fills) ---------
SMALL=$T/small
mkdir -p "$SMALL"
if mount -t tmpfs -o size=4m tmpfs "$SMALL" 2>/dev/null; then
	DB0=$DB
	DB=$SMALL/db
	start_vitalsd --no-detect --http 127.0.0.1:0
	# 1.2 million samples: format 7's journal records (float32 values)
	# held the 400,000 this sent before in the 4 MiB, with only the
	# folds refused.
	VITALS_RUN=full "$BIN/tests/trainer" emit --ranks 1 --metrics 20 --steps 60000 \
		--step-us 100 --flush-ms 60000 >"$T/emit.out" 2>&1 &
	TPID=$!
	code() { curl -s -o "$T/health.txt" -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/healthz"; }
	is503() { [ "$(code)" = 503 ]; }
	wait_for 60 is503
	check "healthz: 503 naming the reason while the disk is full" \
		grep -q "^store refuses writes: .*disk full" "$T/health.txt"
	check "metrics: vitals_store_writable 0 meanwhile" \
		sh -c "curl -sf http://127.0.0.1:$HTTP_PORT/metrics | grep -qx 'vitals_store_writable 0'"
	mount -o remount,size=256m "$SMALL"
	wait $TPID
	check "healthz: 200 once the store takes writes again" \
		wait_for 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$HTTP_PORT/healthz)\" = 200 ]"
	stop_collector
	umount "$SMALL"
	DB=$DB0
else
	echo "skip: healthz 503: cannot mount a tmpfs here (not root?)"
fi

# ---- Alertmanager ----------------------------------------------------------
"$BIN/vitalsd" --listen "$EP" --db "$DB" --alertmanager ftp://127.0.0.1:1 >/dev/null 2>"$T/open.err"
rc=$?
check "alertmanager: a URL that is not http is a clear error at start-up" \
	sh -c "[ $rc = 2 ] && grep -q \"alertmanager 'ftp://127.0.0.1:1': the scheme must be http or https\" '$T/open.err'"
"$BIN/vitalsd" --listen "$EP" --db "$DB" --alertmanager 'http://[oops' >/dev/null 2>"$T/open.err"
rc=$?
check "alertmanager: a malformed URL is a clear error at start-up" \
	sh -c "[ $rc = 2 ] && grep -q \"alertmanager 'http://\\[oops': not a URL\" '$T/open.err'"

# Unreachable: ingest goes on, the failure is logged and counted, and
# vitalsd stops promptly.
rm -rf "$DB"
DEAD=$(free_port)
start_vitalsd --http 127.0.0.1:0 --alertmanager "http://127.0.0.1:$DEAD" --alertmanager-resend-ms 200
t0=$(now_ms)
trainer dead '
for s in range(2000):
    vitals.log(s, {"loss": float("nan") if s % 100 == 50 else 1.0 + s % 7})
'
t1=$(now_ms)
check "alertmanager down: every sample stored" \
	wait_for 10 sh -c "curl -sf http://127.0.0.1:$HTTP_PORT/metrics | grep -qx 'vitals_samples_stored_total 2000'"
check "alertmanager down: the failure logged, naming the URL" \
	wait_for 10 grep -q "alertmanager http://127.0.0.1:$DEAD/api/v2/alerts: .*retrying" "$T/vitalsd.log"
check "alertmanager down: failed posts counted on /metrics" \
	wait_for 10 sh -c "curl -sf http://127.0.0.1:$HTTP_PORT/metrics | grep -q '^vitals_alertmanager_posts_total{result=\"error\"} [1-9]'"
t2=$(now_ms)
stop_collector
rc=$?
t3=$(now_ms)
check "alertmanager down: vitalsd stops cleanly within the post timeout" \
	sh -c "[ $rc = 0 ] && [ $((t3 - t2)) -lt 10000 ]"
echo "info: trainer with alertmanager down: $((t1 - t0)) ms"

if [ -x "$ALERTMANAGER" ]; then
	WP_FILE=$T/webhook.port
	HOOK=$T/webhook.jsonl
	: >"$HOOK"
	spawn "$PY" -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "ab") as f:
            f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_port))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
' "$WP_FILE" "$HOOK"
	wait_for 10 test -s "$WP_FILE"
	AP=$(free_port)
	cat >"$T/am.yml" <<EOF
route:
  receiver: hook
  group_by: [run]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:$(cat "$WP_FILE")/
        send_resolved: true
EOF
	start_am() {
		spawn "$ALERTMANAGER" --config.file="$T/am.yml" --storage.path="$T/am$1" \
			--web.listen-address="127.0.0.1:$AP" --cluster.listen-address= \
			>>"$T/alertmanager.log" 2>&1
		AMPID=$LAST
		wait_for 30 curl -sf "http://127.0.0.1:$AP/-/ready" >/dev/null
	}
	# notified STATUS RUN: the webhook got a notification of RUN's group
	# in that status; prints the alert's labels and annotations.
	notified() {
		grep -q "\"status\":\"$1\".*\"groupLabels\":{\"run\":\"$2\"}" "$HOOK" &&
		"$PY" - "$HOOK" "$1" "$2" <<'EOF'
import json, sys
path, status, run = sys.argv[1:]
for line in open(path, encoding="utf-8"):
    n = json.loads(line)
    if n["status"] != status or n["groupLabels"] != {"run": run}:
        continue
    for a in n["alerts"]:
        if a["status"] == status:
            l = a["labels"]
            print(" ".join("%s=%s" % kv for kv in sorted(l.items())))
            print(" ".join("%s=%s" % kv for kv in sorted(a["annotations"].items())))
            sys.exit(0)
sys.exit(1)
EOF
	}
	start_am 1
	rm -rf "$DB"
	start_vitalsd --http 127.0.0.1:0 --alertmanager "http://127.0.0.1:$AP" --alertmanager-resend-ms 1000
	trainer amrun '
for s in range(11):
    vitals.log(s, {"loss": float("nan") if s == 10 else 2.0})
vitals.flush(10.0)
time.sleep(4)
for s in range(11, 20):
    vitals.log(s, {"loss": 2.0})
'
	check "alertmanager: the NaN alert delivered to the webhook, grouped by run" \
		wait_for 30 notified firing amrun
	notified firing amrun >"$T/firing.txt"
	check "alertmanager: labels alertname, run, rank, host, metric, severity, kind" \
		grep -qx "alertname=nonfinite host=$(hostname) kind=nonfinite metric=loss rank=0 run=amrun severity=critical" "$T/firing.txt"
	check "alertmanager: annotations summary, value, baseline, step" \
		grep -qx "step=10 summary=loss is NaN at step 10 (rank 0), host $(hostname): the first non-finite value of the run value=NaN" "$T/firing.txt"
	check "alertmanager: the resolution delivered later" \
		wait_for 30 notified resolved amrun

	# Down while an alert fires, then back (with empty storage): the
	# alert still arrives.
	kill -9 "$AMPID"
	wait "$AMPID" 2>/dev/null
	# The trainer is marked failed so that its end does not finish the
	# run (which resolves what still fires): the alert must still fire
	# when Alertmanager is back.
	trainer amdown '
for s in range(20):
    vitals.log(s, {"loss": float("nan") if s >= 10 else 2.0})
vitals.mark_failed()
'
	check "alertmanager down: the post failure is logged" \
		wait_for 20 grep -q "alertmanager http://127.0.0.1:$AP/api/v2/alerts: .*retrying" "$T/vitalsd.log"
	start_am 2
	check "alertmanager back: the alert that fired meanwhile arrives" \
		wait_for 30 notified firing amdown
	check "alertmanager back: vitalsd logs the recovery" \
		grep -q "alertmanager http://127.0.0.1:$AP/api/v2/alerts: delivered again" "$T/vitalsd.log"
	metrics >"$T/m3.txt"
	check "alertmanager: vitals_alerts_firing counts the firing alert, not the resolved one" \
		sh -c "grep -qx 'vitals_alerts_firing{run=\"amdown\",rule=\"nonfinite\",severity=\"critical\"} 1' '$T/m3.txt' &&
		       grep -qx 'vitals_alerts_firing{run=\"amrun\",rule=\"nonfinite\",severity=\"critical\"} 0' '$T/m3.txt'"
	stop_collector
else
	echo "skip: alertmanager delivery: no $ALERTMANAGER (apt-get install prometheus-alertmanager)"
fi
stop_servers
finish
