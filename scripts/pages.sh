#!/usr/bin/env bash
# Every page proofbench writes, made from real runs and checked in headless
# Chromium as the tests check the pages of their small runs: no text under
# 11 px, no overlapping text, no overflow at 800 and 1400 px, every plot
# drawn, no console error. Prints each page's figures per window.
#
#   bash scripts/pages.sh RUN_A RUN_B [NOISE_PAGE] [OUT_DIR]
#
# RUN_A and RUN_B: two run directories (two default runs of one machine
# make a fair test: `proofbench run` twice); their history database is the
# one beside RUN_B (results/history.sqlite) where there is one. NOISE_PAGE:
# the page `proofbench noise --html FILE` wrote (optional; checked as is).
# Pages and screenshots of their first screens go to OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ $# -ge 2 ] || { echo "usage: bash scripts/pages.sh RUN_A RUN_B [NOISE_PAGE] [OUT_DIR]" >&2; exit 2; }
a=$(realpath "$1"); b=$(realpath "$2"); noise=${3:+$(realpath "$3")}
start_check pages "every page in Chromium" "${4:-}"
db="$(dirname "$b")/history.sqlite"
# The first workload with an ok row: its trend and its claim.
workload=$(awk -F'"workload":"' '/"status":"ok"/ { split($2, w, "\""); print w[1]; exit }' "$b/rows.jsonl")
"$PB" report "$b" --html "$out/run.html" > /dev/null
"$PB" compare "$a" "$b" --html "$out/compare.html" > /dev/null 2>&1
"$PB" fleet "$a" "$b" --html "$out/fleet.html" > /dev/null
pages="$out/run.html:$out/compare.html:$out/fleet.html"
if [ -f "$db" ]; then
    "$PB" history --db "$db" show "$workload" --html "$out/show.html" > /dev/null
    "$PB" history --db "$db" regressions --html "$out/regressions.html" > /dev/null
    pages="$pages:$out/show.html:$out/regressions.html"
else
    fail "no history database beside $b: history show and regressions not checked"
fi
printf '[[claim]]\nworkload = "%s"\nexpect = "1ns..1000s"\n' "$workload" > "$out/claims.toml"
"$PB" check-claims "$out/claims.toml" "$b" --html "$out/claims.html" > /dev/null
pages="$pages:$out/claims.html"
if [ -n "$noise" ]; then
    cp "$noise" "$out/noise.html"
    pages="$pages:$out/noise.html"
fi
echo "pages: ${pages//:/ }"
for p in ${pages//:/ }; do
    for w in 1400 800; do
        chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$w,1600" \
            --screenshot="${p%.html}-$w.png" "file://$p" > /dev/null 2>&1 || fail "no screenshot of $p at $w px"
    done
done
PROOFBENCH_PAGES="$pages" cargo test --locked --quiet --test cli -- --ignored --nocapture \
    html::the_pages_proofbench_pages_names_pass_the_chromium_checks 2>&1 | grep -E "^/|FAILED|panicked" || true
PROOFBENCH_PAGES="$pages" cargo test --locked --quiet --test cli -- --ignored \
    html::the_pages_proofbench_pages_names_pass_the_chromium_checks > /dev/null 2>&1 || fail "a page failed its checks (above)"
finish
