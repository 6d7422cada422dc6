#!/usr/bin/env bash
# Cross-checks proofbench's npb.ep, npb.cg and npb.mg rows against the NAS
# Parallel Benchmarks' own C OpenMP versions on the same machine.
#
# NPB is not vendored: NPB_SRC names the user's NPB C OpenMP source tree (an
# NPB3.0-omp-C or NPB3.3-OMP-C tree: config/, sys/, common/ and one directory
# per kernel, built by `make EP CLASS=A`). The tree is copied to a temporary
# directory (never written to) and each kernel of the class is built twice with
# CC: "NPB C -O3" (-O3 -fopenmp) and "NPB C native" (-O3 -march=native
# -fopenmp). Their counterparts are proofbench's rows with `-p isa=baseline`
# (the portable code path) and `-p isa=native` (the widest this CPU has; the
# path actually taken is printed), one trial each, on the team runtime: a fixed
# thread team whose waits spin before they sleep, as OpenMP runs NPB (RUNTIME
# picks another, e.g. rayon, to see what a task runtime costs).
# Each round runs, for every kernel and thread count, the four contenders one
# after another, in an order rotated from round to round so that none always
# goes first; the machine's drift hits all alike. NPB runs with
# OMP_NUM_THREADS=T and must print "Verification = SUCCESSFUL"; proofbench
# with --workers T and its row must be ok. Every measurement is printed as it
# ends, then each contender's median Mop/s over the rounds and the ratios
# proofbench native / NPB C native and proofbench baseline / NPB C -O3 (both
# count NPB's operations: the same Mop/s formulas).
#
# Usage: NPB_SRC=~/NPB3.0-omp-C scripts/crosscheck-npb.sh   (builds the release binary first)
#   NPB_SRC=... PROOFBENCH=target/release/proofbench CLASS=S ROUNDS=1 scripts/crosscheck-npb.sh
# Environment:
#   NPB_SRC     the NPB C OpenMP source tree (required)
#   PROOFBENCH  the proofbench binary (default: target/release/proofbench, built)
#   ROUNDS      rounds (default 3)
#   THREADS     thread counts (default "1 2")
#   KERNELS     kernels among ep, cg, mg (default "ep cg mg")
#   CLASS       NPB problem class: S, W or A (default A)
#   CC          the C compiler for NPB (default gcc)
#   RUNTIME     proofbench's runtime: team (default), rayon, global-queue or spawn
# Other OMP_* variables (e.g. OMP_PROC_BIND) pass through to NPB. libgomp's
# threads spin between parallel regions by default; OMP_WAIT_POLICY=passive
# makes them sleep as rayon's do, which matters for CG's many short regions
# (proofbench's team waits as libgomp's default does).
# Needs: make, a C compiler with OpenMP, python3.
set -euo pipefail

die() { echo "crosscheck-npb: $*" >&2; exit "${code:-1}"; }
usage() { code=2 die "$@"; }

[ -n "${NPB_SRC:-}" ] || usage "NPB_SRC is not set: point it at an NPB C OpenMP source tree (e.g. NPB3.0-omp-C)"
[ -d "$NPB_SRC" ] || usage "NPB_SRC=$NPB_SRC is not a directory"
NPB_SRC=$(cd "$NPB_SRC" && pwd)
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1 2}
KERNELS=${KERNELS:-ep cg mg}
CLASS=${CLASS:-A}
CC=${CC:-gcc}
RUNTIME=${RUNTIME:-team}
PB=${PROOFBENCH:-target/release/proofbench}
read -r -a threads <<< "$THREADS"
read -r -a kernels <<< "$KERNELS"

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage "ROUNDS=$ROUNDS is not a positive count"
case $RUNTIME in rayon | global-queue | spawn | team) ;; *) usage "RUNTIME=$RUNTIME: the runtimes are rayon, global-queue, spawn and team" ;; esac
[[ $CLASS =~ ^[SWA]$ ]] || usage "CLASS=$CLASS: proofbench has the classes S, W and A"
[ "${#threads[@]}" -gt 0 ] || usage "THREADS is empty"
for t in "${threads[@]}"; do
  [[ $t =~ ^[1-9][0-9]*$ ]] || usage "THREADS has $t, not a positive count"
done
[ "${#kernels[@]}" -gt 0 ] || usage "KERNELS is empty"
for k in "${kernels[@]}"; do
  case $k in ep | cg | mg) ;; *) usage "KERNELS has $k: the kernels are ep, cg and mg" ;; esac
done
for d in config sys common EP CG MG; do
  [ -d "$NPB_SRC/$d" ] || usage "NPB_SRC=$NPB_SRC is not an NPB C source tree with EP, CG and MG (no $d/)"
done
for k in "${kernels[@]}"; do
  [ -f "$NPB_SRC/${k^^}/Makefile" ] || usage "NPB_SRC=$NPB_SRC has no ${k^^}/Makefile"
done
command -v "$CC" >/dev/null 2>&1 || usage "CC=$CC not found; install it (apt-get install gcc)"
command -v make >/dev/null 2>&1 || usage "make not found; install it (apt-get install make)"
command -v python3 >/dev/null 2>&1 || usage "python3 not found"

[ -n "${PROOFBENCH:-}" ] || cargo build --release --quiet
[ -x "$PB" ] || usage "PROOFBENCH=$PB is not an executable"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crosscheck-npb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/run"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
cc_version=$("$CC" --version | head -n 1)
echo "proofbench vs NPB C: $("$PB" --version), NPB from $NPB_SRC, class $CLASS, $ROUNDS rounds," \
  "threads ${threads[*]}, kernels ${kernels[*]}, proofbench on the $RUNTIME runtime"
echo "machine: $(nproc) CPUs (${cpu_model:-unknown CPU}), load average $load_before; $cc_version"

# The four contenders (their order is rotated each round) and the NPB builds.
contenders=(npb-o3 npb-native pb-baseline pb-native)
declare -A name=([npb-o3]="NPB C -O3" [npb-native]="NPB C native"
  [pb-baseline]="proofbench baseline" [pb-native]="proofbench native")
declare -A cflags=([npb-o3]="-O3 -fopenmp" [npb-native]="-O3 -march=native -fopenmp")

# build VARIANT: a clean copy of the tree with our make.def, every kernel built.
declare -A npb_bin
build() {
  local v=$1 src="$tmp/$1" k K log="$tmp/build-$1.log" b
  cp -R "$NPB_SRC" "$src"
  # Objects, parameters and binaries from an earlier build of the user's tree
  # would look newer than the copied sources: drop them.
  find "$src" \( -name '*.o' -o -name npbparams.h -o -path "$src/sys/setparams" \) -type f -delete
  rm -rf "${src:?}/bin" "$src/config/make.def"
  mkdir "$src/bin"
  cat > "$src/config/make.def" <<EOF
# Written by scripts/crosscheck-npb.sh ($v)
CC = $CC
CLINK = $CC
C_LIB = -lm
C_INC = -I../common
CFLAGS = ${cflags[$v]}
CLINKFLAGS = ${cflags[$v]}
UCC = $CC
BINDIR = ../bin
RAND = randdp
WTIME = wtime.c
EOF
  for k in "${kernels[@]}"; do
    K=${k^^}
    if ! make -C "$src" "$K" CLASS="$CLASS" >>"$log" 2>&1; then
      die "building ${name[$v]} $K class $CLASS failed (make $K CLASS=$CLASS, CC=$CC CFLAGS=${cflags[$v]}):" \
        "$(grep -m 1 -E 'error|Error' "$log" || tail -n 1 "$log")"
    fi
    # NPB3.0-omp-C names it bin/ep.A, NPB3.3-OMP-C bin/ep.A.x.
    for b in "$src/bin/$k.$CLASS" "$src/bin/$k.$CLASS.x"; do
      [ -x "$b" ] && npb_bin[$v.$k]=$b
    done
    [ -n "${npb_bin[$v.$k]:-}" ] || die "building ${name[$v]} $K class $CLASS left no bin/$k.$CLASS"
  done
}
for v in npb-o3 npb-native; do build "$v"; done
echo "built ${kernels[*]} class $CLASS twice with $CC: ${cflags[npb-o3]} and ${cflags[npb-native]}"

# One NPB run: sets mops and path (empty).
npb_run() {
  local v=$1 k=$2 t=$3 log="$tmp/npb.log" verdict ran
  if ! (cd "$tmp/run" && OMP_NUM_THREADS=$t "${npb_bin[$v.$k]}") >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    die "${name[$v]} $k class $CLASS with $t threads exited with an error"
  fi
  verdict=$(awk -F'= *' '/^ *Verification *=/ { print $2; exit }' "$log")
  if [ "$verdict" != SUCCESSFUL ]; then
    tail -n 20 "$log" >&2
    die "${name[$v]} $k class $CLASS with $t threads: Verification = ${verdict:-(none printed)}"
  fi
  ran=$(awk -F'= *' '/^ *(Total threads|Threads) *=/ { print $2 + 0; exit }' "$log")
  [ -z "$ran" ] || [ "$ran" = "$t" ] || die "${name[$v]} $k ran $ran threads, not $t (OMP_DYNAMIC? OMP_THREAD_LIMIT?)"
  mops=$(awk -F'= *' '/^ *Mop\/s total *=/ { print $2 + 0; exit }' "$log")
  [ -n "$mops" ] || die "${name[$v]} $k printed no Mop/s total"
  path=""
}

# One proofbench row: sets mops and path (the code path it took).
pb_run() {
  local isa=${1#pb-} k=$2 t=$3 log="$tmp/pb.log" run out extra=()
  [ "$t" -le "$(nproc)" ] || extra=(--oversubscribe)
  rm -rf "$tmp/pb"
  # --timeout: at class A a sample of ep on one worker takes some 20 s, and the
  # quick profile's 60 s would kill the row's warm-up and three samples.
  if ! "$PB" run "npb.$k" -p class="$CLASS" -p runtime="$RUNTIME" --workers "$t" -p isa="$isa" \
    --trials 1 --no-history --timeout 10m ${extra[@]+"${extra[@]}"} --out "$tmp/pb" >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    die "proofbench run npb.$k class $CLASS isa=$isa --workers $t failed"
  fi
  run=$(find "$tmp/pb" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1)
  out=$(python3 - "$run/rows.jsonl" "npb.$k" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r["cell"]["workload"] == sys.argv[2]]
if not rows:
    sys.exit("crosscheck-npb: proofbench wrote no %s row" % sys.argv[2])
r = rows[0]
if r["status"] != "ok":
    sys.exit("crosscheck-npb: proofbench row %s is %s: %s" % (r["cell"]["row_id"], r["status"], r.get("reason")))
print("%.2f %s" % (r["stats"]["headline"]["median"], (r.get("details") or {}).get("code_path", "?")))
EOF
  )
  read -r mops path <<< "$out"
}

median() { python3 -c 'import statistics,sys; print("%.2f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
ratio() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

declare -A vals paths
for r in $(seq "$ROUNDS"); do
  for k in "${kernels[@]}"; do
    for t in "${threads[@]}"; do
      for i in 0 1 2 3; do
        c=${contenders[$(( (i + r - 1) % 4 ))]}
        case $c in npb-*) npb_run "$c" "$k" "$t" ;; *) pb_run "$c" "$k" "$t" ;; esac
        vals[$k.$t.$c]="${vals[$k.$t.$c]:-} $mops"
        [ -z "$path" ] || paths[$k.$t.$c]=$path
        printf 'round %d/%d  %-2s  %2s threads  %-19s %10s Mop/s%s\n' "$r" "$ROUNDS" "$k" "$t" "${name[$c]}" \
          "$mops" "${path:+  (code path $path)}"
      done
    done
  done
done

echo
echo "Median Mop/s over $ROUNDS rounds, class $CLASS (code paths proofbench took: baseline / native):"
printf '%-6s %7s %10s %10s %10s %10s %9s %9s  %s\n' kernel threads "NPB -O3" "NPB native" "pb base" \
  "pb native" "base/-O3" "nat/nat" "pb paths"
for k in "${kernels[@]}"; do
  for t in "${threads[@]}"; do
    declare -A m=()
    for c in "${contenders[@]}"; do
      read -r -a xs <<< "${vals[$k.$t.$c]}"
      m[$c]=$(median "${xs[@]}")
    done
    printf '%-6s %7s %10s %10s %10s %10s %9s %9s  %s\n' "$k" "$t" "${m[npb-o3]}" "${m[npb-native]}" \
      "${m[pb-baseline]}" "${m[pb-native]}" "$(ratio "${m[pb-baseline]}" "${m[npb-o3]}")" \
      "$(ratio "${m[pb-native]}" "${m[npb-native]}")" "${paths[$k.$t.pb-baseline]:-?} / ${paths[$k.$t.pb-native]:-?}"
  done
done
echo "base/-O3 = proofbench baseline / NPB C -O3; nat/nat = proofbench native / NPB C native"
echo "load average before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg); CPU: ${cpu_model:-unknown};" \
  "$cc_version; NPB: $NPB_SRC; proofbench: $("$PB" --version) on the $RUNTIME runtime"
