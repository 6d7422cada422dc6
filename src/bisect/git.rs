//! The repository a bisect reads, through real git, and the build command.
//!
//! Never touches the user's working tree or index: each commit is checked
//! out with `git worktree add --detach` into a directory the bisect owns
//! (`git worktree prune` forgets it once that directory is gone). The
//! build command runs in that worktree, in a process group of its own that
//! a stop signal kills whole.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::Commit;
use crate::model::{Stopped, UsageError};
use crate::runner::local::spawn::kill_group;

/// A git repository (`--repo`, default the current directory).
pub struct Repo {
    pub dir: PathBuf,
}

impl Repo {
    /// `git -C DIR ARGS`, with the variables that would point git
    /// elsewhere removed.
    fn git(&self, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.arg("-C").arg(&self.dir).args(args);
        for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"] {
            c.env_remove(v);
        }
        c.stdin(Stdio::null());
        c
    }

    /// Runs git and returns its stdout; a failure names the command and
    /// git's first line of stderr.
    fn output(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self.git(args).output().with_context(|| format!("running git {}", args.join(" ")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!("git {} failed: {}", args.join(" "), err.lines().next().unwrap_or("").trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Opens `dir` as a repository: a usage error naming `--repo` when it
    /// is not one.
    pub fn open(dir: &Path) -> anyhow::Result<Repo> {
        let repo = Repo { dir: dir.to_path_buf() };
        match repo.output(&["rev-parse", "--show-toplevel"]) {
            Ok(top) => Ok(Repo { dir: PathBuf::from(top.trim()) }),
            Err(e) => Err(UsageError(format!("--repo {}: not a git repository ({e:#})", dir.display())).into()),
        }
    }

    /// The commit `rev` names, in full; a usage error naming `flag` when it
    /// names none.
    pub fn resolve(&self, rev: &str, flag: &str) -> anyhow::Result<String> {
        if rev.starts_with('-') || rev.trim().is_empty() {
            return Err(UsageError(format!("{flag} '{rev}': not a revision")).into());
        }
        self.output(&["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .map(|s| s.trim().to_string())
            .map_err(|_| UsageError(format!("{flag} {rev}: no such commit in {}", self.dir.display())).into())
    }

    /// The commits from `good` to `bad` along `bad`'s first parents, oldest
    /// first, `good` first and `bad` last. `good` must be an ancestor of
    /// `bad` (a usage error naming `--good` otherwise).
    pub fn range(&self, good: &str, bad: &str) -> anyhow::Result<Vec<Commit>> {
        let ancestor = self.git(&["merge-base", "--is-ancestor", good, bad]).status().context("running git merge-base")?;
        if !ancestor.success() {
            return Err(UsageError(format!("--good {good}: not an ancestor of --bad {bad}")).into());
        }
        let mut out = vec![Commit { sha: good.to_string(), subject: self.subject(good)? }];
        let listed =
            self.output(&["log", "--first-parent", "--ancestry-path", "--reverse", "--format=%H%x00%s", &format!("{good}..{bad}")])?;
        for line in listed.lines() {
            let (sha, subject) = line.split_once('\0').unwrap_or((line, ""));
            out.push(Commit { sha: sha.to_string(), subject: subject.to_string() });
        }
        Ok(out)
    }

    fn subject(&self, sha: &str) -> anyhow::Result<String> {
        Ok(self.output(&["log", "-1", "--format=%s", sha])?.trim_end().to_string())
    }

    /// `git show --stat` of `sha`.
    pub fn show_stat(&self, sha: &str) -> anyhow::Result<String> {
        self.output(&["show", "--stat", "--format=commit %H%nAuthor: %an <%ae>%nDate:   %ad%n%n    %s%n", sha])
    }

    /// Whether the repository is proofbench itself (its Cargo.toml's
    /// package is named so).
    pub fn is_proofbench(&self) -> bool {
        std::fs::read_to_string(self.dir.join("Cargo.toml")).is_ok_and(|t| {
            t.parse::<toml::Table>().ok().and_then(|t| t.get("package")?.get("name")?.as_str().map(|n| n == "proofbench")).unwrap_or(false)
        })
    }

    /// Checks `sha` out into `path` (a detached worktree), unless `path`
    /// already holds that checkout (a resumed bisect).
    pub fn worktree(&self, path: &Path, sha: &str) -> anyhow::Result<()> {
        if path.join(".git").exists() {
            let head = Repo { dir: path.to_path_buf() }.output(&["rev-parse", "HEAD"]).unwrap_or_default();
            if head.trim() == sha {
                return Ok(());
            }
            bail!("{}: a checkout of another commit ({}) is in the way", path.display(), head.trim());
        }
        let path_s = path.to_str().with_context(|| format!("{}: not a UTF-8 path", path.display()))?;
        // --force: a worktree whose directory was removed without `git
        // worktree prune` is still registered; it is made again in place.
        self.output(&["worktree", "add", "--force", "--detach", "--quiet", path_s, sha])?;
        Ok(())
    }
}

/// Runs `cmd` with `sh -c` in `dir`, its output into `log`, in its own
/// process group; a stop signal kills the group and is [`Stopped`], and so
/// does `timeout`, which is a failed build (said at the end of the log).
/// Returns whether it succeeded and how long it took.
pub fn build(cmd: &str, dir: &Path, log: &Path, timeout: Duration) -> anyhow::Result<(bool, Duration)> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = file.try_clone()?;
    let start = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting the build command `{cmd}`"))?;
    loop {
        if let Some(status) = child.try_wait()? {
            // What the build left running in its group dies with it.
            kill_group(child.id() as i32, libc::SIGKILL);
            return Ok((status.success(), start.elapsed()));
        }
        let stopped = crate::process::signals::interrupted();
        if stopped || start.elapsed() > timeout {
            kill_group(child.id() as i32, libc::SIGKILL);
            let _ = child.wait();
            if stopped {
                return Err(Stopped("a stop signal arrived during a build".into()).into());
            }
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().append(true).open(log)?;
            writeln!(f, "proofbench: the build was killed after --build-timeout {}", humantime::format_duration(timeout))?;
            return Ok((false, start.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_past_its_timeout_is_killed_and_failed_with_the_reason_in_its_log() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("b.log");
        let (ok, took) = build("echo started; sleep 30", tmp.path(), &log, Duration::from_millis(300)).unwrap();
        assert!(!ok);
        assert!(took < Duration::from_secs(10), "{took:?}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("started") && text.contains("--build-timeout"), "{text}");
    }

    #[test]
    fn what_a_build_leaves_running_is_killed_when_it_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("b.log");
        let pidfile = tmp.path().join("pid");
        let cmd = format!("sleep 30 > /dev/null 2>&1 & echo $! > '{}'", pidfile.display());
        let (ok, _) = build(&cmd, tmp.path(), &log, Duration::from_secs(20)).unwrap();
        assert!(ok);
        let pid: libc::pid_t = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        let t = std::time::Instant::now();
        // SAFETY: signal 0 only checks whether the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
        {
            assert!(t.elapsed() < Duration::from_secs(5), "the build's background sleep still runs");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_failing_build_is_not_ok() {
        let tmp = tempfile::tempdir().unwrap();
        let (ok, _) = build("exit 3", tmp.path(), &tmp.path().join("b.log"), Duration::from_secs(20)).unwrap();
        assert!(!ok);
    }
}
