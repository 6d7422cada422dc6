//! Reading what Slurm's commands print: host lists, `squeue -o`,
//! `scontrol show job -o`, `sacct -P`, and the one line of an error worth
//! passing on.

use super::{JobInfo, JobState};

/// The most names one host list may expand to (a typo like `n[1-99999999]`
/// is refused, not allocated).
const MAX_HOSTS: usize = 100_000;

/// The names of a Slurm host list, in order: `n1,n2`, `n[1-3]`,
/// `node[01-03,7]`, `r[1-2]n[1-2]`. Errors say what is wrong in `list`.
pub fn expand_hostlist(list: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for part in split_top(list)? {
        if part.is_empty() {
            return Err(format!("'{list}' has an empty name"));
        }
        expand_one(part, &mut names)?;
        if names.len() > MAX_HOSTS {
            return Err(format!("'{list}' names more than {MAX_HOSTS} hosts"));
        }
    }
    if names.is_empty() {
        return Err("the host list is empty".into());
    }
    Ok(names)
}

/// `list` split at the commas outside brackets.
fn split_top(list: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, ch) in list.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("'{list}' has unbalanced or nested brackets"));
        }
    }
    if depth != 0 {
        return Err(format!("'{list}' has an unclosed '['"));
    }
    parts.push(list[start..].trim());
    Ok(parts)
}

/// Appends the names of one entry (no top-level comma) to `out`.
fn expand_one(entry: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = entry.find('[') else {
        if entry.contains(']') || entry.chars().any(char::is_whitespace) {
            return Err(format!("'{entry}' is not a host name"));
        }
        out.push(entry.to_string());
        return Ok(());
    };
    let close = entry[open..].find(']').map(|i| open + i).ok_or_else(|| format!("'{entry}' has an unclosed '['"))?;
    let (prefix, ranges, rest) = (&entry[..open], &entry[open + 1..close], &entry[close + 1..]);
    let mut tails = Vec::new();
    expand_one(&format!("x{rest}"), &mut tails)?;
    for range in ranges.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| format!("'{entry}': '{range}' is not a number or a range a-b"));
        let (a, b) = (number(lo)?, number(hi)?);
        if b < a {
            return Err(format!("'{entry}': the range {range} goes down"));
        }
        if b - a > MAX_HOSTS as u64 {
            return Err(format!("'{entry}' names more than {MAX_HOSTS} hosts"));
        }
        let lo = lo.trim();
        let width = if lo.len() > 1 && lo.starts_with('0') { lo.len() } else { 0 };
        for n in a..=b {
            for tail in &tails {
                out.push(format!("{prefix}{n:0width$}{}", &tail[1..]));
            }
        }
        if out.len() > MAX_HOSTS {
            return Err(format!("'{entry}' names more than {MAX_HOSTS} hosts"));
        }
    }
    Ok(())
}

/// The line of a Slurm command's stderr to pass on: the first that says
/// `error:`, else the first that is not a hint (`Try "sbatch --help"`),
/// without the trailing whitespace.
pub fn first_error_line(stderr: &str) -> Option<String> {
    let lines = || stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    lines().find(|l| l.contains("error:")).or_else(|| lines().find(|l| !l.starts_with("Try "))).map(str::to_string)
}

/// Whether a Slurm command's error line says the controller (or the
/// database) could not be reached or did not answer in time, rather than
/// answering: worth asking again, and never a statement about a job.
pub fn is_no_answer(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "socket timed out",
        "unable to contact slurm controller",
        "connection refused",
        "zero bytes were transmitted",
        "communication connection failure",
        "connection timed out",
        "slurmdbd: connection",
        "gave no answer",
    ]
    .iter()
    .any(|p| l.contains(p))
}

/// "None", "(null)", "Unknown" and empty values mean "not set".
fn set(value: &str) -> Option<String> {
    let v = value.trim();
    (!(v.is_empty() || v == "None" || v == "(null)" || v == "Unknown")).then(|| v.to_string())
}

/// Lines of `squeue -h -t all -o '%i|%T|%N|%r'`: id, state, nodes, reason.
/// Lines of another shape are skipped.
pub fn parse_squeue(text: &str) -> Vec<JobInfo> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.trim().split('|').collect();
            let [id, state, nodes, reason] = f[..] else { return None };
            Some(JobInfo {
                id: id.trim().to_string(),
                state: JobState::from_slurm(state),
                nodes: set(nodes),
                reason: set(reason),
                exit_code: None,
                command: None,
                restarts: 0,
                earlier: Vec::new(),
            })
        })
        .collect()
}

/// The `Key=Value` fields of one `scontrol show -o` line, in order. A word
/// that does not start a new key (a value with spaces) joins the value
/// before it.
fn fields(line: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for word in line.split_whitespace() {
        let key = word.split_once('=').map(|(k, _)| k).filter(|k| {
            k.starts_with(|c: char| c.is_ascii_alphabetic()) && k.chars().all(|c| c.is_ascii_alphanumeric() || "_:/".contains(c))
        });
        match (key, out.last_mut()) {
            (Some(k), _) => out.push((k, word[k.len() + 1..].to_string())),
            (None, Some((_, v))) => {
                v.push(' ');
                v.push_str(word);
            }
            (None, None) => {}
        }
    }
    out
}

/// The jobs of `scontrol show job -o` (one line each).
pub fn parse_scontrol(text: &str) -> Vec<JobInfo> {
    text.lines()
        .filter_map(|line| {
            let f = fields(line);
            let get = |key: &str| f.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str());
            Some(JobInfo {
                id: get("JobId")?.to_string(),
                state: JobState::from_slurm(get("JobState")?),
                nodes: get("NodeList").and_then(set),
                reason: get("Reason").and_then(set),
                exit_code: get("ExitCode").and_then(set),
                command: get("Command").and_then(set),
                restarts: get("Restarts").and_then(|r| r.parse().ok()).unwrap_or(0),
                earlier: Vec::new(),
            })
        })
        .collect()
}

/// The jobs of `sacct -n -P -o JobID,State,ExitCode,NodeList` (steps,
/// `123.batch`, are skipped). With `-D` a requeued job has one line per
/// attempt, oldest first: each is returned, in order.
pub fn parse_sacct(text: &str) -> Vec<JobInfo> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.trim().split('|').collect();
            let [id, state, exit, nodes] = f[..] else { return None };
            (!id.contains('.') && !id.trim().is_empty()).then(|| JobInfo {
                id: id.trim().to_string(),
                state: JobState::from_slurm(state),
                nodes: set(nodes).filter(|n| n != "None assigned"),
                reason: None,
                exit_code: set(exit),
                command: None,
                restarts: 0,
                earlier: Vec::new(),
            })
        })
        .collect()
}
