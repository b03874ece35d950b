//! `kudo-manager dev` as a person starts it (the binary, stdout and
//! stderr piped as into a log file): it says ready only once everything
//! serves, prints where, writes no colour codes into the log, removes its
//! kubeconfig when it stops, and a port that is taken ends it with the
//! reason before it says anything is ready.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn dev(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kudo-manager"))
        .arg("dev")
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// stdout lines as they come, on a channel.
fn lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn stop(child: &mut Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits up to `limit` for the process to end.
fn wait_for_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("kudo-manager dev did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn http_get(addr: &str, path: &str) -> String {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn dev_says_ready_once_everything_serves_and_cleans_up_when_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = dev(&["--kubeconfig-out", kubeconfig.to_str().unwrap()]);
    let out = lines(&mut child);
    let mut seen = Vec::new();
    loop {
        let line = out
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no `ready` line; saw {seen:?}"));
        seen.push(line.clone());
        if line.starts_with("ready") {
            break;
        }
    }
    assert!(kubeconfig.is_file(), "kubeconfig written before ready");
    let admin = seen
        .iter()
        .find_map(|l| l.strip_prefix("admin server (/healthz, /readyz, /metrics): http://"))
        .unwrap_or_else(|| panic!("admin address printed: {seen:?}"))
        .to_string();
    assert!(!admin.ends_with(":8080"), "a free port by default: {admin}");
    let readyz = http_get(&admin, "/readyz");
    assert!(readyz.starts_with("HTTP/1.1 200"), "{readyz}");
    assert!(
        seen.iter()
            .any(|l| l == &format!("  export KUBECONFIG={}", kubeconfig.display())),
        "{seen:?}"
    );

    stop(&mut child);
    assert!(wait_for_exit(&mut child, Duration::from_secs(30)).success());
    assert!(
        !kubeconfig.exists(),
        "the kubeconfig of a stopped server is removed"
    );
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(log.contains("caches synced"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "no colour codes in a log file: {log}"
    );
}

#[test]
fn dev_with_a_taken_admin_port_exits_with_the_reason_before_saying_ready() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = dev(&[
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--admin-addr",
        &addr,
    ]);
    let status = wait_for_exit(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(1));
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!stdout.contains("ready"), "{stdout}");
    assert!(!stdout.contains("export KUBECONFIG"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "kudo-manager: binding the admin server to {addr} (another process listens there"
        )),
        "{stderr}"
    );
    assert!(
        !kubeconfig.exists(),
        "no kubeconfig to a server that is gone"
    );
    drop(taken);
}
