//! runner: the parent side of a run. Executes the plan's cells one at a time,
//! each in a fresh worker process, and turns each into a row that is written
//! (and flushed) before the next cell starts. A failing cell never stops the
//! run; a stop signal ends it early with every finished row kept and the
//! report still written.

pub mod compose;
pub mod launcher;
pub mod progress;
pub mod signals;
pub mod spawn;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use anyhow::Context;

use crate::cli::{RunArgs, UsageError};
use crate::envelope::{Envelope, Reading};
use crate::evidence::{RUN_SCHEMA, Row, RunCpu, RunDir, RunRecord, StatusCounts, read_run};
use crate::measure::rusage::Rusage;
use crate::plan::{self, Cell, Plan, RunOptions};
use crate::report::{self, terminal::Out};
use crate::workloads::registry;

use launcher::Launcher;
use progress::Progress;

/// The seed of a run unless `--seed` is given (fixed, so that runs repeat).
pub const DEFAULT_SEED: u64 = 0x5EED_2026;

/// Exit code of a run stopped by a signal (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// UTC now as RFC 3339 with seconds.
pub fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// A cell's private directory, removed with everything in it when dropped:
/// after its worker has ended, however it ended. With a launcher it lives on
/// the launched side, made and removed through the launcher (`mkdir`, `rm -rf`).
struct Scratch<'a> {
    path: PathBuf,
    launcher: Option<&'a Launcher>,
}

impl<'a> Scratch<'a> {
    fn create(root: &Path, row_id: &str, launcher: Option<&'a Launcher>) -> anyhow::Result<Scratch<'a>> {
        let path = root.join(format!("proofbench-{}-{row_id}", std::process::id()));
        match launcher {
            None => std::fs::create_dir(&path).with_context(|| format!("creating the scratch directory {}", path.display()))?,
            Some(l) => l
                .run_helper(&["mkdir", "--", &path.display().to_string()])
                .map_err(|e| anyhow::anyhow!("creating the scratch directory {} on the launched side: {e}", path.display()))?,
        }
        Ok(Scratch { path, launcher })
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        match self.launcher {
            None => {
                if let Err(e) = std::fs::remove_dir_all(&self.path)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    eprintln!("proofbench: warning: could not remove {}: {e}", self.path.display());
                }
            }
            Some(l) => {
                if let Err(e) = l.run_helper(&["rm", "-rf", "--", &self.path.display().to_string()]) {
                    eprintln!("proofbench: warning: could not remove {} on the launched side: {e}", self.path.display());
                }
            }
        }
    }
}

/// Where a run's cells run: here, or through a launcher whose side's
/// envelope has been probed.
enum Target {
    Local,
    Launched(Launcher, Box<Envelope>),
}

/// The worse of two run exit codes: interrupted, then failures, then success.
fn worse(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        EXIT_INTERRUPTED => 3,
        0 => 0,
        1 => 1,
        _ => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// This process's peak resident set since its last exec (VmHWM), KiB.
fn own_peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Keeps a piece of a directory name to safe characters.
fn name_part(s: &str) -> String {
    let t: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    t.chars().take(48).collect()
}

/// Runs the benchmarks the arguments select, here or through `--launcher`
/// (once per host of `--hosts`); returns the exit code (the worst of the
/// runs). Every launcher's side must answer before anything runs.
pub fn run(args: &RunArgs, argv: Vec<String>) -> anyhow::Result<ExitCode> {
    let launchers = launcher::from_args(args)?;
    if args.hosts.is_none() {
        let target = match launchers.into_iter().next() {
            None => Target::Local,
            Some(l) => {
                let envelope = l.probe_envelope()?;
                Target::Launched(l, Box::new(envelope))
            }
        };
        return run_on(args, argv, target, args.label.clone()).map(|(code, _)| ExitCode::from(code));
    }
    let mut probes = Vec::new();
    for l in &launchers {
        probes.push(l.probe_envelope()?);
    }
    let (mut worst, mut dirs) = (0u8, Vec::new());
    for (i, (l, probed)) in launchers.into_iter().zip(probes).enumerate() {
        if signals::interrupted() {
            break;
        }
        // The first probe is fresh; later hosts are read again just before they run.
        let envelope = if i == 0 { probed } else { l.probe_envelope()? };
        let host = l.host.clone().unwrap_or_default();
        let label = args.label.as_ref().map_or_else(|| host.clone(), |x| format!("{x}-{host}"));
        let (code, dir) = run_on(args, argv.clone(), Target::Launched(l, Box::new(envelope)), Some(label))?;
        dirs.push(format!("  {host}  {}\n", dir.display()));
        worst = worse(worst, code);
        if code == EXIT_INTERRUPTED {
            break;
        }
    }
    let text = format!("Runs by host:\n{}", dirs.concat());
    if args.json {
        eprint!("{text}")
    } else {
        Out::new().print(&text)?
    }
    Ok(ExitCode::from(worst))
}

/// One run on one target: plan, run every cell, write the records and the
/// report; returns the exit code and the run directory.
fn run_on(args: &RunArgs, argv: Vec<String>, target: Target, label: Option<String>) -> anyhow::Result<(u8, PathBuf)> {
    let wall = Instant::now();
    // This process may have been exec'd by another (cargo run does that), whose
    // CPU time and reaped children the kernel's counters still hold: count from here.
    let (cpu_self0, cpu_children0) = (Rusage::this_process(), Rusage::children());
    // A bad workload file stops the run here, before anything is created.
    let commands = crate::workloads::command::load(&args.workloads, &registry::specs())?;
    let specs = crate::workloads::command::specs_with(registry::specs(), &commands);
    let seed = args.seed.unwrap_or(DEFAULT_SEED);
    let timeout = args.timeout.unwrap_or_else(|| args.profile.default_timeout());
    let (envelope, launcher) = match target {
        Target::Local => (Envelope::collect(Path::new("/"), argv, seed), None),
        Target::Launched(l, e) => {
            // The machine is the launched side's; the run (command line,
            // seed, start time) is this one's.
            let envelope = Envelope { command_line: argv, seed, started_utc: utc_now(), finished_utc: None, load_avg_after: None, ..*e };
            (envelope, Some(l))
        }
    };
    let topo = match &envelope.topology {
        Reading::Present(t) => t.clone(),
        Reading::Absent { absent } => anyhow::bail!("cannot plan without the CPU topology: {absent}"),
    };
    let release = envelope.kernel.release.ok().cloned().unwrap_or_else(|| "unknown".into());
    let label = label.unwrap_or_else(|| format!("linux-{release}"));
    let options = RunOptions {
        selection: args.selection.clone(),
        profile: args.profile,
        workers: args.workers.clone(),
        oversubscribe: args.oversubscribe,
        pin: args.pin.clone(),
        runtime: args.runtime.clone(),
        allocator: args.allocator.clone(),
        compare: if args.compare_cores {
            Some(plan::CompareMode::Cores)
        } else if args.compare_strategies {
            Some(plan::CompareMode::Strategies)
        } else {
            None
        },
        runs: args.runs,
        time_budget_ms: args.time_budget.map(|d| d.as_millis() as u64),
        timeout_ms: timeout.as_millis() as u64,
        warmup: args.warmup,
        settle_ms: args.settle.map(|d| d.as_millis() as u64),
        ci_target_pct: args.ci_target,
        params: args.params.clone(),
        include_selftest: args.include_selftest,
        io_dir: args.io_dir.as_ref().map(|p| p.display().to_string()),
        inject_fault: args.inject_fault.clone(),
    };
    let Plan { mut cells } = plan::build(&options, &label, seed, &specs, &topo)?;
    crate::workloads::command::attach(&mut cells, &commands);
    let exe = std::env::current_exe().context("locating the proofbench binary for the workers")?;
    let scratch_root = match &launcher {
        None => {
            crate::workloads::alloc::allocator::check_cells(&exe, &cells).map_err(UsageError)?;
            let root = args.io_dir.clone().unwrap_or_else(std::env::temp_dir);
            if !root.is_dir() {
                return Err(UsageError(format!("--io-dir {}: not a directory", root.display())).into());
            }
            root
        }
        Some(l) => {
            let mut seen: Vec<String> = Vec::new();
            for lib in cells.iter().filter_map(crate::workloads::alloc::allocator::preload_env) {
                if !seen.contains(&lib) {
                    l.check_preload(&lib).map_err(|why| UsageError(format!("--allocator preload:{lib}: {why}")))?;
                    seen.push(lib);
                }
            }
            let root = args.io_dir.clone().unwrap_or_else(|| PathBuf::from(launcher::DEFAULT_SCRATCH_ROOT));
            l.check_dir(&root.display().to_string()).map_err(|e| UsageError(format!("--io-dir {}: {e}", root.display())))?;
            root
        }
    };

    let started_utc = envelope.started_utc.clone();
    let mut dir = match &args.run_dir {
        Some(p) => RunDir::create_at(p)?,
        None => {
            let stamp: String = started_utc.chars().filter(|c| *c != '-' && *c != ':').collect();
            let host = envelope.hostname.ok().map(String::as_str).unwrap_or("unknown-host");
            RunDir::create_in(&args.out, &format!("{stamp}-{}-{}", name_part(host), name_part(&label)))?
        }
    };
    let mut run = RunRecord {
        schema: RUN_SCHEMA.to_string(),
        id: dir.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        label,
        commit: crate::history::commit_of(args.commit.as_deref()),
        profile: args.profile,
        seed,
        options,
        envelope,
        plan: cells.clone(),
        started_utc,
        finished_utc: None,
        wall_s: None,
        cpu: None,
        interrupted: false,
        complete: false,
        counts: None,
        not_run: Vec::new(),
        launcher: launcher.as_ref().map(Launcher::record),
    };
    dir.write_run(&run)?;
    signals::install()?;

    let out = Out::new();
    let show_tables = !args.json && !args.quiet;
    if !args.quiet {
        let through = launcher.as_ref().map(|l| format!(", through `{}`", l.display(&[]))).unwrap_or_default();
        eprintln!("proofbench: {} cells, profile {}{through}, writing {}", cells.len(), args.profile.as_str(), dir.path().display());
    }
    let progress = Progress::new(cells.len(), args.quiet);
    let mut rows: Vec<Row> = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if signals::interrupted() {
            break;
        }
        let spec = specs.iter().find(|s| s.id == cell.workload).expect("planned from the registry");
        progress.start_cell(&cell.display_name());
        let (log, log_rel) = dir.log_file(&cell.row_id)?;
        let started_utc = utc_now();
        let scratch = Scratch::create(&scratch_root, &cell.row_id, launcher.as_ref())?;
        let cell = &Cell { scratch_dir: Some(scratch.path.display().to_string()), ..cell.clone() };
        let cell_json = serde_json::to_string(cell).context("serializing a cell")?;
        let preload = crate::workloads::alloc::allocator::preload_env(cell);
        let command = match &launcher {
            None => spawn::local_worker(&exe, preload.as_deref()),
            Some(l) => l.proofbench(preload.as_deref(), &["worker"]),
        };
        let wr = spawn::run_worker(command, &cell_json, log, timeout).with_context(|| format!("running the worker of {}", cell.row_id))?;
        drop(scratch);
        if wr.interrupted {
            break;
        }
        let mut row = compose::row(compose::Finished {
            cell,
            spec,
            run: &wr,
            timeout,
            stderr_tail: compose::log_tail(&dir.path().join(&log_rel), 10),
            log_rel,
            started_utc,
            finished_utc: utc_now(),
        });
        if !row.samples.is_empty() {
            row.raw = Some(dir.write_raw(&row)?);
        }
        dir.append_row(&row)?;
        progress.finish_cell(i, &cell.display_name(), row.status, wr.process.wall_ms / 1e3);
        if args.json {
            out.print(&format!("{}\n", serde_json::to_string(&row)?))?;
        }
        rows.push(row);
        let group_done = cells.get(i + 1).is_none_or(|next| next.group != cell.group);
        if group_done {
            // Plots as each group ends, as RustFiber draws them while its runs go on.
            for p in report::group_plots(&rows, &cell.group) {
                dir.write_file(&format!("plots/{}", p.file), &p.svg)?;
                match report::plot::png::png(&p.svg) {
                    Ok(png) => dir.write_bytes(&format!("plots/{}", report::plot::png::file_name(&p.file)), &png)?,
                    Err(e) => eprintln!("proofbench: warning: plots/{}: no PNG copy: {e:#}", p.file),
                }
            }
            // report.html while the run goes on, from the records as stored so far.
            dir.write_file("report.html", &report::html::render(&read_run(dir.path())?))?;
            if show_tables {
                let mut text = report::group_section(&rows, &cell.group);
                if args.counters {
                    text.push_str(&report::counters_section(&rows, &cell.group));
                }
                progress.suspend(|| out.print(&format!("{text}\n")))?;
            }
        }
    }
    progress.finish();

    run.interrupted = signals::interrupted();
    run.not_run = cells.iter().filter(|c| !rows.iter().any(|r| r.cell.index == c.index)).map(|c| c.row_id.clone()).collect();
    run.complete = run.not_run.is_empty();
    match &launcher {
        None => run.envelope.finish(Path::new("/")),
        Some(l) => {
            run.envelope.finished_utc = Some(utc_now());
            run.envelope.load_avg_after = Some(l.load_avg_now());
        }
    }
    run.finished_utc = run.envelope.finished_utc.clone();
    run.wall_s = Some(wall.elapsed().as_secs_f64());
    let mut cpu = RunCpu { parent: Rusage::this_process().since(&cpu_self0), workers: Rusage::children().since(&cpu_children0) };
    // Peaks are not differences: take this process's own high-water mark (reset at
    // exec) and the largest worker's.
    cpu.parent.max_rss_kib = own_peak_rss_kib().unwrap_or(0);
    cpu.workers.max_rss_kib = rows.iter().filter_map(|r| r.process.rusage.map(|u| u.max_rss_kib)).max().unwrap_or(0);
    run.cpu = Some(cpu);
    let counts = StatusCounts::of(rows.iter().map(|r| &r.status));
    run.counts = Some(counts.clone());
    dir.write_run(&run)?;

    // The report is rendered from the records as stored, so that
    // `proofbench report DIR` gives the same bytes.
    let stored = read_run(dir.path())?;
    dir.write_file("report.md", &report::render(&stored))?;
    dir.write_file("report.html", &report::html::render(&stored))?;
    if !args.no_history {
        crate::history::record_after_run(dir.path(), args.db.as_deref(), args.quiet);
    }
    let summary = format!("{}\nResults: {}\n", report::footer(&stored.run, &stored.rows), dir.path().display());
    if args.json {
        if !args.quiet {
            eprint!("{summary}");
        }
    } else {
        out.print(&summary)?;
    }
    let code = if run.interrupted {
        EXIT_INTERRUPTED
    } else if counts.failures() > 0 {
        1
    } else {
        0
    };
    Ok((code, dir.path().to_path_buf()))
}
