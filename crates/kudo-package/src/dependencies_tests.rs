#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use super::*;
use crate::load_located;

/// A KudoOperator task: (task name, `package`, optional operatorVersion).
type Dep<'a> = (&'a str, &'a str, Option<&'a str>);

/// Writes a package whose deploy plan runs one KudoOperator task per dependency.
fn write_package(dir: &Path, name: &str, version: &str, app: Option<&str>, deps: &[Dep<'_>]) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    let app = app
        .map(|a| format!("appVersion: {a}\n"))
        .unwrap_or_default();
    let mut tasks =
        String::from("  - name: cm\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\n");
    let mut steps = String::from("          - name: cm\n            tasks: [cm]\n");
    for (task, package, version) in deps {
        tasks.push_str(&format!(
            "  - name: {task}\n    kind: KudoOperator\n    spec:\n      package: \"{package}\"\n"
        ));
        if let Some(v) = version {
            tasks.push_str(&format!("      operatorVersion: \"{v}\"\n"));
        }
        steps.push_str(&format!(
            "          - name: {task}\n            tasks: [{task}]\n"
        ));
    }
    let operator = format!(
        "name: {name}\noperatorVersion: {version}\n{app}kubernetesVersion: 1.27.0\n\
         tasks:\n{tasks}plans:\n  deploy:\n    strategy: serial\n    phases:\n      \
         - name: main\n        strategy: serial\n        steps:\n{steps}"
    );
    std::fs::write(dir.join("operator.yaml"), operator).unwrap();
    std::fs::write(dir.join("params.yaml"), "parameters: []\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n",
    )
    .unwrap();
}

fn resolve(dir: &Path) -> Result<Resolved, PackageError> {
    resolve_dependencies(load_located(dir)?)
}

fn task<'p>(package: &'p Package, name: &str) -> &'p kudo_api::TaskSpec {
    &package
        .operator
        .tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap()
        .spec
}

fn names(packages: &[Package]) -> Vec<String> {
    packages
        .iter()
        .map(Package::operator_version_name)
        .collect()
}

#[test]
fn a_sibling_folder_is_loaded_and_the_task_names_its_operator_and_versions() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(
        &tmp.path().join("child"),
        "child",
        "0.2.0",
        Some("1.5.0"),
        &[],
    );
    let parent = tmp.path().join("parent");
    write_package(
        &parent,
        "parent",
        "0.1.0",
        None,
        &[("kid", "../child", None)],
    );

    let resolved = resolve(&parent).unwrap();

    assert_eq!(names(&resolved.dependencies), ["child-1.5.0-0.2.0"]);
    let spec = task(&resolved.root, "kid");
    assert_eq!(spec.package.as_deref(), Some("child"));
    assert_eq!(spec.operator_version.as_deref(), Some("0.2.0"));
    assert_eq!(spec.app_version.as_deref(), Some("1.5.0"));
    assert!(resolved.external.is_empty() && resolved.warnings.is_empty());
    // The rewritten package verifies without the "resolve it when installing" warning.
    let report = resolved.root.verify();
    assert!(!report.to_string().contains("operatorVersion"), "{report}");
}

#[test]
fn dependencies_of_dependencies_are_found_next_to_them_and_installed_first() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    write_package(&root.join("deps/leaf"), "leaf", "1.0.0", None, &[]);
    write_package(
        &root.join("deps/mid"),
        "mid",
        "1.0.0",
        None,
        &[("leaf", "../leaf", None)],
    );
    write_package(&root, "root", "1.0.0", None, &[("mid", "./deps/mid", None)]);

    let resolved = resolve(&root).unwrap();

    assert_eq!(names(&resolved.dependencies), ["leaf-1.0.0", "mid-1.0.0"]);
    let mid = &resolved.dependencies[1];
    assert_eq!(task(mid, "leaf").package.as_deref(), Some("leaf"));
}

#[test]
fn a_package_needed_twice_is_loaded_once_before_both_users() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    write_package(&p.join("d"), "d", "1.0.0", None, &[]);
    write_package(&p.join("b"), "b", "1.0.0", None, &[("d", "../d", None)]);
    write_package(&p.join("c"), "c", "1.0.0", None, &[("d", "../d", None)]);
    write_package(
        &p.join("a"),
        "a",
        "1.0.0",
        None,
        &[("b", "../b", None), ("c", "../c", None)],
    );

    let resolved = resolve(&p.join("a")).unwrap();

    assert_eq!(
        names(&resolved.dependencies),
        ["d-1.0.0", "b-1.0.0", "c-1.0.0"]
    );
}

#[test]
fn packages_that_need_each_other_are_refused_naming_the_circle() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    write_package(&p.join("a"), "a", "1.0.0", None, &[("b", "../b", None)]);
    write_package(&p.join("b"), "b", "2.0.0", None, &[("a", "../a", None)]);

    let err = resolve(&p.join("a")).unwrap_err().to_string();

    assert_eq!(
        err,
        "cyclic package dependency: a-1.0.0 -> b-2.0.0 -> a-1.0.0"
    );
}

#[test]
fn a_package_needing_itself_is_a_circle_too() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(tmp.path(), "selfish", "1.0.0", None, &[("me", ".", None)]);
    let err = resolve(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("selfish-1.0.0 -> selfish-1.0.0"), "{err}");
}

#[test]
fn a_bare_name_with_nothing_there_is_left_for_the_cluster_and_can_be_pinned() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(
        tmp.path(),
        "app",
        "1.0.0",
        None,
        &[("zk", "zookeeper", Some("0.3.0"))],
    );

    let mut resolved = resolve(tmp.path()).unwrap();

    assert!(resolved.dependencies.is_empty());
    let external = resolved.external[0].clone();
    assert_eq!(
        external,
        ExternalDependency {
            holder: "app-1.0.0".into(),
            task: "zk".into(),
            operator: "zookeeper".into(),
            operator_version: Some("0.3.0".into()),
            app_version: None,
        }
    );
    assert!(resolved.pin(&external, "0.3.0", Some("3.4.14")));
    let spec = task(&resolved.root, "zk");
    assert_eq!(spec.app_version.as_deref(), Some("3.4.14"));
    assert!(resolved.external.is_empty());
    assert!(!resolved.pin(&external, "0.3.0", None), "pinned twice");
}

#[test]
fn a_path_with_no_package_behind_it_names_the_task_and_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(tmp.path(), "app", "1.0.0", None, &[("kid", "./nope", None)]);
    let err = resolve(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("task kid (KudoOperator)"), "{err}");
    assert!(
        err.contains("dependency ./nope: no folder or archive at"),
        "{err}"
    );
}

#[test]
fn urls_are_refused_with_what_to_do_instead() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(
        tmp.path(),
        "app",
        "1.0.0",
        None,
        &[("kid", "https://example.invalid/kid.tgz", None)],
    );
    let err = resolve(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("is a URL; kudo-rs does not download packages"),
        "{err}"
    );
}

#[test]
fn a_version_the_path_does_not_hold_is_installed_as_found_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(&tmp.path().join("kid"), "kid", "0.2.0", None, &[]);
    let parent = tmp.path().join("parent");
    write_package(
        &parent,
        "parent",
        "0.1.0",
        None,
        &[("kid", "../kid", Some("0.1.0"))],
    );

    let resolved = resolve(&parent).unwrap();

    assert_eq!(
        task(&resolved.root, "kid").operator_version.as_deref(),
        Some("0.2.0")
    );
    assert_eq!(resolved.warnings.len(), 1);
    assert!(
        resolved.warnings[0].contains("asks for kid-0.1.0 but")
            && resolved.warnings[0].ends_with("holds kid-0.2.0; installing what the path holds"),
        "{:?}",
        resolved.warnings
    );
}

/// A `.tgz` of `dir`, its files under `prefix`.
fn archive(dir: &Path, prefix: &str, to: &Path) {
    let file = std::fs::File::create(to).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    tar.append_dir_all(prefix, dir).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
}

#[test]
fn inside_an_archive_dependencies_are_found_in_the_archive_and_cannot_leave_it() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    write_package(&tree.join("packages/kid"), "kid", "0.2.0", None, &[]);
    write_package(
        &tree,
        "parent",
        "0.1.0",
        None,
        &[("kid", "./packages/kid", None)],
    );
    let tgz = tmp.path().join("parent.tgz");
    archive(&tree, "parent", &tgz);

    let resolved = resolve(&tgz).unwrap();
    assert_eq!(names(&resolved.dependencies), ["kid-0.2.0"]);
    assert!(
        resolved.dependencies[0]
            .source
            .ends_with("parent.tgz:parent/packages/kid")
    );

    // A path out of the archive is not followed, even if something is there.
    write_package(&tmp.path().join("outside"), "outside", "1.0.0", None, &[]);
    write_package(
        &tree,
        "parent",
        "0.1.0",
        None,
        &[("out", "../../outside", None)],
    );
    archive(&tree, "parent", &tgz);
    let err = resolve(&tgz).unwrap_err().to_string();
    assert!(err.contains("the path leaves the archive"), "{err}");
}

#[test]
fn an_archive_next_to_the_package_is_a_dependency_too() {
    let tmp = tempfile::tempdir().unwrap();
    let kid = tmp.path().join("kid");
    write_package(&kid, "kid", "0.2.0", None, &[]);
    archive(&kid, "kid", &tmp.path().join("kid-0.2.0.tgz"));
    let parent = tmp.path().join("parent");
    write_package(
        &parent,
        "parent",
        "0.1.0",
        None,
        &[("kid", "../kid-0.2.0.tgz", None)],
    );

    let resolved = resolve(&parent).unwrap();

    assert_eq!(names(&resolved.dependencies), ["kid-0.2.0"]);
}

#[test]
fn packages_from_memory_leave_bare_names_for_the_cluster_and_refuse_paths() {
    let files = |package: &str| {
        let operator = format!(
            "name: app\noperatorVersion: 1.0.0\nkubernetesVersion: 1.27.0\ntasks:\n  \
             - name: kid\n    kind: KudoOperator\n    spec:\n      package: {package}\n\
             plans: {{}}\n"
        );
        std::collections::BTreeMap::from([("operator.yaml".to_string(), operator.into_bytes())])
    };
    let located = |package: &str| Located {
        package: crate::load_from_files(files(package), "mem").unwrap(),
        origin: Origin::Memory,
    };

    let resolved = resolve_dependencies(located("zookeeper")).unwrap();
    assert_eq!(resolved.external.len(), 1);
    let err = resolve_dependencies(located("./kid"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not read from a folder or archive"), "{err}");
}

#[test]
fn a_long_chain_of_packages_stops_at_the_depth_without_exhausting_the_stack() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("p0");
    // Each package names the next folder beside it: p0 -> p1 -> ... -> p100
    // (a hostile archive may hold thousands; the walk stops at 16).
    for i in 0..100 {
        let next = format!("../p{}", i + 1);
        write_package(
            &tmp.path().join(format!("p{i}")),
            &format!("p{i}"),
            "1.0.0",
            None,
            &[("next", &next, None)],
        );
    }
    write_package(&tmp.path().join("p100"), "p100", "1.0.0", None, &[]);
    let err = resolve(&root).unwrap_err().to_string();
    assert!(
        err.contains("dependencies nest deeper than 16 packages (p0-1.0.0 -> ...)"),
        "{err}"
    );
}

#[test]
fn a_package_with_more_dependencies_than_allowed_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let names: Vec<(String, String)> = (0..=32)
        .map(|i| (format!("d{i}"), format!("./deps/d{i}")))
        .collect();
    for (name, _) in &names {
        write_package(&root.join("deps").join(name), name, "1.0.0", None, &[]);
    }
    let deps: Vec<Dep<'_>> = names
        .iter()
        .map(|(name, path)| (name.as_str(), path.as_str(), None))
        .collect();
    write_package(&root, "root", "1.0.0", None, &deps);
    let err = resolve(&root).unwrap_err().to_string();
    assert!(err.contains("more than 32 dependencies in all"), "{err}");
}
