//! Leader election with a `coordination.k8s.io/v1` Lease, written with
//! create/replace and resourceVersion so two replicas never both lead.
//! Durations and the decisions that follow from them: [`timing`].

use std::sync::Mutex;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;

use crate::{Error, Result};

pub mod timing;

pub use timing::{LeaderFlags, LeaderTiming};

/// Lease settings.
#[derive(Debug, Clone)]
pub struct LeaderConfig {
    /// Lease namespace.
    pub namespace: String,
    /// Lease name.
    pub name: String,
    /// This replica's identity (pod name + random suffix).
    pub identity: String,
    /// Lease duration, renew deadline and retry period.
    pub timing: LeaderTiming,
}

impl LeaderConfig {
    /// Lease `kudo-manager` with controller-runtime's durations
    /// ([`LeaderTiming::default`]).
    pub fn new(namespace: impl Into<String>) -> Self {
        let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "kudo-manager".into());
        Self {
            namespace: namespace.into(),
            name: "kudo-manager".into(),
            identity: format!("{pod}-{}", uuid::Uuid::new_v4().simple()),
            timing: LeaderTiming::default(),
        }
    }
}

/// Whether an API answer says the namespace itself does not exist (a
/// create in a missing namespace: 404 with details naming the namespace).
pub fn is_missing_namespace(status: &kube::core::Status, namespace: &str) -> bool {
    status.code == 404
        && (status
            .details
            .as_ref()
            .is_some_and(|d| d.kind == "namespaces" && d.name == namespace)
            || status.message == format!("namespaces \"{namespace}\" not found"))
}

/// What one election round decided. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseStep {
    /// The lease is ours: renew it.
    Renew,
    /// The lease is free or expired: take it over.
    Acquire,
    /// Someone else holds a valid lease.
    Follow {
        /// Current holder.
        holder: String,
    },
}

/// Decide what to do with the lease as it is now. Pure.
pub fn lease_step(spec: &LeaseSpec, me: &str, now: jiff::Timestamp) -> LeaseStep {
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == me {
        return LeaseStep::Renew;
    }
    if holder.is_empty() {
        return LeaseStep::Acquire;
    }
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .map(|t| t.0);
    let validity =
        jiff::SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    match renewed {
        Some(at) if at + validity > now => LeaseStep::Follow { holder },
        _ => LeaseStep::Acquire,
    }
}

/// Runs the election loop; [`Elector::leading`] tells whether this replica leads.
pub struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    leading: watch::Sender<bool>,
    /// The Lease as our last successful write left it: while we lead, a
    /// renewal is one PUT from it (a GET only after a conflict).
    last_written: Mutex<Option<Lease>>,
}

impl Elector {
    /// Create an elector; nothing happens until [`Elector::run`].
    pub fn new(client: kube::Client, config: LeaderConfig) -> Self {
        let api = Api::namespaced(client, &config.namespace);
        Self {
            api,
            config,
            leading: watch::channel(false).0,
            last_written: Mutex::default(),
        }
    }

    /// A receiver that turns `true` when this replica leads and `false` when it lost the lease.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Try once: acquire or renew. Returns whether we lead afterwards.
    pub async fn try_once(&self) -> Result<bool> {
        let cached = self.last_written.lock().ok().and_then(|mut l| l.take());
        if let Some(lease) = cached {
            match self.write(lease, jiff::Timestamp::now()).await? {
                // Someone else wrote the Lease since: look at it afresh.
                None => {}
                Some(leading) => return Ok(leading),
            }
        }
        let existing = self.api.get_opt(&self.config.name).await.map_err(|e| {
            Error::kube(
                format!(
                    "reading Lease {}/{}",
                    self.config.namespace, self.config.name
                ),
                e,
            )
        })?;
        let now = jiff::Timestamp::now();
        let Some(lease) = existing else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.config.identity.clone()),
                    lease_duration_seconds: Some(self.config.timing.lease_seconds()),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.remember(created);
                    Ok(true)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(kube::Error::Api(s)) if is_missing_namespace(&s, &self.config.namespace) => {
                    Err(Error::LeaderNamespaceMissing(self.config.namespace.clone()))
                }
                Err(e) => Err(Error::kube("creating the leader Lease", e)),
            };
        };
        Ok(self.write(lease, now).await?.unwrap_or(false))
    }

    fn remember(&self, lease: Lease) {
        if let Ok(mut last) = self.last_written.lock() {
            *last = Some(lease);
        }
    }

    /// Renew or take over `lease` as read (or last written). `None`: the
    /// write conflicted with another writer.
    async fn write(&self, mut lease: Lease, now: jiff::Timestamp) -> Result<Option<bool>> {
        let spec = lease.spec.clone().unwrap_or_default();
        let mut new_spec = spec.clone();
        match lease_step(&spec, &self.config.identity, now) {
            LeaseStep::Follow { holder } => {
                tracing::debug!(%holder, "another replica leads");
                return Ok(Some(false));
            }
            LeaseStep::Renew => {}
            LeaseStep::Acquire => {
                new_spec.holder_identity = Some(self.config.identity.clone());
                new_spec.acquire_time = Some(MicroTime(now));
                new_spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
        }
        new_spec.renew_time = Some(MicroTime(now));
        new_spec.lease_duration_seconds = Some(self.config.timing.lease_seconds());
        lease.spec = Some(new_spec);
        // replace carries metadata.resourceVersion: a concurrent writer gets 409.
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.remember(written);
                Ok(Some(true))
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
            Err(e) => Err(Error::kube("renewing the leader Lease", e)),
        }
    }

    /// Election loop until `shutdown` resolves; then releases the lease if
    /// held. A problem no retry can solve (see [`Elector::run_until`]) is
    /// logged and ends the loop.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        if let Err(e) = self.run_until(shutdown).await {
            tracing::error!(error = %e, "leader election stopped");
        }
    }

    /// Election loop until `shutdown` resolves, trying every retry period;
    /// then releases the lease if held. A leader whose renewals fail keeps
    /// leading until the renew deadline after its last renewal, then stops
    /// (the `leading` receiver turns false). Ends early with an error when
    /// the Lease's namespace does not exist.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        tokio::pin!(shutdown);
        let timing = self.config.timing;
        let mut last_renewal: Option<tokio::time::Instant> = None;
        loop {
            let was_leading = *self.leading.borrow();
            let since = last_renewal.map(|t| t.elapsed());
            let started = tokio::time::Instant::now();
            let round =
                tokio::time::timeout(timing.round_timeout(was_leading, since), self.try_once())
                    .await;
            let leading = match round {
                Ok(Ok(true)) => {
                    last_renewal = Some(started);
                    true
                }
                Ok(Ok(false)) => false,
                Ok(Err(e @ Error::LeaderNamespaceMissing(_))) => {
                    self.leading.send_replace(false);
                    return Err(e);
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "leader election round failed");
                    was_leading && timing.still_leading(last_renewal.map(|t| t.elapsed()))
                }
                Err(_) => {
                    tracing::warn!("leader election round timed out");
                    was_leading && timing.still_leading(last_renewal.map(|t| t.elapsed()))
                }
            };
            if leading != was_leading {
                tracing::info!(identity = %self.config.identity, leading, "leadership changed");
            }
            self.leading.send_replace(leading);
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(timing.retry_period()) => {}
            }
        }
        if *self.leading.borrow() {
            self.release().await;
        }
        Ok(())
    }

    /// Give the lease up so another replica takes over at once.
    async fn release(&self) {
        if let Ok(mut last) = self.last_written.lock() {
            *last = None;
        }
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        if let Some(spec) = lease.spec.as_mut()
            && spec.holder_identity.as_deref() == Some(self.config.identity.as_str())
        {
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            if let Err(e) = self
                .api
                .replace(&self.config.name, &PostParams::default(), &lease)
                .await
            {
                tracing::warn!(error = %e, "could not release the leader Lease");
            }
        }
        self.leading.send_replace(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        holder: Option<&str>,
        renewed_secs_ago: i64,
        duration: i32,
        now: jiff::Timestamp,
    ) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            renew_time: Some(MicroTime(
                now - jiff::SignedDuration::from_secs(renewed_secs_ago),
            )),
            lease_duration_seconds: Some(duration),
            ..LeaseSpec::default()
        }
    }

    fn status(code: u16, message: &str, kind: &str, name: &str) -> kube::core::Status {
        serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": code, "reason": "NotFound", "message": message,
            "details": {"kind": kind, "name": name},
        }))
        .unwrap()
    }

    #[test]
    fn a_create_refused_for_a_missing_namespace_is_recognised() {
        let missing = status(
            404,
            "namespaces \"kudo-system\" not found",
            "namespaces",
            "kudo-system",
        );
        assert!(is_missing_namespace(&missing, "kudo-system"));
        let lease_gone = status(
            404,
            "leases.coordination.k8s.io \"kudo-manager\" not found",
            "leases",
            "kudo-manager",
        );
        assert!(!is_missing_namespace(&lease_gone, "kudo-system"));
        let other_ns = status(404, "namespaces \"other\" not found", "namespaces", "other");
        assert!(!is_missing_namespace(&other_ns, "kudo-system"));
    }

    #[test]
    fn holder_renews_its_own_lease() {
        let now = jiff::Timestamp::now();
        assert_eq!(
            lease_step(&spec(Some("me"), 5, 30, now), "me", now),
            LeaseStep::Renew
        );
    }

    #[test]
    fn valid_lease_of_another_replica_is_followed() {
        let now = jiff::Timestamp::now();
        assert_eq!(
            lease_step(&spec(Some("other"), 5, 30, now), "me", now),
            LeaseStep::Follow {
                holder: "other".into()
            }
        );
    }

    #[test]
    fn expired_or_released_lease_is_acquired() {
        let now = jiff::Timestamp::now();
        assert_eq!(
            lease_step(&spec(Some("other"), 31, 30, now), "me", now),
            LeaseStep::Acquire
        );
        assert_eq!(
            lease_step(&spec(None, 0, 30, now), "me", now),
            LeaseStep::Acquire
        );
    }
}
