use super::*;
use serde_json::json;

#[test]
fn identity_drops_empty_namespace() {
    let id = object_identity(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "namespace": ""}}),
    );
    assert_eq!(id.namespace, None);
    assert_eq!(label(&id), "Namespace x");
}
