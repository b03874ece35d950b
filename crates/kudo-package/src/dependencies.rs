//! KudoOperator dependencies, resolved when a package is installed (KUDO's
//! KEP-29). A task's `package` that is a folder or archive
//! next to its package (inside an archive: inside it) is loaded, its own
//! dependencies after it, and the task is rewritten to name the loaded
//! operator and its versions, so the manager finds the OperatorVersion the
//! installer creates. A bare name with nothing at that path is left for the
//! caller ([`Resolved::external`]): `kubectl kudo` looks it up in its
//! package repositories, else in the cluster.

use kudo_api::{Task, TaskKind};

use crate::load::{Located, Origin};
use crate::{Package, PackageError};

/// A package with its dependencies loaded and its tasks pointed at them.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The package asked for.
    pub root: Package,
    /// Its dependencies, each before every package that needs it: the
    /// order to install them in.
    pub dependencies: Vec<Package>,
    /// Tasks naming an operator that must already be in the cluster.
    pub external: Vec<ExternalDependency>,
    /// Things worth telling the user (versions asked for that the package
    /// at the path does not have).
    pub warnings: Vec<String>,
}

/// A KudoOperator task whose `package` is an operator name, not a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalDependency {
    /// OperatorVersion name of the package holding the task.
    pub holder: String,
    /// Task name.
    pub task: String,
    /// The operator it names.
    pub operator: String,
    /// The version it asks for, if any.
    pub operator_version: Option<String>,
    /// The app version it asks for, if any.
    pub app_version: Option<String>,
}

impl Resolved {
    /// Points an external task at an OperatorVersion found in the cluster.
    /// Returns false when the task is not (or no longer) external.
    pub fn pin(
        &mut self,
        external: &ExternalDependency,
        operator_version: &str,
        app_version: Option<&str>,
    ) -> bool {
        let Some(at) = self.external.iter().position(|e| e == external) else {
            return false;
        };
        let holder = std::iter::once(&mut self.root)
            .chain(self.dependencies.iter_mut())
            .find(|p| p.operator_version_name() == external.holder);
        let Some(task) = holder.and_then(|p| {
            p.operator
                .tasks
                .iter_mut()
                .find(|t| t.name == external.task)
        }) else {
            return false;
        };
        point_at(task, &external.operator, operator_version, app_version);
        self.external.remove(at);
        true
    }
}

/// Loads the dependencies of `root`, depth first; a package reached twice
/// is loaded once, and a package reached from itself is an error.
pub fn resolve_dependencies(root: Located) -> Result<Resolved, PackageError> {
    let root_id = root.package.operator_version_name();
    let mut walk = Walk {
        opened: 0,
        root: root.package,
        dependencies: Vec::new(),
        ids: vec![root_id.clone()],
        order: Vec::new(),
        external: Vec::new(),
        warnings: Vec::new(),
    };
    walk.visit(0, &root.origin, &mut vec![root_id])?;
    let mut loaded: Vec<Option<Package>> = walk.dependencies.into_iter().map(Some).collect();
    let dependencies = walk
        .order
        .iter()
        .filter_map(|&i| i.checked_sub(1))
        .filter_map(|i| loaded.get_mut(i).and_then(Option::take))
        .collect();
    Ok(Resolved {
        root: walk.root,
        dependencies,
        external: walk.external,
        warnings: walk.warnings,
    })
}

/// Most packages a package may depend on, all levels together.
const MAX_LOCAL_DEPENDENCIES: usize = 32;
/// Most levels of dependencies below a package.
const MAX_LOCAL_DEPTH: usize = 16;
/// Most KudoOperator references followed in all (each may unpack an archive).
const MAX_LOCAL_OPENS: usize = 64;

/// Packages are numbered: 0 is the root, `i` is `dependencies[i - 1]`.
struct Walk {
    /// References followed so far.
    opened: usize,
    root: Package,
    /// In the order they were found.
    dependencies: Vec<Package>,
    /// OperatorVersion names, by number.
    ids: Vec<String>,
    /// Numbers in the order their subtrees were finished.
    order: Vec<usize>,
    external: Vec<ExternalDependency>,
    warnings: Vec<String>,
}

/// What a KudoOperator task asks for.
struct Wanted {
    position: usize,
    task: String,
    package: Option<String>,
    operator_version: Option<String>,
    app_version: Option<String>,
}

impl Walk {
    fn package_mut(&mut self, index: usize) -> Option<&mut Package> {
        match index.checked_sub(1) {
            None => Some(&mut self.root),
            Some(i) => self.dependencies.get_mut(i),
        }
    }

    fn visit(
        &mut self,
        index: usize,
        origin: &Origin,
        path: &mut Vec<String>,
    ) -> Result<(), PackageError> {
        let holder = self.ids.get(index).cloned().unwrap_or_default();
        let Some(package) = self.package_mut(index) else {
            return Ok(());
        };
        let source = package.source.clone();
        let wanted: Vec<Wanted> = package
            .operator
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.task_kind() == Some(TaskKind::KudoOperator))
            .map(|(position, t)| Wanted {
                position,
                task: t.name.clone(),
                package: non_empty(&t.spec.package),
                operator_version: non_empty(&t.spec.operator_version),
                app_version: non_empty(&t.spec.app_version),
            })
            .collect();
        for want in wanted {
            let fail = |detail: String| PackageError::Dependency {
                source_name: source.clone(),
                task: want.task.clone(),
                detail,
            };
            let Some(reference) = want.package.as_deref() else {
                return Err(fail(
                    "`package` is empty; name an operator or a package folder".into(),
                ));
            };
            if reference.starts_with("http://") || reference.starts_with("https://") {
                return Err(fail(format!(
                    "{reference} is a URL; kudo-rs does not download packages: download it and \
                     give `package` its path relative to this package"
                )));
            }
            self.opened += 1;
            if self.opened > MAX_LOCAL_OPENS {
                return Err(fail(format!(
                    "the packages name dependencies more than {MAX_LOCAL_OPENS} times in all"
                )));
            }
            let Some(child) = origin.open(reference).map_err(|e| fail(e.to_string()))? else {
                self.external.push(ExternalDependency {
                    holder: holder.clone(),
                    task: want.task.clone(),
                    operator: reference.to_string(),
                    operator_version: want.operator_version.clone(),
                    app_version: want.app_version.clone(),
                });
                continue;
            };
            let found = &child.package.operator;
            self.warn_on_other_versions(&source, &want, &child.package);
            let (name, version) = (found.name.clone(), found.operator_version.clone());
            let app_version = found.app_version.clone().filter(|a| !a.is_empty());
            if let Some(task) = self
                .package_mut(index)
                .and_then(|p| p.operator.tasks.get_mut(want.position))
            {
                point_at(task, &name, &version, app_version.as_deref());
            }
            let child_id = child.package.operator_version_name();
            if path.contains(&child_id) {
                let mut chain = path.clone();
                chain.push(child_id);
                return Err(PackageError::DependencyCycle {
                    chain: chain.join(" -> "),
                });
            }
            if self.ids.contains(&child_id) {
                continue;
            }
            if path.len() > MAX_LOCAL_DEPTH {
                return Err(fail(format!(
                    "dependencies nest deeper than {MAX_LOCAL_DEPTH} packages ({} -> ...)",
                    path.first().map(String::as_str).unwrap_or_default()
                )));
            }
            if self.dependencies.len() >= MAX_LOCAL_DEPENDENCIES {
                return Err(fail(format!(
                    "the package has more than {MAX_LOCAL_DEPENDENCIES} dependencies in all"
                )));
            }
            self.dependencies.push(child.package);
            self.ids.push(child_id.clone());
            let child_index = self.dependencies.len();
            path.push(child_id);
            self.visit(child_index, &child.origin, path)?;
            path.pop();
        }
        self.order.push(index);
        Ok(())
    }

    /// KUDO installs the package at the path whatever versions the task
    /// names; so does kudo-rs, but says so.
    fn warn_on_other_versions(&mut self, source: &str, want: &Wanted, found: &Package) {
        let op = &found.operator;
        let differs = |asked: &Option<String>, has: Option<&str>| {
            asked.as_deref().is_some_and(|a| Some(a) != has)
        };
        if differs(&want.operator_version, Some(&op.operator_version))
            || differs(&want.app_version, op.app_version.as_deref())
        {
            self.warnings.push(format!(
                "{source}: task {} asks for {} but {} holds {}; installing what the path holds",
                want.task,
                crate::operator_version_name(
                    &op.name,
                    want.app_version.as_deref(),
                    want.operator_version
                        .as_deref()
                        .unwrap_or(&op.operator_version),
                ),
                found.source,
                found.operator_version_name(),
            ));
        }
    }
}

fn point_at(task: &mut Task, operator: &str, version: &str, app_version: Option<&str>) {
    task.spec.package = Some(operator.to_string());
    task.spec.operator_version = Some(version.to_string());
    task.spec.app_version = app_version.filter(|a| !a.is_empty()).map(str::to_string);
}

fn non_empty(value: &Option<String>) -> Option<String> {
    value.clone().filter(|v| !v.is_empty())
}

#[cfg(test)]
#[path = "dependencies_tests.rs"]
mod tests;
