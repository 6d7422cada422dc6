//! The machine identity of an envelope, defined once: what makes two runs
//! the same machine (`compare`, the history's noise floors), the name the
//! history stores for a run's machine, and what makes two hosts of a fleet
//! the same kind of machine (`fleet`). Pure: it reads a stored envelope only.

use super::Envelope;
use crate::model::Reading;

/// A reading as one word of an identity: its value, `absent` when it has none.
fn reading_text<T: std::fmt::Debug>(r: &Reading<T>) -> String {
    match r {
        Reading::Present(v) => format!("{v:?}").trim_matches('"').to_string(),
        Reading::Absent { .. } => "absent".into(),
    }
}

impl Envelope {
    /// The machine identity, as (field, value): hostname, Slurm node, CPU
    /// model, sockets, cores, logical CPUs, memory to the GiB, hypervisor.
    /// Two runs are of the same machine exactly when every value is equal.
    pub fn identity(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("hostname", reading_text(&self.hostname)), ("slurm.node", self.node_apart())];
        v.extend(self.hardware());
        v
    }

    /// The Slurm node the run ran on where it is not the host itself (`-`
    /// otherwise): several Slurm nodes on one host (a test cluster, or
    /// nodes sharing a hostname) are several machines, while a node named
    /// as its host (`n1` on `n1` or `n1.cluster`) is that host, inside a
    /// job or not.
    fn node_apart(&self) -> String {
        let node = self.slurm.as_ref().and_then(|s| s.node.as_deref()).filter(|n| !n.is_empty());
        match (node, self.hostname.ok()) {
            (None, _) => "-".into(),
            (Some(n), Some(h)) if h == n || h.split('.').next() == Some(n) => "-".into(),
            (Some(n), _) => n.to_string(),
        }
    }

    /// The identity without the hostname: what the machine is rather than
    /// which one it is (CPU model, sockets, cores, logical CPUs, memory to
    /// the GiB, hypervisor).
    pub fn hardware(&self) -> Vec<(&'static str, String)> {
        // Total memory moves by a few MiB between boots: compare whole GiB.
        let gib = |r: &Reading<u64>| {
            r.ok().map(|b| format!("{} GiB", (*b as f64 / (1u64 << 30) as f64).round())).unwrap_or_else(|| "absent".into())
        };
        vec![
            ("cpu.model_name", reading_text(&self.cpu.model_name)),
            ("cpu.sockets", reading_text(&self.cpu.sockets)),
            ("cpu.physical_cores", reading_text(&self.cpu.physical_cores)),
            ("cpu.logical_cpus", reading_text(&self.cpu.logical_cpus)),
            ("memory.total_bytes", gib(&self.memory.total_bytes)),
            ("virtualization.hypervisor", reading_text(&self.virtualization.hypervisor)),
        ]
    }

    /// The machine identity as one key: equal for two envelopes exactly
    /// when [`Envelope::machine_differences`] finds none.
    pub fn machine_key(&self) -> String {
        self.identity().into_iter().map(|(_, v)| v).collect::<Vec<_>>().join("|")
    }

    /// `field (a vs b)` for each identity field that differs between this
    /// envelope and `other` (empty: the same machine).
    pub fn machine_differences(&self, other: &Envelope) -> Vec<String> {
        self.identity()
            .into_iter()
            .zip(other.identity())
            .filter(|((_, a), (_, b))| a != b)
            .map(|((f, a), (_, b))| format!("{f} ({a} vs {b})"))
            .collect()
    }

    /// The machine in a word: its hostname, with `/NODE` when it ran on a
    /// Slurm node that is not the host itself (see [`Envelope::identity`]).
    pub fn machine_short_name(&self) -> String {
        let host = self.hostname.ok().cloned().unwrap_or_else(|| "unknown-host".into());
        match self.node_apart() {
            n if n == "-" => host,
            n => format!("{host}/{n}"),
        }
    }

    /// `hostname, CPU model, N CPUs`: how the history names a run's machine
    /// (its `runs.machine` column; stored, so this text must not change).
    pub fn machine_name(&self) -> String {
        let host = self.hostname.ok().cloned().unwrap_or_else(|| "unknown-host".into());
        let model = self.cpu.model_name.ok().cloned().unwrap_or_else(|| "unknown CPU".into());
        let cpus = self.cpu.logical_cpus.ok().map(|n| format!("{n} CPUs")).unwrap_or_else(|| "? CPUs".into());
        format!("{host}, {model}, {cpus}")
    }

    /// The kind of machine and system, for grouping hosts: the CPU model and
    /// the rest of [`Envelope::hardware`], and the kernel release. Hosts
    /// whose kinds differ are not measured against one another.
    pub fn kind(&self) -> Vec<(&'static str, String)> {
        let mut v = self.hardware();
        v.push(("kernel.release", reading_text(&self.kernel.release)));
        v
    }
}
