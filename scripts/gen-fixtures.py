#!/usr/bin/env python3
"""Copy this machine's sysfs/procfs files into a fixture tree for proofbench's tests.

The tree lives in tests/fixtures/sysfs/<name>/ and holds `sys/...` and `proc/...` exactly as
Linux lays them out and writes them: the committed evidence of the real formats.

    scripts/gen-fixtures.py copy-live NAME    # copy this machine's relevant files into NAME

It copies only files it can read; files the kernel refuses (root-only) are left out, which is
what an unprivileged reader sees as "absent". The synthetic machines the tests also use are
not files: src/topology/fake.rs writes them at test time. Python 3 standard library only.
"""

import argparse
import glob
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "sysfs"


# --------------------------------------------------------------------------- live copy

LIVE_GLOBS = [
    "sys/devices/system/cpu/" + f for f in ("online", "possible", "present", "offline", "isolated", "kernel_max")
] + [
    "sys/devices/system/cpu/smt/control",
    "sys/devices/system/cpu/smt/active",
    "sys/devices/system/cpu/cpu[0-9]*/topology/*",
] + [
    f"sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*/{f}"
    for f in ("level", "type", "size", "coherency_line_size", "shared_cpu_list", "shared_cpu_map", "id",
              "number_of_sets", "ways_of_associativity", "physical_line_partition")
] + [
    f"sys/devices/system/cpu/cpu[0-9]*/cpufreq/{f}"
    for f in ("scaling_driver", "scaling_governor", "scaling_available_governors", "scaling_min_freq",
              "scaling_max_freq", "cpuinfo_min_freq", "cpuinfo_max_freq")
] + [
    "sys/devices/system/cpu/cpufreq/boost",
    "sys/devices/system/cpu/intel_pstate/no_turbo",
    "sys/devices/system/cpu/intel_pstate/status",
] + [
    "sys/devices/system/node/" + f for f in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory")
] + [
    f"sys/devices/system/node/node[0-9]*/{f}" for f in ("cpulist", "cpumap", "distance")
] + [
    "sys/devices/system/clocksource/clocksource0/current_clocksource",
    "sys/devices/system/clocksource/clocksource0/available_clocksource",
    "sys/kernel/mm/transparent_hugepage/enabled",
    "sys/kernel/mm/transparent_hugepage/defrag",
    "sys/hypervisor/type",
] + [
    f"sys/class/dmi/id/{f}"
    for f in ("sys_vendor", "product_name", "product_version", "board_vendor", "board_name",
              "bios_vendor", "bios_version", "bios_date")
] + [
    "proc/cpuinfo", "proc/meminfo", "proc/cmdline", "proc/loadavg", "proc/self/cgroup",
] + [
    f"proc/sys/kernel/{f}"
    for f in ("hostname", "osrelease", "version", "randomize_va_space", "perf_event_paranoid", "io_uring_disabled")
] + [
    "sys/fs/cgroup/cgroup.controllers",
    "sys/fs/cgroup/unified/cgroup.controllers",
]


def cgroup_v2_path(source):
    try:
        for line in (source / "proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].strip("/")
    except OSError:
        pass
    return None


def scrub_cmdline(data):
    """Keeps the kernel's own parameters and drops the init program and its
    arguments (everything from rdinit=/init= and after a bare "--"), which
    describe the host's boot plumbing rather than the kernel's configuration."""
    words = data.decode(errors="replace").split()
    kept = []
    for w in words:
        if w == "--" or w.startswith(("rdinit=", "init=")):
            break
        kept.append(w)
    return (" ".join(kept) + "\n").encode()


def copy_live(name, source):
    source = Path(source)
    root = FIXTURES / name
    if root.exists():
        shutil.rmtree(root)
    patterns = list(LIVE_GLOBS)
    cg = cgroup_v2_path(source)
    if cg is not None:
        for mount in ("sys/fs/cgroup", "sys/fs/cgroup/unified"):
            base = f"{mount}/{cg}" if cg else mount
            patterns += [f"{base}/cpuset.cpus.effective", f"{base}/cpu.max"]
    copied = skipped = 0
    for pattern in patterns:
        for found in sorted(glob.glob(str(source / pattern))):
            rel = os.path.relpath(found, source)
            if not os.path.isfile(found):
                continue
            try:
                with open(found, "rb") as f:
                    data = f.read()
            except OSError as e:  # root-only or otherwise unreadable: leave it absent
                print(f"skip {rel}: {e.strerror}", file=sys.stderr)
                skipped += 1
                continue
            if rel == "proc/cmdline":
                data = scrub_cmdline(data)
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            copied += 1
    print(f"copied {copied} files into {root.relative_to(REPO)} ({skipped} unreadable, left out)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    live = sub.add_parser("copy-live", help="copy this machine's files into a new tree")
    live.add_argument("name")
    live.add_argument("--source", default="/", help="root to copy from (default /)")
    args = parser.parse_args()
    copy_live(args.name, args.source)


if __name__ == "__main__":
    main()
