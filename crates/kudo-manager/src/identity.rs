//! Who writes an Instance's objects.
//!
//! Whoever may write an Instance or an OperatorVersion decides what its
//! templates create, so the manager applies and deletes an Instance's
//! objects as a ServiceAccount of the Instance's namespace (Kubernetes
//! impersonation), as Flux and Argo CD do: the Instance can create only
//! what that account may. The account is the Instance's
//! `spec.serviceAccountName`; else, by default, `kudo-instance`, which the
//! manager makes in the namespace with a RoleBinding to the ClusterRole
//! `kudo-instance` (namespaced rights only, see [`kudo_api::rbac`]) the first
//! time it is needed; else the manager's `--default-service-account` (made
//! and granted by an administrator); or, with `--manager-writes-as-itself`,
//! the manager itself (KUDO's behaviour).
//!
//! Impersonation is a header on each request, so every identity shares the
//! manager's one connection pool.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context as TaskContext, Poll};

use http::HeaderValue;
use kube::Client;
use kube::client::Body;
use kudo_api::Instance;
use kudo_engine::TaskOutcome;

/// The user name kube-apiserver gives a ServiceAccount.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The ServiceAccount an Instance's objects are written as, or `None` for
/// the manager itself. Fails when the name cannot be a ServiceAccount's.
pub fn service_account_of<'a>(
    instance_sa: Option<&'a str>,
    default_sa: Option<&'a str>,
) -> Result<Option<&'a str>, String> {
    let Some(name) = instance_sa.filter(|s| !s.is_empty()).or(default_sa) else {
        return Ok(None);
    };
    if is_dns_subdomain(name) {
        Ok(Some(name))
    } else {
        Err(format!(
            "spec.serviceAccountName {name:?} is not a valid ServiceAccount name \
             (lower-case letters, digits, '-' and '.', at most 253 characters)"
        ))
    }
}

fn is_dns_subdomain(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter().all(|&c| alnum(c) || c == b'-')
                && b.first().copied().is_some_and(alnum)
                && b.last().copied().is_some_and(alnum)
        })
}

/// Whom the objects of an Instance that names no account are written as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteAs {
    /// The manager itself: an Instance can create whatever the manager may.
    Manager,
    /// This ServiceAccount of the Instance's namespace; with `create`, the
    /// manager makes it and binds it to the ClusterRole `kudo-instance`
    /// when it is missing.
    Account {
        /// Its name.
        name: String,
        /// Made by the manager when missing.
        create: bool,
    },
}

impl WriteAs {
    /// The account of an Instance that names none; `None` for the manager.
    pub fn default_account(&self) -> Option<&str> {
        match self {
            WriteAs::Manager => None,
            WriteAs::Account { name, .. } => Some(name),
        }
    }
}

impl Default for WriteAs {
    /// `kudo-instance`, made by the manager.
    fn default() -> Self {
        WriteAs::Account {
            name: kudo_api::names::INSTANCE_ACCOUNT.to_string(),
            create: true,
        }
    }
}

/// Clients that impersonate, one per user, built on the manager's client.
#[derive(Default)]
pub struct Writers {
    write_as: WriteAs,
    clients: Mutex<HashMap<String, Client>>,
    /// Namespaces whose account and RoleBinding this process has made sure of.
    prepared: Mutex<HashSet<String>>,
}

/// Who a client writes as, for messages.
#[derive(Clone)]
pub struct Writer {
    /// The client to write with.
    pub client: Client,
    /// The impersonated user, `None` for the manager itself.
    pub user: Option<String>,
}

impl Writer {
    /// Adds to a refusal (403) of an impersonated write who was refused and
    /// what to do, since the API server's message names only the user.
    pub fn explain(&self, outcome: TaskOutcome, err: &kube::Error) -> TaskOutcome {
        let (Some(user), TaskOutcome::Fatal { message }) = (&self.user, &outcome) else {
            return outcome;
        };
        if !matches!(err, kube::Error::Api(s) if s.code == 403) {
            return outcome;
        }
        TaskOutcome::Fatal {
            message: format!("{message}; {}", refusal_hint(user, message)),
        }
    }
}

/// What to do about a refused impersonated write, from the API server's
/// message (it names the user, the verb and the resource).
fn refusal_hint(user: &str, message: &str) -> String {
    if message.contains("cannot impersonate") {
        return format!(
            "the manager may not impersonate {user}: its ClusterRole needs impersonate on \
             serviceaccounts (kubectl kudo init grants it)"
        );
    }
    if message.contains("not currently held") || message.contains("escalat") {
        return format!(
            "the package's Role or RoleBinding grants rights {user} does not hold itself, \
             which Kubernetes refuses: grant that ServiceAccount those rights in the namespace \
             (a Role and RoleBinding), or set spec.serviceAccountName to an account that has them"
        );
    }
    if message.contains("at the cluster scope") {
        return format!(
            "the Instance's objects are written as {user}, and kudo-rs grants nothing \
             cluster-scoped by default: a cluster administrator grants it with a ClusterRole \
             and a ClusterRoleBinding to that ServiceAccount, or sets spec.serviceAccountName \
             to an account that has it"
        );
    }
    format!(
        "the Instance's objects are written as {user}: grant that ServiceAccount what the \
         package needs (a Role and RoleBinding in the namespace), or set \
         spec.serviceAccountName to an account that has it"
    )
}

/// Impersonating clients kept at most (one per ServiceAccount in use); past
/// it one is dropped and made again when next needed.
const MAX_CLIENTS: usize = 4096;

impl Writers {
    /// Writers for Instances that name no account.
    pub fn new(write_as: WriteAs) -> Self {
        Self {
            write_as,
            clients: Mutex::default(),
            prepared: Mutex::default(),
        }
    }

    fn default_account(&self) -> Option<&str> {
        self.write_as.default_account()
    }

    /// Makes sure the account `inst`'s objects are written as exists, when
    /// it is the one the manager makes: the ServiceAccount and its
    /// RoleBinding to the `kudo-instance` ClusterRole, created (never
    /// changed) with the manager's own client, once per namespace and
    /// process.
    pub async fn prepare(&self, base: &Client, inst: &Instance) -> Result<(), String> {
        let WriteAs::Account { create: true, .. } = &self.write_as else {
            return Ok(());
        };
        if inst
            .spec
            .service_account_name
            .as_deref()
            .is_some_and(|s| !s.is_empty())
        {
            return Ok(());
        }
        let ns = inst.metadata.namespace.as_deref().unwrap_or("default");
        if self.prepared.lock().is_ok_and(|p| p.contains(ns)) {
            return Ok(());
        }
        for object in [
            kudo_api::rbac::instance_account(ns),
            kudo_api::rbac::instance_role_binding(ns),
        ] {
            create_if_missing(base, ns, &object).await?;
        }
        if let Ok(mut prepared) = self.prepared.lock() {
            prepared.insert(ns.to_string());
        }
        Ok(())
    }

    /// The client that writes `inst`'s objects.
    pub fn for_instance(&self, base: &Client, inst: &Instance) -> Result<Writer, String> {
        let sa = service_account_of(
            inst.spec.service_account_name.as_deref(),
            self.default_account(),
        )?;
        let Some(sa) = sa else {
            return Ok(Writer {
                client: base.clone(),
                user: None,
            });
        };
        let ns = inst.metadata.namespace.as_deref().unwrap_or("default");
        let user = service_account_user(ns, sa);
        let mut clients = self
            .clients
            .lock()
            .map_err(|_| "the impersonating client cache is poisoned".to_string())?;
        if let Some(client) = clients.get(&user) {
            return Ok(Writer {
                client: client.clone(),
                user: Some(user),
            });
        }
        let header = HeaderValue::from_str(&user)
            .map_err(|e| format!("ServiceAccount user {user:?}: {e}"))?;
        let client = Client::new(
            Impersonating {
                inner: base.clone(),
                user: header,
            },
            ns.to_string(),
        );
        // Each client runs a task: a tenant naming a new account at every
        // update must not grow them without end.
        crate::bounded::insert_within(&mut clients, user.clone(), client.clone(), MAX_CLIENTS);
        Ok(Writer {
            client,
            user: Some(user),
        })
    }
}

/// Creates `object` in `namespace` unless it exists; an existing one is
/// left as it is (an administrator may have changed it).
async fn create_if_missing(
    base: &Client,
    namespace: &str,
    object: &serde_json::Value,
) -> Result<(), String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let resource = match kind {
        "ServiceAccount" => {
            kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ServiceAccount>(&())
        }
        _ => kube::api::ApiResource::erase::<k8s_openapi::api::rbac::v1::RoleBinding>(&()),
    };
    let api: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(base.clone(), namespace, &resource);
    let object: kube::api::DynamicObject = serde_json::from_value(object.clone())
        .map_err(|e| format!("{kind} {namespace}/{name}: {e}"))?;
    match api.create(&kube::api::PostParams::default(), &object).await {
        Ok(_) => {
            tracing::info!(%namespace, %kind, %name, "made the account Instances' objects are written as");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(format!(
            "cannot make {kind} {namespace}/{name}, which the Instance's objects are written as: \
             {e}; the manager needs create on serviceaccounts and rolebindings and bind on the \
             kudo-instance ClusterRole (kubectl kudo init grants them), or run it with \
             --manager-writes-as-itself"
        )),
    }
}

/// A tower service that sends each request through `inner` as `user`.
#[derive(Clone)]
struct Impersonating {
    inner: Client,
    user: HeaderValue,
}

impl tower::Service<http::Request<Body>> for Impersonating {
    type Response = http::Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        request
            .headers_mut()
            .insert("impersonate-user", self.user.clone());
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instance_account_wins_over_the_default() {
        assert_eq!(
            service_account_of(Some("app"), Some("dflt")),
            Ok(Some("app"))
        );
        assert_eq!(service_account_of(None, Some("dflt")), Ok(Some("dflt")));
        assert_eq!(service_account_of(Some(""), Some("dflt")), Ok(Some("dflt")));
        assert_eq!(service_account_of(None, None), Ok(None));
    }

    #[test]
    fn a_name_that_cannot_be_a_service_account_is_refused() {
        for bad in ["Admin", "a:b", "-x", "x-", "a..b", "a\nb", &"a".repeat(254)] {
            let e = service_account_of(Some(bad), None).unwrap_err();
            assert!(
                e.contains("not a valid ServiceAccount name"),
                "{bad:?}: {e}"
            );
        }
        assert_eq!(service_account_of(Some("a.b-c"), None), Ok(Some("a.b-c")));
    }

    #[tokio::test]
    async fn impersonating_clients_are_kept_for_at_most_so_many_accounts() {
        // Nothing listens there: the test never sends a request.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let base = Client::try_from(config).unwrap();
        let writers = Writers::new(WriteAs::Account {
            name: "kudo-instance".into(),
            create: false,
        });
        let mut inst = Instance::new("web", Default::default());
        inst.metadata.namespace = Some("team".into());
        for i in 0..MAX_CLIENTS + 10 {
            inst.spec.service_account_name = Some(format!("account-{i}"));
            let writer = writers.for_instance(&base, &inst).unwrap();
            assert_eq!(
                writer.user.as_deref(),
                Some(format!("system:serviceaccount:team:account-{i}").as_str())
            );
        }
        assert_eq!(writers.clients.lock().unwrap().len(), MAX_CLIENTS);
    }

    #[test]
    fn service_account_users_are_named_as_the_api_server_names_them() {
        assert_eq!(
            service_account_user("team", "deployer"),
            "system:serviceaccount:team:deployer"
        );
    }
}
