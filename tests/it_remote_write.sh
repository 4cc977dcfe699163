# vitalsd --remote-write against the real receivers, started here on
# loopback with temporary folders: Debian's victoria-metrics receives a
# 1,000,000-sample run, exactly, also when vitalsd is SIGKILLed in the
# middle and started again (at-least-once: what was sent again is
# deduplicated by VictoriaMetrics, -dedup.minScrapeInterval=1ms); a
# Prometheus with its remote-write receiver takes a smaller run (20,000
# samples: the same stream, Prometheus is slower to start and query), and
# samples sent again (what a SIGKILL before a position save does) are
# refused with a 400 that vitalsd logs, counts and skips, unless
# Prometheus has out_of_order_time_window, which takes them and keeps one;
# a receiver that is down, comes back, or refuses (4xx) never stalls
# ingest and is logged and counted; bad URLs are clear errors at start.
# Parts whose server binary is missing are skipped and count nothing.
. tests/lib.sh

VM=${VICTORIA_METRICS:-/usr/bin/victoria-metrics}
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}

if ! command -v curl >/dev/null || ! command -v python3 >/dev/null; then
	echo "skip: this test needs curl and python3"
	finish
	exit 0
fi

start_vitalsd() {
	"$BIN/vitalsd" --listen "$EP" --db "$DB" --no-detect --http 127.0.0.1:0 "$@" \
		>/dev/null 2>>"$T/vitalsd.log" &
	VPID=$!
	wait_for 10 sh -c "[ \$(grep -c 'listening on' '$T/vitalsd.log') -ge $NSTART ]"
	HTTP_PORT=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/vitalsd.log" | tail -n 1)
	NSTART=$((NSTART + 1))
}
NSTART=1

# metric NAME: its value on vitalsd's /metrics (the first sample).
metric() {
	curl -sf "http://127.0.0.1:$HTTP_PORT/metrics" |
		awk -v n="$1" '$1 == n || index($1, n "{") == 1 { print $2; exit }'
}

metric_is() { [ "$(metric "$1")" = "$2" ]; }
metric_gt() { v=$(metric "$1"); [ -n "$v" ] && [ "$v" -gt "$2" ]; }

# query PORT QUERY: the value of an instant query (0 if none).
query() {
	curl -sf --data-urlencode "query=$2" "http://127.0.0.1:$1/api/v1/query" |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else 0)'
}
# count_is PORT QUERY N: the query returns N; what it returned last is
# in $T/got, for the line a failed check prints.
count_is() {
	query "$1" "$2" >"$T/got"
	[ "$(cat "$T/got")" = "$3" ]
}
# count_check NAME PORT QUERY N [WAIT_S]: check that the query returns N
# (within WAIT_S seconds), saying what it returned when it does not.
count_check() {
	if wait_for "${5:-0}" count_is "$2" "$3" "$4"; then
		ok "$1"
	else
		fail "$1"
		echo "info: $3 returned $(cat "$T/got"), not $4"
		[ -s "$T/vm.log" ] && tail -n 20 "$T/vm.log"
	fi
}

start_vm() {
	spawn "$VM" -storageDataPath="$T/vm$1" -httpListenAddr="127.0.0.1:$2" \
		-dedup.minScrapeInterval=1ms -search.latencyOffset=0 -search.disableCache \
		-loggerLevel=ERROR >>"$T/vm.log" 2>&1
	VMPID=$LAST
	wait_for 30 curl -sf "http://127.0.0.1:$2/health" >/dev/null
}

# ---- bad URLs ----------------------------------------------------------------
"$BIN/vitalsd" --listen "$EP" --db "$DB" --remote-write ftp://127.0.0.1:1/w >/dev/null 2>"$T/open.err"
rc=$?
check "bad URL: a scheme that is not http is a clear error at start-up" \
	sh -c "[ $rc = 2 ] && grep -q \"remote-write 'ftp://127.0.0.1:1/w': the scheme must be http or https\" '$T/open.err'"
"$BIN/vitalsd" --listen "$EP" --db "$DB" --remote-write 'http://[oops/w' >/dev/null 2>"$T/open.err"
rc=$?
check "bad URL: a malformed URL is a clear error at start-up, before --db is made" \
	sh -c "[ $rc = 2 ] && grep -q \"remote-write 'http://\\[oops/w': not a URL\" '$T/open.err' && [ ! -e '$DB' ]"

# ---- a receiver that is down, then back ------------------------------------------
DEAD=$(free_port)
start_vitalsd --remote-write "http://127.0.0.1:$DEAD/api/v1/write" --remote-write-lag-alert-s 1
VITALS_RUN=down "$BIN/tests/trainer" emit --ranks 2 --metrics 20 --steps 500 --step-us 1000 --finite \
	--flush-ms 30000 >"$T/emit.out" 2>&1
check "receiver down: every sample stored and acknowledged" \
	sh -c "[ \$(grep -c 'dropped 0 acked 10000' '$T/emit.out') = 2 ]"
check "receiver down: the failure logged once, naming the URL" \
	wait_for 10 sh -c "[ \$(grep -c 'remote write http://127.0.0.1:$DEAD/api/v1/write: .*retrying' '$T/vitalsd.log') = 1 ]"
check "receiver down: failed requests counted on /metrics" \
	wait_for 10 metric_gt "vitals_remote_write_requests_total{url=\"http://127.0.0.1:$DEAD/api/v1/write\",result=\"error\"}" 0
check "receiver down: the samples pending on /metrics" \
	wait_for 10 metric_is vitals_remote_write_pending_samples 20000
check "receiver down: one line when the lag passes the threshold" \
	wait_for 10 sh -c "[ \$(grep -c 'is [0-9]* s behind (20000 samples pending)' '$T/vitalsd.log') = 1 ]"
if [ -x "$VM" ]; then
	start_vm back "$DEAD"
	count_check "receiver back: it gets every sample" \
		"$DEAD" 'sum(count_over_time(vitals_value{run="down"}[1y]))' 20000 60
	check "receiver back: vitalsd logs the recovery and that it caught up" \
		wait_for 10 sh -c "grep -q 'delivered again after' '$T/vitalsd.log' && grep -q 'caught up' '$T/vitalsd.log'"
	kill -9 "$VMPID"
fi
t0=$(now_ms)
stop_collector
rc=$?
check "receiver down: vitalsd stops cleanly at once" sh -c "[ $rc = 0 ] && [ $(($(now_ms) - t0)) -lt 5000 ]"

if [ ! -x "$VM" ]; then
	echo "skip: VictoriaMetrics parts: no $VM (apt-get install victoria-metrics)"
	stop_servers
	finish
	exit $?
fi

# ---- VictoriaMetrics: 1,000,000 samples, vitalsd SIGKILLed in the middle ------
rm -rf "$DB"
VP=$(free_port)
start_vm 1 "$VP"
URL=http://127.0.0.1:$VP/api/v1/write
start_vitalsd --remote-write "$URL"
# 8 ranks x 50 metrics x 2,500 steps, at least 1 ms apart: one sample per
# series and millisecond (a receiver keeps one sample per series and
# timestamp). Finite values: VictoriaMetrics drops NaN.
VITALS_RUN=big "$BIN/tests/trainer" emit --ranks 8 --metrics 50 --steps 2500 --step-us 1000 \
	--finite --flush-ms 60000 >"$T/big.out" 2>&1 &
TPID=$!
check "victoria-metrics: samples forwarded while the run goes on" \
	wait_for 60 metric_gt vitals_remote_write_samples_total 100000
# Positions are saved once a second: some of them before the SIGKILL.
sleep 1.5
SENT1=$(metric vitals_remote_write_samples_total)
kill_collector
start_vitalsd --remote-write "$URL"
wait $TPID
check "victoria-metrics: the trainer's 1,000,000 samples stored across the SIGKILL" \
	sh -c "[ \$(grep -c 'dropped 0 acked 125000' '$T/big.out') = 8 ]"
count_check "victoria-metrics: a count query returns exactly 1,000,000" \
	"$VP" 'sum(count_over_time(vitals_value{run="big"}[1y]))' 1000000 60
count_check "victoria-metrics: vitals_step, one sample per rank and step (20,000)" \
	"$VP" 'sum(count_over_time(vitals_step{run="big"}[1y]))' 20000
count_check "victoria-metrics: vitals_step of a rank reaches its last step" \
	"$VP" 'max_over_time(vitals_step{run="big",rank="3"}[1y])' 2499
# Everything the restarted vitalsd had to send is sent.
wait_for 60 metric_is vitals_remote_write_pending_samples 0
SENT2=$(metric vitals_remote_write_samples_total)
echo "info: vitalsd sent $SENT1 samples before the SIGKILL, $SENT2 after the restart"
# (What it sent again is not SENT1 + SENT2 - 1,000,000: the positions
# saved after SENT1 was read, before the SIGKILL, count too. That none
# was lost is the count query above.)
check "victoria-metrics: the restarted vitalsd resumed where it was (sent fewer than 1,000,000)" \
	sh -c "[ '$SENT2' -lt 1000000 ]"
check "victoria-metrics: nothing pending" metric_is vitals_remote_write_pending_samples 0

# Samples stored after newer ones of their series were sent (a spool
# sent once the run went on; a batch the emitter resent after a restart
# of vitalsd, behind newer ones) are sent too: what is new is what was
# stored since, whatever its step and time.
stop_collector
VITALS_CLOSE_TIMEOUT_MS=300 VITALS_RUN=late "$BIN/tests/trainer" emit --ranks 1 --metrics 5 \
	--steps 100 --step-us 2000 --finite --flush-ms 50 >/dev/null 2>"$T/late.err"
check "late: the trainer without vitalsd spooled its 500 samples" \
	grep -q '^vitals: 500 samples not acknowledged .*spooled to' "$T/late.err"
start_vitalsd --remote-write "$URL"
VITALS_RUN=late "$BIN/tests/trainer" emit --ranks 1 --metrics 5 --steps 100 --first-step 100 --step-us 2000 \
	--finite --flush-ms 50 >/dev/null 2>&1
count_check "late: the later steps forwarded (500 samples)" \
	"$VP" 'sum(count_over_time(vitals_value{run="late"}[1y]))' 500 60
"$BIN/vitals" spool send >"$T/send.out" 2>&1
check "late: the spool sent afterwards is stored" grep -q ': 500 stored, 0 already stored' "$T/send.out"
count_check "late: the spooled, earlier samples forwarded too (1,000 samples)" \
	"$VP" 'sum(count_over_time(vitals_value{run="late"}[1y]))' 1000 60
check "late: nothing pending" wait_for 10 metric_is vitals_remote_write_pending_samples 0

# A path the receiver refuses: a 4xx is logged, counted and skipped;
# ingest goes on.
stop_collector
rm -rf "$DB"
start_vitalsd --remote-write "http://127.0.0.1:$VP/api/v1/nowhere"
VITALS_RUN=refused "$BIN/tests/trainer" emit --ranks 1 --metrics 10 --steps 100 --finite \
	--flush-ms 30000 >"$T/emit.out" 2>&1
check "refused (4xx): samples stored, the refusal logged with the reply" \
	wait_for 10 sh -c "grep -q 'dropped 0 acked 1000' '$T/emit.out' &&
	                   grep -q 'remote write http://127.0.0.1:$VP/api/v1/nowhere refused [0-9]* samples (HTTP 4[0-9][0-9])' '$T/vitalsd.log'"
check "refused (4xx): counted on /metrics" \
	wait_for 10 metric_is vitals_remote_write_samples_refused_total 1000
check "refused (4xx): skipped, nothing pending" \
	wait_for 10 metric_is vitals_remote_write_pending_samples 0
stop_collector
kill -9 "$VMPID"

# ---- Prometheus's remote-write receiver ---------------------------------------
# start_prom NAME [out_of_order_time_window]: a Prometheus with its
# receiver on PP.
start_prom() {
	PP=$(free_port)
	mkdir -p "$T/prom$1"
	printf 'global:\n  scrape_interval: 1h\n' >"$T/prom$1.yml"
	[ -z "${2:-}" ] ||
		printf 'storage:\n  tsdb:\n    out_of_order_time_window: %s\n' "$2" >>"$T/prom$1.yml"
	spawn "$PROMETHEUS" --config.file="$T/prom$1.yml" --storage.tsdb.path="$T/prom$1" \
		--web.listen-address="127.0.0.1:$PP" --web.enable-remote-write-receiver \
		>"$T/prometheus$1.log" 2>&1
	wait_for 30 curl -sf "http://127.0.0.1:$PP/-/ready" >/dev/null
}
# all_taken N: N samples delivered, none refused.
all_taken() {
	metric_is vitals_remote_write_samples_total "$1" &&
		metric_is vitals_remote_write_samples_refused_total 0
}
# replay: vitalsd on a copy of the store made before it forwarded
# anything. Its positions say nothing was sent: it sends again what the
# receiver has, as a vitalsd SIGKILLed before it saved its positions does
# (deterministically, where a real SIGKILL may land after a save).
replay() {
	stop_collector
	rm -rf "$DB"
	cp -r "$T/db.unsent" "$DB"
	start_vitalsd --remote-write "http://127.0.0.1:$PP/api/v1/write"
}
if [ -x "$PROMETHEUS" ]; then
	start_prom 1
	# The run stored first, without forwarding, and kept as it is.
	rm -rf "$DB"
	start_vitalsd
	VITALS_RUN=prom "$BIN/tests/trainer" emit --ranks 2 --metrics 20 --steps 500 --step-us 1000 \
		--finite --flush-ms 30000 >"$T/emit.out" 2>&1
	stop_collector
	cp -r "$DB" "$T/db.unsent"
	start_vitalsd --remote-write "http://127.0.0.1:$PP/api/v1/write"
	count_check "prometheus: its remote-write receiver takes the stream (20,000 samples)" \
		"$PP" 'sum(count_over_time(vitals_value{run="prom"}[1h]))' 20000 60
	count_check "prometheus: vitals_step of each rank (1,000 samples)" \
		"$PP" 'sum(count_over_time(vitals_step{run="prom"}[1h]))' 1000
	check "prometheus: no request refused" \
		metric_is vitals_remote_write_samples_refused_total 0

	# Sent again (at-least-once): without out_of_order_time_window,
	# Prometheus refuses a request holding a sample older than its
	# newest one of the series.
	replay
	check "prometheus, sent again: the request refused (HTTP 400), logged with Prometheus' reply" \
		wait_for 30 grep -q "refused 20000 samples (HTTP 400): out of order sample; skipped" "$T/vitalsd.log"
	check "prometheus, sent again: counted on /metrics" \
		metric_is vitals_remote_write_samples_refused_total 20000
	check "prometheus, sent again: skipped, not retried (nothing pending)" \
		wait_for 10 metric_is vitals_remote_write_pending_samples 0
	VITALS_RUN=prom2 "$BIN/tests/trainer" emit --ranks 2 --metrics 20 --steps 500 --step-us 1000 \
		--finite --flush-ms 30000 >"$T/emit.out" 2>&1
	count_check "prometheus, sent again: the next run is delivered all the same" \
		"$PP" 'sum(count_over_time(vitals_value{run="prom2"}[1h]))' 20000 60
	count_check "prometheus, sent again: Prometheus holds the first run once" \
		"$PP" 'sum(count_over_time(vitals_value{run="prom"}[1h]))' 20000
	stop_collector

	# With out_of_order_time_window, as docs/fleet.md says to configure
	# it: what is sent again is taken, and kept once.
	start_prom 2 1h
	replay
	count_check "prometheus with out_of_order_time_window: takes the stream (20,000 samples)" \
		"$PP" 'sum(count_over_time(vitals_value{run="prom"}[1h]))' 20000 60
	replay
	wait_for 30 metric_is vitals_remote_write_samples_total 20000
	check "prometheus with out_of_order_time_window: what is sent again is taken (nothing refused)" \
		all_taken 20000
	count_check "prometheus with out_of_order_time_window: and kept once (20,000 samples)" \
		"$PP" 'sum(count_over_time(vitals_value{run="prom"}[1h]))' 20000
	stop_collector
else
	echo "skip: prometheus receiver: no $PROMETHEUS (apt-get install prometheus)"
fi
stop_servers
finish
