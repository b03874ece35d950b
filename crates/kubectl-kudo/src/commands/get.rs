//! `get instances|operators|operatorversions|all`.

use kube::api::ListParams;
use kube::{Api, ResourceExt};
use kudo_api::{Instance, Operator, OperatorVersion};
use serde::Serialize;
use serde::de::DeserializeOwned;
use termtree::Tree;

use crate::cli::{GetArgs, GetKind};
use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::output::{format_data, list_of, table};

async fn list<K>(ctx: &KubeContext, kind: &str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut items = api
        .list(&ListParams::default())
        .await
        .map_err(|e| CliError::api(format!("listing {kind} in namespace {}", ctx.namespace), e))?
        .items;
    items.sort_by_key(|i| i.name_any());
    Ok(items)
}

/// `get instances` table rows.
pub fn instance_rows(items: &[Instance]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|i| {
            let active = i.status.as_ref().and_then(|s| s.active_plan.as_ref());
            let active_name = i
                .status
                .as_ref()
                .and_then(crate::plan_tree::active_plan_name);
            let status = active_name
                .as_ref()
                .and_then(|n| i.status.as_ref()?.plan_status.get(n))
                .map(|p| p.status().to_string())
                .or_else(|| active.map(|a| a.status.to_string()))
                .unwrap_or_else(|| "-".into());
            vec![
                i.name_any(),
                i.spec.operator_version.name.clone().unwrap_or_default(),
                active_name.unwrap_or_else(|| "-".into()),
                status,
            ]
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

fn print_data<T: Serialize>(items: &[T], format: crate::cli::OutputFormat) -> Result<()> {
    print!("{}", format_data(&list_of(items)?, format)?);
    Ok(())
}

fn print_table_or_empty(kind: &str, namespace: &str, headers: &[&str], rows: Vec<Vec<String>>) {
    if rows.is_empty() {
        println!("No {kind} found in namespace {namespace}.");
    } else {
        print!("{}", table(headers, rows));
    }
}

/// Runs `get`.
pub async fn run(ctx: &KubeContext, args: &GetArgs) -> Result<()> {
    let ns = ctx.namespace.as_str();
    let format = args.output.output;
    match args.kind {
        GetKind::Instances => {
            let items: Vec<Instance> = list(ctx, "instances").await?;
            if let Some(format) = format {
                return print_data(&items, format);
            }
            print_table_or_empty(
                "instances",
                ns,
                &["name", "operator version", "active plan", "status"],
                instance_rows(&items),
            );
        }
        GetKind::Operators => {
            let items: Vec<Operator> = list(ctx, "operators").await?;
            if let Some(format) = format {
                return print_data(&items, format);
            }
            let versions: Vec<OperatorVersion> = list(ctx, "operatorversions").await?;
            let rows = items
                .iter()
                .map(|o| {
                    let name = o.name_any();
                    let mut own: Vec<String> = versions
                        .iter()
                        .filter(|v| operator_of(v) == name)
                        .filter_map(|v| v.spec.version.clone())
                        .collect();
                    own.sort();
                    vec![name, own.join(", ")]
                })
                .collect();
            print_table_or_empty("operators", ns, &["name", "versions"], rows);
        }
        GetKind::Operatorversions => {
            let items: Vec<OperatorVersion> = list(ctx, "operatorversions").await?;
            if let Some(format) = format {
                return print_data(&items, format);
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
            print_table_or_empty(
                "operatorversions",
                ns,
                &["name", "operator", "version", "app version"],
                rows,
            );
        }
        GetKind::All => {
            let operators: Vec<Operator> = list(ctx, "operators").await?;
            let versions: Vec<OperatorVersion> = list(ctx, "operatorversions").await?;
            let items: Vec<Instance> = list(ctx, "instances").await?;
            if let Some(format) = format {
                let mut all = list_of(&operators)?;
                let extra = [list_of(&versions)?, list_of(&items)?];
                if let Some(list) = all["items"].as_array_mut() {
                    for more in extra {
                        if let Some(more) = more["items"].as_array() {
                            list.extend(more.iter().cloned());
                        }
                    }
                }
                print!("{}", format_data(&all, format)?);
                return Ok(());
            }
            if operators.is_empty() && versions.is_empty() && items.is_empty() {
                println!("No operators found in namespace {ns}.");
            } else {
                print!("{}", all_tree(ns, &operators, &versions, &items));
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
