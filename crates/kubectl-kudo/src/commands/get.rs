//! `get instances|operators|operatorversions|all`.

use kube::api::ListParams;
use kube::{Api, ResourceExt};
use kudo_api::{Instance, Operator, OperatorVersion};
use serde::Serialize;
use serde::de::DeserializeOwned;
use termtree::Tree;

use crate::cli::{GetArgs, GetKind, OutputFormat};
use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::output::{DataFormat, format_data, list_of, table};

/// Where `get` looks: the context's namespace, or every namespace (`-A`).
#[derive(Clone, Copy)]
struct Scope<'a> {
    namespace: Option<&'a str>,
}

impl Scope<'_> {
    fn describe(&self) -> String {
        match self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "in any namespace".to_string(),
        }
    }
}

async fn list<K>(ctx: &KubeContext, scope: Scope<'_>, kind: &str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = match scope.namespace {
        Some(ns) => Api::namespaced(ctx.client.clone(), ns),
        None => Api::all(ctx.client.clone()),
    };
    let mut items = api
        .list(&ListParams::default())
        .await
        .map_err(|e| CliError::api(format!("listing {kind} {}", scope.describe()), e))?
        .items;
    items.sort_by_key(|i| (i.namespace(), i.name_any()));
    Ok(items)
}

/// Only the objects named, in the order named; a name that is not there
/// is an error, as with kubectl.
fn named<K: ResourceExt + Clone>(
    items: Vec<K>,
    names: &[String],
    kind: &str,
    scope: Scope<'_>,
) -> Result<Vec<K>> {
    if names.is_empty() {
        return Ok(items);
    }
    names
        .iter()
        .map(|name| {
            let found: Vec<K> = items
                .iter()
                .filter(|i| &i.name_any() == name)
                .cloned()
                .collect();
            if found.is_empty() {
                Err(CliError::NotFound(format!(
                    "{kind} {name} not found {}",
                    scope.describe()
                )))
            } else {
                Ok(found)
            }
        })
        .collect::<Result<Vec<Vec<K>>>>()
        .map(|lists| lists.into_iter().flatten().collect())
}

/// The versions of OperatorVersions, by namespace and name.
pub type VersionsOf = std::collections::BTreeMap<(String, String), String>;

/// The version an Instance runs: what `status.upgrades` says was installed
/// for one tracking a channel, else the version of the OperatorVersion its
/// last plan applied (or spec names, before any ran).
fn installed_version(i: &Instance, versions: &VersionsOf) -> Option<String> {
    let status = i.status.as_ref();
    if let Some(v) = status
        .and_then(|s| s.upgrades.as_ref())
        .and_then(|u| u.installed.clone())
    {
        return Some(v);
    }
    let ns = i
        .spec
        .operator_version
        .namespace
        .clone()
        .or_else(|| i.namespace())
        .unwrap_or_default();
    let name = status
        .and_then(|s| s.applied_operator_version.clone())
        .or_else(|| i.spec.operator_version.name.clone())?;
    versions.get(&(ns, name)).cloned()
}

/// `get instances` table rows: name, operator version, the plan shown by
/// `plan status` with its status, Ready, the installed version and the
/// newest one its channel offers; `wide` adds the plan's trigger and
/// Ready's reason and message.
pub fn instance_rows(items: &[Instance], versions: &VersionsOf, wide: bool) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|i| {
            let status = i.status.as_ref();
            let active = status.and_then(|s| s.active_plan.as_ref());
            let active_name = status.and_then(crate::plan_tree::active_plan_name);
            let plan_status = active_name
                .as_ref()
                .and_then(|n| status?.plan_status.get(n))
                .map(|p| p.status().to_string())
                .or_else(|| active.map(|a| a.status.to_string()))
                .unwrap_or_else(|| "-".into());
            let ready = status.and_then(crate::plan_tree::ready_condition);
            let mut row = vec![
                i.name_any(),
                i.spec.operator_version.name.clone().unwrap_or_default(),
                active_name.unwrap_or_else(|| "-".into()),
                plan_status,
                ready.map_or_else(|| "-".into(), |c| c.status.clone()),
                installed_version(i, versions).unwrap_or_else(|| "-".into()),
                status
                    .and_then(|s| s.upgrades.as_ref())
                    .and_then(|u| u.available.clone())
                    .unwrap_or_else(|| "-".into()),
            ];
            if wide {
                row.push(
                    active
                        .and_then(|a| a.trigger.clone())
                        .unwrap_or_else(|| "-".into()),
                );
                row.push(ready.map_or_else(
                    || "-".into(),
                    |c| {
                        if c.message.is_empty() {
                            c.reason.clone()
                        } else {
                            format!("{}: {}", c.reason, c.message)
                        }
                    },
                ));
            }
            row
        })
        .collect()
}

fn operator_of(ov: &OperatorVersion) -> String {
    ov.spec
        .operator
        .as_ref()
        .and_then(|o| o.name.clone())
        .unwrap_or_default()
}

/// `get all`: operator → operatorversion → instance tree.
pub fn all_tree(
    namespace: &str,
    operators: &[Operator],
    versions: &[OperatorVersion],
    instances: &[Instance],
) -> String {
    let mut root = Tree::new(".".to_string());
    let mut operator_names: Vec<String> = operators.iter().map(|o| o.name_any()).collect();
    for ov in versions {
        let op = operator_of(ov);
        if !operator_names.contains(&op) {
            operator_names.push(op);
        }
    }
    operator_names.sort();
    for op in operator_names {
        let mut op_tree = Tree::new(op.clone());
        for ov in versions.iter().filter(|v| operator_of(v) == op) {
            let ov_name = ov.name_any();
            op_tree.push(
                Tree::new(ov_name.clone()).with_leaves(
                    instances
                        .iter()
                        .filter(|i| {
                            i.spec.operator_version.name.as_deref() == Some(ov_name.as_str())
                        })
                        .map(|i| i.name_any()),
                ),
            );
        }
        root.push(op_tree);
    }
    format!("Operators, operator versions and instances in namespace \"{namespace}\":\n{root}")
}

fn print_data<T: Serialize>(items: &[T], names: &[String], format: DataFormat) -> Result<()> {
    // One object asked for by name prints as itself, as kubectl does.
    match (names.len(), items) {
        (1, [one]) => out!("{}", format_data(one, format)?),
        _ => out!("{}", format_data(&list_of(items)?, format)?),
    }
    Ok(())
}

/// `-o name`: `instance.kudo.dev/NAME`, one a line.
fn print_names<K: ResourceExt>(items: &[K], resource: &str) {
    for item in items {
        outln!("{resource}.kudo.dev/{}", item.name_any());
    }
}

/// A table, with a NAMESPACE column first across namespaces.
fn print_table(
    kind: &str,
    scope: Scope<'_>,
    headers: &[&str],
    namespaces: Vec<String>,
    mut rows: Vec<Vec<String>>,
) {
    if rows.is_empty() {
        outln!("No {kind} found {}.", scope.describe());
        return;
    }
    let mut headers = headers.to_vec();
    if scope.namespace.is_none() {
        headers.insert(0, "namespace");
        for (row, ns) in rows.iter_mut().zip(namespaces) {
            row.insert(0, ns);
        }
    }
    out!("{}", table(&headers, rows));
}

fn namespaces_of<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items
        .iter()
        .map(|i| i.namespace().unwrap_or_default())
        .collect()
}

/// Runs `get` (`format` is the global `-o`).
pub async fn run(ctx: &KubeContext, args: &GetArgs, format: Option<OutputFormat>) -> Result<()> {
    let scope = Scope {
        namespace: (!args.all_namespaces).then_some(ctx.namespace.as_str()),
    };
    let data = match format {
        Some(OutputFormat::Yaml) => Some(DataFormat::Yaml),
        Some(OutputFormat::Json) => Some(DataFormat::Json),
        _ => None,
    };
    let wide = format == Some(OutputFormat::Wide);
    let names_only = format == Some(OutputFormat::Name);
    match args.kind {
        GetKind::Instances => {
            let items: Vec<Instance> = list(ctx, scope, "instances").await?;
            let items = named(items, &args.names, "instance", scope)?;
            if let Some(format) = data {
                return print_data(&items, &args.names, format);
            }
            if names_only {
                print_names(&items, "instance");
                return Ok(());
            }
            let mut headers = vec![
                "name",
                "operator version",
                "active plan",
                "status",
                "ready",
                "installed",
                "available",
            ];
            if wide {
                headers.extend(["trigger", "ready reason"]);
            }
            // The INSTALLED column only: a user who may list Instances
            // but not OperatorVersions still gets the table ("-" there).
            let ovs: Vec<OperatorVersion> = if items.is_empty() {
                Vec::new()
            } else {
                list(ctx, scope, "operatorversions")
                    .await
                    .unwrap_or_default()
            };
            let versions: VersionsOf = ovs
                .iter()
                .filter_map(|ov| {
                    Some((
                        (ov.namespace().unwrap_or_default(), ov.name_any()),
                        ov.spec.version.clone()?,
                    ))
                })
                .collect();
            print_table(
                "instances",
                scope,
                &headers,
                namespaces_of(&items),
                instance_rows(&items, &versions, wide),
            );
        }
        GetKind::Operators => {
            let items: Vec<Operator> = list(ctx, scope, "operators").await?;
            let items = named(items, &args.names, "operator", scope)?;
            if let Some(format) = data {
                return print_data(&items, &args.names, format);
            }
            if names_only {
                print_names(&items, "operator");
                return Ok(());
            }
            let versions: Vec<OperatorVersion> = list(ctx, scope, "operatorversions").await?;
            let rows = items
                .iter()
                .map(|o| {
                    let name = o.name_any();
                    let mut own: Vec<String> = versions
                        .iter()
                        .filter(|v| operator_of(v) == name && v.namespace() == o.namespace())
                        .filter_map(|v| v.spec.version.clone())
                        .collect();
                    own.sort();
                    vec![name, own.join(", ")]
                })
                .collect();
            print_table(
                "operators",
                scope,
                &["name", "versions"],
                namespaces_of(&items),
                rows,
            );
        }
        GetKind::Operatorversions => {
            let items: Vec<OperatorVersion> = list(ctx, scope, "operatorversions").await?;
            let items = named(items, &args.names, "operatorversion", scope)?;
            if let Some(format) = data {
                return print_data(&items, &args.names, format);
            }
            if names_only {
                print_names(&items, "operatorversion");
                return Ok(());
            }
            let rows = items
                .iter()
                .map(|v| {
                    vec![
                        v.name_any(),
                        operator_of(v),
                        v.spec.version.clone().unwrap_or_default(),
                        v.spec.app_version.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            print_table(
                "operatorversions",
                scope,
                &["name", "operator", "version", "app version"],
                namespaces_of(&items),
                rows,
            );
        }
        GetKind::All => {
            if !args.names.is_empty() {
                return Err(CliError::Usage(
                    "get all takes no names; name instances, operators or operatorversions".into(),
                ));
            }
            if wide {
                return Err(CliError::Usage(
                    "get all prints a tree; -o wide is for instances, operators and operatorversions"
                        .into(),
                ));
            }
            let operators: Vec<Operator> = list(ctx, scope, "operators").await?;
            let versions: Vec<OperatorVersion> = list(ctx, scope, "operatorversions").await?;
            let items: Vec<Instance> = list(ctx, scope, "instances").await?;
            if names_only {
                print_names(&operators, "operator");
                print_names(&versions, "operatorversion");
                print_names(&items, "instance");
                return Ok(());
            }
            if let Some(format) = data {
                let mut all = list_of(&operators)?;
                let extra = [list_of(&versions)?, list_of(&items)?];
                if let Some(list) = all["items"].as_array_mut() {
                    for more in extra {
                        if let Some(more) = more["items"].as_array() {
                            list.extend(more.iter().cloned());
                        }
                    }
                }
                out!("{}", format_data(&all, format)?);
                return Ok(());
            }
            if operators.is_empty() && versions.is_empty() && items.is_empty() {
                outln!("No operators found {}.", scope.describe());
                return Ok(());
            }
            let namespaces: std::collections::BTreeSet<String> = namespaces_of(&operators)
                .into_iter()
                .chain(namespaces_of(&versions))
                .chain(namespaces_of(&items))
                .collect();
            for ns in namespaces {
                let here = |n: &Option<String>| n.as_deref() == Some(ns.as_str());
                let operators: Vec<Operator> = operators
                    .iter()
                    .filter(|o| here(&o.namespace()))
                    .cloned()
                    .collect();
                let versions: Vec<OperatorVersion> = versions
                    .iter()
                    .filter(|v| here(&v.namespace()))
                    .cloned()
                    .collect();
                let items: Vec<Instance> = items
                    .iter()
                    .filter(|i| here(&i.namespace()))
                    .cloned()
                    .collect();
                out!("{}", all_tree(&ns, &operators, &versions, &items));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{InstanceSpec, OperatorSpec, OperatorVersionSpec};
    use pretty_assertions::assert_eq;

    #[test]
    fn all_tree_nests_instances_under_their_versions() {
        let op = Operator::new("kafka", OperatorSpec::default());
        let ov_spec = OperatorVersionSpec {
            operator: Some(kudo_api::ObjectReference {
                name: Some("kafka".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let ov = OperatorVersion::new("kafka-1.0.0", ov_spec);
        let mut spec = InstanceSpec::default();
        spec.operator_version.name = Some("kafka-1.0.0".into());
        let inst = Instance::new("kafka-instance", spec);
        assert_eq!(
            all_tree("default", &[op], &[ov], &[inst]),
            "Operators, operator versions and instances in namespace \"default\":\n.\n└── kafka\n    └── kafka-1.0.0\n        └── kafka-instance\n"
        );
    }
}
