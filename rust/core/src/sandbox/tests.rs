use super::*;

fn job(argv: &[&str], stdin: &str) -> Job {
    Job {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin: stdin.as_bytes().to_vec(),
        ..Job::default()
    }
}

fn both_modes() -> Vec<Isolation> {
    vec![isolation(), Isolation::Fallback]
}

#[test]
fn echoes_stdin() {
    for mode in both_modes() {
        let out = run_with(&job(&["/bin/cat"], "hello\n"), &Limits::default(), mode).unwrap();
        assert_eq!(
            out.ending,
            Ending::Exited(0),
            "{mode:?} {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, b"hello\n");
    }
}

#[test]
fn exit_code_and_environment_are_the_callers() {
    let out = run_with(
        &job(&["/bin/sh", "-c", "echo $PATH:$HOME; exit 3"], ""),
        &Limits::default(),
        isolation(),
    )
    .unwrap();
    assert_eq!(out.ending, Ending::Exited(3));
    assert_eq!(out.stdout, b"/usr/bin:/bin:\n");
}

#[test]
fn spinning_is_a_cpu_timeout() {
    let limits = Limits {
        cpu_seconds: 0.5,
        ..Limits::default()
    };
    for mode in both_modes() {
        let out = run_with(
            &job(&["/bin/sh", "-c", "while :; do :; done"], ""),
            &limits,
            mode,
        )
        .unwrap();
        assert_eq!(out.ending, Ending::CpuTime, "{mode:?}");
    }
}

#[test]
fn sleeping_hits_the_wall_clock() {
    let limits = Limits {
        wall_seconds: 0.5,
        ..Limits::default()
    };
    let out = run_with(&job(&["/bin/sleep", "30"], ""), &limits, isolation()).unwrap();
    assert_eq!(out.ending, Ending::WallTime);
    assert!(out.wall_seconds < 5.0);
}

#[test]
fn output_flood_is_cut() {
    let limits = Limits {
        output_bytes: 1000,
        ..Limits::default()
    };
    let out = run_with(&job(&["/usr/bin/yes"], ""), &limits, isolation()).unwrap();
    assert_eq!(out.ending, Ending::OutputLimit);
    assert_eq!(out.stdout.len(), 1000);
}

#[test]
fn writing_files_is_refused_unless_allowed() {
    for mode in both_modes() {
        let out = run_with(
            &job(&["/bin/sh", "-c", "echo x > f && echo wrote"], ""),
            &Limits::default(),
            mode,
        )
        .unwrap();
        assert_eq!(out.stdout, b"", "{mode:?}");
        let mut j = job(&["/bin/sh", "-c", "echo x > f && cat f"], "");
        j.allow_writes = true;
        j.collect = vec!["f".into(), "missing".into()];
        let out = run_with(&j, &Limits::default(), mode).unwrap();
        assert_eq!(
            out.stdout,
            b"x\n",
            "{mode:?} {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.collected, vec![Some(b"x\n".to_vec()), None]);
    }
}

#[test]
fn batch_keeps_order() {
    let jobs: Vec<Job> = (0..6)
        .map(|i| job(&["/bin/echo", &i.to_string()], ""))
        .collect();
    let outs = run_batch(&jobs, &Limits::default(), 3, false).unwrap();
    for (i, out) in outs.iter().enumerate() {
        assert_eq!(
            out.stdout,
            format!("{i}\n").as_bytes(),
            "{:?} {:?}",
            out.ending,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn bad_jobs_are_errors_not_panics() {
    assert!(run_with(&job(&[], ""), &Limits::default(), Isolation::Fallback).is_err());
    assert!(run_with(&job(&["sh"], ""), &Limits::default(), Isolation::Fallback).is_err());
    assert!(run_with(
        &job(&["./a/b"], ""),
        &Limits::default(),
        Isolation::Fallback
    )
    .is_err());
    let mut j = job(&["/bin/true"], "");
    j.files = vec![("../x".into(), vec![], false)];
    assert!(run_with(&j, &Limits::default(), Isolation::Fallback).is_err());
    let bad = Limits {
        cpu_seconds: f64::NAN,
        ..Limits::default()
    };
    assert!(run_with(&job(&["/bin/true"], ""), &bad, Isolation::Fallback).is_err());
    let out = run_with(
        &job(&["/nonexistent"], ""),
        &Limits::default(),
        Isolation::Fallback,
    )
    .unwrap();
    assert!(
        matches!(out.ending, Ending::SetupError(_)),
        "{:?}",
        out.ending
    );
}

#[test]
fn a_sandbox_uid_held_by_another_run_is_never_taken() {
    // Leases held at once are distinct.
    let held: Vec<UidLease> = (0..64).map(|_| UidLease::take().unwrap()).collect();
    let mut uids: Vec<u32> = held.iter().map(|l| l.uid).collect();
    uids.sort_unstable();
    uids.dedup();
    assert_eq!(uids.len(), held.len());
    // Another process's lease is a bound name: bind the next candidates' names
    // here, as such a process would, and the next lease passes over them.
    let me = unsafe { libc::getpid() } as u32;
    let start = me.wrapping_mul(40_503) % SANDBOX_UID_SPAN;
    let next = NEXT_UID.load(Ordering::Relaxed);
    let blocked: Vec<u32> = (0..200)
        .map(|k| SANDBOX_UID_BASE + start.wrapping_add(next + k) % SANDBOX_UID_SPAN)
        .collect();
    let names: Vec<std::os::unix::net::UnixListener> = blocked
        .iter()
        .map(|uid| {
            use std::os::linux::net::SocketAddrExt;
            let name = format!("grpo-fast-sandbox-uid-{uid}");
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
            std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
        })
        .collect();
    let lease = UidLease::take().unwrap();
    assert!(!blocked.contains(&lease.uid), "{} was in use", lease.uid);
    // Released when its holder drops it: the name can be bound again.
    let uid = lease.uid;
    drop(lease);
    use std::os::linux::net::SocketAddrExt;
    let name = format!("grpo-fast-sandbox-uid-{uid}");
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
    assert!(std::os::unix::net::UnixListener::bind_addr(&addr).is_ok());
    drop(names);
}
