#!/usr/bin/env bash
# Cross-checks proofbench's io.randread rows against fio on the same filesystem.
#
# Each pair runs the same random 4 KiB reads: one file of FILE_MIB MiB, the same
# queue depth, O_DIRECT or buffered.
# fio's psync engine pairs with the `sync` row, its io_uring engine (registered
# files and fixed buffers) with the `io_uring` row, and DEPTH fio threads doing
# psync on the one file with the `threadpool` row (DEPTH threads doing pread). A
# last line runs fio's posixaio engine (glibc's aio_read) at the same depth against
# the `threadpool` row: glibc runs the requests of one file descriptor one after
# another, so it is not the same model (see docs/METHODOLOGY.md). fio runs with its
# default options (its random map: each block once per pass; each I/O timed);
# FIO_EXTRA adds others, e.g. "--norandommap --gtod_reduce=1" (offsets drawn with
# replacement as proofbench draws them, no per-I/O clock). The buffered pairs read
# a file that is in the page cache (fio with invalidate=0 after the file was read
# once), as proofbench's buffered rows do.
# Each pair is measured ROUNDS times, alternating the two tools, so that the
# machine's drift hits both alike; the script prints each tool's median IOPS over
# the rounds and the ratio proofbench / fio.
#
# Usage: scripts/crosscheck-io.sh            (builds the release binary first)
#   IO_DIR=/mnt/nvme ROUNDS=5 FILE_MIB=1024 scripts/crosscheck-io.sh
# Needs: fio (Debian package fio), python3.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
FILE_MIB=${FILE_MIB:-256}     # the study's file size
DEPTH=${DEPTH:-32}            # the study's queue depth
READS=${READS:-16384}         # proofbench reads per sample
RUNTIME=${RUNTIME:-3}         # seconds of each fio run
MODES=${MODES:-"direct buffered"}
read -r -a FIO_EXTRA <<< "${FIO_EXTRA:-}"
PB=${PROOFBENCH:-target/release/proofbench}

if ! command -v fio >/dev/null 2>&1; then
  echo "crosscheck-io: fio not found; install it (apt-get install fio)" >&2
  exit 2
fi
[ -n "${PROOFBENCH:-}" ] || cargo build --release --quiet
root=${IO_DIR:-${TMPDIR:-/tmp}}
tmp=$(mktemp -d "$root/crosscheck-io.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fio_file="$tmp/fio.dat"

# fio's read IOPS and its CPU use (user + system, % of one CPU) from its JSON
# report (fio may print notes before the JSON).
fio_iops() {
  fio "$@" --output-format=json 2>/dev/null | python3 -c '
import json, sys
t = sys.stdin.read()
j = json.loads(t[t.index("{"):])["jobs"][0]
print("%.0f %.0f" % (j["read"]["iops"], j["usr_cpu"] + j["sys_cpu"]))'
}

# One fio run: engine (psync, psync-threads, io_uring, posixaio), direct flag.
fio_run() {
  local engine=$1 direct=$2
  local extra=()
  case $engine in
    io_uring) extra=(--iodepth="$DEPTH" --fixedbufs=1 --registerfiles=1) ;;
    posixaio) extra=(--iodepth="$DEPTH") ;;
    psync-threads) engine=psync; extra=(--numjobs="$DEPTH" --thread --group_reporting) ;;
  esac
  if [ "$direct" = 0 ]; then
    # Buffered: the file stays in the page cache, read once first.
    cat "$fio_file" >/dev/null
    extra+=(--invalidate=0)
  fi
  fio_iops --name=crosscheck --filename="$fio_file" --size="${FILE_MIB}M" --rw=randread --bs=4k \
    --direct="$direct" --ioengine="$engine" --runtime="$RUNTIME" --time_based "${extra[@]}" \
    ${FIO_EXTRA[@]+"${FIO_EXTRA[@]}"}
}

# One proofbench row's median (ops/s) and its aggregate (all timed reads over the
# sum of the timed windows, as fio counts): mode, engine.
pb_run() {
  local mode=$1 engine=$2
  local out="$tmp/pb-$RANDOM"
  "$PB" run io.randread -p mode="$mode" -p engine="$engine" -p depth="$DEPTH" -p file_mib="$FILE_MIB" \
    -p reads="$READS" --io-dir "$tmp" --json --quiet --out "$out" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
r = rows[0]
if r["status"] != "ok":
    sys.exit("proofbench row %s is %s: %s" % (r["cell"]["row_id"], r["status"], r.get("reason")))
timed = [s for s in r["samples"] if not s["warmup"]]
agg = sum(s["ops"] for s in timed) * 1e9 / sum(s["work_ns"] for s in timed)
print("%.0f %.0f" % (r["stats"]["work"]["median"], agg))'
  rm -rf "$out"
}

median() { python3 -c 'import statistics,sys; print("%.0f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

# Lay out fio's file once (fio writes it on first use).
fio --name=layout --filename="$fio_file" --size="${FILE_MIB}M" --rw=write --bs=1M --end_fsync=1 >/dev/null 2>&1

# Columns: fio's IOPS and CPU %, proofbench's median and aggregate IOPS, and the
# ratios of each to fio's (medians over the rounds).
printf '%-38s %9s %5s %9s %9s %7s %7s\n' "fio / proofbench (mode)" "fio IOPS" "cpu%" "pb median" "pb aggr" "med/fio" "agg/fio"
run_pair() {
  local mode=$1 fio_engine=$2 pb_engine=$3
  local direct=1
  [ "$mode" = direct ] || direct=0
  local f=() c=() b=() a=() x y
  for _ in $(seq "$ROUNDS"); do
    read -r x y < <(fio_run "$fio_engine" "$direct")
    f+=("$x"); c+=("$y")
    read -r x y < <(pb_run "$mode" "$pb_engine")
    b+=("$x"); a+=("$y")
  done
  local fm cm bm am
  fm=$(median "${f[@]}"); cm=$(median "${c[@]}"); bm=$(median "${b[@]}"); am=$(median "${a[@]}")
  printf '%-38s %9s %5s %9s %9s %7s %7s\n' "$fio_engine / $pb_engine ($mode)" "$fm" "$cm" "$bm" "$am" \
    "$(python3 -c "print('%.3f' % ($bm / $fm))")" "$(python3 -c "print('%.3f' % ($am / $fm))")"
}

for mode in $MODES; do
  run_pair "$mode" psync sync
  run_pair "$mode" io_uring io_uring
  run_pair "$mode" psync-threads threadpool
  run_pair "$mode" posixaio threadpool
done
echo "fio: $(fio --version); proofbench: $("$PB" --version); ${ROUNDS} rounds per pair," \
  "${FILE_MIB} MiB files on $(findmnt -no FSTYPE -T "$tmp" 2>/dev/null || stat -f -c %T "$tmp") ($root), depth ${DEPTH}, fio ${RUNTIME} s per run," \
  "proofbench ${READS} reads per sample, fio options beyond its defaults: ${FIO_EXTRA[*]:-none}"
