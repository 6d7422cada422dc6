#!/usr/bin/env bash
# How long does appending a run to a long series take for `history changes`'
# change points (src/stats/changepoint.rs)? Prints the figures.
#
# Runs the ignored unit test `append_to_a_10000_run_series_figures` in a
# release build: a series of 10,000 runs without any change (the most work
# an append does: PELT prunes nothing, every run is still a candidate), the
# whole series pushed once, then 100 appends, each a push and the changes
# read again; the worst of them is the figure. Then the simulations that
# chose PELT over E-divisive means (`the_methods_compared_on_recorded_noise`),
# whose figures docs/METHODOLOGY.md quotes.
#
# Usage: scripts/changepoints.sh [OUT_DIR]   (PART=1 the append only,
#        PART=2 the comparison only)
# Target (issue 34, part 3): appending a run to a 10,000-run series takes
# under a second. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
# No binary is run (start_check would build one): the figures come from the
# library's tests in a release build.
out=${1:-$(mktemp -d /tmp/proofbench-changepoints.XXXXXX)}
part=${PART:-all}
failures=0
mkdir -p "$out"
echo "proofbench change points: $(git rev-parse --short HEAD), results in $out"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$part" = all ] || [ "$part" = 1 ]; then
    echo
    echo "== Part 1: one append to a series of 10,000 runs =="
    cargo test --release --locked --lib -- --ignored --exact \
        stats::changepoint::tests::append_to_a_10000_run_series_figures --nocapture > "$out/append.txt" 2>&1 ||
        fail "the append test did not run (see $out/append.txt)"
    grep '^changepoints:' "$out/append.txt" | sed 's/^/  /'
    worst=$(sed -n 's/^changepoints: append (push and changes), worst of 100 \([0-9.]*\) s$/\1/p' "$out/append.txt")
    if [ -z "$worst" ]; then
        fail "no append figure"
    elif awk -v w="$worst" 'BEGIN { exit !(w >= 1.0) }'; then
        fail "an append took $worst s (target: under 1 s)"
    fi
fi

if [ "$part" = all ] || [ "$part" = 2 ]; then
    echo
    echo "== Part 2: PELT against E-divisive means on recorded A/A noise =="
    cargo test --release --locked --lib -- --ignored --exact \
        stats::changepoint::tests::the_methods_compared_on_recorded_noise --nocapture > "$out/methods.txt" 2>&1 ||
        fail "the comparison did not run (see $out/methods.txt)"
    grep -E '^[0-9]+ runs, ' "$out/methods.txt" | sed 's/^/  /'
fi

finish
