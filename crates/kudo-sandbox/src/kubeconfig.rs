//! The kubeconfig that points kubectl and kube clients at the sandbox.

/// Name of the cluster, context and user in the kubeconfig.
pub const NAME: &str = "kudo-sandbox";

/// A kubeconfig for `server` (e.g. `http://127.0.0.1:6443`).
pub fn render(server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {NAME}
  cluster:
    server: {server}
contexts:
- name: {NAME}
  context:
    cluster: {NAME}
    user: {NAME}
    namespace: default
current-context: {NAME}
users:
- name: {NAME}
  user: {{}}
preferences: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_names_server_and_default_namespace() {
        let k = render("http://127.0.0.1:1234");
        assert!(k.contains("server: http://127.0.0.1:1234"));
        assert!(k.contains("current-context: kudo-sandbox"));
        assert!(k.contains("namespace: default"));
    }
}
