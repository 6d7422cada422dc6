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
