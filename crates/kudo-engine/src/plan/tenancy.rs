//! Which OperatorVersions an Instance may run: those of its own namespace,
//! and those of another namespace whose owner shares them with it through
//! the `kudo.dev/shared-with` annotation (`*`, or a comma-separated list of
//! namespaces).
//!
//! The webhook and the manager ask the same function, so what the webhook
//! admits is what the manager runs. A refusal reads the same whether the
//! OperatorVersion exists or not: a tenant learns nothing of another
//! namespace by naming things in it.

use kudo_api::names::SHARED_WITH_ANNOTATION;
use kudo_api::{ObjectReference, OperatorVersion};

/// Whether an Instance of `instance_ns` may run the OperatorVersion
/// `reference` names; `ov` is that OperatorVersion as read (`None`: not
/// found). A reference without a namespace, or to the Instance's own, is
/// always allowed here (whether it exists is checked elsewhere).
pub fn check_ov_reference(
    instance_ns: &str,
    reference: &ObjectReference,
    ov: Option<&OperatorVersion>,
) -> Result<(), String> {
    let Some(target_ns) = reference
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty() && *ns != instance_ns)
    else {
        return Ok(());
    };
    if ov.is_some_and(|ov| shared_with(ov, instance_ns)) {
        return Ok(());
    }
    let name = reference.name.as_deref().unwrap_or_default();
    Err(format!(
        "OperatorVersion {name:?} of namespace {target_ns} is not shared with namespace \
         {instance_ns}; use an OperatorVersion of namespace {instance_ns}, or ask the owner of \
         {target_ns} to add {instance_ns} to the {SHARED_WITH_ANNOTATION} annotation of that \
         OperatorVersion"
    ))
}

/// Whether the OperatorVersion's owner lists `namespace` (or `*`) in its
/// shared-with annotation.
fn shared_with(ov: &OperatorVersion, namespace: &str) -> bool {
    shares_with(ov.metadata.annotations.as_ref(), namespace)
}

/// Whether an OperatorVersion with these annotations lists `namespace` (or
/// `*`) in its shared-with annotation.
pub fn shares_with(
    annotations: Option<&std::collections::BTreeMap<String, String>>,
    namespace: &str,
) -> bool {
    annotations
        .and_then(|a| a.get(SHARED_WITH_ANNOTATION))
        .is_some_and(|list| {
            list.split(',')
                .map(str::trim)
                .any(|ns| ns == "*" || ns == namespace)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(namespace: Option<&str>) -> ObjectReference {
        ObjectReference {
            name: Some("secretop-0.1.0".into()),
            namespace: namespace.map(str::to_string),
            ..ObjectReference::default()
        }
    }

    fn ov_shared_with(annotation: Option<&str>) -> OperatorVersion {
        let mut ov = OperatorVersion::new("secretop-0.1.0", Default::default());
        ov.metadata.namespace = Some("tenant-b".into());
        ov.metadata.annotations = annotation.map(|a| {
            [(SHARED_WITH_ANNOTATION.to_string(), a.to_string())]
                .into_iter()
                .collect()
        });
        ov
    }

    #[test]
    fn a_reference_into_the_instances_own_namespace_is_allowed() {
        let ov = ov_shared_with(None);
        for ns in [None, Some(""), Some("tenant-a")] {
            assert_eq!(
                check_ov_reference("tenant-a", &reference(ns), Some(&ov)),
                Ok(())
            );
            assert_eq!(check_ov_reference("tenant-a", &reference(ns), None), Ok(()));
        }
    }

    #[test]
    fn a_reference_into_another_namespace_is_refused_without_its_consent() {
        for annotation in [None, Some(""), Some("tenant-c"), Some("tenant-aa, tenant")] {
            let ov = ov_shared_with(annotation);
            let refused = check_ov_reference("tenant-a", &reference(Some("tenant-b")), Some(&ov))
                .unwrap_err();
            assert!(
                refused.starts_with(
                    "OperatorVersion \"secretop-0.1.0\" of namespace tenant-b is not shared with \
                     namespace tenant-a;"
                ),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_namespace_listed_in_shared_with_may_use_the_operator_version() {
        for annotation in ["tenant-a", "tenant-c, tenant-a", " tenant-a ,tenant-c", "*"] {
            let ov = ov_shared_with(Some(annotation));
            assert_eq!(
                check_ov_reference("tenant-a", &reference(Some("tenant-b")), Some(&ov)),
                Ok(()),
                "{annotation}"
            );
        }
    }

    #[test]
    fn a_missing_operator_version_is_refused_in_the_same_words_as_an_unshared_one() {
        let unshared = ov_shared_with(Some("tenant-c"));
        let target = reference(Some("tenant-b"));
        assert_eq!(
            check_ov_reference("tenant-a", &target, None),
            check_ov_reference("tenant-a", &target, Some(&unshared)),
        );
        assert!(check_ov_reference("tenant-a", &target, None).is_err());
    }
}
