//! The READMEs cannot drift: every `sh` block of README.md (quickstart and
//! worked examples), and the first `sh` block of each example operator's
//! "Try it", runs as printed, in order, against `make run`.
//!
//! `make run` is `cargo build` and then `scripts/run.sh` (checked in the
//! Makefile); the test runs `scripts/run.sh` with the binaries this test
//! run built, from a copy of the repository's root (the folders the
//! commands name are linked into it), so `source target/kudo-dev/env` and
//! `operators/...` mean what they mean to a newcomer. Where kubectl is not
//! installed, `kubectl kudo ...` goes straight to the plugin and other
//! kubectl lines are skipped, saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `sh` blocks of a Markdown file, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_end() == "```sh" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

/// The first `sh` block after the heading `## Try it`.
fn try_it_block(markdown: &str) -> String {
    let rest = &markdown[markdown.find("## Try it").expect("a Try it section")..];
    sh_blocks(rest).into_iter().next().expect("an sh block")
}

/// `<target>/debug`, where this test's own binary sits next to the
/// workspace's binaries that the same build made.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn newest_source(crates: &[&str]) -> SystemTime {
    fn walk(dir: &Path, newest: &mut SystemTime) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, newest);
            } else if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
                *newest = (*newest).max(modified);
            }
        }
    }
    let mut newest = SystemTime::UNIX_EPOCH;
    for krate in crates {
        walk(&repo().join("crates").join(krate).join("src"), &mut newest);
    }
    newest
}

/// The crates each binary is built from.
const SOURCES: [(&str, &[&str]); 2] = [
    (
        "kudo-manager",
        &[
            "kudo-manager",
            "kudo-engine",
            "kudo-api",
            "kudo-package",
            "kudo-template",
            "kudo-sandbox",
            "kudo-certs",
        ],
    ),
    (
        "kubectl-kudo",
        &[
            "kubectl-kudo",
            "kudo-engine",
            "kudo-api",
            "kudo-package",
            "kudo-template",
            "kudo-certs",
        ],
    ),
];

/// The two binaries `make run` uses, built from the current sources.
fn binaries() -> PathBuf {
    let dir = bin_dir();
    for (name, crates) in SOURCES {
        let newest = newest_source(crates);
        let modified = std::fs::metadata(dir.join(name)).and_then(|m| m.modified());
        assert!(
            modified.is_ok_and(|m| m >= newest),
            "{}/{name} is missing or older than the sources; build them with \
             `cargo build --workspace --bins` (`make test` does)",
            dir.display()
        );
    }
    dir
}

/// A directory with `kubectl` standing in for a missing one: `kubectl
/// kudo` runs the plugin, anything else is skipped with a note. `None`
/// when kubectl is installed.
fn kubectl_stand_in(work: &Path) -> Option<PathBuf> {
    let installed = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|p| p.join("kubectl").is_file()));
    if installed {
        return None;
    }
    let dir = work.join("stand-in");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("kubectl");
    std::fs::write(
        &script,
        "#!/usr/bin/env bash\nif [[ $1 == kudo ]]; then shift; exec kubectl-kudo \"$@\"; fi\n\
         echo \"SKIPPED (kubectl is not installed): kubectl $*\" >&2\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    Some(dir)
}

/// `make run` in a copy of the root, until dropped.
struct MakeRun {
    child: Child,
    root: PathBuf,
    log: PathBuf,
    path: String,
    work: tempfile::TempDir,
}

impl MakeRun {
    fn start() -> Self {
        let makefile = std::fs::read_to_string(repo().join("Makefile")).unwrap();
        assert!(
            makefile.contains("run: build\n\t@./scripts/run.sh\n"),
            "make run is cargo build and scripts/run.sh"
        );
        let bin = binaries();
        let work = tempfile::tempdir().unwrap();
        let root = work.path().join("kudo-rs");
        std::fs::create_dir_all(&root).unwrap();
        for linked in ["operators", "scripts", "crds", "deploy"] {
            std::os::unix::fs::symlink(repo().join(linked), root.join(linked)).unwrap();
        }
        let mut path = std::env::var("PATH").unwrap_or_default();
        if let Some(stand_in) = kubectl_stand_in(work.path()) {
            path = format!("{}:{}:{path}", stand_in.display(), bin.display());
        }
        let log = work.path().join("make-run.log");
        let child = Command::new("bash")
            .arg(root.join("scripts/run.sh"))
            .current_dir(&root)
            .env("CARGO_TARGET_DIR", bin.parent().unwrap())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .env_remove("KUDO_RUN_KUBECONFIG")
            .env_remove("KUDO_DEV_DIR")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::from(
                std::fs::OpenOptions::new().append(true).open(&log).unwrap(),
            ))
            .spawn()
            .unwrap();
        let mut run = Self {
            child,
            root,
            log,
            path,
            work,
        };
        run.wait_until_ready();
        run
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_until_ready(&mut self) {
        let started = Instant::now();
        while !self
            .log()
            .contains("The README's quickstart goes on from there.")
        {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("make run ended ({status}):\n{}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "make run did not get ready:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs `script` as a person would in another terminal at the root.
    fn run(&self, script: &str) {
        let output = Command::new("bash")
            .arg("-c")
            .arg(format!("set -euo pipefail -x\n{script}"))
            .current_dir(&self.root)
            .env("PATH", &self.path)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            // A newcomer's machine: no package repositories configured.
            .env("KUDO_HOME", self.work.path().join("kudo-home"))
            .env("XDG_CACHE_HOME", self.work.path().join("cache"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        println!(
            "{}{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(
            output.status.success(),
            "a command failed as printed ({}):\n{}\n{}\n--- make run ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }
}

impl Drop for MakeRun {
    fn drop(&mut self) {
        // As Ctrl-C: run.sh stops the manager, which removes its kubeconfig.
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
    }
}

#[test]
fn every_sh_block_of_the_readme_runs_as_printed_against_make_run() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let blocks = sh_blocks(&readme);
    assert!(blocks.len() >= 3, "{blocks:?}");
    assert_eq!(
        blocks[0], "make run\n",
        "the quickstart starts with make run"
    );
    let run = MakeRun::start();
    run.run(&blocks[1..].concat());
    drop(run);
}

#[test]
fn each_example_operators_try_it_block_runs_as_printed_against_make_run() {
    let run = MakeRun::start();
    // zk-monitor after zookeeper: its dependency comes from the namespace.
    for operator in ["first-operator", "zookeeper", "canary-web", "zk-monitor"] {
        let readme =
            std::fs::read_to_string(repo().join("operators").join(operator).join("README.md"))
                .unwrap();
        run.run(&format!(
            "source target/kudo-dev/env\n{}",
            try_it_block(&readme)
        ));
    }
}

#[test]
fn sh_blocks_are_read_in_order_and_other_blocks_left_out() {
    let text = "a\n```sh\nmake run\n```\n```shell\nmake test\n```\n```sh\none\ntwo\n```\n";
    assert_eq!(sh_blocks(text), ["make run\n", "one\ntwo\n"]);
}
