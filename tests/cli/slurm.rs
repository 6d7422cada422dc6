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

/// How long the controller waits for a silent slurmd before it sets the
/// node DOWN and its jobs NODE_FAIL (Slurm's default is 300 s).
const SLURMD_TIMEOUT: Duration = Duration::from_secs(10);

/// A plan of two cells whose rows are written far apart (a row is written
/// when its cell's last trial is decided, at the end of a round): 20 ms
/// sleeps that meet the 5% interval after their first two trials, and
/// sleeps of 20 to 320 ms that never do, running to their eighth trial.
const SLOW_PLAN: &[&str] = &[
    "selftest.noisy",
    "--include-selftest",
    "-p",
    "base_us=20000",
    "-p",
    "jitter_us=0,300000",
    "--trials",
    "2",
    "--max-trials",
    "8",
    "--ci-target",
    "5",
    "--run-budget",
    "120s",
    "--runs",
    "3",
    "--warmup",
    "1",
    "--settle",
    "0",
];

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
             SlurmdTimeout={slurmd_timeout}\n\
             TaskProlog={d}/taskprolog.sh\n{nodes}PartitionName=pb Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP\n",
            pid = std::process::id(),
            ctld = ports[0],
            sock = socket.display(),
            d = d.display(),
            slurmd_timeout = SLURMD_TIMEOUT.as_secs(),
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

    /// Kills node `node` as a power cut would, every process at once by pid:
    /// its slurmd, the slurmstepd of the job writing `run_dir` (the node's
    /// one job: each has its node to itself) and everything those started
    /// (the run and its workers). All are stopped first (SIGSTOP), so that
    /// none sees another die, then killed (SIGKILL). Returns how many were
    /// killed.
    pub fn kill_node(&mut self, node: &str, run_dir: &Path) -> usize {
        let name = format!("slurmd -N {node}");
        let i = self.daemons.iter().position(|(n, _)| *n == name).expect("the node's slurmd");
        let mut pids: Vec<i32> = vec![self.daemons[i].1.id() as i32];
        // The run is the batch script's shell after its exec; its parent is the
        // job's slurmstepd (found so, not by job id: another test's cluster
        // has a job of the same id).
        let dir = format!("--run-dir {}", run_dir.display());
        let (run, _) = processes().into_iter().find(|(_, cmd)| cmd.contains(&dir)).expect("the job's run is running");
        pids.extend(parent(run).filter(|p| processes().iter().any(|(q, cmd)| q == p && cmd.starts_with("slurmstepd:"))));
        assert_eq!(pids.len(), 2, "the run's parent is a slurmstepd");
        // And everything below them.
        loop {
            let before = pids.len();
            for (pid, _) in processes() {
                if parent(pid).is_some_and(|p| pids.contains(&p)) && !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
            if pids.len() == before {
                break;
            }
        }
        for sig in [libc::SIGSTOP, libc::SIGKILL] {
            for pid in &pids {
                // SAFETY: kill only sends a signal, to a pid this cluster's node runs.
                unsafe { libc::kill(*pid, sig) };
            }
        }
        let (_, mut slurmd) = self.daemons.remove(i);
        let _ = slurmd.wait();
        pids.len()
    }

    /// Starts node `node`'s slurmd again (after [`Cluster::kill_node`]): the
    /// node comes back as a rebooted one does.
    pub fn restart_node(&mut self, node: &str) {
        let mut slurmd = Command::new("slurmd");
        slurmd.arg("-D").arg("-N").arg(node).arg("-f").arg(&self.conf);
        self.spawn(&format!("slurmd -N {node}"), slurmd).expect("slurmd starts again");
    }

    /// Stops slurmctld (SIGSTOP): a controller that takes connections and
    /// answers none, as a hung one does.
    pub fn pause_controller(&self) {
        self.signal_controller(libc::SIGSTOP);
    }

    /// Lets a paused slurmctld go on (SIGCONT).
    pub fn resume_controller(&self) {
        self.signal_controller(libc::SIGCONT);
    }

    fn signal_controller(&self, sig: i32) {
        if let Some((_, ctld)) = self.daemons.iter().find(|(n, _)| n == "slurmctld") {
            // SAFETY: kill only sends a signal, to a child not yet waited for.
            unsafe { libc::kill(ctld.id() as i32, sig) };
        }
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
        self.resume_controller();
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

/// Every process's pid and command line (arguments joined by spaces).
fn processes() -> Vec<(i32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&raw).replace('\0', " ").trim().to_string()))
        })
        .collect()
}

/// The parent of process `pid`.
fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|p| p.parse().ok())
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
        // Every node's job of the submission has one name: the history tells its nodes by it.
        let name = format!("proofbench-{}", res.file_name().unwrap().to_string_lossy());
        assert_eq!(run["envelope"]["slurm"]["job_name"], name.as_str(), "{}", run["envelope"]["slurm"]);
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
    // ... and are one submission's: the job name every node's job shares.
    let name = format!("proofbench-{}", res.file_name().unwrap().to_string_lossy());
    assert!(said.contains(&format!("3 hosts of submission slurm job {name}.")), "{said}");
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
    // A job id Slurm never knew is a bad argument, named.
    let s = c.proofbench(&["status", "99999"]);
    let err = text(&s.stderr);
    assert_eq!(s.status.code(), Some(2), "{}{err}", text(&s.stdout));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("proofbench: error: job 99999: not known to squeue, scontrol or sacct"), "{err}");
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
    assert!(err.contains(&format!("--results {}: {} is not a directory", under_file.display(), file.display())), "{err}");
    let err = refused(&["os.syscall", "--nodelist", "n1", "--results", file.to_str().unwrap()]);
    assert!(err.contains(&format!("--results {}: it exists and is not a directory", file.display())), "{err}");
    let err = refused(&["os.syscall", "--nodelist", "n1", "--results", "/proc/res"]);
    assert!(err.contains("--results /proc/res: cannot create a directory in /proc ("), "{err}");
    assert!(!err.contains("os error"), "{err}");
    let refusing = [
        ("--launcher", "ssh x"),
        ("--hosts", "a"),
        ("--max-parallel", "2"),
        ("--run-dir", "x"),
        ("--out", "x"),
        ("--db", "x.sqlite"),
        ("--html", "x.html"),
    ];
    let help = text(&Command::new(bin()).args(["slurm", "submit", "--help"]).output().unwrap().stdout);
    assert!(help.contains("--nodelist") && help.contains("--trials"), "{help}");
    for (flag, value) in refusing {
        let err = refused(&["os.syscall", "--nodelist", "n1", flag, value]);
        assert!(err.contains(&format!("error: {flag}: not for slurm submit")), "{err}");
        assert!(!help.contains(&format!("{flag} ")), "submit --help offers {flag}, which it refuses: {help}");
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

#[test]
fn a_node_killed_mid_run_is_said_and_its_job_completes_on_its_rerun_keeping_the_first_attempts_rows() {
    let Some(mut c) = cluster() else { return };
    let res = c.results("res");
    let o = c.proofbench(&[&["submit"], SLOW_PLAN, &["--nodelist", "n2", "--results", res.to_str().unwrap()]].concat());
    let id = submitted(&o)[0].1.clone();
    let first = res.join(format!("n2-{id}"));
    let rows_file = first.join("rows.jsonl");
    let t = Instant::now();
    while std::fs::read_to_string(&rows_file).map_or(0, |r| r.lines().count()) < 1 {
        assert!(t.elapsed() < Duration::from_secs(120), "no row within 120 s: {:?}", c.job_states());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The node dies: slurmd, the job's slurmstepd, the run and its worker, by pid.
    let killed = c.kill_node("n2", &first);
    let killed_at = Instant::now();
    assert!(killed >= 3, "slurmd, slurmstepd, the run (and its worker, if one runs): {killed} processes");
    let received = std::fs::read(&rows_file).unwrap();
    let had = text(&received).lines().count();
    assert_eq!(had, 1, "killed between the first row and the second");

    // `status` says the node failed once the controller has seen it.
    let said = loop {
        let s = c.proofbench(&["status", res.to_str().unwrap()]);
        let out = text(&s.stdout);
        assert!(s.status.success(), "{out}{}", text(&s.stderr));
        if out.contains("attempt 1: node n2 failed, NODE_FAIL") {
            break out;
        }
        assert!(killed_at.elapsed() < SLURMD_TIMEOUT + Duration::from_secs(90), "no node failure said: {out}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let seen_after = killed_at.elapsed();
    let rerun = res.join(format!("n2-{id}-rerun1"));
    assert!(said.starts_with(&format!("n2 {id} PENDING (")) && said.contains("attempt 2; attempt 1: node n2 failed"), "{said}");
    assert!(said.trim_end().ends_with(&format!(" - {}", rerun.display())), "the rerun's directory: {said}");

    // The node comes back, as after a reboot, and the requeued job runs again
    // (Slurm holds a requeued job two minutes first: the test lets it go now).
    c.restart_node("n2");
    let _ = c.client("scontrol").args(["update", &format!("JobId={id}"), "StartTime=now"]).output();
    let w = c.proofbench(&["wait", res.to_str().unwrap(), "--timeout", "300"]);
    let out = text(&w.stdout);
    assert!(w.status.success(), "{out}{}", text(&w.stderr));
    assert_eq!(out, format!("n2 {id} COMPLETED (attempt 2; attempt 1: node n2 failed, NODE_FAIL) exit 0 {}\n", rerun.display()));
    let done_after = killed_at.elapsed();
    let rows = rows_of(&rerun);
    assert_eq!(rows.len(), 2, "the rerun ran the whole plan");
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    assert_eq!(json(&rerun.join("run.json"))["complete"], true);

    // Nothing the first attempt wrote is lost, and its record says what it did not finish.
    assert_eq!(std::fs::read(&rows_file).unwrap(), received, "the first attempt's rows are as they were");
    let run = json(&first.join("run.json"));
    assert!(run["finished_utc"].is_null(), "{}", run["finished_utc"]);
    let with_row: Vec<String> = rows_of(&first).iter().map(|r| r["cell"]["row_id"].as_str().unwrap().to_string()).collect();
    let not_run: Vec<&str> = run["not_run"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut unfinished = 0;
    for cell in run["plan"].as_array().unwrap() {
        let cell = cell["row_id"].as_str().unwrap();
        if !with_row.iter().any(|r| r == cell) {
            unfinished += 1;
            assert!(not_run.contains(&cell), "{cell} has no row and is not in not_run {not_run:?}");
        }
    }
    assert_eq!(unfinished, 1);
    // Both attempts' output, one after the other.
    let output = std::fs::read_to_string(res.join(format!("n2-{id}.out"))).unwrap();
    assert!(output.contains(&format!("job {id}, attempt 1, on node n2: run directory {}", first.display())), "{output}");
    assert!(output.contains(&format!("job {id}, attempt 2, on node n2: run directory {}", rerun.display())), "{output}");
    eprintln!(
        "node killed ({killed} processes) with {had} of 2 rows written; status said the node failed {:.1} s later; \
         the rerun completed {:.1} s after the kill",
        seen_after.as_secs_f64(),
        done_after.as_secs_f64()
    );
}

#[test]
fn wait_asks_a_stalled_controller_again_and_keeps_its_timeout() {
    let Some(c) = cluster() else { return };
    let res = c.results("res");
    let o = c.proofbench(&[&["submit"], SLOW_PLAN, &["--nodelist", "n1", "--results", res.to_str().unwrap()]].concat());
    let id = submitted(&o)[0].1.clone();
    c.pause_controller();
    let t = Instant::now();
    let w = c.proofbench(&["wait", res.to_str().unwrap(), "--timeout", "10s"]);
    let took = t.elapsed();
    let err = text(&w.stderr);
    assert_eq!(w.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("proofbench: error: --timeout: Slurm did not answer (") && err.contains(&id), "{err}");
    assert!(took < Duration::from_secs(16), "--timeout 10s took {took:?}");
    // A plain wait asks again until the controller answers, and sees the job complete.
    let mut waiting = c.client(bin().to_str().unwrap());
    waiting.args(["slurm", "wait", res.to_str().unwrap()]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let waiting = waiting.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(25));
    c.resume_controller();
    let w = waiting.wait_with_output().unwrap();
    let (out, err) = (text(&w.stdout), text(&w.stderr));
    assert_eq!(w.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with(&format!("n1 {id} COMPLETED exit 0 ")), "{out}");
    assert!(err.contains("proofbench: Slurm does not answer (") && err.contains("proofbench: Slurm answers again"), "{err}");
    eprintln!("wait --timeout 10s on a stopped controller: {:.1} s", took.as_secs_f64());
}

/// A directory of fake Slurm commands for PATH: `squeue` answers that the
/// jobs left the controller; `scontrol` and `sacct` hang (each writes its
/// pid to `pids` first). Returns the directory and the PATH to use.
fn hanging_slurm(dir: &Path) -> String {
    let pids = dir.join("pids");
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    write("squeue", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
    for name in ["scontrol", "sacct"] {
        write(name, &format!("echo $$ >> {}; exec sleep 1000", pids.display()));
    }
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default())
}

/// The fake commands of [`hanging_slurm`] still alive (not dead nor zombie).
fn alive_helpers(dir: &Path) -> Vec<i32> {
    let pids = std::fs::read_to_string(dir.join("pids")).unwrap_or_default();
    pids.lines()
        .filter_map(|p| p.trim().parse().ok())
        .filter(|pid: &i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z')))
        })
        .collect()
}

#[test]
fn wait_timeout_bounds_every_slurm_command_and_a_hang_is_not_an_unknown_job() {
    let tmp = tempfile::tempdir().unwrap();
    let path = hanging_slurm(tmp.path());
    let t = Instant::now();
    let o = Command::new(bin()).args(["slurm", "wait", "11", "12", "13", "--timeout", "3s"]).env("PATH", &path).output().unwrap();
    let took = t.elapsed();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Slurm did not answer (scontrol gave no answer within") && err.contains("11, 12, 13"), "{err}");
    assert!(!err.contains("not known to squeue"), "a command that hung said nothing of the jobs: {err}");
    assert!(took < Duration::from_secs(30), "--timeout 3s took {took:?}");
    assert_eq!(alive_helpers(tmp.path()), Vec::<i32>::new(), "a hung helper outlived wait");
}

#[test]
fn a_wait_interrupted_or_killed_leaves_no_slurm_command_running() {
    for (sig, code) in [(libc::SIGINT, Some(130)), (libc::SIGTERM, Some(130)), (libc::SIGKILL, None)] {
        let tmp = tempfile::tempdir().unwrap();
        let path = hanging_slurm(tmp.path());
        let child = Command::new(bin())
            .args(["slurm", "wait", "11"])
            .env("PATH", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while alive_helpers(tmp.path()).is_empty() {
            assert!(t.elapsed() < Duration::from_secs(30), "wait never asked scontrol");
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: kill only sends a signal, to a child not yet waited for.
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), code, "signal {sig}: {}", text(&o.stderr));
        if code.is_some() {
            assert!(text(&o.stderr).contains("interrupted; the jobs go on"), "{}", text(&o.stderr));
        }
        let t = Instant::now();
        while !alive_helpers(tmp.path()).is_empty() {
            assert!(t.elapsed() < Duration::from_secs(5), "signal {sig}: the helper outlived wait");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
