//! Plan throughput on the sandbox: a 100-step serial plan of single-ConfigMap
//! Apply steps, run by the in-process controller, against 100 sequential
//! server-side applies by a bare kube client (the floor any plan runner has
//! to pay). Target: plan < 1.5 × bare.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kudo_api::ExecutionStatus;
use kudo_e2e::{Env, NS, plan_status};
use serde_json::json;

const STEPS: usize = 100;

/// A package whose deploy plan has STEPS serial steps, each applying one ConfigMap.
fn write_package(dir: &Path) {
    let mut op = String::from(
        "apiVersion: kudo.dev/v1beta1\nname: hundred\noperatorVersion: 0.1.0\nkubernetesVersion: 1.27.0\ntasks:\n",
    );
    for i in 0..STEPS {
        writeln!(
            op,
            "  - name: t{i}\n    kind: Apply\n    spec:\n      resources:\n        - cm{i}.yaml"
        )
        .unwrap();
    }
    op.push_str("plans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n");
    for i in 0..STEPS {
        writeln!(
            op,
            "          - name: s{i}\n            tasks:\n              - t{i}"
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("operator.yaml"), op).unwrap();
    std::fs::write(
        dir.join("params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    )
    .unwrap();
    for i in 0..STEPS {
        std::fs::write(
            dir.join("templates").join(format!("cm{i}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm{i}\ndata:\n  step: \"{i}\"\n"),
        )
        .unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(Env::start()).unwrap();
    let pkg = tempfile::tempdir().unwrap();
    write_package(pkg.path());
    rt.block_on(env.install_operator_version(pkg.path().to_path_buf()))
        .unwrap();
    let counter = AtomicUsize::new(0);

    let mut group = c.benchmark_group("hundred_configmaps");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("bare_ssa_100_sequential", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), NS);
                let start = Instant::now();
                for _ in 0..iters {
                    let run = counter.fetch_add(1, Ordering::Relaxed);
                    for i in 0..STEPS {
                        let name = format!("bare{run}-cm{i}");
                        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name}, "data": {"step": i.to_string()}});
                        api.patch(
                            &name,
                            &PatchParams::apply("bench").force(),
                            &Patch::Apply(&cm),
                        )
                        .await
                        .unwrap();
                    }
                }
                start.elapsed()
            })
        });
    });
    group.bench_function("plan_100_serial_steps", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let name = format!("h{}", counter.fetch_add(1, Ordering::Relaxed));
                    let mut inst = kudo_api::Instance::new(
                        &name,
                        kudo_api::InstanceSpec {
                            operator_version: kudo_api::ObjectReference {
                                name: Some("hundred-0.1.0".into()),
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                    );
                    inst.metadata.namespace = Some(NS.into());
                    env.instances()
                        .create(&Default::default(), &inst)
                        .await
                        .unwrap();
                    env.wait_for(&name, "deploy COMPLETE", Duration::from_secs(120), |i| {
                        plan_status(i, "deploy") == Some(ExecutionStatus::Complete)
                    })
                    .await
                    .unwrap();
                }
                start.elapsed()
            })
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
