//! Rendering a plan without a cluster, for `package render`: the kinds a
//! live API server would know are guessed from the built-in table, the
//! package's own CustomResourceDefinitions (in any step) and, for the rest,
//! the assumption that custom resources are namespaced.

use super::{
    AssumeNamespaced, OperatorVersion, PlanRenderOptions, RenderError, RenderedStep, RenderedTask,
    StaticDiscovery, render_plan,
};

/// The rendered steps and the kinds that were assumed namespaced
/// (`Kind (group)`), which a caller should mention.
pub fn render_plan_offline(
    ov: &OperatorVersion,
    options: &PlanRenderOptions,
) -> Result<(Vec<RenderedStep>, Vec<String>), RenderError> {
    let mut table = StaticDiscovery::default();
    let first = {
        let discovery = AssumeNamespaced::new(&table);
        let steps = render_plan(ov, options, &discovery)?;
        (steps, discovery.assumed())
    };
    // On a cluster a CRD applied in an earlier step is known by the time
    // later steps run, and its scope counts: learn them and render again.
    let crds: Vec<_> = first
        .0
        .iter()
        .filter_map(|s| match &s.rendered {
            RenderedTask::Apply { objects } => Some(objects.iter()),
            _ => None,
        })
        .flatten()
        .cloned()
        .collect();
    if first.1.is_empty() || crds.is_empty() {
        return Ok(first);
    }
    table.learn_crds(&crds);
    let discovery = AssumeNamespaced::new(&table);
    let steps = render_plan(ov, options, &discovery)?;
    Ok((steps, discovery.assumed()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const OPERATOR: &str = "name: op\noperatorVersion: 0.1.0\ntasks:\n  - name: crd\n    kind: Apply\n    spec:\n      resources: [crd.yaml]\n  - name: use\n    kind: Apply\n    spec:\n      resources: [use.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: crd\n            tasks: [crd]\n          - name: use\n            tasks: [use]\n";
    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Cluster\n  names:\n    kind: Widget\n    plural: widgets\n";
    const USE: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\napiVersion: monitoring.example.org/v1\nkind: Monitor\nmetadata:\n  name: m\n";

    fn render() -> (Vec<RenderedStep>, Vec<String>) {
        let files: BTreeMap<String, Vec<u8>> = [
            ("operator.yaml", OPERATOR),
            ("templates/crd.yaml", CRD),
            ("templates/use.yaml", USE),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        let pkg = crate::load::load_from_files(files, "pkg").unwrap();
        let ov = pkg.to_operator_version("ns");
        let options = PlanRenderOptions {
            plan: "deploy".into(),
            instance_name: "inst".into(),
            namespace: "ns".into(),
            instance_uid: None,
            plan_uid: String::new(),
            values: BTreeMap::new(),
        };
        render_plan_offline(&ov, &options).unwrap()
    }

    #[test]
    fn kinds_from_earlier_crds_keep_their_scope_and_foreign_kinds_are_namespaced() {
        let (steps, assumed) = render();
        let RenderedTask::Apply { objects } = &steps[1].rendered else {
            panic!("not an apply");
        };
        let ns = |i: usize| objects[i]["metadata"].get("namespace").cloned();
        assert_eq!(ns(0), None, "cluster-scoped Widget");
        assert_eq!(ns(1), Some(serde_json::json!("ns")), "assumed Monitor");
        assert_eq!(assumed, vec!["Monitor (monitoring.example.org)"]);
    }
}
