//! Tests of following Slurm jobs ([`super::jobs`]) against the fake
//! cluster: submission and its refusals, `wait`'s rounds and endings.

use std::path::Path;
use std::time::{Duration, Instant};

use super::fake::Fake;
use super::jobs::{Ending, Target, Tracked, Wait, submit_all};

fn nodes(names: &[&str]) -> Vec<Target> {
    names.iter().map(|n| Target::Node(n.to_string())).collect()
}

fn submit(fake: &Fake, names: &[&str]) -> Vec<Tracked> {
    let jobs = submit_all(fake, Path::new("/r/s.sh"), &nodes(names), None, Path::new("/r"), "proofbench-r", &[]).ok().unwrap();
    jobs.into_iter().map(|j| Tracked { node: j.node, job_id: j.job_id, results: Some("/r".into()), output: Some(j.output) }).collect()
}

#[test]
fn a_refused_node_cancels_the_jobs_already_submitted_and_submits_no_more() {
    let fake = Fake { refused_nodes: vec!["n2".into()], ..Fake::default() };
    let refused = match submit_all(&fake, Path::new("/r/s.sh"), &nodes(&["n1", "n2", "n3"]), None, Path::new("/r"), "j", &[]) {
        Err(r) => r,
        Ok(jobs) => panic!("submitted {} jobs", jobs.len()),
    };
    assert_eq!(refused.node.as_deref(), Some("n2"));
    assert!(refused.line.contains("Invalid node name"), "{}", refused.line);
    assert_eq!(refused.cancelled, " (cancelled the jobs already submitted: 1)");
    assert_eq!(*fake.calls.borrow(), ["sbatch n1", "sbatch n2", "scancel 1"]);
    // Refused at the first node: nothing to cancel.
    let fake = Fake { refused_nodes: vec!["n1".into()], ..Fake::default() };
    let refused = submit_all(&fake, Path::new("/r/s.sh"), &nodes(&["n1", "n2"]), None, Path::new("/r"), "j", &[]).err().unwrap();
    assert_eq!(refused.cancelled, "");
    assert!(fake.calls_to("scancel").is_empty());
}

#[test]
fn a_broken_node_costs_only_its_own_job_and_the_wait_cancels_nothing() {
    let fake = Fake::default();
    let jobs = submit(&fake, &["n1", "n2", "n3"]);
    let mut wait = Wait::new(&jobs, None);
    for id in ["1", "2", "3"] {
        fake.set(id, "RUNNING", "0:0");
    }
    let round = wait.round(&fake).unwrap();
    assert!(round.lines.is_empty() && !round.done && round.note.is_none());
    fake.set("1", "COMPLETED", "0:0");
    fake.set("2", "NODE_FAIL", "0:0");
    let round = wait.round(&fake).unwrap();
    assert_eq!(round.lines.lines().count(), 2, "{}", round.lines);
    assert!(round.lines.contains("n2 2 NODE_FAIL") && !round.done, "{}", round.lines);
    fake.set("3", "COMPLETED", "0:0");
    let round = wait.round(&fake).unwrap();
    assert!(round.lines.starts_with("n3 3 COMPLETED exit 0 ") && round.done, "{}", round.lines);
    match wait.end() {
        Ending::Failed(line) => {
            assert!(line.starts_with("proofbench: error: 2 of 3 jobs completed; n2 (job 2) NODE_FAIL, its node failed"), "{line}")
        }
        other => panic!("{other:?}"),
    }
    assert!(fake.calls_to("scancel").is_empty(), "{:?}", fake.calls.borrow());
    // Each round asked only about the jobs that had not ended.
    assert_eq!(fake.calls_to("squeue"), ["squeue 1,2,3", "squeue 1,2,3", "squeue 3"]);
}

#[test]
fn a_silent_controller_is_said_once_and_again_when_it_answers_and_a_timeout_while_silent_is_no_answer() {
    let fake = Fake::default();
    let jobs = submit(&fake, &["n1"]);
    let mut wait = Wait::new(&jobs, None);
    fake.silent.set(true);
    let round = wait.round(&fake).unwrap();
    assert!(round.note.unwrap().starts_with("proofbench: Slurm does not answer (squeue: error: Unable to contact"));
    assert_eq!(fake.calls.borrow().len(), 2, "one silent answer ends the round: {:?}", fake.calls.borrow());
    assert!(wait.round(&fake).unwrap().note.is_none(), "said once");
    fake.silent.set(false);
    assert_eq!(wait.round(&fake).unwrap().note.as_deref(), Some("proofbench: Slurm answers again\n"));
    fake.set("1", "COMPLETED", "0:0");
    assert!(wait.round(&fake).unwrap().done);
    assert_eq!(wait.end(), Ending::Completed);
    // The deadline passes while the controller is silent: nothing is known.
    let mut wait = Wait::new(&jobs, Some(Instant::now() - Duration::from_secs(1)));
    fake.set("1", "RUNNING", "0:0");
    let round = wait.round(&fake).unwrap();
    assert!(round.done && round.note.is_none());
    match wait.end() {
        Ending::NoAnswer(what) => assert!(what.contains("no time was left to ask") && what.contains("0 of 1 job completed"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_job_no_slurm_command_knows_is_a_usage_error() {
    let fake = Fake::default();
    let jobs = vec![Tracked { node: None, job_id: "99".into(), results: None, output: None }];
    let mut wait = Wait::new(&jobs, None);
    assert!(wait.round(&fake).unwrap().done);
    match wait.end() {
        Ending::Unknown(line) => assert!(line.starts_with("job 99: not known to squeue, scontrol or sacct"), "{line}"),
        other => panic!("{other:?}"),
    }
}
