use std::path::Path;

use super::*;

#[test]
fn host_lists_expand_like_slurm() {
    assert_eq!(expand_hostlist("n[1-3]").unwrap(), ["n1", "n2", "n3"]);
    assert_eq!(expand_hostlist("n1, n2,gpu7").unwrap(), ["n1", "n2", "gpu7"]);
    assert_eq!(expand_hostlist("node[01-03,10]").unwrap(), ["node01", "node02", "node03", "node10"]);
    assert_eq!(expand_hostlist("r[1-2]n[1-2]-ib").unwrap(), ["r1n1-ib", "r1n2-ib", "r2n1-ib", "r2n2-ib"]);
    assert_eq!(expand_hostlist("a[7],b").unwrap(), ["a7", "b"]);
}

#[test]
fn bad_host_lists_say_what_is_wrong() {
    for (list, says) in [
        ("", "empty"),
        ("n1,,n2", "empty name"),
        ("n[1-3", "unclosed"),
        ("n1-3]", "unbalanced"),
        ("n[[1]]", "nested"),
        ("n[3-1]", "goes down"),
        ("n[a-b]", "not a number"),
        ("n[1-99999999]", "more than"),
        ("n 1", "not a host name"),
    ] {
        let e = expand_hostlist(list).unwrap_err();
        assert!(e.contains(says), "{list}: {e}");
    }
}

#[test]
fn states_are_read_as_slurm_names_them() {
    assert_eq!(JobState::from_slurm("COMPLETED"), JobState::Completed);
    assert_eq!(JobState::from_slurm("PENDING"), JobState::Pending);
    assert_eq!(JobState::from_slurm("CANCELLED by 0"), JobState::Ended("CANCELLED".into()));
    assert_eq!(JobState::from_slurm("CANCELLED+"), JobState::Ended("CANCELLED".into()));
    assert_eq!(JobState::from_slurm("COMPLETING"), JobState::Running("COMPLETING".into()));
    assert!(JobState::from_slurm("TIMEOUT").has_ended() && JobState::from_slurm("NODE_FAIL").has_ended());
    assert!(!JobState::from_slurm("RUNNING").has_ended() && !JobState::from_slurm("PENDING").has_ended());
    assert!(!JobState::from_slurm("").has_ended());
}

#[test]
fn squeue_lines_give_id_state_nodes_and_reason() {
    let jobs = parse_squeue("12|RUNNING|n2|None\n13|PENDING||Resources\nsqueue: a stray line\n");
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        (jobs[0].id.as_str(), &jobs[0].state, jobs[0].nodes.as_deref(), jobs[0].reason.as_deref()),
        ("12", &JobState::Running("RUNNING".into()), Some("n2"), None)
    );
    assert_eq!((jobs[1].nodes.as_deref(), jobs[1].reason.as_deref()), (None, Some("Resources")));
    assert_eq!(jobs[1].exit_code, None);
}

/// `scontrol show job -o 1` of a job that failed, as Slurm 22.05 prints it
/// (shortened), with a command path holding a space.
const SCONTROL: &str = "JobId=1 JobName=job.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 \
     Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 \
     Reboot=0 ExitCode=3:0 RunTime=00:00:01 TimeLimit=UNLIMITED AllocNode:Sid=localhost:1471 ReqNodeList=n2 \
     ExcNodeList=(null) NodeList=n2 BatchHost=n2 NumNodes=1 ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=1,billing=2 Socks/Node=* \
     Command=/tmp/my results/proofbench-slurm.sh WorkDir=/tmp StdOut=/tmp/my results/n2-1.out Power= \n";

#[test]
fn scontrol_lines_give_state_reason_exit_code_and_command() {
    let jobs = parse_scontrol(SCONTROL);
    assert_eq!(jobs.len(), 1);
    let j = &jobs[0];
    assert_eq!(j.id, "1");
    assert_eq!(j.state, JobState::Ended("FAILED".into()));
    assert_eq!(j.reason.as_deref(), Some("NonZeroExitCode"));
    assert_eq!(j.exit_code.as_deref(), Some("3:0"));
    assert_eq!(j.exit_text(), "exit 3");
    assert_eq!(j.nodes.as_deref(), Some("n2"));
    assert_eq!(j.command.as_deref(), Some("/tmp/my results/proofbench-slurm.sh"));
    let running = parse_scontrol("JobId=7 JobState=RUNNING Reason=None ExitCode=0:0 NodeList=(null)\n");
    assert_eq!((running[0].reason.as_deref(), running[0].nodes.as_deref()), (None, None));
    assert!(parse_scontrol("slurm_load_jobs error: Invalid job id specified\n").is_empty());
}

#[test]
fn sacct_lines_skip_steps_and_read_signals() {
    let jobs = parse_sacct("5|CANCELLED by 0|0:15|n1\n5.batch|CANCELLED|0:15|n1\n6|PENDING|0:0|None assigned\n");
    assert_eq!(jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["5", "6"]);
    assert_eq!(jobs[0].state, JobState::Ended("CANCELLED".into()));
    assert_eq!(jobs[0].exit_text(), "signal 15");
    assert_eq!(jobs[1].nodes, None);
}

#[test]
fn the_error_line_passed_on_is_slurms_own() {
    let e = "sbatch: error: Batch job submission failed: Invalid node name specified\n";
    assert_eq!(first_error_line(e).unwrap(), "sbatch: error: Batch job submission failed: Invalid node name specified");
    let e = "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n";
    assert_eq!(first_error_line(e).unwrap(), "sbatch: unrecognized option '--bogus'");
    assert_eq!(first_error_line("\n  \n"), None);
}

#[test]
fn the_script_runs_the_plan_once_on_its_node_and_says_how_to_resubmit_it() {
    let words: Vec<String> = ["os.syscall", "--profile", "quick", "--label", "it's mine", "--", "x"].map(String::from).into();
    let argv: Vec<String> = ["pb", "slurm", "submit", "--label", "two\nlines"].map(String::from).into();
    let text = batch_script("/opt/pb bin/proofbench", &words, Path::new("/shared/res"), &argv);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "#!/bin/sh");
    for directive in ["#SBATCH --nodes=1", "#SBATCH --exclusive", "#SBATCH --ntasks=1"] {
        assert!(lines.contains(&directive), "{text}");
    }
    assert!(text.contains("#   sbatch --nodelist=NODE --output=/shared/res/NODE-%j.out /shared/res/proofbench-slurm.sh\n"), "{text}");
    assert_eq!(
        *lines.last().unwrap(),
        "exec '/opt/pb bin/proofbench' run --run-dir \"$dir\" --no-history os.syscall --profile quick --label \"it's mine\" -- x"
    );
    // An argument with a newline cannot break out of its comment.
    let code = ["set -u", "node=", "restarts=", "dir=", "if ", "echo ", "exec "];
    assert!(lines.iter().all(|l| l.starts_with('#') || code.iter().any(|p| l.starts_with(p))), "{text}");
    // The words come back as they were, through a shell.
    let exec = lines.last().unwrap().trim_start_matches("exec ");
    let back = shlex::split(exec).unwrap();
    assert_eq!(&back[back.len() - words.len()..], &words[..]);
}

#[test]
fn run_directories_are_named_by_node_job_and_attempt() {
    assert_eq!(run_dir(Path::new("/r"), Some("n1"), "12", 0).unwrap(), Path::new("/r/n1-12"));
    assert_eq!(run_dir(Path::new("/r"), Some("n1"), "12", 2).unwrap(), Path::new("/r/n1-12-rerun2"));
    assert_eq!(run_dir(Path::new("/r"), None, "12", 0), None);
}

/// What the script runs under `sh` as attempt `restarts + 1` of job 7 on
/// n2, `echo` standing for proofbench: (stdout, stderr).
fn script_run(restarts: Option<&str>) -> (String, String) {
    let text = batch_script("echo", &["os.syscall".to_string()], Path::new("/shared/res"), &[]);
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c").arg(&text).env("SLURMD_NODENAME", "n2").env("SLURM_JOB_ID", "7").env_remove("SLURM_RESTART_COUNT");
    if let Some(r) = restarts {
        sh.env("SLURM_RESTART_COUNT", r);
    }
    let o = sh.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
}

#[test]
fn a_requeued_job_writes_a_fresh_run_directory_and_appends_to_its_output() {
    let text = batch_script("pb", &[], Path::new("/shared/res"), &[]);
    for directive in ["#SBATCH --requeue", "#SBATCH --open-mode=append"] {
        assert!(text.lines().any(|l| l == directive), "{text}");
    }
    let (first, said) = script_run(None);
    assert_eq!(first, "run --run-dir /shared/res/n2-7 --no-history os.syscall\n");
    assert_eq!(said, "proofbench-slurm.sh: job 7, attempt 1, on node n2: run directory /shared/res/n2-7\n");
    assert_eq!(script_run(Some("0")).0, first);
    let (rerun, said) = script_run(Some("1"));
    assert_eq!(rerun, "run --run-dir /shared/res/n2-7-rerun1 --no-history os.syscall\n");
    assert!(said.contains("attempt 2, on node n2"), "{said}");
    assert_eq!(script_run(Some("3")).0, "run --run-dir /shared/res/n2-7-rerun3 --no-history os.syscall\n");
}

#[test]
fn a_requeued_job_says_which_attempt_it_is_and_that_its_node_failed() {
    let line =
        "JobId=9 JobState=PENDING Reason=BeginTime Requeue=1 Restarts=1 ExitCode=0:0 NodeList=(null) Command=/r/proofbench-slurm.sh\n";
    let mut job = parse_scontrol(line).remove(0);
    assert_eq!(job.restarts, 1);
    assert_eq!(job.state_text(), "PENDING (BeginTime; attempt 2; requeued once: a node failed, a preemption or scontrol requeue)");
    // sacct -D: one line per attempt, the ended ones first.
    let attempts = parse_sacct("9|NODE_FAIL|0:0|n2\n9|PENDING|0:0|None assigned\n");
    assert_eq!(attempts.len(), 2);
    job.earlier = vec![Attempt { state: attempts[0].state.clone(), nodes: attempts[0].nodes.clone() }];
    assert_eq!(job.state_text(), "PENDING (BeginTime; attempt 2; attempt 1: node n2 failed, NODE_FAIL)");
    job.state = JobState::Completed;
    assert_eq!(job.state_text(), "COMPLETED (attempt 2; attempt 1: node n2 failed, NODE_FAIL)");
    let never = parse_scontrol("JobId=3 JobState=COMPLETED Reason=None Restarts=0 ExitCode=0:0\n").remove(0);
    assert_eq!((never.state_text(), never.attempts_text()), ("COMPLETED".to_string(), None));
}

#[test]
fn a_controller_that_does_not_answer_is_told_from_one_that_answers() {
    for line in [
        "slurm_load_jobs error: Socket timed out on send/recv operation",
        "squeue: error: Unable to contact slurm controller (connect failure)",
        "scontrol gave no answer within 3 s",
        "sacct gave no answer: no time was left to ask",
    ] {
        assert!(is_no_answer(line), "{line}");
    }
    for line in ["slurm_load_jobs error: Invalid job id specified", "sacct: error: Slurm accounting storage is disabled"] {
        assert!(!is_no_answer(line), "{line}");
    }
}
