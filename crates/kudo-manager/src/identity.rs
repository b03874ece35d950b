//! Who writes an Instance's objects.
//!
//! A template renders whatever its parameters make of it, so the manager
//! applies and deletes an Instance's objects as a ServiceAccount of the
//! Instance's namespace (Kubernetes impersonation), as Flux and Argo CD do:
//! the Instance can then create only what that account may, whatever a
//! parameter smuggles into the YAML. The account is the Instance's
//! `spec.serviceAccountName`, else the manager's `--default-service-account`;
//! with neither, the manager writes as itself (KUDO's behaviour).
//!
//! Impersonation is a header on each request, so every identity shares the
//! manager's one connection pool.

use std::collections::HashMap;
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

/// Clients that impersonate, one per user, built on the manager's client.
#[derive(Default)]
pub struct Writers {
    default_service_account: Option<String>,
    clients: Mutex<HashMap<String, Client>>,
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
            message: format!(
                "{message}; the Instance's objects are written as {user}: grant that \
                 ServiceAccount what the package needs (a Role and RoleBinding in the \
                 namespace), or set spec.serviceAccountName to an account that has it"
            ),
        }
    }
}

impl Writers {
    /// Writers that fall back to `default_service_account` (None: the manager).
    pub fn new(default_service_account: Option<String>) -> Self {
        Self {
            default_service_account,
            clients: Mutex::default(),
        }
    }

    /// The client that writes `inst`'s objects.
    pub fn for_instance(&self, base: &Client, inst: &Instance) -> Result<Writer, String> {
        let sa = service_account_of(
            inst.spec.service_account_name.as_deref(),
            self.default_service_account.as_deref(),
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
        clients.insert(user.clone(), client.clone());
        Ok(Writer {
            client,
            user: Some(user),
        })
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

    #[test]
    fn service_account_users_are_named_as_the_api_server_names_them() {
        assert_eq!(
            service_account_user("team", "deployer"),
            "system:serviceaccount:team:deployer"
        );
    }
}
