#!/usr/bin/env bash
# How do `compare` and `report` scale with the rows of a run? Prints the figures.
#
# Two small real runs of os.syscall (RUNS samples a trial, 2 trials) are
# replicated into runs of N rows each (the same rows under a new axis
# `copy` = 0..N-1, so that every row has its own match key; run.json plans
# every cell). For each N of SIZES, `compare BASE CANDIDATE` of the two,
# then `report` of the largest base: wall time and peak resident memory
# (`/usr/bin/time -v` where present, else VmHWM from /proc while it runs).
#
# Usage: scripts/compare-scale.sh [OUT_DIR]   (SIZES="10000 100000" by
#        default; RUNS=8; LIMIT=900 seconds per command; KEEP=1 keeps the
#        generated runs, which take about 1 GB per 100,000 rows; PB=path
#        uses that binary)
# Targets (issue 21, item 7: 100,000 rows had not compared after 580 s,
# and the report of an 833 MB rows.jsonl took 56 s and 2.1 GB): compare
# grows about linearly (the largest size's time at most twice its share of
# the smallest's, with 2 s of slack for the start), and the report's peak
# memory stays below twice the size of rows.jsonl (the rows in memory take
# about 1.3 times their text, the report's tables most of the rest). Run it
# on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
sizes=${SIZES:-10000 100000}
limit=${LIMIT:-900}
start_check compare-scale "compare and report at scale" "${1:-}"

# replicate SEED_DIR N DIR: a run directory DIR of N rows made of SEED_DIR's.
replicate() {
    mkdir -p "$3"
    python3 - "$1" "$2" "$3" << 'EOF'
import json, sys
seed, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
run = json.load(open(f"{seed}/run.json"))
rows = [json.loads(l) for l in open(f"{seed}/rows.jsonl") if l.strip()]
# Each row once as text, its new axis value, plan index and row id as placeholders.
templates = []
for r in rows:
    c = r["cell"]
    c["axes"] = c["axes"] + ["copy"]
    c["params"]["copy"] = "@COPY@"
    c["index"] = "@INDEX@"
    c["row_id"] = "@ROWID@"
    templates.append((json.dumps(r, separators=(",", ":")), json.dumps(c, separators=(",", ":")), c["workload"]))
def fill(text, i, workload):
    return text.replace('"@COPY@"', str(i)).replace('"@INDEX@"', str(i)).replace('"@ROWID@"', f'"{i:06d}-{workload}-copy={i}"')
with open(f"{out}/rows.jsonl", "w") as f:
    for i in range(n):
        row, _, w = templates[i % len(templates)]
        f.write(fill(row, i, w) + "\n")
run["plan"] = "@PLAN@"
run["not_run"] = []
run["complete"] = True
if run.get("counts"):
    run["counts"] = {"ok": n, "invalid": 0, "failed": 0, "timeout": 0, "skipped": 0}
plan = ",".join(fill(templates[i % len(templates)][1], i, templates[i % len(templates)][2]) for i in range(n))
with open(f"{out}/run.json", "w") as f:
    f.write(json.dumps(run, indent=2).replace('"@PLAN@"', f"[{plan}]"))
EOF
}

echo
echo "== Two small runs of os.syscall (--trials 2 --runs ${RUNS:-8}) =="
for side in base candidate; do
    "$PB" run os.syscall --trials 2 --runs "${RUNS:-8}" --quiet --no-history --out "$out/seed-$side" > /dev/null
    echo "  $side: $(newest "$out/seed-$side")"
done

largest=
for n in $sizes; do
    echo
    echo "== $n rows a side =="
    for side in base candidate; do
        replicate "$(newest "$out/seed-$side")" "$n" "$out/rows-$n-$side"
    done
    echo "  rows.jsonl: $(du -m "$out/rows-$n-base/rows.jsonl" | cut -f1) MiB a side"
    timed_run "compare-$n" "$PB" compare "$out/rows-$n-base" "$out/rows-$n-candidate" --db "$out/none.sqlite"
    summary=$(grep -E "[0-9]+ DIFFERENT \(.* regressed" "$out/compare-$n.out" || echo "no summary line")
    echo "  compare: $wall s, peak RSS $rss MiB (exit $code; $summary)"
    [ "$code" -le 1 ] || fail "compare of $n rows exited $code (see $out/compare-$n.err)"
    eval "compare_wall_$n=$wall"
    largest=$n
done

echo
echo "== report of the $largest-row base run =="
size=$(du -m "$out/rows-$largest-base/rows.jsonl" | cut -f1)
timed_run "report-$largest" "$PB" report "$out/rows-$largest-base"
echo "  report: $wall s, peak RSS $rss MiB for a rows.jsonl of $size MiB (exit $code)"
[ "$code" -eq 0 ] || fail "report exited $code (see $out/report-$largest.err)"
[ "$rss" -le $((2 * size)) ] || fail "the report's peak memory is more than twice rows.jsonl"

smallest=${sizes%% *}
if [ "$largest" != "$smallest" ]; then
    a=$(eval echo "\$compare_wall_$smallest"); b=$(eval echo "\$compare_wall_$largest")
    awk -v a="$a" -v b="$b" -v m="$smallest" -v n="$largest" \
        'BEGIN { printf "  compare: %d rows took %.1f times as long as %d rows (%.0fx the rows)\n", n, b / (a > 0 ? a : 0.01), m, n / m }'
    awk -v a="$a" -v b="$b" -v m="$smallest" -v n="$largest" 'BEGIN { exit !(b <= 2 * a * n / m + 2) }' ||
        fail "compare grew faster than linearly"
fi

if [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$out"/rows-*
    echo "  (the generated runs were removed; KEEP=1 keeps them)"
fi
finish
