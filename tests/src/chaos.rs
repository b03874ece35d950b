//! Helpers of the chaos tests (`tests/chaos.rs`, `tests/faults.rs`): a seeded
//! random number generator, the real `kudo-manager` binary as a process that
//! can be SIGKILLed, a generated N-step serial package, and the check that
//! counts re-applies from the sandbox's request log.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, anyhow, bail};
use kudo_api::{ExecutionStatus, Instance};
use kudo_sandbox::RequestRecord;

/// SplitMix64: small, seedable, good enough to pick kill points.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// `count` distinct numbers in `lo..=hi`, ascending.
    pub fn distinct_sorted(&mut self, count: usize, lo: u64, hi: u64) -> Vec<u64> {
        let mut picked = BTreeSet::new();
        while picked.len() < count && (picked.len() as u64) < hi - lo + 1 {
            picked.insert(self.between(lo, hi));
        }
        picked.into_iter().collect()
    }
}

/// The seed in environment variable `var`, or one from the clock; printed
/// either way so a failing run can be repeated with `var=<seed>`.
pub fn seed(var: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    println!("seed {seed} (repeat with {var}={seed})");
    seed
}

/// The debug `kudo-manager` binary, built when missing.
pub fn manager_binary() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    let bin = target.join("debug").join("kudo-manager");
    if !bin.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "kudo-manager", "--bin", "kudo-manager"])
            .status()
            .context("running cargo build")?;
        if !status.success() {
            bail!("building kudo-manager failed");
        }
    }
    Ok(bin)
}

/// A port nobody listens on right now.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `kudo-manager run` (no webhook, no leader election: one replica that is
/// killed and restarted, so no Lease to wait out) against `kubeconfig`,
/// its log appended to `log`.
pub fn spawn_manager(kubeconfig: &Path, log: &Path) -> Result<tokio::process::Child> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let admin = format!("127.0.0.1:{}", free_port()?);
    tokio::process::Command::new(manager_binary()?)
        .args(["run", "--no-webhook", "--no-leader-election"])
        .args(["--admin-addr", &admin, "--log-format", "json"])
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(file)
        .kill_on_drop(true)
        .spawn()
        .context("starting kudo-manager")
}

/// SIGKILLs the process and waits for it to be gone.
pub async fn kill9(child: &mut tokio::process::Child) -> Result<()> {
    // tokio's kill is SIGKILL on Unix.
    child.kill().await.context("SIGKILL")?;
    Ok(())
}

/// Writes a package with one `deploy` plan of `steps` serial steps, step
/// `step-NN` applying ConfigMap `<instance>-step-NN`; returns its directory.
pub fn serial_configmap_package(dir: &Path, name: &str, steps: usize) -> Result<PathBuf> {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("templates"))?;
    let mut tasks = String::new();
    let mut plan = String::new();
    for i in 1..=steps {
        let step = step_name(i);
        tasks.push_str(&format!(
            "  - name: {step}\n    kind: Apply\n    spec:\n      resources:\n        - {step}.yaml\n"
        ));
        plan.push_str(&format!(
            "          - name: {step}\n            tasks:\n              - {step}\n"
        ));
        std::fs::write(
            root.join("templates").join(format!("{step}.yaml")),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-{step}\ndata:\n  step: \"{i}\"\n"
            ),
        )?;
    }
    std::fs::write(
        root.join("operator.yaml"),
        format!(
            "apiVersion: kudo.dev/v1beta1\nname: {name}\ndescription: {steps} serial steps of one ConfigMap each (chaos test).\n\
             operatorVersion: 0.1.0\nkubernetesVersion: 1.27.0\nmaintainers:\n  - name: kudo-rs developers\n    email: dev@kudo-rs.invalid\n\
             url: https://example.invalid/{name}\ntasks:\n{tasks}plans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n{plan}"
        ),
    )?;
    std::fs::write(
        root.join("params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    )?;
    Ok(root)
}

/// `step-07` for 7.
pub fn step_name(i: usize) -> String {
    format!("step-{i:02}")
}

/// Steps of `plan` whose status is COMPLETE.
pub fn complete_steps(inst: &Instance, plan: &str) -> BTreeSet<String> {
    inst.status
        .as_ref()
        .and_then(|s| s.plan_status.get(plan))
        .map(|p| {
            p.phases
                .iter()
                .flat_map(|ph| ph.steps.iter())
                .filter(|s| s.status == Some(ExecutionStatus::Complete))
                .map(|s| s.name.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// What was true at one kill: the steps recorded COMPLETE, and the last
/// request the sandbox had answered by then.
#[derive(Debug, Clone)]
pub struct KillPoint {
    /// 1-based number of the kill.
    pub kill: usize,
    /// Steps COMPLETE in the Instance status read after the process died.
    pub complete: BTreeSet<String>,
    /// `seq` of the last logged request at that read.
    pub last_seq: u64,
}

/// A successful server-side apply of `object` by `field_manager`, logged
/// after a kill at which the step that owns the object was already COMPLETE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reapply {
    /// The kill after which it happened.
    pub kill: usize,
    /// The step recorded COMPLETE.
    pub step: String,
    /// The request's sequence number in the log.
    pub seq: u64,
}

/// Re-applies of objects of completed steps: for every kill, a successful
/// apply by `field_manager` of a completed step's object (`object_of(step)`,
/// a ConfigMap name in `namespace`) logged after that kill.
pub fn reapplies(
    log: &[RequestRecord],
    kills: &[KillPoint],
    namespace: &str,
    field_manager: &str,
    object_of: impl Fn(&str) -> String,
) -> Vec<Reapply> {
    let applies = applies_by_name(log, namespace, field_manager);
    let mut found = Vec::new();
    for k in kills {
        for step in &k.complete {
            let seqs = applies.get(&object_of(step)).map(Vec::as_slice);
            for &seq in seqs.unwrap_or_default().iter().filter(|&&s| s > k.last_seq) {
                found.push(Reapply {
                    kill: k.kill,
                    step: step.clone(),
                    seq,
                });
            }
        }
    }
    found.sort_by_key(|r| (r.seq, r.kill));
    found.dedup_by_key(|r| r.seq);
    found
}

/// `seq`s of successful ConfigMap applies by `field_manager` in `namespace`, by name.
pub fn applies_by_name(
    log: &[RequestRecord],
    namespace: &str,
    field_manager: &str,
) -> BTreeMap<String, Vec<u64>> {
    let mut by_name: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in log {
        let Some(o) = &r.object else { continue };
        if r.is_apply()
            && r.succeeded()
            && !r.dry_run
            && r.field_manager.as_deref() == Some(field_manager)
            && o.resource == "configmaps"
            && o.namespace.as_deref() == Some(namespace)
            && let Some(name) = &o.name
        {
            by_name.entry(name.clone()).or_default().push(r.seq);
        }
    }
    by_name
}

/// Fails with the message when `found` is not empty, listing what was found.
pub fn expect_no_reapplies(found: &[Reapply]) -> Result<()> {
    if found.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = found
        .iter()
        .map(|r| {
            format!(
                "  {} applied again (request #{}) after kill {} found it COMPLETE",
                r.step, r.seq, r.kill
            )
        })
        .collect();
    Err(anyhow!(
        "{} completed step(s) applied again:\n{}",
        found.len(),
        lines.join("\n")
    ))
}

/// Waits until the sandbox has logged, at or after request `from`, a
/// successful apply of ConfigMap `namespace/name` by `field_manager`; fails
/// when `child` exits first or after `timeout`. Returns the apply's `seq`.
pub async fn wait_for_apply(
    sandbox: &kudo_sandbox::Sandbox,
    from: u64,
    (namespace, name): (&str, &str),
    field_manager: &str,
    child: &mut tokio::process::Child,
    timeout: std::time::Duration,
) -> Result<u64> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut from = from;
    loop {
        let new = sandbox.requests_since(from);
        if let Some(last) = new.last() {
            from = last.seq + 1;
        }
        let applies = applies_by_name(&new, namespace, field_manager);
        if let Some(&seq) = applies.get(name).and_then(|s| s.first()) {
            return Ok(seq);
        }
        if let Some(status) = child.try_wait()? {
            bail!("the manager exited ({status}) before applying {name}");
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("no apply of {name} within {timeout:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
