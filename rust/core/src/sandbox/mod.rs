//! Run an untrusted program in a fresh, bounded process (Linux only).
//!
//! One [`Job`] is one process tree: `fork` → *keeper* (new session and
//! process group; new PID, mount, network, IPC and UTS namespaces where the
//! kernel allows it) → *init* (PID 1 of the new namespace; a fresh `/proc`)
//! → the program (rlimits on CPU seconds, address space, processes, file
//! size and open files; a dedicated uid when we are root; no new privileges;
//! the seccomp filter of [`seccomp`]; an empty temporary working directory;
//! the environment the caller gives, nothing inherited). The program's
//! stdout and stderr are read here with a cap; the CPU time is the kernel's
//! account (`wait4`), the wall clock only a backstop against sleeping. At the
//! end the whole process group is killed (daemons included: `setsid` and
//! `setpgid` are refused by the filter) and, with namespaces, the PID
//! namespace dies with its init.
//!
//! Everything between `fork` and `exec` is a raw system call on memory
//! prepared before the fork: the calling process has threads.

pub mod seccomp;

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::CoreError;

/// Bounds of one run.
#[derive(Clone, Debug)]
pub struct Limits {
    /// CPU seconds of the program (RLIMIT_CPU rounds up to whole seconds; the
    /// verdict compares the measured CPU time with this value exactly).
    pub cpu_seconds: f64,
    /// Wall-clock backstop (against sleeping and blocking), in seconds.
    pub wall_seconds: f64,
    /// Address space of each process, bytes.
    pub memory_bytes: u64,
    /// Processes (threads count) of the sandbox's uid.
    pub processes: u64,
    /// Largest file the program may write, bytes.
    pub file_size_bytes: u64,
    /// Open file descriptors.
    pub open_files: u64,
    /// Bytes of stdout kept; more ends the run (`OutputLimit`).
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            cpu_seconds: 2.0,
            wall_seconds: 10.0,
            memory_bytes: 512 << 20,
            processes: 16,
            file_size_bytes: 1 << 20,
            open_files: 64,
            output_bytes: 1 << 20,
        }
    }
}

/// One program run.
#[derive(Clone, Debug, Default)]
pub struct Job {
    /// `argv[0]` is an absolute path (resolved by the caller).
    pub argv: Vec<String>,
    /// The whole environment of the program.
    pub env: Vec<(String, String)>,
    /// Files written into the empty working directory first: (name, bytes, executable).
    pub files: Vec<(String, Vec<u8>, bool)>,
    pub stdin: Vec<u8>,
    /// Let the program create and write files (a compiler); otherwise file
    /// creation and writes by name fail with `EACCES`.
    pub allow_writes: bool,
    /// Files read back from the working directory after the run (a compiled binary).
    pub collect: Vec<String>,
}

/// How the run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exited on its own with this code.
    Exited(i32),
    /// Killed by this signal (not one of the cases below).
    Signaled(i32),
    /// Used more CPU time than allowed.
    CpuTime,
    /// Still running at the wall-clock backstop.
    WallTime,
    /// Wrote more than `output_bytes` to stdout.
    OutputLimit,
    /// Made a system call the filter forbids (SIGSYS).
    Forbidden,
    /// The sandbox itself could not be set up (not the program's fault).
    SetupError(String),
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    /// The first 64 KiB of stderr.
    pub stderr: Vec<u8>,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub max_rss_kib: i64,
    pub collected: Vec<Option<Vec<u8>>>,
}

/// What isolation a run gets on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// New PID, mount, network, IPC and UTS namespaces.
    Namespaces,
    /// Process group, rlimits, seccomp and (as root) a dedicated uid only.
    Fallback,
}

impl Isolation {
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Namespaces => "namespaces",
            Isolation::Fallback => "fallback",
        }
    }
}

const STDERR_CAP: usize = 64 << 10;
const SANDBOX_UID_BASE: u32 = 2_000_000;
const SANDBOX_UID_SPAN: u32 = 1 << 20;

static NEXT_UID: AtomicU32 = AtomicU32::new(0);
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// The isolation runs get here: namespaces if a probe run with them works
/// (and `GRPO_FAST_SANDBOX_NO_NAMESPACES` is unset), the fallback otherwise.
/// Probed once per process.
pub fn isolation() -> Isolation {
    static PROBED: OnceLock<Isolation> = OnceLock::new();
    *PROBED.get_or_init(|| {
        if std::env::var_os("GRPO_FAST_SANDBOX_NO_NAMESPACES")
            .is_some_and(|v| v != "0" && !v.is_empty())
        {
            return Isolation::Fallback;
        }
        let probe = Job {
            argv: vec!["/bin/true".into()],
            ..Job::default()
        };
        match run_with(&probe, &Limits::default(), Isolation::Namespaces) {
            Ok(out) if out.ending == Ending::Exited(0) => Isolation::Namespaces,
            _ => Isolation::Fallback,
        }
    })
}

/// Run jobs on `workers` threads (each run is a blocking wait on a child
/// process, so these are plain threads, not the core's compute pool).
pub fn run_batch(
    jobs: &[Job],
    limits: &Limits,
    workers: usize,
    force_fallback: bool,
) -> Result<Vec<Outcome>, CoreError> {
    check_platform()?;
    check_limits(limits)?;
    for job in jobs {
        check_job(job)?;
    }
    let mode = if force_fallback {
        Isolation::Fallback
    } else {
        isolation()
    };
    let workers = workers.clamp(1, 256).min(jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<Outcome, CoreError>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() {
                    break;
                }
                let out = run_with(&jobs[i], limits, mode);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(out);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(CoreError::InvalidParameter("sandbox worker died".into())))
        })
        .collect()
}

fn check_platform() -> Result<(), CoreError> {
    if cfg!(target_os = "linux") && seccomp::SUPPORTED {
        Ok(())
    } else {
        Err(CoreError::InvalidParameter(
            "the code sandbox runs on Linux (x86_64 or aarch64) only".into(),
        ))
    }
}

fn check_limits(l: &Limits) -> Result<(), CoreError> {
    let bad = |m: String| Err(CoreError::InvalidParameter(m));
    if !(l.cpu_seconds.is_finite() && l.cpu_seconds > 0.0 && l.cpu_seconds <= 3600.0) {
        return bad(format!(
            "cpu_seconds is {}; expected a number in (0, 3600]",
            l.cpu_seconds
        ));
    }
    if !(l.wall_seconds.is_finite() && l.wall_seconds > 0.0 && l.wall_seconds <= 86400.0) {
        return bad(format!(
            "wall_seconds is {}; expected a number in (0, 86400]",
            l.wall_seconds
        ));
    }
    if l.memory_bytes < (16 << 20) {
        return bad(format!(
            "memory_bytes is {}; expected at least 16 MiB",
            l.memory_bytes
        ));
    }
    if l.processes == 0 || l.open_files < 4 {
        return bad("processes must be >= 1 and open_files >= 4".into());
    }
    Ok(())
}

fn check_job(job: &Job) -> Result<(), CoreError> {
    let bad = |m: String| Err(CoreError::InvalidParameter(m));
    let Some(prog) = job.argv.first() else {
        return bad("a sandbox job needs a program (argv is empty)".into());
    };
    // "./name": a file of the working directory (a compiled program).
    let local = prog
        .strip_prefix("./")
        .is_some_and(|n| !n.is_empty() && !n.contains('/'));
    if !prog.starts_with('/') && !local {
        return bad(format!(
            "argv[0] is {prog:?}; expected an absolute path or ./name"
        ));
    }
    for s in job
        .argv
        .iter()
        .chain(job.env.iter().flat_map(|(k, v)| [k, v]))
    {
        if s.contains('\0') {
            return bad("argv and env must not contain NUL characters".into());
        }
    }
    for (k, _) in &job.env {
        if k.is_empty() || k.contains('=') {
            return bad(format!("environment name {k:?} is empty or contains '='"));
        }
    }
    for name in job.files.iter().map(|f| &f.0).chain(job.collect.iter()) {
        if name.is_empty()
            || name.contains('/')
            || name == "."
            || name == ".."
            || name.contains('\0')
        {
            return bad(format!("file name {name:?} must be a plain name (no '/')"));
        }
    }
    Ok(())
}

struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn make_workdir(job: &Job, uid: Option<u32>) -> std::io::Result<WorkDir> {
    let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
    let base = std::env::temp_dir();
    let dir = base.join(format!("grpo-fast-sandbox-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir)?;
    let wd = WorkDir(dir);
    for (name, bytes, exec) in &job.files {
        let p = wd.0.join(name);
        let mut f = std::fs::File::create(&p)?;
        f.write_all(bytes)?;
        let mode = if *exec { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
        if let Some(uid) = uid {
            std::os::unix::fs::chown(&p, Some(uid), Some(uid))?;
        }
    }
    std::fs::set_permissions(&wd.0, std::fs::Permissions::from_mode(0o700))?;
    if let Some(uid) = uid {
        std::os::unix::fs::chown(&wd.0, Some(uid), Some(uid))?;
    }
    Ok(wd)
}

fn cstr(s: &[u8]) -> CString {
    // check_job rejected NUL bytes; a path from the OS has none.
    CString::new(s).unwrap_or_default()
}

/// Stages reported through the error pipe when the child's setup fails.
const STAGES: [&str; 12] = [
    "setsid",
    "unshare",
    "fork init",
    "mount /proc",
    "fork program",
    "setrlimit",
    "chdir",
    "drop privileges",
    "no_new_privs",
    "seccomp",
    "execve",
    "uid map",
];

/// Paths and lines of a user namespace's maps: uid_map, its line, setgroups, gid_map, its line.
type UidMap = (CString, Vec<u8>, CString, CString, Vec<u8>);

struct Prepared {
    // Owners of the strings the pointer arrays below point into.
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
    workdir: CString,
    filter: seccomp::Filter,
    rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    uid: Option<u32>,
    namespaces: bool,
    uid_map: Option<UidMap>,
}

fn prepare(job: &Job, limits: &Limits, dir: &Path, uid: Option<u32>, mode: Isolation) -> Prepared {
    let argv: Vec<CString> = job.argv.iter().map(|s| cstr(s.as_bytes())).collect();
    let envp: Vec<CString> = job
        .env
        .iter()
        .map(|(k, v)| cstr(format!("{k}={v}").as_bytes()))
        .collect();
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|c| c.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    let cpu = limits.cpu_seconds.ceil() as u64;
    let rlimits = vec![
        (libc::RLIMIT_CPU, cpu, cpu + 1),
        (libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
        (libc::RLIMIT_NPROC, limits.processes, limits.processes),
        (
            libc::RLIMIT_FSIZE,
            limits.file_size_bytes,
            limits.file_size_bytes,
        ),
        (libc::RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (libc::RLIMIT_CORE, 0, 0),
        (libc::RLIMIT_MEMLOCK, 0, 0),
        (libc::RLIMIT_MSGQUEUE, 0, 0),
    ];
    // SAFETY: getuid/getgid/getpid cannot fail.
    let (my_uid, my_gid, me) = unsafe { (libc::getuid(), libc::getgid(), libc::getpid()) };
    let namespaces = mode == Isolation::Namespaces;
    // Not root: a user namespace maps our own uid onto itself (unprivileged namespaces).
    let uid_map = (namespaces && my_uid != 0).then(|| {
        (
            cstr(b"/proc/self/uid_map"),
            format!("{my_uid} {my_uid} 1").into_bytes(),
            cstr(b"/proc/self/setgroups"),
            cstr(b"/proc/self/gid_map"),
            format!("{my_gid} {my_gid} 1").into_bytes(),
        )
    });
    Prepared {
        _argv: argv,
        _envp: envp,
        argv_ptrs,
        envp_ptrs,
        workdir: cstr(dir.as_os_str().as_bytes()),
        filter: seccomp::Filter::new(me as u32, job.allow_writes),
        rlimits,
        uid,
        namespaces,
        uid_map,
    }
}

fn pipe() -> std::io::Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

struct Fd(i32);
impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: we own this descriptor.
            unsafe { libc::close(self.0) };
        }
    }
}

fn setup_error(msg: impl Into<String>) -> Outcome {
    Outcome {
        ending: Ending::SetupError(msg.into()),
        stdout: Vec::new(),
        stderr: Vec::new(),
        cpu_seconds: 0.0,
        wall_seconds: 0.0,
        max_rss_kib: 0,
        collected: Vec::new(),
    }
}

/// Run one job with the given isolation.
pub fn run_with(job: &Job, limits: &Limits, mode: Isolation) -> Result<Outcome, CoreError> {
    check_platform()?;
    check_limits(limits)?;
    check_job(job)?;
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // Held until the run's processes are gone and its directory removed (dropped
    // after `wd`).
    let lease = if root {
        match UidLease::take() {
            Ok(lease) => Some(lease),
            Err(e) => return Ok(setup_error(format!("sandbox uid: {e}"))),
        }
    } else {
        None
    };
    let uid = lease.as_ref().map(|l| l.uid);
    let wd = match make_workdir(job, uid) {
        Ok(wd) => wd,
        Err(e) => return Ok(setup_error(format!("working directory: {e}"))),
    };
    let mut prep = prepare(job, limits, &wd.0, uid, mode);
    match spawn_and_wait(&mut prep, job, limits) {
        Ok(mut out) => {
            out.collected = job
                .collect
                .iter()
                .map(|name| std::fs::read(wd.0.join(name)).ok())
                .collect();
            if let (Some(uid), Isolation::Fallback) = (uid, mode) {
                kill_uid(uid);
            }
            Ok(out)
        }
        Err(e) => Ok(setup_error(e.to_string())),
    }
}

/// A sandbox uid held by this run alone, across every process on the machine:
/// an abstract unix socket named after the uid is bound while the run lasts
/// (the kernel releases it when the descriptor closes, also when the process
/// dies; no file is left). Without it, two processes that sandbox at once
/// (ranks of one node, reward workers) would count from the same uid: the
/// process limit is per uid, and the fallback's end kills the uid's every
/// process, so one run could fail or kill the other's.
struct UidLease {
    uid: u32,
    _held: Fd,
}

/// How many uids a run tries before it gives up (each taken one is in use by
/// a run going on now).
const UID_TRIES: u32 = 4096;

impl UidLease {
    fn take() -> std::io::Result<UidLease> {
        // Each process starts at its own place in the span (probes stay few).
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() } as u32;
        let start = me.wrapping_mul(40_503) % SANDBOX_UID_SPAN;
        for _ in 0..UID_TRIES {
            let k = NEXT_UID.fetch_add(1, Ordering::Relaxed);
            let uid = SANDBOX_UID_BASE + start.wrapping_add(k) % SANDBOX_UID_SPAN;
            // SAFETY: a new descriptor, owned by `fd`.
            let fd = Fd(unsafe {
                libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0)
            });
            if fd.0 < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let name = format!("grpo-fast-sandbox-uid-{uid}");
            // SAFETY: a zeroed sockaddr_un is valid; the name fits (< 108 bytes).
            let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
            addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (i, b) in name.bytes().enumerate() {
                addr.sun_path[i + 1] = b as libc::c_char; // sun_path[0] = 0: abstract
            }
            let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
            // SAFETY: `addr` outlives the call; `len` covers the family and the name.
            let bound = unsafe {
                libc::bind(
                    fd.0,
                    std::ptr::addr_of!(addr).cast(),
                    len as libc::socklen_t,
                )
            };
            if bound == 0 {
                return Ok(UidLease { uid, _held: fd });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EADDRINUSE) {
                return Err(e);
            }
        }
        Err(std::io::Error::other(format!(
            "{UID_TRIES} sandbox uids tried, each in use by another run"
        )))
    }
}

/// As root every run has its own uid: kill whatever that uid still runs
/// (a process that escaped the group cannot escape its uid).
fn kill_uid(uid: u32) {
    let pid = raw_fork();
    if pid == 0 {
        // SAFETY: raw syscalls in the child.
        unsafe {
            if libc::syscall(libc::SYS_setresuid, uid, uid, uid) == 0 {
                libc::kill(-1, libc::SIGKILL);
            }
            libc::_exit(0);
        }
    } else if pid > 0 {
        let mut st = 0;
        // SAFETY: reap our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
    }
}

fn spawn_and_wait(prep: &mut Prepared, job: &Job, limits: &Limits) -> std::io::Result<Outcome> {
    let (in_r, in_w) = pipe()?;
    let (in_r, in_w) = (Fd(in_r), Fd(in_w));
    let (out_r, out_w) = pipe()?;
    let (out_r, out_w) = (Fd(out_r), Fd(out_w));
    let (err_r, err_w) = pipe()?;
    let (err_r, err_w) = (Fd(err_r), Fd(err_w));
    let (rep_r, rep_w) = pipe()?; // setup failures: (stage, errno)
    let (rep_r, rep_w) = (Fd(rep_r), Fd(rep_w));
    let (st_r, st_w) = pipe()?; // the program's wait status, from init
    let (st_r, st_w) = (Fd(st_r), Fd(st_w));
    let (grp_r, grp_w) = pipe()?; // init's pid (= the program's process group), from the keeper
    let (grp_r, grp_w) = (Fd(grp_r), Fd(grp_w));
    let start = Instant::now();
    let pid = raw_fork();
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe { child_main(prep, [in_r.0, out_w.0, err_w.0], rep_w.0, st_w.0, grp_w.0) }
    }
    drop((in_r, out_w, err_w, rep_w, st_w, grp_w));
    let mut raw = [0u8; 4];
    // SAFETY: blocking read of 4 bytes; EOF if the keeper failed before forking init.
    let n = unsafe { libc::read(grp_r.0, raw.as_mut_ptr().cast(), 4) };
    let group = if n == 4 { i32::from_ne_bytes(raw) } else { -1 };
    let out = supervise(pid, group, in_w, &out_r, &err_r, &st_r, job, limits, start);
    let (mut ending, stdout, stderr, wall, status, rusage) = out?;
    // Setup failures reported by the child (non-blocking: every writer is dead or exec'd).
    for fd in [rep_r.0, st_r.0] {
        // SAFETY: fcntl on our own descriptors.
        unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
    }
    let mut rep = [0u8; 8];
    // SAFETY: reading into a local buffer from our pipe.
    let n = unsafe { libc::read(rep_r.0, rep.as_mut_ptr().cast(), 8) };
    if n == 8 {
        let stage = u32::from_ne_bytes([rep[0], rep[1], rep[2], rep[3]]) as usize;
        let errno = i32::from_ne_bytes([rep[4], rep[5], rep[6], rep[7]]);
        let what = STAGES.get(stage).copied().unwrap_or("setup");
        let err = std::io::Error::from_raw_os_error(errno);
        return Ok(setup_error(format!("{what} failed: {err}")));
    }
    let cpu = rusage.0;
    if ending.is_none() {
        let st = status.unwrap_or(0);
        ending = Some(if libc::WIFSIGNALED(st) {
            match libc::WTERMSIG(st) {
                libc::SIGSYS => Ending::Forbidden,
                libc::SIGXCPU => Ending::CpuTime,
                libc::SIGKILL if cpu >= limits.cpu_seconds.ceil() => Ending::CpuTime,
                sig => Ending::Signaled(sig),
            }
        } else {
            Ending::Exited(libc::WEXITSTATUS(st))
        });
    }
    let mut ending = ending.unwrap_or(Ending::Exited(0));
    // Measured CPU above the limit decides, whatever the exit (several processes, a caught SIGXCPU).
    if cpu > limits.cpu_seconds
        && matches!(
            ending,
            Ending::Exited(_) | Ending::Signaled(_) | Ending::WallTime
        )
    {
        ending = Ending::CpuTime;
    }
    Ok(Outcome {
        ending,
        stdout,
        stderr,
        cpu_seconds: cpu,
        wall_seconds: wall,
        max_rss_kib: rusage.1,
        collected: Vec::new(),
    })
}

type Supervised = (
    Option<Ending>,
    Vec<u8>,
    Vec<u8>,
    f64,
    Option<i32>,
    (f64, i64),
);

/// Feed stdin, read stdout/stderr, enforce the output cap and the wall
/// clock; when the program exits (init reports its status) or a limit is
/// hit, kill the program's whole group and let the keeper reap it.
#[allow(clippy::too_many_arguments)]
fn supervise(
    pid: i32,
    group: i32,
    mut in_w: Fd,
    out_r: &Fd,
    err_r: &Fd,
    st_r: &Fd,
    job: &Job,
    limits: &Limits,
    start: Instant,
) -> std::io::Result<Supervised> {
    for fd in [in_w.0, out_r.0, err_r.0, st_r.0] {
        // SAFETY: fcntl on our own descriptors.
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }
    let deadline = start + Duration::from_secs_f64(limits.wall_seconds);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut written = 0usize;
    let mut stdin_open = !job.stdin.is_empty();
    if !stdin_open {
        in_w = Fd(-1); // closes our write end: the program sees EOF
    }
    let mut out_open = true;
    let mut err_open = true;
    let mut ending = None;
    let mut buf = vec![0u8; 64 << 10];
    let mut status = None;
    loop {
        if status.is_none() {
            let mut raw = [0u8; 4];
            // SAFETY: non-blocking read into a local buffer.
            if unsafe { libc::read(st_r.0, raw.as_mut_ptr().cast(), 4) } == 4 {
                status = Some(i32::from_ne_bytes(raw));
            }
        }
        if status.is_some() {
            // The program has exited; what it left in the pipes is drained below.
            break;
        }
        // Has the keeper exited? A setup failure (reported through the error pipe).
        if exited(pid) == Some(true) {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            ending = Some(Ending::WallTime);
            break;
        }
        let mut fds = Vec::with_capacity(4);
        fds.push(pollfd(st_r.0, libc::POLLIN));
        if out_open {
            fds.push(pollfd(out_r.0, libc::POLLIN));
        }
        if err_open {
            fds.push(pollfd(err_r.0, libc::POLLIN));
        }
        if stdin_open {
            fds.push(pollfd(in_w.0, libc::POLLOUT));
        }
        let wait_ms = (deadline - now).as_millis().min(50) as i32;
        // SAFETY: fds is a valid array of pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms.max(1)) };
        if out_open {
            match read_some(out_r.0, &mut buf) {
                Some(0) => out_open = false,
                Some(n) => {
                    stdout.extend_from_slice(&buf[..n]);
                    if stdout.len() > limits.output_bytes {
                        stdout.truncate(limits.output_bytes);
                        ending = Some(Ending::OutputLimit);
                        break;
                    }
                }
                None => {}
            }
        }
        if err_open {
            match read_some(err_r.0, &mut buf) {
                Some(0) => err_open = false,
                Some(n) => {
                    let room = STDERR_CAP.saturating_sub(stderr.len());
                    stderr.extend_from_slice(&buf[..n.min(room)]);
                }
                None => {}
            }
        }
        if stdin_open {
            let rest = &job.stdin[written..];
            // SAFETY: writing from a valid slice to our non-blocking pipe.
            let n = unsafe { libc::write(in_w.0, rest.as_ptr().cast(), rest.len()) };
            if n > 0 {
                written += n as usize;
            }
            let e = seccomp::errno();
            if written >= job.stdin.len() || (n < 0 && e != libc::EAGAIN && e != libc::EINTR) {
                stdin_open = false;
                in_w = Fd(-1);
            }
        }
    }
    // The program's whole group: init, the program, its children, daemons. The
    // keeper (a child subreaper) reaps them all, then exits.
    if group > 0 {
        // SAFETY: kill the process group init created.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    let reap_by = Instant::now() + Duration::from_secs(2);
    loop {
        // Exited, or no longer our child to wait for.
        if exited(pid) != Some(false) {
            break;
        }
        if Instant::now() >= reap_by {
            // SAFETY: kill the groups we created.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                if group > 0 {
                    libc::kill(-group, libc::SIGKILL);
                }
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut keeper_status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: reap our own child.
    unsafe { libc::wait4(pid, &mut keeper_status, 0, &mut ru) };
    // Drain what is left (the writers are dead now).
    for (fd, open, sink, cap) in [
        (out_r.0, out_open, &mut stdout, limits.output_bytes),
        (err_r.0, err_open, &mut stderr, STDERR_CAP),
    ] {
        if !open || ending == Some(Ending::OutputLimit) {
            continue;
        }
        while let Some(n) = read_some(fd, &mut buf).filter(|&n| n > 0) {
            let room = cap.saturating_sub(sink.len());
            sink.extend_from_slice(&buf[..n.min(room)]);
            if n > room {
                if fd == out_r.0 {
                    ending = Some(Ending::OutputLimit);
                }
                break;
            }
        }
    }
    let cpu = tv(ru.ru_utime) + tv(ru.ru_stime);
    Ok((
        ending,
        stdout,
        stderr,
        start.elapsed().as_secs_f64(),
        status,
        (cpu, ru.ru_maxrss),
    ))
}

/// `fork` as the bare system call: no `pthread_atfork` handlers run in the
/// child (libraries loaded in the Python process register some that allocate,
/// which is unsafe in the child of a threaded process).
fn raw_fork() -> i32 {
    // SAFETY: clone with only SIGCHLD is fork; the child continues on a copy
    // of the caller's stack and makes raw system calls only.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as i32
    }
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

/// Has our child `pid` exited? Not reaped (WNOWAIT: its pid, the group id, stays
/// reserved until `wait4`); `None` where `waitid` fails.
fn exited(pid: i32) -> Option<bool> {
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child without reaping it.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is valid for a WEXITED result.
    (rc == 0).then(|| unsafe { info.si_pid() } == pid)
}

/// Poll `fd` for `events` (`POLLIN`, `POLLOUT`).
fn pollfd(fd: i32, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

fn read_some(fd: i32, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: reading into a valid buffer.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        Some(n as usize)
    } else {
        None
    }
}

/// Report a failed setup stage and exit (async-signal-safe).
unsafe fn fail(rep: i32, stage: u32) -> ! {
    let errno = seccomp::errno();
    let mut msg = [0u8; 8];
    msg[..4].copy_from_slice(&stage.to_ne_bytes());
    msg[4..].copy_from_slice(&errno.to_ne_bytes());
    // SAFETY: raw write and exit.
    unsafe {
        libc::write(rep, msg.as_ptr().cast(), 8);
        libc::_exit(127)
    }
}

unsafe fn write_file(path: &CString, data: &[u8]) -> bool {
    // SAFETY: raw open/write/close on prepared memory.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let ok = libc::write(fd, data.as_ptr().cast(), data.len()) == data.len() as isize;
        libc::close(fd);
        ok
    }
}

/// The keeper: runs in the forked child; never returns.
unsafe fn child_main(prep: &mut Prepared, stdio: [i32; 3], rep: i32, st: i32, grp: i32) -> ! {
    // SAFETY: every call below is a raw system call on prepared memory.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        for (i, fd) in stdio.iter().enumerate() {
            if libc::dup2(*fd, i as i32) < 0 {
                fail(rep, 0);
            }
        }
        // Every other descriptor (the pipes are CLOEXEC; the rest of the parent's fds are closed).
        for fd in 3..1024 {
            if fd != rep && fd != st && fd != grp {
                libc::close(fd);
            }
        }
        if libc::setsid() < 0 {
            fail(rep, 0);
        }
        // Orphans (daemons) come back to the keeper, which reaps them after the group kill.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        if prep.namespaces {
            let mut flags = libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS;
            if prep.uid_map.is_some() {
                flags |= libc::CLONE_NEWUSER;
            }
            if libc::unshare(flags) != 0 {
                fail(rep, 1);
            }
            if let Some((uid_path, uid_line, sg_path, gid_path, gid_line)) = &prep.uid_map {
                let ok = write_file(uid_path, uid_line)
                    && write_file(sg_path, b"deny")
                    && write_file(gid_path, gid_line);
                if !ok {
                    fail(rep, 11);
                }
            }
        }
        let init = raw_fork();
        if init < 0 {
            fail(rep, 2);
        }
        if init > 0 {
            // The keeper: report init's pid (the program's group), then reap every
            // descendant until none is left; the supervisor kills the group.
            libc::write(grp, (&init as *const i32).cast(), 4);
            libc::close(grp);
            let mut s = 0;
            while libc::waitpid(-1, &mut s, libc::__WALL) > 0 || seccomp::errno() == libc::EINTR {}
            libc::_exit(0);
        }
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        libc::close(grp);
        // A group of its own, apart from the keeper's, for the supervisor to kill.
        libc::setpgid(0, 0);
        if prep.namespaces {
            // A private mount tree with a /proc of the new PID namespace (the parent is not in it).
            let none = c"none".as_ptr();
            if libc::mount(
                none,
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
                || libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) != 0
            {
                fail(rep, 3);
            }
        }
        let prog = raw_fork();
        if prog < 0 {
            fail(rep, 4);
        }
        if prog > 0 {
            // init: wait for the program, hand its status up, exit (with namespaces
            // the kernel then kills whatever else lives in the namespace).
            let mut s = 0;
            loop {
                let r = libc::waitpid(-1, &mut s, 0);
                if r == prog || (r < 0 && seccomp::errno() != libc::EINTR) {
                    break;
                }
            }
            libc::write(st, (&s as *const i32).cast(), 4);
            libc::_exit(0);
        }
        // The program.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        libc::close(st);
        for (res, soft, hard) in &prep.rlimits {
            let rl = libc::rlimit {
                rlim_cur: *soft,
                rlim_max: *hard,
            };
            if libc::setrlimit(*res, &rl) != 0 {
                fail(rep, 5);
            }
        }
        if libc::chdir(prep.workdir.as_ptr()) != 0 {
            fail(rep, 6);
        }
        if let Some(uid) = prep.uid {
            // Raw system calls: glibc's wrappers broadcast to the threads it
            // believes this process has (copied from the parent) and would hang.
            if libc::syscall(libc::SYS_setgroups, 0usize, 0usize) != 0
                || libc::syscall(libc::SYS_setresgid, uid, uid, uid) != 0
                || libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0
            {
                fail(rep, 7);
            }
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
            fail(rep, 8);
        }
        prep.filter.set_pgid(libc::getpgrp());
        if prep.filter.install() != 0 {
            fail(rep, 9);
        }
        libc::execve(
            prep.argv_ptrs[0],
            prep.argv_ptrs.as_ptr(),
            prep.envp_ptrs.as_ptr(),
        );
        fail(rep, 10)
    }
}

#[cfg(test)]
mod tests;
