//! A fake Slurm cluster for tests: a controller holding each job's state,
//! node and exit code, which tests change between rounds; it can refuse a
//! node at submission or stop answering, and it records every call so that
//! a test can say what was (not) asked, such as a cancel.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Duration;

use super::cluster::{Cluster, Submission};

/// One job the fake controller holds.
#[derive(Clone, Debug)]
pub struct FakeJob {
    pub state: String,
    pub node: String,
    pub exit_code: String,
}

#[derive(Default)]
pub struct Fake {
    pub jobs: RefCell<BTreeMap<String, FakeJob>>,
    /// sbatch refuses these nodes, as Slurm refuses a node it does not know.
    pub refused_nodes: Vec<String>,
    /// The controller does not answer.
    pub silent: Cell<bool>,
    /// Every call, as `program args`.
    pub calls: RefCell<Vec<String>>,
    pub next_id: Cell<u32>,
}

impl Fake {
    /// Sets a job's state (and its exit code).
    pub fn set(&self, id: &str, state: &str, exit_code: &str) {
        let mut jobs = self.jobs.borrow_mut();
        let job = jobs.get_mut(id).unwrap_or_else(|| panic!("no job {id}"));
        job.state = state.into();
        job.exit_code = exit_code.into();
    }

    /// The calls made to `program`.
    pub fn calls_to(&self, program: &str) -> Vec<String> {
        self.calls.borrow().iter().filter(|c| c.split(' ').next() == Some(program)).cloned().collect()
    }

    fn answer(&self, program: &str, limit: Duration) -> Result<(), String> {
        if limit.is_zero() {
            return Err(format!("{program} gave no answer: no time was left to ask"));
        }
        if self.silent.get() {
            return Err(format!("{program}: error: Unable to contact slurm controller (connect failure)"));
        }
        Ok(())
    }
}

impl Cluster for Fake {
    fn submit(&self, job: &Submission) -> Result<String, String> {
        self.calls.borrow_mut().push(format!("sbatch {}", job.node.unwrap_or("-")));
        if job.node.is_some_and(|n| self.refused_nodes.iter().any(|r| r == n)) {
            return Err("sbatch: error: Batch job submission failed: Invalid node name specified".into());
        }
        self.next_id.set(self.next_id.get() + 1);
        let id = self.next_id.get().to_string();
        let job = FakeJob { state: "PENDING".into(), node: job.node.unwrap_or("n0").into(), exit_code: "0:0".into() };
        self.jobs.borrow_mut().insert(id.clone(), job);
        Ok(id)
    }

    fn queue(&self, ids: &[String], limit: Duration) -> Result<String, String> {
        self.calls.borrow_mut().push(format!("squeue {}", ids.join(",")));
        self.answer("squeue", limit)?;
        let jobs = self.jobs.borrow();
        if ids.iter().any(|id| !jobs.contains_key(id)) {
            return Err("slurm_load_jobs error: Invalid job id specified".into());
        }
        Ok(ids.iter().map(|id| format!("{id}|{}|{}|None\n", jobs[id].state, jobs[id].node)).collect())
    }

    fn job_info(&self, id: &str, limit: Duration) -> Result<String, String> {
        self.calls.borrow_mut().push(format!("scontrol {id}"));
        self.answer("scontrol", limit)?;
        match self.jobs.borrow().get(id) {
            Some(j) => Ok(format!("JobId={id} JobState={} Reason=None Restarts=0 ExitCode={} NodeList={}\n", j.state, j.exit_code, j.node)),
            None => Err("slurm_load_jobs error: Invalid job id specified".into()),
        }
    }

    fn accounting(&self, ids: &[String], _all_attempts: bool, file: bool, limit: Duration) -> Result<String, String> {
        self.calls.borrow_mut().push(format!("sacct {}{}", ids.join(","), if file { " -c" } else { "" }));
        self.answer("sacct", limit)?;
        Ok(String::new())
    }

    fn cancel(&self, ids: &[String]) -> Result<(), String> {
        self.calls.borrow_mut().push(format!("scancel {}", ids.join(" ")));
        for id in ids {
            self.set(id, "CANCELLED", "0:15");
        }
        Ok(())
    }
}
