//! Reading a run back: run.json and rows.jsonl of a run directory, and any
//! one record from its text, each checked against the schema versions this
//! proofbench reads (a newer major version is refused, nested records
//! included). Never writes.
//!
//! rows.jsonl is read as bytes, one line at a time (memory holds the rows
//! parsed and one line of text, never the whole file): a last line without
//! its newline (the writer died inside it) is ignored with a warning,
//! whatever its bytes; a complete line that is not UTF-8 or not a row, or a
//! row that appears twice, is an input error naming the file and the line.

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::dir::EvidenceError;
use super::records::{ROW_SCHEMA, RUN_SCHEMA, Row, RunRecord};

/// A run read back from its directory.
#[derive(Clone, Debug)]
pub struct StoredRun {
    pub dir: PathBuf,
    pub run: RunRecord,
    pub rows: Vec<Row>,
    /// Problems that did not stop the reading (e.g. a truncated last row),
    /// each naming its file.
    pub warnings: Vec<String>,
}

/// Reads run.json and rows.jsonl of a run directory, refusing records of a
/// newer schema major version. The `not_run` of a run without its finish
/// record is its planned cells that have no row.
pub fn read_run(dir: &Path) -> Result<StoredRun, EvidenceError> {
    let run_path = dir.join("run.json");
    if !dir.is_dir() {
        return Err(EvidenceError::NotARunDir { path: dir.to_path_buf() });
    }
    let bytes = match fs::read(&run_path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(EvidenceError::NotARunDir { path: dir.to_path_buf() }),
        Err(e) => return Err(EvidenceError::io(&run_path, e)),
    };
    let text = utf8(&bytes, &run_path, None)?;
    let mut run = parse_run(text, &run_path)?;
    let rows_path = dir.join("rows.jsonl");
    let (rows, warnings) = match fs::File::open(&rows_path) {
        Ok(file) => read_rows(io::BufReader::with_capacity(1 << 16, file), &rows_path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), vec![format!("{}: missing, no rows", rows_path.display())]),
        Err(e) => return Err(EvidenceError::io(&rows_path, e)),
    };
    // A run without its finish record (killed, or still running) has the
    // `not_run` of its start: its cells without a row are what it did not run.
    if run.finished_utc.is_none() {
        run.not_run = run.cells_without_row(&rows).into_iter().map(|c| c.row_id.clone()).collect();
    }
    Ok(StoredRun { dir: dir.to_path_buf(), run, rows, warnings })
}

/// Parses run.json: a record of the current versions (its envelope and
/// planned cells included) straight into its type, anything else through a
/// JSON value, which names what is wrong (a plan of many cells is many
/// times larger as a JSON value than as the record).
fn parse_run(text: &str, path: &Path) -> Result<RunRecord, EvidenceError> {
    match serde_json::from_str::<RunRecord>(text) {
        Ok(run)
            if is_current(&run.schema, RUN_SCHEMA)
                && is_current(&run.envelope.schema, crate::envelope::SCHEMA)
                && run.plan.iter().all(|c| is_current(&c.schema, crate::model::CELL_SCHEMA)) =>
        {
            Ok(run)
        }
        _ => parse_record(text, RUN_SCHEMA, path, None),
    }
}

/// A history id as typed: `h:12` or `#12`.
pub fn parse_history_id(text: &str) -> Option<i64> {
    text.strip_prefix("h:").or_else(|| text.strip_prefix('#')).and_then(|n| n.parse().ok()).filter(|n| *n > 0)
}

/// Reads a run given as a directory or, when `arg` is a history id (`h:12`,
/// `#12`) and no such path exists, with `load_id` (the history's store: this
/// module reads run directories only). Returns the run and the name to print
/// for it; the run's warnings are for the caller to print.
pub fn read_run_or_id(arg: &Path, load_id: impl FnOnce(i64) -> anyhow::Result<StoredRun>) -> anyhow::Result<(StoredRun, String)> {
    let text = arg.to_string_lossy();
    if let Some(id) = parse_history_id(&text).filter(|_| !arg.exists()) {
        return Ok((load_id(id)?, format!("h:{id}")));
    }
    Ok((read_run(arg)?, arg.display().to_string()))
}

/// The rows of rows.jsonl (read from `input` one line at a time: memory
/// holds the rows and one line of text), in plan order, and the warnings.
fn read_rows(mut input: impl BufRead, path: &Path) -> Result<(Vec<Row>, Vec<String>), EvidenceError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut warnings = Vec::new();
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut piece: Vec<u8> = Vec::new();
    for line in 1.. {
        piece.clear();
        if input.read_until(b'\n', &mut piece).map_err(|e| EvidenceError::io(path, e))? == 0 {
            break;
        }
        // A line without its newline can only be the last.
        let cut = piece.pop_if(|b| *b == b'\n').is_none();
        if piece.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match utf8(&piece, path, Some(line)).and_then(|text| parse_row(text, path, Some(line))) {
            Ok(mut row) => {
                // The lists grew as they were parsed: give back what they did not fill.
                row.samples.shrink_to_fit();
                row.trials.shrink_to_fit();
                if let Some(first) = first_seen.insert(row.id().to_string(), line) {
                    return Err(EvidenceError::Parse {
                        path: path.to_path_buf(),
                        line: Some(line),
                        why: format!("row {} again (it is at line {first} too): a run has one row per cell", row.id()),
                    });
                }
                rows.push(row);
            }
            // A last line without its newline: the writer died inside it.
            Err(EvidenceError::Parse { .. }) if cut => {
                warnings.push(format!("{} line {line}: truncated last row ignored", path.display()));
            }
            Err(e) => return Err(e),
        }
    }
    // Rows are written as their last trial is decided; readers get plan
    // order. In place: a stable sort would take a buffer of half the rows.
    // Row ids are unique, so ties (a cell index twice) order by id.
    rows.sort_unstable_by(|a, b| a.cell.index.cmp(&b.cell.index).then_with(|| a.id().cmp(b.id())));
    Ok((rows, warnings))
}

/// `bytes` as UTF-8, or an input error naming the file, the line and where
/// the first bad byte is.
fn utf8<'a>(bytes: &'a [u8], path: &Path, line: Option<usize>) -> Result<&'a str, EvidenceError> {
    std::str::from_utf8(bytes).map_err(|e| EvidenceError::Parse {
        path: path.to_path_buf(),
        line,
        why: format!("not UTF-8 (an invalid byte at column {})", e.valid_up_to() + 1),
    })
}

/// Parses one row, upgrading a `proofbench.row/1` record (written before
/// trials: one worker per row, statistics over its samples) to the current
/// shape: one trial, its statistics recomputed.
pub fn parse_row(text: &str, path: &Path, line: Option<usize>) -> Result<Row, EvidenceError> {
    // A row of the current version (nearly all of them) goes straight into
    // its type; anything else takes the way through a JSON value, which
    // upgrades an old row or names what is wrong.
    if let Ok(mut row) = serde_json::from_str::<Row>(text)
        && is_current(&row.schema, ROW_SCHEMA)
        && is_current(&row.cell.schema, crate::model::CELL_SCHEMA)
    {
        fill_treatments(&mut row.cell);
        return Ok(row);
    }
    let mut row = parse_old_row(text, path, line)?;
    fill_treatments(&mut row.cell);
    Ok(row)
}

/// The treatments of the built-in workloads as the builds that wrote
/// cells without `treatments` defined them: a fixed fact of those records
/// (like a schema upgrade), not what the reading build defines.
const TREATMENTS_BEFORE_THE_FIELD: &[(&str, &str)] = &[("os.syscall", "pad_pct"), ("selftest.noisy", "slowdown_pct")];

/// A cell recorded before cells carried their treatments gets those its
/// workload had then ([`TREATMENTS_BEFORE_THE_FIELD`]; none for any other).
fn fill_treatments(cell: &mut crate::model::Cell) {
    if cell.treatments.is_some() {
        return;
    }
    let then = TREATMENTS_BEFORE_THE_FIELD.iter().filter(|(w, _)| *w == cell.workload).map(|(_, p)| p.to_string());
    cell.treatments = Some(then.collect());
}

/// A row that is not of the current version: upgraded through a JSON value,
/// or an error naming what is wrong.
fn parse_old_row(text: &str, path: &Path, line: Option<usize>) -> Result<Row, EvidenceError> {
    let mut value = parse_value(text, ROW_SCHEMA, path, line)?;
    nested(&value, "cell", crate::model::CELL_SCHEMA, path, line)?;
    let major = value.get("schema").and_then(|s| s.as_str()).and_then(schema_parts).map_or(0, |(_, m)| m);
    if major >= 2 {
        return from_value(value, path, line);
    }
    // The old statistics (a bootstrap over one process's samples) are not
    // the current ones: dropped and recomputed from the samples.
    if let Some(o) = value.as_object_mut() {
        o.insert("stats".into(), Value::Null);
    }
    let mut row: Row = from_value(value, path, line)?;
    row.upgrade_from_v1();
    Ok(row)
}

/// Whether schema `found` is of the kind and the major version of `expected`.
fn is_current(found: &str, expected: &str) -> bool {
    schema_parts(found).is_some_and(|f| Some(f) == schema_parts(expected))
}

/// Splits `proofbench.row/1` into ("row", 1).
pub(crate) fn schema_parts(s: &str) -> Option<(&str, u32)> {
    let rest = s.strip_prefix("proofbench.")?;
    let (kind, version) = rest.split_once('/')?;
    let major = version.split('.').next()?.parse().ok()?;
    Some((kind, major))
}

/// Parses one record, checking its schema kind and major version first
/// (and, in a run record, those of the envelope and the planned cells).
pub fn parse_record<T: DeserializeOwned>(text: &str, expected: &str, path: &Path, line: Option<usize>) -> Result<T, EvidenceError> {
    let value = parse_value(text, expected, path, line)?;
    if expected == RUN_SCHEMA {
        nested(&value, "envelope", crate::envelope::SCHEMA, path, line)?;
        if let Some(plan) = value.get("plan").and_then(Value::as_array) {
            for (i, cell) in plan.iter().enumerate() {
                check_schema(cell, crate::model::CELL_SCHEMA, path, line).map_err(|e| in_field(e, &format!("plan[{i}]")))?;
            }
        }
    }
    from_value(value, path, line)
}

/// A record of a known schema as JSON, into its type.
fn from_value<T: DeserializeOwned>(value: Value, path: &Path, line: Option<usize>) -> Result<T, EvidenceError> {
    let found = value.get("schema").and_then(|s| s.as_str()).unwrap_or_default().to_string();
    serde_json::from_value(value).map_err(|e| EvidenceError::Parse {
        path: path.to_path_buf(),
        line,
        why: format!("malformed {found} record ({e})"),
    })
}

/// Parses one record as JSON, checking its schema kind and major version.
fn parse_value(text: &str, expected: &str, path: &Path, line: Option<usize>) -> Result<Value, EvidenceError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| EvidenceError::Parse { path: path.to_path_buf(), line, why: format!("not JSON ({e})") })?;
    check_schema(&value, expected, path, line)?;
    Ok(value)
}

/// Checks the record nested at `field` of `value`, where there is one.
fn nested(value: &Value, field: &str, expected: &str, path: &Path, line: Option<usize>) -> Result<(), EvidenceError> {
    match value.get(field) {
        Some(inner) if inner.is_object() => check_schema(inner, expected, path, line).map_err(|e| in_field(e, field)),
        _ => Ok(()),
    }
}

/// Says which nested record an error is about.
fn in_field(e: EvidenceError, field: &str) -> EvidenceError {
    match e {
        EvidenceError::Parse { path, line, why } => EvidenceError::Parse { path, line, why: format!("{field}: {why}") },
        other => other,
    }
}

/// Checks a record's `schema`: of the expected kind, and of a major version
/// no newer than this proofbench reads.
fn check_schema(value: &Value, expected: &str, path: &Path, line: Option<usize>) -> Result<(), EvidenceError> {
    let perr = |why: String| EvidenceError::Parse { path: path.to_path_buf(), line, why };
    let found = value.get("schema").and_then(|s| s.as_str()).ok_or_else(|| perr("record has no \"schema\" field".into()))?;
    let (want_kind, want_major) = schema_parts(expected).expect("valid built-in schema");
    let (kind, major) = schema_parts(found).ok_or_else(|| perr(format!("unrecognised schema '{found}'")))?;
    if kind != want_kind {
        return Err(perr(format!("expected a {expected} record, found {found}")));
    }
    if major > want_major {
        return Err(EvidenceError::NewerSchema {
            path: path.to_path_buf(),
            line,
            found: found.to_string(),
            supported: expected.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_recorded_before_treatments_gets_those_its_workload_had_then() {
        let mut row = super::super::fake::row(0, "os.syscall", &[], None, &[1.0, 2.0], crate::model::Unit::NsPerOp);
        let p = Path::new("rows.jsonl");
        row.cell.treatments = None;
        let old = serde_json::to_string(&row).unwrap();
        assert!(!old.contains("treatments"), "an old record has no such field");
        assert_eq!(parse_row(&old, p, None).unwrap().cell.treatments, Some(vec!["pad_pct".to_string()]));
        // A workload no build defines has none; a recorded list is kept as it is.
        row.cell.workload = "elsewhere.made".into();
        let old = serde_json::to_string(&row).unwrap();
        assert_eq!(parse_row(&old, p, None).unwrap().cell.treatments, Some(Vec::new()));
        row.cell.treatments = Some(vec!["pad".into()]);
        let new = serde_json::to_string(&row).unwrap();
        assert_eq!(parse_row(&new, p, None).unwrap().cell.treatments, Some(vec!["pad".to_string()]));
    }

    /// Issue 32, item 7: a run's submission is its `--hosts` invocation's,
    /// else its Slurm job's; a record written before the field reads as
    /// one of none.
    #[test]
    fn a_runs_submission_is_its_hosts_invocations_else_its_slurm_submissions() {
        let fake = super::super::fake::fake_run;
        let (stored, _) = fake("r", "2026-01-01T00:00:00Z", None, Vec::new());
        let mut run = stored.run;
        run.envelope.slurm = None;
        assert_eq!(run.submission(), None, "a run made on its own");
        // A launched run of one launcher, as recorded before the field.
        run.launcher = Some(super::super::fake::launcher("a", None));
        let mut old = serde_json::to_value(&run).unwrap();
        assert!(old["launcher"].get("submission").is_none(), "{}", old["launcher"]);
        let back: RunRecord = parse_record(&old.to_string(), RUN_SCHEMA, Path::new("run.json"), None).unwrap();
        assert_eq!(back.submission(), None);
        // A Slurm job of an array.
        run.envelope.slurm = crate::envelope::SlurmFacts::from_vars(|k| match k {
            "SLURM_JOB_ID" => Some("12".into()),
            "SLURM_ARRAY_JOB_ID" => Some("7".into()),
            _ => None,
        });
        assert_eq!(run.submission().as_deref(), Some("slurm array 7"));
        // One host of a `--hosts` invocation: its id, kept through run.json.
        run.launcher = Some(super::super::fake::launcher("a", Some("hosts 20260101T000000Z-k3x9qa")));
        let back: RunRecord = parse_record(&serde_json::to_string(&run).unwrap(), RUN_SCHEMA, Path::new("run.json"), None).unwrap();
        assert_eq!(back.submission().as_deref(), Some("hosts 20260101T000000Z-k3x9qa"), "the invocation's, before the job's");
        // The old record with the Slurm job reads as the job's.
        old["envelope"]["slurm"] = serde_json::to_value(&run.envelope.slurm).unwrap();
        let back: RunRecord = parse_record(&old.to_string(), RUN_SCHEMA, Path::new("run.json"), None).unwrap();
        assert_eq!(back.submission().as_deref(), Some("slurm array 7"));
    }

    #[test]
    fn history_ids_parse_as_h_colon_or_hash() {
        assert_eq!(parse_history_id("h:12"), Some(12));
        assert_eq!(parse_history_id("#3"), Some(3));
        assert_eq!(parse_history_id("12"), None);
        assert_eq!(parse_history_id("h:0"), None);
        assert_eq!(parse_history_id("h:x"), None);
    }

    #[test]
    fn schema_versions_parse_and_newer_majors_are_refused() {
        assert_eq!(schema_parts("proofbench.row/2"), Some(("row", 2)));
        assert_eq!(schema_parts("proofbench.run/2.3"), Some(("run", 2)));
        assert_eq!(schema_parts("other.row/1"), None);
        let p = Path::new("x");
        let e = parse_record::<Value>(r#"{"schema":"proofbench.row/9"}"#, ROW_SCHEMA, p, Some(1)).unwrap_err();
        assert!(matches!(e, EvidenceError::NewerSchema { .. }), "{e}");
        let e = parse_record::<Value>(r#"{"schema":"proofbench.run/1"}"#, ROW_SCHEMA, p, Some(1)).unwrap_err();
        assert!(e.to_string().contains("expected a proofbench.row/2 record"), "{e}");
        let e = parse_record::<Value>("{", ROW_SCHEMA, p, Some(4)).unwrap_err();
        assert!(e.to_string().contains("line 4"), "{e}");
    }

    #[test]
    fn a_nested_record_of_a_newer_schema_is_refused() {
        let p = Path::new("rows.jsonl");
        let row = r#"{"schema":"proofbench.row/2","cell":{"schema":"proofbench.cell/99"}}"#;
        let e = parse_row(row, p, Some(3)).unwrap_err();
        assert!(matches!(e, EvidenceError::NewerSchema { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "rows.jsonl line 3: record schema proofbench.cell/99 is newer than this proofbench reads (proofbench.cell/1); use a newer proofbench"
        );
        let row = r#"{"schema":"proofbench.row/2","cell":{"schema":"proofbench.run/2"}}"#;
        assert!(parse_row(row, p, None).unwrap_err().to_string().contains("cell: expected a proofbench.cell/1 record"));
        let run = r#"{"schema":"proofbench.run/2","envelope":{"schema":"proofbench.envelope/1"},"plan":[{"schema":"proofbench.cell/7"}]}"#;
        let e = parse_record::<Value>(run, RUN_SCHEMA, Path::new("run.json"), None).unwrap_err();
        assert!(e.to_string().contains("proofbench.cell/7 is newer"), "{e}");
        let run = r#"{"schema":"proofbench.run/2","envelope":{"schema":"proofbench.envelope/3"},"plan":[]}"#;
        let e = parse_record::<Value>(run, RUN_SCHEMA, Path::new("run.json"), None).unwrap_err();
        assert!(e.to_string().contains("proofbench.envelope/3 is newer"), "{e}");
    }

    #[test]
    fn a_killed_run_reads_as_not_running_exactly_its_cells_without_a_row() {
        use super::super::fake;
        let tmp = tempfile::tempdir().unwrap();
        let rows: Vec<Row> = (0..3).map(|i| fake::row(i, "os.syscall", &[], None, &[1.0, 2.0], crate::model::Unit::NsPerOp)).collect();
        let plan = rows.iter().map(|r| r.cell.clone()).collect();
        let mut stored = fake::killed(fake::run(plan, Vec::new()));
        // As the run wrote it at its start, and left it when it was killed after one row.
        stored.run.not_run = rows.iter().map(|r| r.cell.row_id.clone()).collect();
        let d = tmp.path().join("run");
        let mut dir = super::super::RunDir::create_at(&d).unwrap();
        dir.write_run(&stored.run).unwrap();
        dir.append_row(&rows[1]).unwrap();
        drop(dir);
        let back = read_run(&d).unwrap();
        assert_eq!(back.run.not_run, [rows[0].cell.row_id.clone(), rows[2].cell.row_id.clone()]);
        // A finished run's own list stands.
        let mut finished = stored.run.clone();
        finished.finished_utc = Some("2025-01-01T00:01:00Z".into());
        super::super::RunDir::create_at(&tmp.path().join("done")).unwrap().write_run(&finished).unwrap();
        assert_eq!(read_run(&tmp.path().join("done")).unwrap().run.not_run.len(), 3);
    }

    #[test]
    fn reading_a_directory_without_run_json_names_the_problem() {
        let tmp = tempfile::tempdir().unwrap();
        let e = read_run(tmp.path()).unwrap_err();
        assert!(matches!(e, EvidenceError::NotARunDir { .. }));
        assert!(e.is_input_error());
        let e = read_run(&tmp.path().join("missing")).unwrap_err();
        assert!(e.to_string().contains("not a proofbench run directory"));
    }

    #[test]
    fn only_a_last_line_without_its_newline_may_be_cut() {
        let p = Path::new("rows.jsonl");
        // Cut inside a two-byte character, or inside the JSON: ignored.
        for cut in [&b"{\"schema\":\"proofbench.row/2\",\"summary\":\"caf\xc3"[..], b"{\"schema\":\"proof"] {
            let (rows, warnings) = read_rows(cut, p).unwrap();
            assert!(rows.is_empty());
            assert_eq!(warnings, vec!["rows.jsonl line 1: truncated last row ignored".to_string()]);
        }
        // The same bytes with their newline: a complete line, an error.
        let e = read_rows(&b"{\"summary\":\"caf\xc3\n"[..], p).unwrap_err();
        assert_eq!(e.to_string(), "rows.jsonl line 1: not UTF-8 (an invalid byte at column 16)");
        assert!(e.is_input_error());
        assert!(read_rows(&b"{\"schema\":\"proof\n"[..], p).unwrap_err().to_string().contains("line 1: not JSON"));
        assert!(read_rows(&b"\n\n"[..], p).unwrap().0.is_empty(), "blank lines are skipped");
    }
}
