#!/usr/bin/env bash
# How much memory does the launching side of `run --launcher` take? Prints the figures.
#
# A fake launched side streams made-up rows: the launcher is a script that
# passes the version probe through and, for `remote-run`, starts the real
# launched side only to take its start event (the plan made for this
# machine, which the launching side checks), stops it, and sends that start,
# then one row per planned cell (a real row of cpu.checksum from a small
# local run, its cell replaced by the planned one, with its real log), then
# the end. Two cases:
#
#   rows: ROWS rows (cpu.checksum --workers 1 over blocks x work_rounds,
#         100,000 by default), the row as a local --trials 3 --runs 10 run
#         writes it;
#   log:  one row whose log is one line of LOG_MIB MiB (100 by default).
#
# For each: wall time and the peak resident memory of the launching side
# (its VmHWM in /proc, read every 50 ms; and, for reference, the largest of
# it and its children from `/usr/bin/time -v`), and the size of what it
# wrote.
#
# Usage: scripts/launcher-memory.sh [OUT_DIR]   (ROWS=100000, LOG_MIB=100,
#        PB=path uses that binary, KEEP=1 keeps
#        the run directories, about 2 GB for 100,000 rows)
# Targets (issue 32, item 20: 100,000 streamed rows peaked at 4.6 GB, a
# 100 MB log line at 307 MB): the run's peak stays within twice that of
# `proofbench report` of the directory it wrote (which holds the rows once
# to render the report), plus 64 MiB: while the rows stream, the memory
# does not grow with them (the plan is held, a few events, no row); at the
# end the last group's plots and then the report are made, each from the
# rows read back once; the log line's peak stays within 64 MiB of the same
# run with its own small log (the log goes to its file in pieces of a
# MiB). Before the fix, 10,000 rows peaked at 3 times the report's peak.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
rows=${ROWS:-100000}
log_mib=${LOG_MIB:-100}
start_check launcher-memory "launching side's memory" "${1:-}"

# measure NAME CMD...: runs CMD (stdout to $out/NAME.out, stderr to
# $out/NAME.err) and sets `wall` (seconds), `rss` (the peak of CMD's own
# process, MiB: its VmHWM read every 50 ms until it ends), `tree` (the
# peak of the largest of CMD and its children, `/usr/bin/time -v`) and
# `code`.
measure() {
    local name=$1 hwm=0 v pid tpid
    shift
    code=0
    /usr/bin/time -v -o "$out/$name.time" "$@" > "$out/$name.out" 2> "$out/$name.err" &
    tpid=$!
    while kill -0 "$tpid" 2> /dev/null; do
        pid=$(pgrep -o -P "$tpid" || true)
        v=$( [ -n "$pid" ] && awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2> /dev/null || true)
        [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
        sleep 0.05
    done
    wait "$tpid" || code=$?
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$out/$name.time")
    tree=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$out/$name.time")
    code=$(awk -F': ' '/Exit status/ { print $2 }' "$out/$name.time")
    rss=$((hwm / 1024))
}

# The fake launched side: `forge.sh EXE remote-run` runs forge.py, the
# probe (`forge.sh EXE env --json`) is passed through.
cat > "$out/forge.sh" << EOF
#!/bin/sh
if [ "\$2" = remote-run ]; then exec python3 "$out/forge.py" "\$1"; fi
exec "\$@"
EOF
chmod +x "$out/forge.sh"
cat > "$out/forge.py" << 'EOF'
import json, os, subprocess, sys
exe = sys.argv[1]
spec = sys.stdin.buffer.readline()
# The real launched side makes the plan; asked to stop (its stdin closed)
# once it has said so, it ends without running it.
real = subprocess.Popen([exe, "remote-run"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
real.stdin.write(spec)
real.stdin.flush()
start = real.stdout.readline()
real.stdin.close()
real.stdout.read()
real.wait()
run = json.loads(start)["run"]
row = json.load(open(os.environ["FORGE_ROW"]))
log_mib = int(os.environ.get("FORGE_LOG_MIB", "0"))
log = "@LOG@" if log_mib else open(os.environ["FORGE_LOG"]).read()
row["cell"] = "@CELL@"
head, tail = json.dumps({"event": "row", "row": row, "log": log}, separators=(",", ":")).split('"@CELL@"')
out = sys.stdout
out.write(start.decode())
for cell in run["plan"]:
    line = head + json.dumps(cell, separators=(",", ":")) + tail + "\n"
    if not log_mib:
        out.write(line)
        continue
    # A log of one line of log_mib MiB, in pieces of a MiB before the row,
    # as the launched side sends it.
    for i in range(log_mib):
        text = "x" * (1 << 20) + ("\\n" if i == log_mib - 1 else "")
        out.write('{"event":"log","cell":%d,"text":"%s"}\n' % (cell["index"], text))
    out.write(line.replace("@LOG@", ""))
run["finished_utc"] = run["started_utc"]
run["wall_s"] = 1.0
out.write(json.dumps({"event": "end", "run": run}) + "\n")
out.flush()
EOF

echo
echo "== A real row: cpu.checksum --workers 1 --trials 3 --runs 10, here =="
"$PB" run cpu.checksum --workers 1 -p blocks=512 -p work_rounds=4 --trials 3 --runs 10 --warmup 1 --settle 0 \
    --quiet --no-history --run-dir "$out/seed" > /dev/null
head -n 1 "$out/seed/rows.jsonl" > "$out/row.json"
cp "$out/seed/logs/"*.log "$out/row.log"
echo "  a row: $(wc -c < "$out/row.json") bytes in rows.jsonl, its log $(wc -c < "$out/row.log") bytes"

# blocks x work_rounds cells: 400 block counts, as many work_rounds as it takes.
per=400
rounds=$(((rows + per - 1) / per))
blocks=$(seq -s, 64 $((64 + per - 1)))
work=$(seq -s, 1 "$rounds")

echo
echo "== $((per * rounds)) streamed rows =="
export FORGE_ROW="$out/row.json" FORGE_LOG="$out/row.log"
measure rows "$PB" run cpu.checksum --workers 1 -p "blocks=$blocks" -p "work_rounds=$work" --quiet --no-history \
    --out "$out/rows" --launcher "$out/forge.sh"
dir=$(newest "$out/rows")
size=$(du -m "$dir/rows.jsonl" | cut -f1)
got=$(wc -l < "$dir/rows.jsonl")
echo "  $got rows received: $wall s, peak RSS $rss MiB (with its children $tree MiB), rows.jsonl $size MiB (exit $code)"
[ "$code" -eq 0 ] || fail "the run exited $code (see $out/rows.err)"
[ "$got" -eq $((per * rounds)) ] || fail "$got rows of $((per * rounds)) were written"
run_rss=$rss
measure report "$PB" report "$dir"
echo "  proofbench report of that directory: $wall s, peak RSS $rss MiB (exit $code)"
[ "$run_rss" -le $((rss * 2 + 64)) ] || fail "the run's peak is more than twice the report's, plus 64 MiB"
[ "${KEEP:-0}" = 1 ] || rm -rf "$out/rows"

echo
echo "== One row with a log of one $log_mib MiB line, and with its own log =="
measure log0 "$PB" run cpu.checksum --workers 1 -p blocks=64 -p work_rounds=1 --quiet --no-history \
    --out "$out/log0" --launcher "$out/forge.sh"
base=$rss
echo "  its own log: $wall s, peak RSS $rss MiB (with its children $tree MiB) (exit $code)"
[ "$code" -eq 0 ] || fail "the run exited $code (see $out/log0.err)"
FORGE_LOG_MIB=$log_mib measure log "$PB" run cpu.checksum --workers 1 -p blocks=64 -p work_rounds=1 --quiet --no-history \
    --out "$out/log" --launcher "$out/forge.sh"
dir=$(newest "$out/log")
logged=$(du -m "$dir/logs/"*.log | cut -f1)
echo "  a $log_mib MiB line: $wall s, peak RSS $rss MiB (with its children $tree MiB), $((rss - base)) MiB more; the log file $logged MiB (exit $code)"
[ "$code" -eq 0 ] || fail "the run exited $code (see $out/log.err)"
[ "$logged" -ge "$log_mib" ] || fail "the log file holds $logged MiB of $log_mib"
[ "$rss" -le $((base + 64)) ] || fail "the log line took more than 64 MiB"
[ "${KEEP:-0}" = 1 ] || rm -rf "$out/log" "$out/log0"
finish
