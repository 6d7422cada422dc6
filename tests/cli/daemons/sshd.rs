//! A real OpenSSH server per host alias, for `--launcher "ssh ..."` tests.
//!
//! [`Sshd::start`] makes a host key and a user key with `ssh-keygen` in a
//! temporary directory and starts one `sshd -D -e -f CONFIG` per host alias.
//! Where network namespaces work (root, `ip netns`, `nsenter`), each host is a
//! namespace of its own (`pbsshd<N>-<pid>`), reached over a veth pair at an
//! address of its own (`10.211.x.y`, port 22): the hosts are distinct
//! machines as far as the network goes (the hostname, the filesystem and the
//! process table stay this machine's, so the test binary's path is valid on
//! every host). Elsewhere (or with `PROOFBENCH_SSHD_NO_NETNS=1`) each host is
//! an sshd of its own on a free loopback port. Either way
//! `drop_connections(host)` ends exactly that host's sessions, and dropping
//! the fixture stops everything it started.
//!
//! The generated ssh client config maps each alias to its server (`User
//! root`, the fixture's key, no host key checking, `BatchMode yes`), so
//! [`Sshd::launcher`] is just `ssh -F <config> {host}`. The remote command
//! runs as root with the environment sshd gives.
//!
//! The daemons are children of the thread that started the fixture and die
//! with it (`PR_SET_PDEATHSIG`): keep the fixture in the test's own thread.

use std::fmt::Write as _;
use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::skip;

/// The /16 the namespaced hosts get their /30s from.
const NET: &str = "10.211";
/// Namespace (and veth) names start with this.
const NS_PREFIX: &str = "pbsshd";
/// Serialises the choice of namespace names and addresses between test processes.
const LOCK: &str = "/tmp/proofbench-sshd-netns.lock";

/// One sshd per host alias; see the module docs.
pub struct Sshd {
    dir: tempfile::TempDir,
    ssh_config: PathBuf,
    hosts: Vec<Host>,
    /// Processes a host's dropped connection left behind (its sessions'
    /// commands), stopped with the fixture.
    orphans: Mutex<Vec<Proc>>,
}

struct Host {
    alias: String,
    addr: String,
    port: u16,
    netns: Option<Netns>,
    sshd: Child,
    log: PathBuf,
}

/// A host's network namespace: its name under /run/netns, its identity as
/// /proc/PID/ns/net shows it, and the launching side's end of its veth pair.
struct Netns {
    name: String,
    link: String,
    veth: String,
}

/// A process, told apart from a later one with the same pid by its start time.
#[derive(Clone, Debug, PartialEq)]
pub struct Proc {
    pub pid: u32,
    pub comm: String,
    start: u64,
}

impl Proc {
    /// Whether this very process still runs (a zombie does not).
    pub fn is_running(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start == self.start && s.state != 'Z' && s.state != 'X')
    }
}

/// Where a host's sshd listens.
struct Place {
    addr: String,
    port: u16,
    netns: Option<Netns>,
}

impl Sshd {
    /// Starts sshd for the host aliases `hosts` (e.g. `["h1", "h2", "h3"]`).
    /// `None`, after printing `skipped: <reason>`, when it cannot start here;
    /// under `CI=true` it panics with the reason instead.
    pub fn start(hosts: &[&str]) -> Option<Sshd> {
        match Sshd::try_start(hosts) {
            Ok(s) => Some(s),
            Err(why) => skip(&format!("no sshd fixture: {why}")),
        }
    }

    fn try_start(hosts: &[&str]) -> Result<Sshd, String> {
        assert!(!hosts.is_empty(), "at least one host");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("sshd needs root (it runs the sessions as root and drops privileges itself)".into());
        }
        let sshd = ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).is_file())
            .ok_or("no sshd installed (apt-get install openssh-server)")?;
        for tool in ["ssh-keygen", "ssh"] {
            if Command::new(tool).arg("-V").output().is_err() {
                return Err(format!("no `{tool}` on PATH (apt-get install openssh-client)"));
            }
        }
        std::fs::create_dir_all("/run/sshd")
            .map_err(|e| format!("cannot create /run/sshd (sshd's privilege separation directory): {e}"))?;

        remove_stale_dirs();
        let dir = tempfile::Builder::new()
            .prefix(&format!("proofbench-sshd-{}-", std::process::id()))
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let host_key = dir.path().join("ssh_host_ed25519_key");
        let user_key = dir.path().join("id_ed25519");
        for key in [&host_key, &user_key] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "proofbench-test", "-f"])
                .arg(key)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("ssh-keygen: {e}"))?;
            if !out.status.success() {
                return Err(format!("ssh-keygen failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
            }
        }
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(user_key.with_extension("pub"), &authorized).map_err(|e| format!("authorized_keys: {e}"))?;

        let places = match netns_places(hosts.len()) {
            Ok(p) => p,
            Err(why) => {
                eprintln!("note: the sshd hosts share the loopback interface: no network namespaces ({why})");
                loopback_places(hosts.len())?
            }
        };
        let mut fixture = Sshd { ssh_config: dir.path().join("ssh_config"), dir, hosts: Vec::new(), orphans: Mutex::new(Vec::new()) };
        // From here on, a failure drops `fixture`, which stops its hosts and
        // deletes their namespaces; those not yet given to a host are deleted here.
        let mut places = places.into_iter();
        let mut spare = Vec::new();
        for alias in hosts {
            let mut place = places.next().expect("one place per host");
            match fixture.start_host(alias, sshd, &mut place, &host_key, &authorized) {
                Ok(h) => fixture.hosts.push(h),
                Err(why) => {
                    spare.extend(place.netns);
                    spare.extend(places.filter_map(|p| p.netns));
                    spare.iter().for_each(delete_netns);
                    return Err(why);
                }
            }
        }
        fixture.write_client_config(&user_key)?;
        for h in &fixture.hosts {
            let out = Command::new("ssh").args(["-F", &fixture.ssh_config.display().to_string(), &h.alias, "true"]).output();
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    return Err(format!(
                        "`ssh {} true` failed ({}): {}; sshd said: {}",
                        h.alias,
                        o.status,
                        String::from_utf8_lossy(&o.stderr).trim(),
                        h.log_tail()
                    ));
                }
                Err(e) => return Err(format!("ssh: {e}")),
            }
        }
        Ok(fixture)
    }

    /// Starts the sshd of one host at `place` and waits until it accepts
    /// connections. The host takes the place's namespace; on failure the
    /// place keeps it (still to be deleted).
    fn start_host(&self, alias: &str, sshd: &str, place: &mut Place, host_key: &Path, authorized: &Path) -> Result<Host, String> {
        let config = self.dir.path().join(format!("sshd_config-{alias}"));
        let log = self.dir.path().join(format!("sshd-{alias}.log"));
        for attempt in 0.. {
            write_sshd_config(sshd, &config, place, host_key, authorized)?;
            let mut cmd = match &place.netns {
                Some(ns) => {
                    let mut c = Command::new("nsenter");
                    c.arg(format!("--net=/run/netns/{}", ns.name)).arg("--").arg(sshd);
                    c
                }
                None => Command::new(sshd),
            };
            cmd.args(["-D", "-e", "-f"]).arg(&config).stdin(Stdio::null());
            let (out, err) = File::create(&log).and_then(|f| Ok((f.try_clone()?, f))).map_err(|e| format!("{}: {e}", log.display()))?;
            cmd.stdout(out).stderr(err);
            // SAFETY: prctl is async-signal-safe and touches only the child.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let child = cmd.spawn().map_err(|e| format!("cannot start {sshd}: {e}"))?;
            let mut host = Host {
                alias: alias.to_string(),
                addr: place.addr.clone(),
                port: place.port,
                netns: place.netns.take(),
                sshd: child,
                log: log.clone(),
            };
            match host.wait_ready() {
                Ok(()) => return Ok(host),
                Err(why) => {
                    place.netns = host.netns.take();
                    host.stop();
                    // A loopback port another process took in between: another one.
                    if place.netns.is_none() && attempt < 5 && why.contains("Cannot bind") {
                        place.port = free_port()?;
                        continue;
                    }
                    return Err(format!("sshd for {alias} did not start: {why}"));
                }
            }
        }
        unreachable!()
    }

    fn write_client_config(&self, user_key: &Path) -> Result<(), String> {
        let mut text = String::new();
        for h in &self.hosts {
            let _ = write!(
                text,
                "Host {alias}\n  HostName {addr}\n  Port {port}\n  User root\n  IdentityFile {key}\n  IdentitiesOnly yes\n  \
                 IdentityAgent none\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n  \
                 BatchMode yes\n  LogLevel ERROR\n  ConnectTimeout 10\n  ControlMaster no\n  ControlPath none\n\n",
                alias = h.alias,
                addr = h.addr,
                port = h.port,
                key = user_key.display()
            );
        }
        std::fs::write(&self.ssh_config, text).map_err(|e| format!("{}: {e}", self.ssh_config.display()))
    }

    /// The `--launcher` template reaching any host: `ssh -F <config> -- {host}`.
    pub fn launcher(&self) -> String {
        format!("ssh -F {} -- {{host}}", shell_word(&self.ssh_config))
    }

    /// The launcher of one host: `ssh -F <config> -- <host>`.
    pub fn launcher_for(&self, host: &str) -> String {
        self.host(host);
        format!("ssh -F {} -- {host}", shell_word(&self.ssh_config))
    }

    /// The generated ssh client config (`ssh -F` it).
    pub fn ssh_config(&self) -> &Path {
        &self.ssh_config
    }

    /// Whether each host is a network namespace of its own (else the hosts
    /// share the loopback interface, on ports of their own).
    pub fn namespaced(&self) -> bool {
        self.hosts.iter().all(|h| h.netns.is_some())
    }

    /// The network namespace of `host` as /proc/PID/ns/net names it
    /// (`net:[...]`), when hosts are namespaced.
    pub fn net_ns(&self, host: &str) -> Option<&str> {
        self.host(host).netns.as_ref().map(|n| n.link.as_str())
    }

    fn host(&self, alias: &str) -> &Host {
        self.hosts.iter().find(|h| h.alias == alias).unwrap_or_else(|| panic!("the fixture has no host {alias}"))
    }

    /// Ends the established connections of `host` from the server side, as a
    /// broken network would: its per-connection sshd processes are killed
    /// (SIGKILL), so the ssh clients see their connection close (exit 255).
    /// The host's sshd keeps listening, and the other hosts are untouched.
    /// The commands those sessions ran are left to notice their closed
    /// stdin/stdout, as on a real host; the fixture stops them when dropped.
    pub fn drop_connections(&self, host: &str) {
        let h = self.host(host);
        let tree = descendants(h.sshd.id());
        let (sshds, others): (Vec<Proc>, Vec<Proc>) = tree.into_iter().partition(|p| p.comm.starts_with("sshd"));
        for p in &sshds {
            kill(p, libc::SIGKILL);
        }
        self.orphans.lock().unwrap().extend(others);
        let t = Instant::now();
        while sshds.iter().any(Proc::is_running) && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The established sessions' sshd processes of `host` (one or two per
    /// connection), for a test to wait until a connection is up.
    pub fn connections(&self, host: &str) -> Vec<Proc> {
        descendants(self.host(host).sshd.id()).into_iter().filter(|p| p.comm.starts_with("sshd")).collect()
    }

    /// Every process running for the fixture: the sshds, their sessions and
    /// what those run (for namespaced hosts, everything in their namespaces),
    /// and what dropped connections left.
    pub fn processes(&self) -> Vec<Proc> {
        let mut out: Vec<Proc> = Vec::new();
        let mut add = |p: Proc| {
            if !out.iter().any(|q| q.pid == p.pid) {
                out.push(p);
            }
        };
        for h in &self.hosts {
            if let Some(p) = proc_of(h.sshd.id()) {
                add(p);
            }
            descendants(h.sshd.id()).into_iter().for_each(&mut add);
            if let Some(ns) = &h.netns {
                in_net_ns(&ns.link).into_iter().for_each(&mut add);
            }
        }
        self.orphans.lock().unwrap().iter().filter(|p| p.is_running()).cloned().for_each(add);
        out
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let mut left = self.processes();
        for h in &mut self.hosts {
            h.stop();
        }
        // What the sshds started, orphaned by now; kill again until nothing is left.
        let t = Instant::now();
        while !left.is_empty() && t.elapsed() < Duration::from_secs(10) {
            left.iter().for_each(|p| kill(p, libc::SIGKILL));
            std::thread::sleep(Duration::from_millis(10));
            left.retain(Proc::is_running);
            for ns in self.hosts.iter().filter_map(|h| h.netns.as_ref()) {
                let more: Vec<Proc> = in_net_ns(&ns.link).into_iter().filter(|p| !left.contains(p)).collect();
                left.extend(more);
            }
        }
        for ns in self.hosts.iter_mut().filter_map(|h| h.netns.take()) {
            delete_netns(&ns);
        }
    }
}

impl Host {
    /// Waits until the sshd accepts TCP connections (it has bound its port).
    fn wait_ready(&mut self) -> Result<(), String> {
        let addr: SocketAddr = format!("{}:{}", self.addr, self.port).parse().map_err(|e| format!("address: {e}"))?;
        let t = Instant::now();
        loop {
            if let Ok(Some(status)) = self.sshd.try_wait() {
                return Err(format!("it exited ({status}): {}", self.log_tail()));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if t.elapsed() > Duration::from_secs(10) {
                return Err(format!("nothing listens on {addr} after 10 s: {}", self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join(" | ")
    }

    /// Stops the listening sshd and its sessions' sshds (what those ran is
    /// the caller's): the sessions first, so that the listener reaps them.
    fn stop(&mut self) {
        let tree = descendants(self.sshd.id());
        tree.iter().for_each(|p| kill(p, libc::SIGKILL));
        let t = Instant::now();
        while tree.iter().any(|p| stat(p.pid).is_some_and(|s| s.start == p.start)) && t.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: the pid is our unreaped child.
        unsafe { libc::kill(self.sshd.id() as libc::pid_t, libc::SIGKILL) };
        let _ = self.sshd.wait();
    }
}

fn write_sshd_config(sshd: &str, config: &Path, place: &Place, host_key: &Path, authorized: &Path) -> Result<(), String> {
    // `SetEnv SHLVL=1`: bash, started by sshd as the session's shell, reads
    // the user's ~/.bashrc only at the first shell level. The test machine's
    // rc files are not the fixture's to run (a version manager's rehash
    // there waits on a lock that a killed session left), so a session's
    // shell starts one level down and reads none.
    let base = format!(
        "ListenAddress {}:{}\nHostKey {}\nPidFile none\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
         UseDNS no\nPrintMotd no\nMaxStartups 100\nMaxSessions 100\nLogLevel INFO\nSetEnv SHLVL=1\n",
        place.addr,
        place.port,
        host_key.display(),
        authorized.display()
    );
    // OpenSSH 9.8 and later penalise a source whose connections end badly
    // (as dropped ones do); older ones do not know the option.
    let mut last = String::new();
    for text in [format!("{base}PerSourcePenalties no\n"), base] {
        std::fs::write(config, &text).map_err(|e| format!("{}: {e}", config.display()))?;
        let out = Command::new(sshd).arg("-t").arg("-f").arg(config).output().map_err(|e| format!("{sshd} -t: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        last = String::from_utf8_lossy(&out.stderr).trim().to_string();
    }
    Err(format!("`{sshd} -t` refuses the configuration: {last}"))
}

/// A free TCP port on 127.0.0.1 (free when asked: sshd may lose it to
/// another process, and is then given another).
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn loopback_places(n: usize) -> Result<Vec<Place>, String> {
    (0..n).map(|_| Ok(Place { addr: "127.0.0.1".into(), port: free_port()?, netns: None })).collect()
}

/// `ip ARGS`, its stdout or why it failed.
fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("`ip {}`: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// `n` fresh network namespaces, each with a veth pair to this one: the
/// host's end at `10.211.a.(b+2)/30`, ours at `.(b+1)`. Namespaces a dead
/// test process left are deleted on the way.
fn netns_places(n: usize) -> Result<Vec<Place>, String> {
    if std::env::var_os("PROOFBENCH_SSHD_NO_NETNS").is_some() || Command::new("nsenter").arg("--version").output().is_err() {
        return Err("PROOFBENCH_SSHD_NO_NETNS is set, or no nsenter".into());
    }
    let lock = File::create(LOCK).map_err(|e| format!("{LOCK}: {e}"))?;
    // SAFETY: flock on a descriptor we own; released when `lock` is closed.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!("flock {LOCK}: {}", std::io::Error::last_os_error()));
    }
    let mut used = std::collections::BTreeSet::new();
    for line in ip(&["netns", "list"])?.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some((index, pid)) = name.strip_prefix(NS_PREFIX).and_then(|r| r.split_once('-')) else { continue };
        let (Ok(index), Ok(pid)) = (index.parse::<u32>(), pid.parse::<i32>()) else { continue };
        if pid_running(pid) {
            used.insert(index);
        } else if let Some(link) = ns_link(name) {
            delete_netns(&Netns { name: name.to_string(), link, veth: format!("{NS_PREFIX}{index}a") });
        }
    }
    let addrs = ip(&["-o", "-4", "addr", "show"])?;
    let mut places: Vec<Place> = Vec::new();
    let fail = |places: &[Place], why: String| {
        places.iter().filter_map(|p| p.netns.as_ref()).for_each(delete_netns);
        Err(why)
    };
    for index in 0u32..16384 {
        if places.len() == n {
            break;
        }
        let (a, b) = (index / 64, (index % 64) * 4);
        let (ours, theirs) = (format!("{NET}.{a}.{}", b + 1), format!("{NET}.{a}.{}", b + 2));
        if used.contains(&index) || addrs.contains(&format!(" {ours}/")) || addrs.contains(&format!(" {theirs}/")) {
            continue;
        }
        let name = format!("{NS_PREFIX}{index}-{}", std::process::id());
        let (veth, peer) = (format!("{NS_PREFIX}{index}a"), format!("{NS_PREFIX}{index}b"));
        if let Err(why) = ip(&["netns", "add", &name]) {
            return fail(&places, why);
        }
        let netns = Netns { link: ns_link(&name).unwrap_or_default(), name: name.clone(), veth: veth.clone() };
        let steps: [&[&str]; 7] = [
            &["link", "add", &veth, "type", "veth", "peer", "name", &peer],
            &["link", "set", &peer, "netns", &name],
            &["addr", "add", &format!("{ours}/30"), "dev", &veth],
            &["link", "set", &veth, "up"],
            &["-n", &name, "addr", "add", &format!("{theirs}/30"), "dev", &peer],
            &["-n", &name, "link", "set", &peer, "up"],
            &["-n", &name, "link", "set", "lo", "up"],
        ];
        let done = steps.iter().try_for_each(|s| ip(s).map(drop));
        places.push(Place { addr: theirs, port: 22, netns: Some(netns) });
        if let Err(why) = done {
            return fail(&places, why);
        }
        if places.last().unwrap().netns.as_ref().unwrap().link.is_empty() {
            return fail(&places, format!("cannot read /run/netns/{name}"));
        }
    }
    if places.len() < n {
        return fail(&places, format!("no free /30 left in {NET}.0.0/16"));
    }
    Ok(places)
}

/// Whether process `pid` runs (exists and is no zombie).
fn pid_running(pid: i32) -> bool {
    u32::try_from(pid).ok().and_then(stat).is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

/// Removes the temporary directories of fixtures whose test process was
/// killed before it could drop them (`proofbench-sshd-<pid>-...`).
fn remove_stale_dirs() {
    let tmp = std::env::temp_dir();
    for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("proofbench-sshd-").and_then(|r| r.split_once('-')).and_then(|(p, _)| p.parse().ok()) else {
            continue;
        };
        if !pid_running(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// How /proc/PID/ns/net names the namespace `/run/netns/NAME`.
fn ns_link(name: &str) -> Option<String> {
    std::fs::metadata(format!("/run/netns/{name}")).ok().map(|m| format!("net:[{}]", m.ino()))
}

/// Kills what still runs in a namespace, deletes it (its veth pair goes with
/// it) and our end of the pair, should it linger.
fn delete_netns(ns: &Netns) {
    if !ns.link.is_empty() {
        for _ in 0..100 {
            let left = in_net_ns(&ns.link);
            if left.is_empty() {
                break;
            }
            left.iter().for_each(|p| kill(p, libc::SIGKILL));
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let _ = ip(&["netns", "delete", &ns.name]);
    let _ = ip(&["link", "delete", &ns.veth]);
}

/// A word for `--launcher` (split like a shell would): quoted when needed.
fn shell_word(p: &Path) -> String {
    let s = p.display().to_string();
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:".contains(c)) { s } else { format!("'{}'", s.replace('\'', "'\\''")) }
}

struct Stat {
    ppid: u32,
    state: char,
    start: u64,
    comm: String,
}

/// Fields of /proc/PID/stat.
fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    Some(Stat {
        comm: text[open + 1..close].to_string(),
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
    })
}

fn proc_of(pid: u32) -> Option<Proc> {
    stat(pid).filter(|s| s.state != 'Z' && s.state != 'X').map(|s| Proc { pid, comm: s.comm, start: s.start })
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc").map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default()
}

/// The living descendants of `root` (not `root` itself).
fn descendants(root: u32) -> Vec<Proc> {
    let table: Vec<(u32, Stat)> = all_pids().into_iter().filter_map(|p| Some((p, stat(p)?))).collect();
    let mut out: Vec<Proc> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for (pid, s) in table.iter().filter(|(_, s)| s.ppid == parent) {
            parents.push(*pid);
            if s.state != 'Z' && s.state != 'X' {
                out.push(Proc { pid: *pid, comm: s.comm.clone(), start: s.start });
            }
        }
    }
    out
}

/// The living processes whose network namespace is `link` (`net:[...]`).
fn in_net_ns(link: &str) -> Vec<Proc> {
    all_pids()
        .into_iter()
        .filter(|p| std::fs::read_link(format!("/proc/{p}/ns/net")).is_ok_and(|l| l.to_str() == Some(link)))
        .filter_map(proc_of)
        .collect()
}

fn kill(p: &Proc, signal: i32) {
    if p.is_running() {
        // SAFETY: kill has no memory preconditions; the start time was checked
        // just before, so the pid is still that process's.
        unsafe { libc::kill(p.pid as libc::pid_t, signal) };
    }
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::{Proc, Sshd};
    use crate::common::{Sandbox, bin, rows_of, run_dirs, text};

    fn ssh(fx: &Sshd, host: &str, command: &[&str]) -> Command {
        let mut c = Command::new("ssh");
        c.arg("-F").arg(fx.ssh_config()).arg(host).args(command).stdin(Stdio::null()).stderr(Stdio::null());
        c
    }

    /// Waits (at most 20 s) until `what` holds.
    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let t = Instant::now();
        while !done() {
            assert!(t.elapsed() < Duration::from_secs(20), "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn sshd_fixture_runs_a_command_on_every_host_and_leaves_nothing_running() {
        let Some(fx) = Sshd::start(&["h1", "h2", "h3"]) else { return };
        let mut namespaces = Vec::new();
        for host in ["h1", "h2", "h3"] {
            let out = ssh(&fx, host, &["echo", "hi", "from", "$(readlink", "/proc/self/ns/net)"]).output().unwrap();
            assert!(out.status.success(), "{host}: {}", text(&out.stderr));
            let said = text(&out.stdout);
            let ns = said.trim().strip_prefix("hi from ").unwrap_or_else(|| panic!("{host}: {said}")).to_string();
            if let Some(expected) = fx.net_ns(host) {
                assert_eq!(ns, expected, "{host} runs in its own network namespace");
            }
            namespaces.push(ns);
        }
        if fx.namespaced() {
            namespaces.dedup();
            assert_eq!(namespaces.len(), 3, "three distinct hosts: {namespaces:?}");
        }
        // An open session on each host: sshds, a shell, a sleep.
        let mut clients: Vec<_> = ["h1", "h2", "h3"].map(|h| ssh(&fx, h, &["sleep", "300"]).spawn().unwrap()).into();
        wait_for("every host runs its sleep", || fx.processes().iter().filter(|p| p.comm == "sleep").count() == 3);
        let running = fx.processes();
        assert!(running.iter().filter(|p| p.comm.starts_with("sshd")).count() >= 6, "{running:?}");
        let netns: Vec<String> =
            if fx.namespaced() { ["h1", "h2", "h3"].map(|h| fx.net_ns(h).unwrap().to_string()).into() } else { vec![] };
        let netns_names: Vec<String> = fx.hosts.iter().filter_map(|h| Some(h.netns.as_ref()?.name.clone())).collect();
        let dir = fx.ssh_config().parent().unwrap().to_path_buf();

        drop(fx);
        let left: Vec<&Proc> = running.iter().filter(|p| p.is_running()).collect();
        assert!(left.is_empty(), "the fixture left these running: {left:?}");
        assert!(!dir.exists(), "the temp dir is removed");
        for c in &mut clients {
            let status = c.wait().unwrap();
            assert!(!status.success(), "the session ended with the fixture");
        }
        // Nothing anywhere in /proc lives in the hosts' namespaces, and
        // those are gone from /run/netns.
        for link in &netns {
            assert!(super::in_net_ns(link).is_empty(), "processes left in {link}");
        }
        for name in &netns_names {
            assert!(!std::path::Path::new("/run/netns").join(name).exists(), "{name} was not deleted");
        }
    }

    #[test]
    fn drop_connections_ends_that_hosts_sessions_only() {
        let Some(fx) = Sshd::start(&["h1", "h2"]) else { return };
        let mut one = ssh(&fx, "h1", &["sleep", "300"]).spawn().unwrap();
        let mut two = ssh(&fx, "h2", &["sleep", "300"]).spawn().unwrap();
        wait_for("both hosts have a session", || {
            fx.processes().iter().filter(|p| p.comm == "sleep").count() == 2 && ["h1", "h2"].iter().all(|h| !fx.connections(h).is_empty())
        });
        fx.drop_connections("h1");
        wait_for("h1's client sees its connection drop", || one.try_wait().unwrap().is_some());
        assert_eq!(one.wait().unwrap().code(), Some(255), "ssh exits 255 when its connection is lost");
        assert!(fx.connections("h1").is_empty());
        std::thread::sleep(Duration::from_millis(300));
        assert!(two.try_wait().unwrap().is_none(), "h2's session goes on");
        // h1 still takes new connections.
        let out = ssh(&fx, "h1", &["echo", "again"]).output().unwrap();
        assert_eq!(text(&out.stdout).trim(), "again", "{}", text(&out.stderr));
        drop(fx);
        assert!(!two.wait().unwrap().success());
    }

    #[test]
    fn a_run_through_real_ssh_runs_its_rows_on_the_host() {
        let Some(fx) = Sshd::start(&["h1"]) else { return };
        let sb = Sandbox::new();
        let exe = bin().display().to_string();
        let launcher = fx.launcher_for("h1");
        let out = sb.run(&[
            "os.syscall",
            "--profile",
            "quick",
            "--trials",
            "1",
            "--runs",
            "3",
            "--warmup",
            "1",
            "--settle",
            "0",
            "--launcher",
            &launcher,
            "--remote-exe",
            &exe,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rows = sb.rows();
        assert!(!rows.is_empty() && rows.iter().all(|r| r["status"] == "ok"), "{rows:#?}");
        let run = sb.run_json();
        assert_eq!(run["launcher"]["template"], launcher.as_str());
        assert_eq!(run["launcher"]["remote_exe"], exe.as_str());
        assert_eq!(run["launcher"]["prefix"][0], "ssh");
    }

    #[test]
    fn hosts_through_real_ssh_store_one_run_per_host() {
        let Some(fx) = Sshd::start(&["h1", "h2"]) else { return };
        let tmp = tempfile::tempdir().unwrap();
        let out_dir = tmp.path().join("results");
        let out = Command::new(bin())
            .args(["run", "selftest.tiny", "--include-selftest", "--trials", "1", "--runs", "3", "--warmup", "1", "--settle", "0"])
            .args(["--out", out_dir.to_str().unwrap(), "--launcher", &fx.launcher(), "--hosts", "h1,h2"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let dirs = run_dirs(&out_dir);
        assert_eq!(dirs.len(), 2, "{dirs:?}");
        let mut labels: Vec<String> = dirs
            .iter()
            .map(|d| {
                assert!(rows_of(d).iter().all(|r| r["status"] == "ok"), "{}", d.display());
                let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
                run["launcher"]["host"].as_str().unwrap().to_string()
            })
            .collect();
        labels.sort();
        assert_eq!(labels, ["h1", "h2"]);
    }
}
