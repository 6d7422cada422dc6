#!/usr/bin/env bash
# Cross-checks proofbench's os rows against `perf bench` on the same machine.
#
# Each pair is measured ROUNDS times, alternating the two tools, so that the
# machine's drift over minutes hits both alike; the script prints each tool's
# median over the rounds and the ratio proofbench / perf. Placement is the same
# for both tools of a pair (taskset), except that perf bench sched pipe cannot pin
# its two ends to different CPUs: on two CPUs it lets the scheduler place them,
# while proofbench's cross-cpu rows pin them apart (see docs/METHODOLOGY.md).
#
# Usage: scripts/crosscheck-os.sh            (builds the release binary first)
#   ROUNDS=5 LOOPS=200000 scripts/crosscheck-os.sh
# Needs: perf (Debian package linux-perf), python3, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
LOOPS=${LOOPS:-200000}          # perf bench sched pipe round trips per run
SYSCALLS=${SYSCALLS:-10000000}  # perf bench syscall basic: fixed by perf (10M)
PB=${PROOFBENCH:-target/release/proofbench}

perf_bin=""
for p in perf /usr/bin/perf_*; do
  # Debian's /usr/bin/perf is a wrapper that refuses kernels it was not built
  # for; the versioned binary behind it works on any kernel.
  if "$p" bench sched pipe -l 1 >/dev/null 2>&1; then perf_bin=$p; break; fi
done
if [ -z "$perf_bin" ]; then
  echo "crosscheck-os: no working perf found; install it (apt-get install linux-perf)" >&2
  exit 2
fi
[ -n "${PROOFBENCH:-}" ] || cargo build --release --quiet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The first two CPUs this shell may use, on different physical cores when possible.
read -r cpu_a cpu_b < <(python3 - <<'EOF'
import os
allowed = sorted(os.sched_getaffinity(0))
cores, seen = [], set()
for c in allowed:
    try:
        sib = open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list").read().strip()
    except OSError:
        sib = str(c)
    if sib not in seen:
        seen.add(sib)
        cores.append(c)
b = cores[1] if len(cores) > 1 else (allowed[1] if len(allowed) > 1 else allowed[0])
print(allowed[0] if not cores else cores[0], b)
EOF
)

# perf bench prints "<x> usecs/op"; report nanoseconds.
perf_ns() { "$@" 2>&1 | awk '/usecs\/op/ { printf "%.1f\n", $1 * 1000 }'; }

# One proofbench row's median (ns per operation) for a workload and parameters.
pb_ns() {
  local cpus=$1; shift
  local out="$tmp/pb-$RANDOM"
  taskset -c "$cpus" "$PB" run "$@" --json --quiet --out "$out" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
r = rows[0]
if r["status"] != "ok":
    sys.exit("proofbench row %s is %s: %s" % (r["cell"]["row_id"], r["status"], r.get("reason")))
print("%.1f" % r["stats"]["work"]["median"])'
}

median() { python3 -c 'import statistics,sys; print("%.1f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

printf '%-34s %12s %12s %8s\n' "pair (CPUs)" "perf ns/op" "pb ns/op" "pb/perf"
run_pair() {
  local name=$1 cpus=$2 perf_cmd=$3; shift 3
  local p=() b=()
  for _ in $(seq "$ROUNDS"); do
    p+=("$(perf_ns taskset -c "$cpus" $perf_cmd)")
    b+=("$(pb_ns "$cpus" "$@")")
  done
  local pm bm
  pm=$(median "${p[@]}")
  bm=$(median "${b[@]}")
  printf '%-34s %12s %12s %8s\n' "$name ($cpus)" "$pm" "$bm" "$(python3 -c "print('%.3f' % ($bm / $pm))")"
}

run_pair "syscall getppid" "$cpu_a" "$perf_bin bench syscall basic" \
  os.syscall -p call=getppid
run_pair "pipe round trip, processes" "$cpu_a" "$perf_bin bench sched pipe -l $LOOPS" \
  os.ipc-rtt -p transport=pipe -p placement=same-cpu
run_pair "pipe round trip, threads" "$cpu_a" "$perf_bin bench sched pipe -T -l $LOOPS" \
  os.ipc-rtt -p transport=thread -p placement=same-cpu
if [ "$cpu_a" != "$cpu_b" ]; then
  run_pair "pipe round trip, processes" "$cpu_a,$cpu_b" "$perf_bin bench sched pipe -l $LOOPS" \
    os.ipc-rtt -p transport=pipe -p placement=cross-cpu
  run_pair "pipe round trip, threads" "$cpu_a,$cpu_b" "$perf_bin bench sched pipe -T -l $LOOPS" \
    os.ipc-rtt -p transport=thread -p placement=cross-cpu
fi
echo "perf: $("$perf_bin" --version 2>&1 | head -1); proofbench: $("$PB" --version); ${ROUNDS} rounds per pair"
