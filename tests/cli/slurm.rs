//! `proofbench slurm submit|status|wait` against a real Slurm cluster of
//! three nodes on this machine ([`Cluster`]): munged, slurmctld and one
//! slurmd per node (`slurmd -N nK`, Slurm's multiple-slurmd mode), each
//! with its own port, all started by the fixture and stopped when it is
//! dropped. Without Slurm or munge the tests print "skipped: <reason>";
//! under `CI=true` they fail instead.
//!
//! A broken node is made with the cluster's TaskProlog: it fails (exit 1,
//! "node nK is broken" in the job's output) on a node whose marker file
//! exists ([`Cluster::break_node`]), so that node's job fails as a job whose
//! node cannot run it does, while the other nodes' jobs run.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, rows_of, text};

/// The nodes of every cluster.
const NODES: [&str; 3] = ["n1", "n2", "n3"];

/// A tiny plan: one row, one trial of three samples.
const PLAN: &[&str] = &["os.syscall", "--profile", "quick", "--trials", "1", "--runs", "3", "--warmup", "1", "--settle", "0"];

/// Clusters started by this process (part of each cluster's name).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A Slurm cluster of three nodes, n1, n2 and n3, on this machine, in its
/// own temporary directory (key, sockets, configuration, state, logs).
pub struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// munged first, then slurmctld, then the slurmds.
    daemons: Vec<(String, Child)>,
}

/// A port no one listens on now (the kernel's choice).
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("0.0.0.0:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| format!("no free port: {e}"))
}

/// Whether `program` is on PATH (or is a path that exists).
fn installed(program: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {program}")).stdout(Stdio::null()).status().is_ok_and(|s| s.success())
}

impl Cluster {
    /// Starts the cluster and waits (at most 30 s) until sinfo shows its
    /// three nodes idle. `Err` says why it could not.
    pub fn start() -> Result<Cluster, String> {
        for program in ["munged", "mungekey", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scontrol", "scancel"] {
            if !installed(program) {
                return Err(format!("`{program}` is not installed (Debian: slurm-wlm and munge)"));
            }
        }
        let dir = tempfile::Builder::new().prefix("pbslurm").tempdir_in("/tmp").map_err(|e| format!("temp dir: {e}"))?;
        let d = dir.path().to_path_buf();
        let mut cluster = Cluster { conf: d.join("slurm.conf"), dir, daemons: Vec::new() };
        for sub in ["state", "log", "spool/n1", "spool/n2", "spool/n3"] {
            std::fs::create_dir_all(d.join(sub)).map_err(|e| format!("{sub}: {e}"))?;
        }
        let key = d.join("munge.key");
        let made = Command::new("mungekey").arg("-c").arg("-k").arg(&key).output().map_err(|e| format!("mungekey: {e}"))?;
        if !made.status.success() {
            return Err(format!("mungekey: {}", text(&made.stderr).trim()));
        }
        let socket = d.join("munge.sock");
        let mut munged = Command::new("munged");
        munged.args(["-F", "-f"]).arg(format!("--socket={}", socket.display())).arg(format!("--key-file={}", key.display()));
        munged
            .arg(format!("--pid-file={}", d.join("munged.pid").display()))
            .arg(format!("--seed-file={}", d.join("munged.seed").display()));
        munged.arg(format!("--log-file={}", d.join("log/munged.log").display()));
        cluster.spawn("munged", munged)?;
        cluster.wait_for("munged's socket", Duration::from_secs(10), |c| c.dir.path().join("munge.sock").exists())?;

        let ports: Vec<u16> = (0..4).map(|_| free_port()).collect::<Result<_, _>>()?;
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        std::fs::write(d.join("taskprolog.sh"), format!(
            "#!/bin/sh\nif [ -e {0}/broken-\"$SLURMD_NODENAME\" ]; then echo \"print node $SLURMD_NODENAME is broken\"; exit 1; fi\nexit 0\n",
            d.display()
        ))
        .map_err(|e| format!("taskprolog.sh: {e}"))?;
        std::fs::set_permissions(d.join("taskprolog.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        let nodes: String = NODES
            .iter()
            .zip(&ports[1..])
            .map(|(node, port)| {
                format!(
                    "NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=2 Sockets=1 CoresPerSocket=2 \
                     ThreadsPerCore=1 State=UNKNOWN\n"
                )
            })
            .collect();
        let conf = format!(
            "ClusterName=pb{pid}x{n}\nSlurmctldHost=localhost\nSlurmctldPort={ctld}\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nAuthInfo=socket={sock}\nCredType=cred/munge\nStateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool/%n\nSlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd-%n.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd-%n.log\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nMpiDefault=none\nAccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/filetxt\n\
             JobCompLoc={d}/jobcomp.txt\nMailProg=/bin/true\nSchedulerParameters=batch_sched_delay=0\nReturnToService=2\n\
             TaskProlog={d}/taskprolog.sh\n{nodes}PartitionName=pb Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP\n",
            pid = std::process::id(),
            ctld = ports[0],
            sock = socket.display(),
            d = d.display(),
        );
        std::fs::write(&cluster.conf, conf).map_err(|e| format!("slurm.conf: {e}"))?;
        let mut ctld = Command::new("slurmctld");
        ctld.arg("-D").arg("-f").arg(&cluster.conf);
        cluster.spawn("slurmctld", ctld)?;
        for node in NODES {
            let mut slurmd = Command::new("slurmd");
            slurmd.arg("-D").arg("-N").arg(node).arg("-f").arg(&cluster.conf);
            cluster.spawn(&format!("slurmd -N {node}"), slurmd)?;
        }
        cluster.wait_for("sinfo to show n[1-3] idle", Duration::from_secs(30), |c| {
            c.client("sinfo").args(["-h", "-N", "-o", "%N %t"]).output().is_ok_and(|o| {
                let out = text(&o.stdout);
                NODES.iter().all(|n| out.lines().any(|l| l.trim() == format!("{n} idle")))
            })
        })?;
        Ok(cluster)
    }

    /// Starts a daemon of the cluster, its output in `log/`, ended with
    /// this process if the test dies before the fixture's Drop.
    fn spawn(&mut self, name: &str, mut c: Command) -> Result<(), String> {
        let log = std::fs::File::create(self.dir.path().join("log").join(format!("{}.out", name.replace(' ', "-"))))
            .map_err(|e| format!("{name}'s log: {e}"))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        c.env("SLURM_CONF", &self.conf).stdin(Stdio::null()).stdout(log).stderr(err);
        // SAFETY: prctl is async-signal-safe and changes only the child.
        unsafe {
            c.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = c.spawn().map_err(|e| format!("{name} does not start: {e}"))?;
        self.daemons.push((name.to_string(), child));
        Ok(())
    }

    /// Polls `ready` until it holds; `Err` names what did not happen, with
    /// the daemons that died and the end of the controller's log.
    fn wait_for(&mut self, what: &str, limit: Duration, ready: impl Fn(&Cluster) -> bool) -> Result<(), String> {
        let t = Instant::now();
        while t.elapsed() < limit {
            if ready(self) {
                return Ok(());
            }
            let dead: Vec<String> =
                self.daemons.iter_mut().filter_map(|(n, c)| (!matches!(c.try_wait(), Ok(None))).then(|| n.clone())).collect();
            if !dead.is_empty() {
                return Err(format!("waiting for {what}: {} exited; {}", dead.join(", "), self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("{what}: not within {limit:?}; {}", self.log_tail()))
    }

    /// The last lines of the daemons' logs, for an error.
    fn log_tail(&self) -> String {
        let logs = self.dir.path().join("log");
        let mut out = Vec::new();
        for e in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
            let t = std::fs::read_to_string(e.path()).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(3).collect();
            out.push(format!("{}: {}", e.file_name().to_string_lossy(), tail.into_iter().rev().collect::<Vec<_>>().join(" | ")));
        }
        out.join("; ")
    }

    /// A Slurm client command of this cluster (`SLURM_CONF` set on it).
    pub fn client(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `proofbench slurm ARGS`, run from the cluster's directory.
    pub fn proofbench(&self, args: &[&str]) -> Output {
        let mut c = self.client(bin().to_str().unwrap());
        c.arg("slurm").args(args).current_dir(self.dir.path()).output().expect("proofbench runs")
    }

    /// A directory for results, shared by every node (they are all here).
    pub fn results(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Makes every job on `node` fail in its TaskProlog.
    pub fn break_node(&self, node: &str) {
        std::fs::write(self.dir.path().join(format!("broken-{node}")), "").unwrap();
    }

    /// The states of every job the controller still knows.
    pub fn job_states(&self) -> Vec<String> {
        let o = self.client("squeue").args(["-h", "-t", "all", "-o", "%i %T"]).output().expect("squeue runs");
        text(&o.stdout).lines().map(str::to_string).collect()
    }
}

impl Drop for Cluster {
    /// Cancels the cluster's jobs and waits (at most 10 s) for them to go
    /// (a job's processes do not end with slurmd), then stops the daemons,
    /// slurmds first: SIGTERM, SIGKILL after 5 s. The directory goes with
    /// the `TempDir`.
    fn drop(&mut self) {
        if self.daemons.len() == 2 + NODES.len() {
            let _ = self.client("scancel").args(["-u", "root"]).output();
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(10)
                && self.job_states().iter().any(|l| ["RUNNING", "COMPLETING", "PENDING"].iter().any(|s| l.ends_with(s)))
            {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            // SAFETY: kill only sends a signal, to a child not yet waited for.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let t = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The cluster, or `None` with "skipped: <reason>" printed; under
/// `CI=true` a cluster that does not start fails the test.
fn cluster() -> Option<Cluster> {
    match Cluster::start() {
        Ok(c) => Some(c),
        Err(reason) => {
            assert!(!std::env::var("CI").is_ok_and(|v| v == "true"), "the Slurm cluster did not start and CI=true: {reason}");
            eprintln!("skipped: {reason}");
            None
        }
    }
}

/// `slurm submit PLAN --nodelist LIST --results RES EXTRA...`.
fn submit(c: &Cluster, res: &Path, nodes: &str, extra: &[&str]) -> Output {
    c.proofbench(&[&["submit"], PLAN, &["--nodelist", nodes, "--results", res.to_str().unwrap()], extra].concat())
}

/// The (node, job id) lines `submit` printed.
fn submitted(o: &Output) -> Vec<(String, String)> {
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .map(|l| {
            let (node, id) = l.split_once(' ').unwrap_or_else(|| panic!("not 'node id': {l}"));
            (node.to_string(), id.to_string())
        })
        .collect()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

#[test]
fn submit_runs_the_plan_once_per_node_and_wait_sees_every_job_complete() {
    let Some(c) = cluster() else { return };
    let res = c.results("res");
    let jobs = submitted(&submit(&c, &res, "n[1-3]", &["--label", "slurm test"]));
    assert_eq!(jobs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), NODES);

    let script = std::fs::read_to_string(res.join("proofbench-slurm.sh")).expect("the script is kept");
    assert!(script.contains("#SBATCH --exclusive") && script.contains("--label 'slurm test'"), "{script}");
    let exec = script.lines().last().unwrap();
    assert!(exec.starts_with("exec ") && !exec.contains("--nodelist") && !exec.contains("--results /"), "{script}");
    let file = json(&res.join("jobs.json"));
    assert_eq!(file["jobs"].as_array().unwrap().len(), 3);

    let w = c.proofbench(&["wait", res.to_str().unwrap(), "--timeout", "300"]);
    let out = text(&w.stdout);
    assert!(w.status.success(), "{out}{}", text(&w.stderr));
    assert_eq!(out.lines().count(), 3, "each end once: {out}");
    for (node, id) in &jobs {
        let dir = res.join(format!("{node}-{id}"));
        assert!(out.contains(&format!("{node} {id} COMPLETED exit 0 {}", dir.display())), "{out}");
        let rows = rows_of(&dir);
        assert_eq!(rows.len(), 1, "{}", dir.display());
        assert_eq!(rows[0]["status"], "ok", "{}", rows[0]);
        let run = json(&dir.join("run.json"));
        assert_eq!(run["envelope"]["slurm"]["job_id"], id.as_str());
        assert_eq!(run["envelope"]["slurm"]["node"], node.as_str());
        assert_eq!(run["envelope"]["slurm"]["job_nodelist"], node.as_str());
        assert!(res.join(format!("{node}-{id}.out")).exists(), "the job's output file");
        assert!(!dir.join("history.sqlite").exists() && !res.join("history.sqlite").exists(), "no history over a shared directory");
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains(&format!("job {id} on node {node}")), "the machine section names the job");
    }

    let s = c.proofbench(&["status", res.to_str().unwrap(), &jobs[0].1]);
    assert!(s.status.success(), "{}", text(&s.stderr));
    let lines: Vec<String> = text(&s.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines.iter().all(|l| l.contains(" COMPLETED exit 0 ")), "{lines:?}");
    // A bare job id finds its run directory through the script's path.
    assert_eq!(lines[3], lines[0], "{lines:?}");

    // The fleet of the three nodes, from the results directory: the nodes share
    // this machine's hostname, so they are named by their Slurm node.
    let f = Command::new(bin()).args(["fleet", res.to_str().unwrap()]).output().unwrap();
    let said = text(&f.stdout);
    assert_eq!(f.status.code(), Some(0), "{said}{}", text(&f.stderr));
    assert!(said.contains("named by their Slurm node"), "{said}");
    for node in NODES {
        assert!(said.contains(&format!("/{node}")), "{node}: {said}");
    }
}

#[test]
fn a_broken_node_costs_only_its_own_job() {
    let Some(c) = cluster() else { return };
    c.break_node("n2");
    let res = c.results("res");
    let jobs = submitted(&submit(&c, &res, "n1,n2,n3", &[]));
    let w = c.proofbench(&["wait", res.to_str().unwrap(), "--timeout", "300"]);
    let (out, err) = (text(&w.stdout), text(&w.stderr));
    assert_eq!(w.status.code(), Some(1), "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let n2 = &jobs[1].1;
    assert!(
        err.contains(&format!(
            "2 of 3 jobs completed; n2 (job {n2}) FAILED, exit 1, NonZeroExitCode, 'slurmstepd-n2: error: TaskProlog failed status=1'"
        )),
        "{err}"
    );
    for (node, id) in [&jobs[0], &jobs[2]] {
        assert!(out.contains(&format!("{node} {id} COMPLETED")), "{out}");
        assert_eq!(rows_of(&res.join(format!("{node}-{id}"))).len(), 1);
    }
    assert!(out.contains(&format!("n2 {n2} FAILED (NonZeroExitCode) exit 1")), "{out}");
    assert!(!res.join(format!("n2-{n2}")).exists());
}

#[test]
fn a_node_slurm_does_not_know_is_refused_with_its_reason_and_nothing_left_submitted() {
    let Some(c) = cluster() else { return };
    let o = submit(&c, &c.results("res"), "n1,n9", &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--nodelist n9: sbatch: error: Batch job submission failed: Invalid node name specified"), "{err}");
    assert!(err.contains("cancelled the jobs already submitted"), "{err}");
    assert!(c.job_states().iter().all(|l| l.ends_with("CANCELLED")), "{:?}", c.job_states());
}

#[test]
fn an_sbatch_arg_slurm_rejects_is_one_line_and_submits_nothing() {
    let Some(c) = cluster() else { return };
    let o = submit(&c, &c.results("res"), "n[1-3]", &["--sbatch-arg=--time=soon"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("proofbench: error: --sbatch-arg --time=soon: sbatch: error: Invalid --time specification"), "{err}");
    assert!(c.job_states().is_empty(), "{:?}", c.job_states());
}

#[test]
fn jobs_of_a_partition_run_wherever_slurm_puts_them() {
    let Some(c) = cluster() else { return };
    let res = c.results("res");
    let o = c.proofbench(&[&["submit"], PLAN, &["--partition", "pb", "--nodes", "2", "--results", res.to_str().unwrap()]].concat());
    let jobs = submitted(&o);
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|(node, _)| node == "-"), "{jobs:?}");
    let w = c.proofbench(&["wait", res.to_str().unwrap(), "--timeout", "300"]);
    let out = text(&w.stdout);
    assert!(w.status.success(), "{out}{}", text(&w.stderr));
    for (_, id) in &jobs {
        let line = out.lines().find(|l| l.contains(&format!(" {id} COMPLETED"))).unwrap_or_else(|| panic!("{out}"));
        let node = line.split(' ').next().unwrap();
        assert!(NODES.contains(&node), "{line}");
        assert_eq!(rows_of(&res.join(format!("{node}-{id}"))).len(), 1);
        assert!(res.join(format!("slurm-{id}.out")).exists());
    }
}

/// `slurm submit` with nothing but `ARGS` (no cluster needed: these are
/// refused before anything is submitted).
fn refused(args: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(bin()).arg("slurm").arg("submit").args(args).current_dir(tmp.path()).output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!tmp.path().join("results").exists(), "nothing written: {err}");
    err
}

#[test]
fn unwritable_results_and_run_flags_that_make_no_sense_are_refused_before_submitting() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("res");
    let err = refused(&["os.syscall", "--nodelist", "n1", "--results", under_file.to_str().unwrap()]);
    assert!(err.contains(&format!("--results {}", under_file.display())), "{err}");
    let err = refused(&["os.syscall", "--nodelist", "n1", "--results", "/proc/res"]);
    assert!(err.contains("--results /proc/res"), "{err}");
    for (flag, value) in [("--launcher", "ssh x"), ("--hosts", "a"), ("--run-dir", "x"), ("--out", "x"), ("--db", "x.sqlite")] {
        let err = refused(&["os.syscall", "--nodelist", "n1", flag, value]);
        assert!(err.contains(&format!("error: {flag}: not for slurm submit")), "{err}");
    }
    assert!(refused(&["os.syscall", "--nodelist", "n[1-"]).contains("--nodelist"));
    assert!(refused(&["os.syscall", "--nodelist", "n1,n1"]).contains("n1 is named twice"));
    assert!(refused(&["os.syscall"]).contains("not provided: --nodelist <LIST>"));
    // The run flags are checked as `run` checks them, before any job exists.
    assert!(refused(&["nosuch.workload", "--nodelist", "n1"]).contains("unknown workload 'nosuch.workload'"));
    assert!(refused(&["cpu.primes", "--nodelist", "n1", "-p", "rnage=5"]).contains("--param rnage=5"));
    assert!(refused(&["cpu.primes", "--nodelist", "n1", "--variant", "a=nosuch=1"]).contains("--variant a=nosuch=1"));
}

#[test]
fn status_and_wait_refuse_what_is_neither_a_results_directory_nor_a_job_id() {
    let tmp = tempfile::tempdir().unwrap();
    for cmd in ["status", "wait"] {
        let o = Command::new(bin()).args(["slurm", cmd, "nosuch"]).current_dir(tmp.path()).output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("nosuch: neither a results directory of slurm submit nor a job id"), "{err}");
        let o = Command::new(bin()).args(["slurm", cmd, "."]).current_dir(tmp.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains("no jobs of slurm submit here"), "{}", text(&o.stderr));
    }
}
