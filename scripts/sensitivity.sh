#!/usr/bin/env bash
# Can proofbench see a 1-2% change on this machine, and say SAME when there is
# none? Prints the figures (lockstep pairs and decided verdicts).
#
# Part 1, noise: `proofbench noise --lockstep` on the default selection (two
#   identical variants in lockstep, each row decided SAME / DIFFERENT /
#   UNKNOWN at --equivalence 2%): rows DIFFERENT (every one false), rows that
#   can see a 2% / 5% / 10% change, rows SAME; its wall time against one
#   default run's (measured here too).
# Part 2, planted changes: REPEATS A/Bs (the change planted) and REPEATS A/As
#   (none) of each case, in lockstep at the default budget:
#     primes   cpu.primes, param=range 1% larger;
#     syscall  os.syscall, param=pad_pct=2 (2% more calls in its timed loop);
#     exe      os.syscall as exe= variants: this build against one built with
#              `--features planted-work` (2% more calls; built here into
#              target/planted, a few minutes the first time);
#     command  a C loop timing itself (a command workload), env=WORK_ITERS 2%
#              larger.
#   Each A/B row must be DIFFERENT and worse; each A/A row must not be
#   DIFFERENT.
#
# Usage: scripts/sensitivity.sh [OUT_DIR]   (REPEATS=10 by default; PART=1 or
#        2 runs one part; CASES="primes syscall" picks cases; PB=path uses that
#        binary, PLANTED=path that planted build)
# Targets: noise at most 1 row DIFFERENT, at least 90 / 125 / 139 rows that
# can see 2% / 5% / 10% (of 139), at least 120 SAME; the noise run at most
# twice a default run's wall time; each A/B DIFFERENT and worse in at least 9
# of REPEATS, each A/A DIFFERENT at most once. Run it on an otherwise idle
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
repeats=${REPEATS:-10}
cases=${CASES:-primes syscall exe command}
start_check sensitivity "sensitivity check" "${1:-}"

# tally JSON: the rows of `compare --format json` as
# "rows different regressed improved same unknown none see2 see5 see10".
tally() {
    python3 - "$1" << 'EOF'
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    data = []
rows = [r for c in (data if isinstance(data, list) else [data]) for r in c.get("rows", [])]
word = lambda w: sum(r.get("word") == w for r in rows)
verdict = lambda v: sum(r.get("verdict") == v for r in rows)
sees = lambda x: sum(r.get("sensitivity") is not None and r["sensitivity"] <= x for r in rows)
print(len(rows), word("DIFFERENT"), verdict("regressed"), verdict("improved"), word("SAME"), word("UNKNOWN"),
      sum(r.get("word") is None for r in rows), sees(0.02), sees(0.05), sees(0.10))
EOF
}

if [ "$part" = all ] || [ "$part" = 1 ]; then
    echo
    echo "== Part 1: noise --lockstep on the default selection, and one default run =="
    t0=$(date +%s)
    "$PB" noise --lockstep --equivalence 2% --quiet --no-history --out "$out/noise" > /dev/null || true
    noise_s=$(( $(date +%s) - t0 ))
    "$PB" compare "$(newest "$out/noise")" --format json > "$out/noise.json" || true
    read -r rows diff _ _ same unknown none s2 s5 s10 <<< "$(tally "$out/noise.json")"
    t0=$(date +%s)
    "$PB" run --quiet --no-history --out "$out/default" > /dev/null || true
    default_s=$(( $(date +%s) - t0 ))
    echo "  $rows rows: $diff DIFFERENT (false), $same SAME within 2%, $unknown UNKNOWN, $none not comparable"
    echo "  can see 2% / 5% / 10%: $s2 / $s5 / $s10 rows"
    echo "  wall time: noise --lockstep $noise_s s, one default run $default_s s ($(awk -v a="$noise_s" -v b="$default_s" 'BEGIN { printf "%.2f", a / b }')x)"
    python3 - "$out/noise.json" << 'EOF'
import json, sys
rows = [r for c in json.load(open(sys.argv[1])) for r in c["rows"]]
for r in rows:
    if r.get("word") == "DIFFERENT":
        print(f"  false: {r['workload']} [{r['axes']}] {r['ratio']:.4f} ({r['ratio_ci95'][0]:.4f}..{r['ratio_ci95'][1]:.4f})")
blind = sorted((r["sensitivity"], r["workload"], r["axes"]) for r in rows if r.get("sensitivity") is not None and r["sensitivity"] > 0.05)
for s, w, a in blind[-8:]:
    print(f"  sees only {100 * s:.1f}%: {w} [{a}]")
EOF
    # How far more pairs would go: each row's own spread across pairs, judged
    # as if every row had taken n pairs (ended there: the lockstep design's
    # level left at n; t quantiles from scipy, f(n) the median's factor of
    # stats::trials), and what n rounds of every row would cost (the run's
    # first round).
    python3 - "$out/noise.json" "$(newest "$out/noise")/run.json" << 'EOF'
import json, math, sys
from datetime import datetime
rows = [r for c in json.load(open(sys.argv[1])) for r in c["rows"] if r.get("pair_spread") is not None and r.get("ratio")]
rounds = json.load(open(sys.argv[2])).get("rounds") or []
when = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
round_s = (when(rounds[0]["finished_utc"]) - when(rounds[0]["started_utc"])).total_seconds() if rounds else float("nan")
# n: (t two-sided at the level left, t one-sided, f(n))
table = {6: (3.16338, 2.57058, 1.13510), 10: (2.93332, 2.50959, 1.17612), 30: (2.83155, 2.54091, 1.22502)}
for n, (td, ts, f) in table.items():
    k = f / math.sqrt(n)
    sees = [math.exp(td * k * r["pair_spread"]) - 1 for r in rows]
    same = sum(abs(math.log(r["ratio"])) + ts * k * r["pair_spread"] < math.log1p(0.02) for r in rows)
    see = [sum(x <= c for x in sees) for c in (0.02, 0.05, 0.10)]
    print(f"  if every row took {n} pairs, with its own spread: SAME {same}, can see 2% / 5% / 10%: {see[0]} / {see[1]} / {see[2]} (about {n * round_s:.0f} s of rounds)")
EOF
    [ "$diff" -le 1 ] || fail "$diff rows DIFFERENT in an A/A (target: at most 1)"
    [ "$s2" -ge 90 ] && [ "$s5" -ge 125 ] && [ "$s10" -ge 139 ] || fail "rows that can see 2/5/10%: $s2/$s5/$s10 (target 90/125/139)"
    [ "$same" -ge 120 ] || fail "$same rows SAME within 2% (target: at least 120)"
    [ "$noise_s" -le $((2 * default_s)) ] || fail "the decided A/A took $noise_s s, more than twice a default run ($default_s s)"
fi

if [ "$part" = all ] || [ "$part" = 2 ]; then
    echo
    echo "== Part 2: planted changes, $repeats repeats of each A/B and A/A, in lockstep =="
    for c in $cases; do
        case $c in
            primes)
                sel=(cpu.primes)
                ab=(--variant a=param=range=3000000 --variant b=param=range=3030000)
                aa=(--variant a=param=range=3000000 --variant b=param=range=3000000)
                what="cpu.primes, range 3,000,000 against 3,030,000 (1% larger)" ;;
            syscall)
                sel=(os.syscall)
                ab=(--variant a=param=pad_pct=0 --variant b=param=pad_pct=2)
                aa=(--variant a=param=pad_pct=0 --variant b=param=pad_pct=0)
                what="os.syscall, pad_pct 0 against 2 (2% more calls)" ;;
            exe)
                if [ -z "${PLANTED:-}" ]; then
                    echo "  building the planted build (--features planted-work) into target/planted"
                    cargo build --release --locked --quiet --features planted-work --target-dir target/planted
                    PLANTED=target/planted/release/proofbench
                fi
                cp "$PB" "$out/proofbench-copy"
                sel=(os.syscall)
                ab=(--variant "a=exe=$PB" --variant "b=exe=$PLANTED")
                aa=(--variant "a=exe=$PB" --variant "b=exe=$out/proofbench-copy")
                what="os.syscall, exe= this build against the planted build (2% more calls)" ;;
            command)
                cc -O2 -o "$out/work" scripts/sensitivity-work.c
                sed "s|@WORK@|$out/work|" scripts/sensitivity-work.toml > "$out/work.toml"
                sel=(plant.loop --workloads "$out/work.toml")
                ab=(--variant a=env=WORK_ITERS=2000000 --variant b=env=WORK_ITERS=2040000)
                aa=(--variant a=env=WORK_ITERS=2000000 --variant b=env=WORK_ITERS=2000000)
                what="a C loop timing itself, env=WORK_ITERS 2,000,000 against 2,040,000 (2% more)" ;;
            *) fail "unknown case $c"; continue ;;
        esac
        echo "  $c: $what"
        for kind in ab aa; do
            found=0 false=0 rows_total=0 t0=$(date +%s) ratios=""
            for i in $(seq 1 "$repeats"); do
                if [ "$kind" = ab ]; then vs=("${ab[@]}"); else vs=("${aa[@]}"); fi
                "$PB" run "${sel[@]}" --lockstep "${vs[@]}" --quiet --no-history --out "$out/$c-$kind-$i" > /dev/null || true
                "$PB" compare "$(newest "$out/$c-$kind-$i")" --format json > "$out/$c-$kind-$i.json" || true
                read -r rows diff regressed _ _ _ _ _ _ _ <<< "$(tally "$out/$c-$kind-$i.json")"
                rows_total=$((rows_total + rows))
                [ "$rows" -gt 0 ] && [ "$regressed" -eq "$rows" ] && found=$((found + 1))
                [ "$diff" -gt 0 ] && false=$((false + 1))
                ratios="$ratios $(python3 -c "import json,sys; print(','.join(f\"{r['ratio']:.4f}\" if r.get('ratio') else 'n/a' for c in json.load(open(sys.argv[1])) for r in c['rows']))" "$out/$c-$kind-$i.json" 2> /dev/null || echo n/a)"
            done
            secs=$(( $(date +%s) - t0 ))
            if [ "$kind" = ab ]; then
                echo "    A/B: every row DIFFERENT and worse in $found of $repeats repeats ($rows_total rows, $secs s); ratios:$ratios"
                [ "$found" -ge $((repeats - 1)) ] || fail "$c: the change found in $found of $repeats (target: at least $((repeats - 1)))"
            else
                echo "    A/A: a row DIFFERENT in $false of $repeats repeats ($rows_total rows, $secs s); ratios:$ratios"
                [ "$false" -le 1 ] || fail "$c: A/A DIFFERENT in $false of $repeats (target: at most 1)"
            fi
        done
    done
fi

finish
