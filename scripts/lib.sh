# Shared by the measuring scripts (sourced, not run): the results folder,
# the binary, the machine line, the failure count.
#
#   start_check NAME TITLE [OUT_DIR]  sets `out` (OUT_DIR, else a new folder
#       /tmp/proofbench-NAME.XXXXXX), `PB` (built here unless given),
#       `part` (PART, default all) and `failures`, and prints the header.
#   fail WHY          counts a missed target and says which.
#   newest DIR        the newest run directory under DIR.
#   finish            prints the verdict line and exits with it.

start_check() {
    out=${3:-$(mktemp -d "/tmp/proofbench-$1.XXXXXX")}
    part=${PART:-all}
    mkdir -p "$out"
    if [ -z "${PB:-}" ]; then
        cargo build --release --locked --quiet
        PB=target/release/proofbench
    fi
    echo "proofbench $2: $("$PB" --version), results in $out"
    echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    failures=0
}

fail() { echo "  FAIL: $*"; failures=$((failures + 1)); }

newest() { ls -d "$1"/*/ | sort | tail -n 1; }

finish() {
    echo
    if [ "$failures" -eq 0 ]; then echo "all targets met"; else echo "$failures targets missed"; fi
    [ "$failures" -eq 0 ]
}

# timed_run NAME CMD...: runs CMD under `timeout $limit` (stdout to
# $out/NAME.out, stderr to $out/NAME.err) and sets `wall` (seconds), `rss`
# (peak, MiB) and `code`; /usr/bin/time's figures where it is installed, else
# /proc's high-water mark polled every 0.1 s.
timed_run() {
    local name=$1
    shift
    code=0
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v -o "$out/$name.time" timeout "$limit" "$@" > "$out/$name.out" 2> "$out/$name.err" || code=$?
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$out/$name.time")
        rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$out/$name.time")
    else
        local t0 hwm=0 v pid
        t0=$(date +%s.%N)
        timeout "$limit" "$@" > "$out/$name.out" 2> "$out/$name.err" &
        pid=$!
        # timeout's child is the command: its peak is what counts.
        while kill -0 "$pid" 2> /dev/null; do
            for p in $(pgrep -P "$pid") "$pid"; do
                v=$(awk '/^VmHWM/ { print $2 }' "/proc/$p/status" 2> /dev/null || true)
                [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
            done
            sleep 0.1
        done
        wait "$pid" || code=$?
        wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
        rss=$((hwm / 1024))
    fi
}
