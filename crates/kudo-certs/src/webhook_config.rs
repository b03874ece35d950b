//! The ValidatingWebhookConfiguration that routes Instance, OperatorVersion,
//! MaintenanceSchedule and OperatorRepository writes to the manager, built
//! in one place so `kubectl kudo init`, local mode, dev mode
//! and `deploy/webhook.yaml` cannot drift apart.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, RuleWithOperations, ServiceReference, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kudo_api::names::{GROUP, VERSION, WEBHOOK_PATH};

use super::{CERTIFICATE_NAME, SERVICE_NAME, SERVICE_PORT};

/// Name of the configuration pointing at the in-cluster Service.
pub const WEBHOOK_CONFIGURATION_NAME: &str = "kudo-manager-instance-admission";
/// Name of the configuration pointing at a manager outside the cluster
/// (`run --local-webhook`, `dev`); distinct so removing it on shutdown never
/// removes the in-cluster one.
pub const LOCAL_WEBHOOK_CONFIGURATION_NAME: &str = "kudo-manager-local-instance-admission";
/// Name of the webhook inside the configuration; kubectl prints it:
/// `admission webhook "instance-admission.kudo.dev" denied the request: ...`.
pub const WEBHOOK_NAME: &str = "instance-admission.kudo.dev";
/// Name of the webhook that judges who writes an Instance's status.
pub const STATUS_WEBHOOK_NAME: &str = "instance-status-admission.kudo.dev";
/// The manager's ServiceAccount in its namespace (`kubectl kudo init`,
/// `deploy/`): its own status writes skip the status webhook.
pub const MANAGER_SERVICE_ACCOUNT: &str = "kudo-manager";
/// Seconds the API server waits for an answer (the handler gives up before).
pub const WEBHOOK_TIMEOUT_SECONDS: i32 = 5;
/// Annotation asking cert-manager's CA injector to fill `caBundle`.
pub const CERT_MANAGER_INJECT_ANNOTATION: &str = "cert-manager.io/inject-ca-from";

/// Where the API server sends AdmissionReviews.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookTarget {
    /// The manager behind a Service in the cluster.
    Service {
        /// Service namespace.
        namespace: String,
        /// Service name.
        name: String,
        /// Service port.
        port: i32,
    },
    /// A full `https://` URL, e.g. a manager on the developer's machine.
    Url(String),
}

impl WebhookTarget {
    /// kudo-rs's Service in `namespace` ([`SERVICE_NAME`], port [`SERVICE_PORT`]).
    pub fn in_cluster(namespace: &str) -> Self {
        Self::Service {
            namespace: namespace.to_string(),
            name: SERVICE_NAME.to_string(),
            port: SERVICE_PORT,
        }
    }

    /// A manager listening on 127.0.0.1 at this port.
    pub fn local(port: u16) -> Self {
        Self::Url(format!("https://127.0.0.1:{port}{WEBHOOK_PATH}"))
    }

    /// Name of the configuration object for this target.
    pub fn configuration_name(&self) -> &'static str {
        match self {
            Self::Service { .. } => WEBHOOK_CONFIGURATION_NAME,
            Self::Url(_) => LOCAL_WEBHOOK_CONFIGURATION_NAME,
        }
    }
}

/// Builds the configuration: admissionregistration.k8s.io/v1,
/// failurePolicy Fail, sideEffects None, matchPolicy Equivalent,
/// timeoutSeconds 5, AdmissionReview v1, two webhooks on the same path:
///
/// - [`WEBHOOK_NAME`]: CREATE and UPDATE of `kudo.dev/v1beta1` `instances`
///   and `operatorversions` (what one holds is what its Instances' accounts
///   do, so who changes it is judged), and of the cluster-scoped
///   `maintenanceschedules` and `operatorrepositories`;
/// - [`STATUS_WEBHOOK_NAME`]: UPDATE of `instances/status` (the status
///   names what an Instance's plans run, so who writes it is judged). In
///   the cluster it skips the manager's own ServiceAccount by a
///   matchCondition, so the controller's status writes never wait for the
///   webhook (nor fail while its Service has no ready endpoint); a manager
///   outside the cluster (`Url`) has no known user, and its status writes
///   are reviewed too. Other kinds' status is not reviewed.
///
/// `ca_bundle` is the PEM of the CA that signed the serving certificate;
/// `None` leaves `caBundle` out (cert-manager fills it, see
/// [`inject_ca_from_cert_manager`]).
pub fn webhook_configuration(
    ca_bundle: Option<&str>,
    target: &WebhookTarget,
) -> ValidatingWebhookConfiguration {
    let client_config = match target {
        WebhookTarget::Service {
            namespace,
            name,
            port,
        } => WebhookClientConfig {
            ca_bundle: ca_bundle.map(|pem| ByteString(pem.as_bytes().to_vec())),
            service: Some(ServiceReference {
                namespace: namespace.clone(),
                name: name.clone(),
                path: Some(WEBHOOK_PATH.to_string()),
                port: Some(*port),
            }),
            url: None,
        },
        WebhookTarget::Url(url) => WebhookClientConfig {
            ca_bundle: ca_bundle.map(|pem| ByteString(pem.as_bytes().to_vec())),
            service: None,
            url: Some(url.clone()),
        },
    };
    let webhook = ValidatingWebhook {
        name: WEBHOOK_NAME.to_string(),
        admission_review_versions: vec!["v1".to_string()],
        client_config,
        failure_policy: Some("Fail".to_string()),
        match_policy: Some("Equivalent".to_string()),
        side_effects: "None".to_string(),
        timeout_seconds: Some(WEBHOOK_TIMEOUT_SECONDS),
        rules: Some(vec![
            create_and_update("instances", "Namespaced"),
            create_and_update("operatorversions", "Namespaced"),
            create_and_update("maintenanceschedules", "Cluster"),
            create_and_update("operatorrepositories", "Cluster"),
        ]),
        ..ValidatingWebhook::default()
    };
    let not_the_manager = match target {
        WebhookTarget::Service { namespace, .. } => Some(vec![MatchCondition {
            name: "not-the-manager".to_string(),
            expression: format!(
                "request.userInfo.username != 'system:serviceaccount:{namespace}:{MANAGER_SERVICE_ACCOUNT}'"
            ),
        }]),
        WebhookTarget::Url(_) => None,
    };
    let status_webhook = ValidatingWebhook {
        name: STATUS_WEBHOOK_NAME.to_string(),
        rules: Some(vec![RuleWithOperations {
            operations: Some(vec!["UPDATE".to_string()]),
            ..create_and_update("instances/status", "Namespaced")
        }]),
        match_conditions: not_the_manager,
        ..webhook.clone()
    };
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(target.configuration_name().to_string()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/part-of".to_string(),
                "kudo-rs".to_string(),
            )])),
            ..ObjectMeta::default()
        },
        webhooks: Some(vec![webhook, status_webhook]),
    }
}

/// CREATE and UPDATE of one `kudo.dev/v1beta1` resource of that scope.
fn create_and_update(resource: &str, scope: &str) -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(vec![GROUP.to_string()]),
        api_versions: Some(vec![VERSION.to_string()]),
        operations: Some(vec!["CREATE".to_string(), "UPDATE".to_string()]),
        resources: Some(vec![resource.to_string()]),
        scope: Some(scope.to_string()),
    }
}

/// Adds the annotation that makes cert-manager's CA injector copy the CA of
/// the Certificate [`CERTIFICATE_NAME`] in `namespace` into `caBundle`.
pub fn inject_ca_from_cert_manager(
    configuration: &mut ValidatingWebhookConfiguration,
    namespace: &str,
) {
    configuration
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(
            CERT_MANAGER_INJECT_ANNOTATION.to_string(),
            format!("{namespace}/{CERTIFICATE_NAME}"),
        );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(cfg: &ValidatingWebhookConfiguration) -> (&ValidatingWebhook, &ValidatingWebhook) {
        let [main, status] = cfg.webhooks.as_deref().unwrap() else {
            panic!("two webhooks: {cfg:?}")
        };
        assert_eq!(main.name, WEBHOOK_NAME);
        assert_eq!(status.name, STATUS_WEBHOOK_NAME);
        (main, status)
    }

    #[test]
    fn local_target_points_at_loopback_with_the_ca_bundle() {
        let cfg = webhook_configuration(Some("PEM"), &WebhookTarget::local(8443));
        let (main, status) = hooks(&cfg);
        for hook in [main, status] {
            assert_eq!(
                hook.client_config.url.as_deref(),
                Some("https://127.0.0.1:8443/validate-kudo-dev-v1beta1-instance")
            );
            assert_eq!(
                hook.client_config.ca_bundle,
                Some(ByteString(b"PEM".to_vec()))
            );
        }
        // The manager's user is not known outside the cluster.
        assert_eq!(status.match_conditions, None);
        assert_eq!(
            cfg.metadata.name.as_deref(),
            Some(LOCAL_WEBHOOK_CONFIGURATION_NAME)
        );
    }

    #[test]
    fn service_target_names_service_port_and_path() {
        let cfg = webhook_configuration(None, &WebhookTarget::in_cluster("ops"));
        let (main, status) = hooks(&cfg);
        for hook in [main, status] {
            let service = hook.client_config.service.clone().unwrap();
            assert_eq!(service.namespace, "ops");
            assert_eq!(service.name, SERVICE_NAME);
            assert_eq!(service.port, Some(443));
            assert_eq!(service.path.as_deref(), Some(WEBHOOK_PATH));
            assert_eq!(hook.client_config.ca_bundle, None);
        }
    }

    #[test]
    fn status_writes_are_reviewed_except_the_managers_own_in_the_cluster() {
        let cfg = webhook_configuration(None, &WebhookTarget::in_cluster("ops"));
        let (main, status) = hooks(&cfg);
        assert_eq!(main.match_conditions, None);
        let [rule] = status.rules.as_deref().unwrap() else {
            panic!("one rule: {status:?}")
        };
        assert_eq!(rule.resources.as_deref().unwrap(), ["instances/status"]);
        assert_eq!(rule.operations.as_deref().unwrap(), ["UPDATE"]);
        assert_eq!(rule.scope.as_deref(), Some("Namespaced"));
        let [condition] = status.match_conditions.as_deref().unwrap() else {
            panic!("one condition: {status:?}")
        };
        assert_eq!(
            condition.expression,
            "request.userInfo.username != 'system:serviceaccount:ops:kudo-manager'"
        );
        assert_eq!(status.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(status.timeout_seconds, Some(5));
    }

    #[test]
    fn rules_cover_create_and_update_of_instances_versions_and_schedules_but_not_status() {
        let cfg = webhook_configuration(None, &WebhookTarget::local(1));
        let (hook, _) = hooks(&cfg);
        let rules = hook.rules.as_deref().unwrap();
        let covered: Vec<(&str, &str)> = rules
            .iter()
            .map(|rule| {
                assert_eq!(rule.api_groups.as_deref().unwrap(), ["kudo.dev"]);
                assert_eq!(rule.api_versions.as_deref().unwrap(), ["v1beta1"]);
                assert_eq!(rule.operations.as_deref().unwrap(), ["CREATE", "UPDATE"]);
                let [resource] = rule.resources.as_deref().unwrap() else {
                    panic!("one resource per rule: {rule:?}")
                };
                (resource.as_str(), rule.scope.as_deref().unwrap())
            })
            .collect();
        // MaintenanceSchedules are cluster-scoped: a Namespaced rule would
        // never match them.
        assert_eq!(
            covered,
            [
                ("instances", "Namespaced"),
                ("operatorversions", "Namespaced"),
                ("maintenanceschedules", "Cluster"),
                ("operatorrepositories", "Cluster")
            ]
        );
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(hook.side_effects, "None");
        assert_eq!(hook.timeout_seconds, Some(5));
        assert_eq!(hook.admission_review_versions, ["v1".to_string()]);
    }

    #[test]
    fn cert_manager_annotation_names_the_certificate() {
        let mut cfg = webhook_configuration(None, &WebhookTarget::in_cluster("kudo-system"));
        inject_ca_from_cert_manager(&mut cfg, "kudo-system");
        let annotations = cfg.metadata.annotations.unwrap();
        assert_eq!(
            annotations[CERT_MANAGER_INJECT_ANNOTATION],
            "kudo-system/kudo-webhook-server-certificate"
        );
    }
}
