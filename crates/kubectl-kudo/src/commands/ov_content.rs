//! An OperatorVersion is never changed once installed (Instances may run
//! it): installing a package whose content differs from the installed one
//! of the same name is refused, naming what differs and the ways on.

use crate::error::CliError;

/// The refusal: what differs, why nothing was changed, and how to go on.
pub fn differs_error(namespace: &str, name: &str, differences: &[String]) -> CliError {
    CliError::Other(format!(
        "operatorversion {namespace}/{name} is installed with other content than this package \
         ({} {}): an installed version is never changed, as Instances may run it, so nothing \
         was written. Give the package a new operatorVersion in operator.yaml and run \
         `kubectl kudo upgrade PACKAGE --instance NAME -n {namespace}`, or, when no Instance \
         uses it, delete it with `kubectl delete operatorversion {name} -n {namespace}` and \
         install again",
        kudo_api::message::listed(differences),
        if differences.len() == 1 {
            "differs"
        } else {
            "differ"
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_says_what_to_do() {
        let text = differs_error("default", "web-0.1.0", &["templates/a.yaml".into()]).to_string();
        assert!(text.contains("(templates/a.yaml differs)"), "{text}");
        assert!(text.contains("kubectl kudo upgrade"), "{text}");
        assert!(
            text.contains("kubectl delete operatorversion web-0.1.0 -n default"),
            "{text}"
        );
    }
}
