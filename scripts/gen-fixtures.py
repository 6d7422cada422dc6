#!/usr/bin/env python3
"""Write the fake sysfs/procfs trees that proofbench's topology and envelope tests read.

Each tree lives in tests/fixtures/sysfs/<name>/ and holds `sys/...` and `proc/...` exactly
as Linux lays them out, with exactly the text formats Linux writes (cache sizes like "32K",
cpu lists like "0-7,48-55", hex cpu masks in comma-separated 32-bit groups, /proc/cpuinfo
blocks per processor).

    scripts/gen-fixtures.py synth             # (re)write the synthetic trees 4c8t and 2s48c96t
    scripts/gen-fixtures.py copy-live NAME    # copy this machine's relevant files into NAME

`synth` is deterministic: running it again gives byte-identical trees. `copy-live` copies
only files it can read; files the kernel refuses (root-only) are left out, which is what an
unprivileged reader sees as "absent". Python 3 standard library only.
"""

import argparse
import glob
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "sysfs"


# --------------------------------------------------------------------------- formats


def cpulist(cpus):
    """Linux cpulist text: sorted, runs compressed ("0-7,48-55")."""
    cpus = sorted(set(cpus))
    out = []
    i = 0
    while i < len(cpus):
        start = end = cpus[i]
        while i + 1 < len(cpus) and cpus[i + 1] == end + 1:
            i += 1
            end = cpus[i]
        out.append(str(start) if start == end else f"{start}-{end}")
        i += 1
    return ",".join(out)


def cpumask(cpus, nbits):
    """Linux cpumask text ("%*pb"): 32-bit hex groups, most significant first, comma-separated.
    The first group is only as wide as the bits it holds ("3" for 2 CPUs, "ff" for 8)."""
    value = 0
    for c in cpus:
        value |= 1 << c
    groups = []
    remaining = nbits
    while remaining > 0:
        width = remaining % 32 or 32
        remaining -= width
        chunk = (value >> remaining) & ((1 << width) - 1)
        digits = (width + 3) // 4
        groups.append(f"{chunk:0{digits}x}")
    return ",".join(groups)


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if not text.endswith("\n"):
        text += "\n"
    path.write_text(text)


# --------------------------------------------------------------------------- synthetic machines


class Cache:
    def __init__(self, level, kind, size_k, ways, shared_fn, id_fn):
        self.level, self.kind, self.size_k, self.ways = level, kind, size_k, ways
        self.shared_fn, self.id_fn = shared_fn, id_fn  # cpu -> shared cpu list / cache id


class Machine:
    """cpus: list of dicts {id, package, die, core_id, siblings}; caches: list of Cache;
    nodes: list of cpu lists (index = node id)."""

    def __init__(self, cpus, caches, nodes, cpuinfo, extra):
        self.cpus, self.caches, self.nodes = cpus, caches, nodes
        self.cpuinfo, self.extra = cpuinfo, extra


def write_machine(root, m):
    n = len(m.cpus)
    base = "sys/devices/system/cpu"
    everything = list(range(n))
    for name in ("online", "possible", "present"):
        write(root, f"{base}/{name}", cpulist(everything))
    write(root, f"{base}/offline", "")
    write(root, f"{base}/isolated", "")
    write(root, f"{base}/kernel_max", "8191")
    smt = any(len(c["siblings"]) > 1 for c in m.cpus)
    write(root, f"{base}/smt/control", "on" if smt else "notsupported")
    write(root, f"{base}/smt/active", "1" if smt else "0")
    for c in m.cpus:
        t = f"{base}/cpu{c['id']}/topology"
        package = [d["id"] for d in m.cpus if d["package"] == c["package"]]
        die = [d["id"] for d in m.cpus if (d["package"], d["die"]) == (c["package"], c["die"])]
        pairs = {
            "physical_package_id": str(c["package"]),
            "die_id": str(c["die"]),
            "core_id": str(c["core_id"]),
            "cluster_id": str(c["core_id"]),
            "thread_siblings_list": cpulist(c["siblings"]),
            "thread_siblings": cpumask(c["siblings"], n),
            "core_cpus_list": cpulist(c["siblings"]),
            "core_cpus": cpumask(c["siblings"], n),
            "cluster_cpus_list": cpulist(c["siblings"]),
            "cluster_cpus": cpumask(c["siblings"], n),
            "core_siblings_list": cpulist(package),
            "core_siblings": cpumask(package, n),
            "package_cpus_list": cpulist(package),
            "package_cpus": cpumask(package, n),
            "die_cpus_list": cpulist(die),
            "die_cpus": cpumask(die, n),
        }
        for name, text in pairs.items():
            write(root, f"{t}/{name}", text)
        for index, cache in enumerate(m.caches):
            d = f"{base}/cpu{c['id']}/cache/index{index}"
            shared = cache.shared_fn(c["id"])
            sets = cache.size_k * 1024 // (64 * cache.ways)
            for name, text in {
                "level": str(cache.level),
                "type": cache.kind,
                "size": f"{cache.size_k}K",
                "coherency_line_size": "64",
                "ways_of_associativity": str(cache.ways),
                "number_of_sets": str(sets),
                "physical_line_partition": "1",
                "shared_cpu_list": cpulist(shared),
                "shared_cpu_map": cpumask(shared, n),
                "id": str(cache.id_fn(c["id"])),
            }.items():
                write(root, f"{d}/{name}", text)
    nb = "sys/devices/system/node"
    all_nodes = list(range(len(m.nodes)))
    for name in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory"):
        write(root, f"{nb}/{name}", cpulist(all_nodes))
    for node, cpus in enumerate(m.nodes):
        write(root, f"{nb}/node{node}/cpulist", cpulist(cpus))
        write(root, f"{nb}/node{node}/cpumap", cpumask(cpus, n))
        write(root, f"{nb}/node{node}/distance", " ".join("10" if o == node else "21" for o in all_nodes))
    blocks = []
    for c in m.cpus:
        blocks.append(m.cpuinfo(c))
    write(root, "proc/cpuinfo", "".join(b + "\n" for b in blocks))  # a blank line ends each block
    for rel, text in m.extra.items():
        write(root, rel, text)


def cpuinfo_block(c, fields):
    """One /proc/cpuinfo processor block, in the kernel's key order and tab alignment."""
    lines = [f"processor\t: {c['id']}"]
    for key, value in fields:
        if key == "power management":  # the kernel prints this one without tab or space
            lines.append(f"{key}:{value}")
            continue
        pad = "\t" if len(key) >= 8 else "\t\t"
        lines.append(f"{key}{pad}: {value}".rstrip())
    return "\n".join(lines) + "\n"


KABYLAKE_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx "
    "fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts "
    "rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx est "
    "tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes "
    "xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single pti ssbd ibrs ibpb "
    "stibp tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms "
    "invpcid rtm mpx rdseed adx smap clflushopt intel_pt xsaveopt xsavec xgetbv1 xsaves dtherm ida "
    "arat pln pts hwp hwp_notify hwp_act_window hwp_epp md_clear flush_l1d arch_capabilities"
)

CASCADELAKE_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx "
    "fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts "
    "rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx "
    "est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt "
    "tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 "
    "cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow flexpriority "
    "ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm mpx rdt_a avx512f "
    "avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl xsaveopt xsavec "
    "xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts "
    "hwp_epp pku ospke avx512_vnni md_clear flush_l1d arch_capabilities"
)

MEMINFO = """MemTotal:       {total} kB
MemFree:        {free} kB
MemAvailable:   {avail} kB
Buffers:          204800 kB
Cached:          4194304 kB
SwapCached:            0 kB
Active:          3145728 kB
Inactive:        2097152 kB
SwapTotal:       8388604 kB
SwapFree:        8388604 kB
Dirty:               128 kB
AnonPages:       1048576 kB
Shmem:             65536 kB
AnonHugePages:         0 kB
Hugepagesize:       2048 kB
"""


def machine_4c8t():
    cpus = [
        {"id": i, "package": 0, "die": 0, "core_id": i // 2, "siblings": [i - i % 2, i - i % 2 + 1]}
        for i in range(8)
    ]
    by_core = lambda cpu: [cpu - cpu % 2, cpu - cpu % 2 + 1]  # noqa: E731
    caches = [
        Cache(1, "Data", 32, 8, by_core, lambda cpu: cpu // 2),
        Cache(1, "Instruction", 32, 8, by_core, lambda cpu: cpu // 2),
        Cache(2, "Unified", 256, 4, by_core, lambda cpu: cpu // 2),
        Cache(3, "Unified", 8192, 16, lambda cpu: list(range(8)), lambda cpu: 0),
    ]

    def info(c):
        return cpuinfo_block(c, [
            ("vendor_id", "GenuineIntel"), ("cpu family", "6"), ("model", "158"),
            ("model name", "Intel(R) Core(TM) i7-7700K CPU @ 4.20GHz"), ("stepping", "9"),
            ("microcode", "0xf8"), ("cpu MHz", "800.012"), ("cache size", "8192 KB"),
            ("physical id", "0"), ("siblings", "8"), ("core id", str(c["core_id"])),
            ("cpu cores", "4"), ("apicid", str(c["id"])), ("initial apicid", str(c["id"])),
            ("fpu", "yes"), ("fpu_exception", "yes"), ("cpuid level", "22"), ("wp", "yes"),
            ("flags", KABYLAKE_FLAGS), ("vmx flags", "vnmi preemption_timer invvpid ept_x_only"),
            ("bugs", "cpu_meltdown spectre_v1 spectre_v2 spec_store_bypass l1tf mds swapgs"),
            ("bogomips", "8400.00"), ("clflush size", "64"), ("cache_alignment", "64"),
            ("address sizes", "39 bits physical, 48 bits virtual"), ("power management", ""),
        ])

    cg = "user.slice/user-1000.slice/session-2.scope"
    sysk = "proc/sys/kernel"
    extra = {
        "proc/meminfo": MEMINFO.format(total=32780128, free=28311552, avail=30408704),
        "proc/cmdline": "BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic "
        "root=UUID=3f1c9a2e-8d4b-4e6a-9b7c-2a5d1e0f4c3b ro quiet splash vt.handoff=7",
        "proc/loadavg": "0.52 0.31 0.20 2/611 48213",
        f"{sysk}/hostname": "desk-4c8t",
        f"{sysk}/osrelease": "6.8.0-45-generic",
        f"{sysk}/version": "#45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024",
        f"{sysk}/randomize_va_space": "2",
        f"{sysk}/perf_event_paranoid": "4",
        "proc/self/cgroup": f"0::/{cg}",
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc",
        f"sys/fs/cgroup/{cg}/cpuset.cpus.effective": "0-7",
        f"sys/fs/cgroup/{cg}/cpu.max": "max 100000",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never",
        "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "tsc",
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "tsc hpet acpi_pm ",
        "sys/devices/system/cpu/intel_pstate/no_turbo": "0",
        "sys/devices/system/cpu/intel_pstate/status": "active",
        "sys/class/dmi/id/sys_vendor": "Dell Inc.",
        "sys/class/dmi/id/product_name": "OptiPlex 7050",
        "sys/class/dmi/id/board_vendor": "Dell Inc.",
        "sys/class/dmi/id/board_name": "0NW6H5",
        "sys/class/dmi/id/bios_vendor": "Dell Inc.",
        "sys/class/dmi/id/bios_version": "1.26.0",
        "sys/class/dmi/id/bios_date": "07/10/2023",
    }
    for i in range(8):
        f = f"sys/devices/system/cpu/cpu{i}/cpufreq"
        extra.update({
            f"{f}/scaling_driver": "intel_pstate",
            f"{f}/scaling_governor": "powersave",
            f"{f}/scaling_available_governors": "performance powersave",
            f"{f}/scaling_min_freq": "800000",
            f"{f}/scaling_max_freq": "4500000",
            f"{f}/cpuinfo_min_freq": "800000",
            f"{f}/cpuinfo_max_freq": "4500000",
        })
    return Machine(cpus, caches, [list(range(8))], info, extra)


# Skylake-SP / Cascade Lake core ids are not contiguous; keep that to test it does not matter.
XEON_CORE_IDS = [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 16, 17, 18, 19, 20, 21, 24, 25, 26, 27, 28, 29]


def machine_2s48c96t():
    per_socket, sockets, threads = 24, 2, 2
    cores_total = per_socket * sockets  # 48: cpu N and N+48 are siblings

    def place(cpu):
        primary = cpu % cores_total
        return primary // per_socket, primary % per_socket, cpu // cores_total  # socket, core, thread

    def core_cpus(cpu):
        p = cpu % cores_total
        return [p, p + cores_total]

    def l3_cpus(cpu):
        s, k, _ = place(cpu)
        first = s * per_socket + (k // 8) * 8
        prim = list(range(first, first + 8))
        return prim + [c + cores_total for c in prim]

    def l3_id(cpu):
        s, k, _ = place(cpu)
        return s * 3 + k // 8

    def socket_cpus(s):
        prim = list(range(s * per_socket, (s + 1) * per_socket))
        return prim + [c + cores_total for c in prim]

    cpus = []
    for cpu in range(cores_total * threads):
        s, k, _ = place(cpu)
        cpus.append({"id": cpu, "package": s, "die": 0, "core_id": XEON_CORE_IDS[k], "siblings": core_cpus(cpu)})
    caches = [
        Cache(1, "Data", 32, 8, core_cpus, lambda cpu: cpu % cores_total),
        Cache(1, "Instruction", 32, 8, core_cpus, lambda cpu: cpu % cores_total),
        Cache(2, "Unified", 1024, 16, core_cpus, lambda cpu: cpu % cores_total),
        Cache(3, "Unified", 12288, 12, l3_cpus, l3_id),
    ]

    def info(c):
        s, k, t = place(c["id"])
        apic = s * 64 + XEON_CORE_IDS[k] * 2 + t
        return cpuinfo_block(c, [
            ("vendor_id", "GenuineIntel"), ("cpu family", "6"), ("model", "85"),
            ("model name", "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz"), ("stepping", "7"),
            ("microcode", "0x5003604"), ("cpu MHz", "3000.000"), ("cache size", "36608 KB"),
            ("physical id", str(s)), ("siblings", "48"), ("core id", str(c["core_id"])),
            ("cpu cores", "24"), ("apicid", str(apic)), ("initial apicid", str(apic)),
            ("fpu", "yes"), ("fpu_exception", "yes"), ("cpuid level", "22"), ("wp", "yes"),
            ("flags", CASCADELAKE_FLAGS),
            ("bugs", "spectre_v1 spectre_v2 spec_store_bypass swapgs taa itlb_multihit mmio_stale_data retbleed"),
            ("bogomips", "6000.00"), ("clflush size", "64"), ("cache_alignment", "64"),
            ("address sizes", "46 bits physical, 48 bits virtual"), ("power management", ""),
        ])

    cg = "system.slice/bench.service"
    sysk = "proc/sys/kernel"
    iso = "2-23,50-71"
    extra = {
        "proc/meminfo": MEMINFO.format(total=395903412, free=380241920, avail=388063232),
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz-6.12.9 root=/dev/md0 ro intel_iommu=on "
        f"isolcpus=nohz,domain,managed_irq,{iso} nohz_full={iso} rcu_nocbs={iso} "
        "transparent_hugepage=never",
        "proc/loadavg": "12.04 11.87 11.52 25/1873 302211",
        f"{sysk}/hostname": "bench-2s",
        f"{sysk}/osrelease": "6.12.9",
        f"{sysk}/version": "#1 SMP PREEMPT_DYNAMIC Thu Jan  9 16:27:02 UTC 2025",
        f"{sysk}/randomize_va_space": "0",
        f"{sysk}/perf_event_paranoid": "-1",
        f"{sysk}/io_uring_disabled": "0",
        "proc/self/cgroup": f"0::/{cg}",
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc",
        f"sys/fs/cgroup/{cg}/cpuset.cpus.effective": "0-23,48-71",
        f"sys/fs/cgroup/{cg}/cpu.max": "2400000 100000",
        "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]",
        "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise madvise [never]",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "tsc",
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "tsc hpet acpi_pm ",
        "sys/devices/system/cpu/cpufreq/boost": "0",
        "sys/class/dmi/id/sys_vendor": "Supermicro",
        "sys/class/dmi/id/product_name": "SYS-2029U-TR4",
        "sys/class/dmi/id/board_vendor": "Supermicro",
        "sys/class/dmi/id/board_name": "X11DPU",
        "sys/class/dmi/id/bios_vendor": "American Megatrends Inc.",
        "sys/class/dmi/id/bios_version": "3.4",
        "sys/class/dmi/id/bios_date": "10/22/2020",
    }
    for i in range(cores_total * threads):
        f = f"sys/devices/system/cpu/cpu{i}/cpufreq"
        extra.update({
            f"{f}/scaling_driver": "acpi-cpufreq",
            f"{f}/scaling_governor": "performance",
            f"{f}/scaling_available_governors": "conservative ondemand userspace powersave performance schedutil",
            f"{f}/scaling_min_freq": "1200000",
            f"{f}/scaling_max_freq": "3000000",
            f"{f}/cpuinfo_min_freq": "1200000",
            f"{f}/cpuinfo_max_freq": "3000000",
        })
    return Machine(cpus, caches, [socket_cpus(0), socket_cpus(1)], info, extra)


def synth():
    for name, build in (("4c8t", machine_4c8t), ("2s48c96t", machine_2s48c96t)):
        root = FIXTURES / name
        if root.exists():
            shutil.rmtree(root)
        write_machine(root, build())
        print(f"wrote {root.relative_to(REPO)}")


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
    sub.add_parser("synth", help="write the synthetic trees 4c8t and 2s48c96t")
    live = sub.add_parser("copy-live", help="copy this machine's files into a new tree")
    live.add_argument("name")
    live.add_argument("--source", default="/", help="root to copy from (default /)")
    args = parser.parse_args()
    if args.cmd == "synth":
        synth()
    else:
        copy_live(args.name, args.source)


if __name__ == "__main__":
    main()
