//! The seccomp filter of a sandboxed run: a classic BPF program written by
//! hand (no dependency), built before `fork` so that the child only installs it.
//!
//! Forbidden calls (sockets, ptrace, mounting, namespaces, kernel modules,
//! signalling the parent, ...) kill the whole process with `SIGSYS`, which
//! the runner reports as `forbidden`. Calls that a program may try for
//! ordinary reasons and that must simply fail (creating or writing files,
//! leaving the process group) return an errno instead.

use libc::{c_ulong, sock_filter};

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// Low 32 bits of argument `i` (little-endian targets only).
const fn off_arg(i: u32) -> u32 {
    16 + 8 * i
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Whether this build can filter system calls at all.
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// Syscalls that must never happen in a sandboxed program.
fn forbidden() -> Vec<i64> {
    use libc::*;
    let mut v = vec![
        SYS_socket,
        SYS_socketpair,
        SYS_ptrace,
        SYS_process_vm_readv,
        SYS_process_vm_writev,
        SYS_mount,
        SYS_umount2,
        SYS_pivot_root,
        SYS_chroot,
        SYS_unshare,
        SYS_setns,
        SYS_bpf,
        SYS_perf_event_open,
        SYS_kexec_load,
        SYS_kexec_file_load,
        SYS_init_module,
        SYS_finit_module,
        SYS_delete_module,
        SYS_reboot,
        SYS_swapon,
        SYS_swapoff,
        SYS_keyctl,
        SYS_add_key,
        SYS_request_key,
        SYS_userfaultfd,
        SYS_acct,
        SYS_settimeofday,
        SYS_clock_settime,
        SYS_clock_adjtime,
        SYS_adjtimex,
        SYS_quotactl,
        SYS_open_by_handle_at,
        SYS_name_to_handle_at,
        SYS_syslog,
        SYS_fanotify_init,
        SYS_move_mount,
        SYS_fsopen,
        SYS_fsmount,
        SYS_fsconfig,
        SYS_fspick,
        SYS_open_tree,
        SYS_pidfd_getfd,
        SYS_sethostname,
        SYS_setdomainname,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([SYS_iopl, SYS_ioperm]);
    v
}

/// Syscalls that fail with `EPERM`: leaving the process group (so that the
/// group kill at the end reaches every daemon), signalling by thread id or
/// pidfd, anonymous memory files (a way around the address-space limit),
/// io_uring (a way around this filter), clone3 (flags out of reach of BPF;
/// libc falls back to clone).
fn refused() -> Vec<(i64, i32)> {
    use libc::*;
    vec![
        (SYS_setsid, EPERM),
        (SYS_setpgid, EPERM),
        (SYS_tkill, EPERM),
        (SYS_pidfd_open, EPERM),
        (SYS_pidfd_send_signal, EPERM),
        (SYS_memfd_create, EPERM),
        (SYS_io_uring_setup, ENOSYS),
        (SYS_io_uring_enter, ENOSYS),
        (SYS_io_uring_register, ENOSYS),
        (SYS_clone3, ENOSYS),
        (SYS_openat2, ENOSYS),
    ]
}

/// Syscalls that create, change or remove files by name (`EACCES`).
fn file_writes() -> Vec<i64> {
    use libc::*;
    let mut v = vec![
        SYS_renameat,
        SYS_renameat2,
        SYS_unlinkat,
        SYS_mkdirat,
        SYS_linkat,
        SYS_symlinkat,
        SYS_fchmodat,
        SYS_fchownat,
        SYS_mknodat,
        SYS_truncate,
        SYS_setxattr,
        SYS_lsetxattr,
        SYS_fsetxattr,
        SYS_removexattr,
        SYS_lremovexattr,
        SYS_fremovexattr,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        SYS_rename,
        SYS_unlink,
        SYS_mkdir,
        SYS_rmdir,
        SYS_link,
        SYS_symlink,
        SYS_chmod,
        SYS_chown,
        SYS_lchown,
        SYS_mknod,
        SYS_creat,
    ]);
    v
}

/// The filter. `parent` is the pid that must never be signalled (the
/// Python process); `allow_writes` leaves file creation alone (compilers).
/// `pgid_slot` is the index of the instruction whose `k` the child sets to
/// its own process group id before installing (see [`set_pgid`]).
pub struct Filter {
    pub program: Vec<sock_filter>,
    pgid_slot: usize,
}

const CLONE_NEW_ANY: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWCGROUP) as u32;

const WRITE_FLAGS: u32 =
    (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) as u32;

impl Filter {
    pub fn new(parent: u32, allow_writes: bool) -> Filter {
        let mut p = vec![
            stmt(LD_W_ABS, OFF_ARCH),
            jump(JEQ_K, AUDIT_ARCH, 1, 0),
            stmt(RET_K, RET_KILL_PROCESS),
            stmt(LD_W_ABS, OFF_NR),
        ];
        // x32 syscall numbers on x86_64 (bit 30) reach the same kernel code: refuse them.
        #[cfg(target_arch = "x86_64")]
        {
            p.push(jump(JGE_K, 0x4000_0000, 0, 1));
            p.push(stmt(RET_K, RET_KILL_PROCESS));
        }
        for nr in forbidden() {
            p.push(jump(JEQ_K, nr as u32, 0, 1));
            p.push(stmt(RET_K, RET_KILL_PROCESS));
        }
        for (nr, errno) in refused() {
            p.push(jump(JEQ_K, nr as u32, 0, 1));
            p.push(stmt(RET_K, RET_ERRNO | errno as u32));
        }
        if !allow_writes {
            for nr in file_writes() {
                p.push(jump(JEQ_K, nr as u32, 0, 1));
                p.push(stmt(RET_K, RET_ERRNO | libc::EACCES as u32));
            }
            // open(path, flags) / openat(dirfd, path, flags): any write flag → EACCES.
            #[cfg(target_arch = "x86_64")]
            let opens = [(libc::SYS_open, 1u32), (libc::SYS_openat, 2u32)];
            #[cfg(not(target_arch = "x86_64"))]
            let opens = [(libc::SYS_openat, 2u32)];
            for (nr, arg) in opens {
                p.push(jump(JEQ_K, nr as u32, 0, 4));
                p.push(stmt(LD_W_ABS, off_arg(arg)));
                p.push(jump(JSET_K, WRITE_FLAGS, 0, 1));
                p.push(stmt(RET_K, RET_ERRNO | libc::EACCES as u32));
                p.push(stmt(RET_K, RET_ALLOW));
            }
        }
        // clone(flags, ...) asking for a namespace: forbidden.
        p.push(jump(JEQ_K, libc::SYS_clone as u32, 0, 4));
        p.push(stmt(LD_W_ABS, off_arg(0)));
        p.push(jump(JSET_K, CLONE_NEW_ANY, 0, 1));
        p.push(stmt(RET_K, RET_KILL_PROCESS));
        p.push(stmt(RET_K, RET_ALLOW));
        // kill(pid, sig): the parent, every process (-1) or another group: forbidden.
        // Allowed: a pid other than the parent's, 0 (own group), -own pgid.
        // (With namespaces the own group is 1, init's: -1 is checked first.)
        p.push(jump(JEQ_K, libc::SYS_kill as u32, 0, 11));
        p.push(stmt(LD_W_ABS, off_arg(0)));
        p.push(jump(JEQ_K, parent, 0, 1));
        p.push(stmt(RET_K, RET_KILL_PROCESS));
        p.push(jump(JEQ_K, u32::MAX, 0, 1)); // -1: every process we may signal
        p.push(stmt(RET_K, RET_KILL_PROCESS));
        p.push(jump(JGE_K, 0x8000_0000, 0, 3)); // pid >= 0 as i32: allowed
        let pgid_slot = p.len();
        p.push(jump(JEQ_K, 0, 2, 0)); // k = -pgid, set in the child
        p.push(stmt(RET_K, RET_KILL_PROCESS));
        p.push(stmt(RET_K, RET_ALLOW));
        p.push(stmt(RET_K, RET_ALLOW));
        p.push(stmt(RET_K, RET_ALLOW));
        // tgkill(tgid, tid, sig) at the parent: forbidden.
        p.push(jump(JEQ_K, libc::SYS_tgkill as u32, 0, 3));
        p.push(stmt(LD_W_ABS, off_arg(0)));
        p.push(jump(JEQ_K, parent, 0, 1));
        p.push(stmt(RET_K, RET_KILL_PROCESS));
        p.push(stmt(RET_K, RET_ALLOW));
        Filter {
            program: p,
            pgid_slot,
        }
    }

    /// Set the child's own process group (async-signal-safe: one store).
    pub fn set_pgid(&mut self, pgid: i32) {
        self.program[self.pgid_slot].k = pgid.wrapping_neg() as u32;
    }

    /// Install the filter on the calling thread (after `PR_SET_NO_NEW_PRIVS`).
    /// Async-signal-safe. Returns 0 or an errno.
    pub fn install(&self) -> i32 {
        let prog = libc::sock_fprog {
            len: self.program.len() as u16,
            filter: self.program.as_ptr() as *mut sock_filter,
        };
        // SAFETY: prog points at a valid filter that outlives the call.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as c_ulong,
                &prog as *const libc::sock_fprog as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
            )
        };
        if rc == 0 {
            0
        } else {
            errno()
        }
    }
}

pub fn errno() -> i32 {
    // SAFETY: reads the calling thread's errno.
    unsafe { *libc::__errno_location() }
}
