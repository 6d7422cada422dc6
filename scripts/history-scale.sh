#!/usr/bin/env bash
# How does `history show` scale with the rows of one workload? Prints the figures.
#
# A small real run of os.syscall (RUNS samples a trial, 2 trials) is
# replicated, as scripts/compare-scale.sh does, into histories of N rows of
# os.syscall in two shapes: one run of N rows (the same row under a new axis
# `copy` = 0..N-1, run.json planning every cell: N lines in the trend), and
# N/ROWS_PER_RUN runs of ROWS_PER_RUN rows each (many runs: one line per
# copy, N/ROWS_PER_RUN points on it). Each is imported into its own history
# (`history import`, timed too), then `history show os.syscall` is timed:
# wall time and peak resident memory (`/usr/bin/time -v` where present, else
# VmHWM from /proc while it runs).
#
# Usage: scripts/history-scale.sh [OUT_DIR]   (SIZES="10000 100000" by
#        default; ROWS_PER_RUN=100; RUNS=8; LIMIT=900 seconds per command;
#        KEEP=1 keeps the generated runs and histories, about 2 GB per
#        100,000 rows; PB=path uses that binary)
# Target (issue 32, item 16: 1,000 rows had taken 4.4 s, 2,000 21 s, 5,000
# 204 s, and a history of 100,000 + 20,000 rows had not shown after 580 s):
# `history show` grows about linearly in each shape (the largest size's
# time at most twice its share of the smallest's, with 2 s of slack for
# the start). Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
sizes=${SIZES:-10000 100000}
limit=${LIMIT:-900}
per_run=${ROWS_PER_RUN:-100}
start_check history-scale "history show at scale" "${1:-}"

# replicate SEED_DIR N PER_RUN DIR: N rows made of SEED_DIR's, in run
# directories of PER_RUN rows each under DIR (each run its own id and start
# time, an hour apart, so that the history holds them as separate runs).
replicate() {
    mkdir -p "$4"
    python3 - "$1" "$2" "$3" "$4" << 'EOF'
import datetime, json, os, sys
seed, n, per_run, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
run = json.load(open(f"{seed}/run.json"))
rows = [json.loads(l) for l in open(f"{seed}/rows.jsonl") if l.strip()]
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
start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
for k in range((n + per_run - 1) // per_run):
    copies = range(min(per_run, n - k * per_run))
    d = f"{out}/run-{k:06d}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/rows.jsonl", "w") as f:
        for i in copies:
            row, _, w = templates[i % len(templates)]
            f.write(fill(row, i, w) + "\n")
    r = dict(run)
    r["id"] = f"{run['id']}-{k:06d}"
    t = (start + datetime.timedelta(hours=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
    r["started_utc"] = r["finished_utc"] = t
    r["plan"] = "@PLAN@"
    r["not_run"] = []
    r["complete"] = True
    if r.get("counts"):
        r["counts"] = {"ok": len(copies), "invalid": 0, "failed": 0, "timeout": 0, "skipped": 0}
    plan = ",".join(fill(templates[i % len(templates)][1], i, templates[i % len(templates)][2]) for i in copies)
    with open(f"{d}/run.json", "w") as f:
        f.write(json.dumps(r, indent=2).replace('"@PLAN@"', f"[{plan}]"))
EOF
}

echo
echo "== A small run of os.syscall (--trials 2 --runs ${RUNS:-8}) =="
"$PB" run os.syscall --trials 2 --runs "${RUNS:-8}" --quiet --no-history --out "$out/seed" > /dev/null
seed=$(newest "$out/seed")
echo "  seed: $seed"

for shape in one many; do
    case $shape in
        one) title="one run of N rows" ;;
        many) title="runs of $per_run rows each" ;;
    esac
    for n in $sizes; do
        echo
        per=$n
        [ "$shape" = many ] && per=$per_run
        echo "== $n rows of os.syscall, $title ($(((n + per - 1) / per)) runs) =="
        rm -rf "$out/$shape-$n" "$out/$shape-$n.sqlite"
        replicate "$seed" "$n" "$per" "$out/$shape-$n"
        echo "  runs: $(du -sm "$out/$shape-$n" | cut -f1) MiB"
        timed_run "import-$shape-$n" "$PB" history --db "$out/$shape-$n.sqlite" import "$out/$shape-$n"
        echo "  history import: $wall s, peak RSS $rss MiB (exit $code)"
        [ "$code" -eq 0 ] || fail "history import of $n rows exited $code (see $out/import-$shape-$n.err)"
        timed_run "show-$shape-$n" "$PB" history --db "$out/$shape-$n.sqlite" show os.syscall --plot "$out/trend-$shape-$n.svg"
        shown=$(grep -c "^| h:" "$out/show-$shape-$n.out" || true)
        echo "  history show: $wall s, peak RSS $rss MiB (exit $code; $shown rows in its table)"
        [ "$code" -eq 0 ] || fail "history show of $n rows exited $code (see $out/show-$shape-$n.err)"
        [ "$code" -ne 0 ] || [ "$shown" -eq "$n" ] || fail "history show listed $shown rows of $n"
        eval "show_wall_${shape}_$n=$wall"
        largest=$n
        [ "${KEEP:-0}" = 1 ] || rm -rf "$out/$shape-$n" "$out/$shape-$n.sqlite" "$out/show-$shape-$n.out" "$out/trend-$shape-$n.svg"
    done
    smallest=${sizes%% *}
    if [ "$largest" != "$smallest" ]; then
        a=$(eval echo "\$show_wall_${shape}_$smallest"); b=$(eval echo "\$show_wall_${shape}_$largest")
        awk -v a="$a" -v b="$b" -v m="$smallest" -v n="$largest" -v s="$title" \
            'BEGIN { printf "  show (%s): %d rows took %.1f times as long as %d rows (%.0fx the rows)\n", s, n, b / (a > 0 ? a : 0.01), m, n / m }'
        awk -v a="$a" -v b="$b" -v m="$smallest" -v n="$largest" 'BEGIN { exit !(b <= 2 * a * n / m + 2) }' ||
            fail "history show ($title) grew faster than linearly"
    fi
done

[ "${KEEP:-0}" = 1 ] || echo "  (the generated runs and histories were removed; KEEP=1 keeps them)"
finish
