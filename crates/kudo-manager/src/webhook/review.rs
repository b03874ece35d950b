//! One AdmissionReview: decode, read the OperatorVersions, ask
//! `kudo_engine::admission::review`, answer. A MaintenanceSchedule is
//! answered by `schedule::review` right after the decode (nothing to read).
//!
//! Every input gets an AdmissionReview answer: a malformed body, a foreign
//! kind or a failed OperatorVersion read is answered as an error with a
//! message (never as an allow), and nothing here panics.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionReview, Operation};
use kudo_api::OperatorVersion;
use kudo_engine::admission::{Subject, Verdict};

use kudo_package::render::RenderLimits;

use super::acting_as::{ActingAs, UserInfo};
use super::answer::{Answer, ReviewVerdict};
use super::decode::{Objects, OvRef, Request, Reviewed, decode, instance_namespace, ov_ref};
use super::ov_source::OperatorVersionSource;
use super::{repository, schedule};
use crate::render_pool::RenderPool;

/// Reviews Instance changes with OperatorVersions from `S`, and
/// MaintenanceSchedules.
#[derive(Clone, Debug)]
pub struct Reviewer<S> {
    source: S,
    read_timeout: Duration,
    clock: fn() -> jiff::Timestamp,
    /// Budgets of the renders that check new parameter values.
    render_limits: RenderLimits,
    /// Where those renders run (off the workers that answer reviews).
    renders: RenderPool,
    /// `package verify` of the OperatorVersions Instances start using.
    verified: crate::ov_verify::VerifiedOperatorVersions,
    /// Whether whoever writes an Instance may act as its account; `None`:
    /// not checked (tests of the other rules).
    acting_as: Option<ActingAs>,
}

/// Why a review could not be decided; each becomes an error answer.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// The request itself is wrong (HTTP-400-style).
    BadRequest(String),
    /// Something on our side failed (HTTP-500-style); the change was not checked.
    Internal(String),
}

impl<S: OperatorVersionSource> Reviewer<S> {
    /// A reviewer that gives up reading OperatorVersions after `read_timeout`
    /// (keep it below the configuration's `timeoutSeconds`).
    pub fn new(source: S, read_timeout: Duration) -> Self {
        Self {
            source,
            read_timeout,
            clock: jiff::Timestamp::now,
            render_limits: RenderLimits::default(),
            // Within the request's own budget (the reads come first): a
            // render that takes longer admits the change unchecked.
            renders: RenderPool::new(read_timeout.min(Duration::from_secs(1))),
            verified: crate::ov_verify::VerifiedOperatorVersions::default(),
            acting_as: None,
        }
    }

    /// Refuses an Instance written by someone who may not act as the
    /// account it runs as.
    #[must_use]
    pub fn with_acting_as(mut self, acting_as: Option<ActingAs>) -> Self {
        self.acting_as = acting_as;
        self
    }

    /// Checks new parameter values within these budgets (the manager's).
    #[must_use]
    pub fn with_render_limits(mut self, limits: RenderLimits) -> Self {
        self.render_limits = limits;
        self
    }

    /// Uses `clock` for "now" (time-dependent warnings such as "waits for
    /// the maintenance window"); tests pin it.
    #[must_use]
    pub fn with_clock(mut self, clock: fn() -> jiff::Timestamp) -> Self {
        self.clock = clock;
        self
    }

    /// Answers a raw request body with the AdmissionReview to send back.
    pub async fn review_bytes(&self, body: &[u8]) -> AdmissionReview<DynamicObject> {
        self.answer(body).await.into_review()
    }

    /// Like [`Reviewer::review_bytes`], serialised as JSON.
    pub async fn review_to_json(&self, body: &[u8]) -> Vec<u8> {
        self.answer(body).await.into_json()
    }

    /// [`Reviewer::review_to_json`] and how the request was answered (the
    /// server's path: the verdict feeds the metrics).
    pub async fn review_with_verdict(&self, body: &[u8]) -> (Vec<u8>, ReviewVerdict) {
        let answer = self.answer(body).await;
        let verdict = answer.verdict();
        (answer.into_json(), verdict)
    }

    async fn answer<'b>(&self, body: &'b [u8]) -> Answer<'b> {
        let pending = match self.prepare(body) {
            Ok(Prepared::Instance(pending)) => pending,
            Ok(Prepared::Version(write)) => return self.review_version_write(write).await,
            Err(answer) => return answer,
        };
        if pending.writer_only {
            let writer = self.check_writer(&pending).await;
            let Pending { uid, context, .. } = pending;
            return context.logged(match writer {
                Ok(()) => Answer::allowed(uid, vec![]),
                Err(refusal) => refusal.into_answer(uid),
            });
        }
        // Only the access review, the reads and renders wait; everything
        // else is done before or after. The review and the reads share the
        // request's time, so they run at once.
        let (writer, read) = Box::pin(futures::future::join(
            self.check_writer(&pending),
            self.read_operator_versions(&pending),
        ))
        .await;
        if let Err(refusal) = writer {
            let Pending { uid, context, .. } = pending;
            return context.logged(refusal.into_answer(uid));
        }
        let pods = self.check_pods(&pending).await;
        let verified = self.check_operator_version(&pending, &read).await;
        let values = match verified {
            Ok(()) => self.check_values(&pending, &read).await,
            Err(refused) => Err(refused),
        };
        let uid = pending.uid.clone();
        let answer = finish(pending, read);
        match (pods, values) {
            (Err(refusal), _) | (_, Err(refusal)) if answer.refusal.is_none() => {
                refusal.into_answer(uid)
            }
            _ => answer,
        }
    }

    /// Decodes the body and settles what needs no OperatorVersion: errors,
    /// the writes the rules do not judge, MaintenanceSchedules and
    /// OperatorRepositories; an OperatorVersion write is left to
    /// `review_versions.rs`.
    fn prepare<'b>(&self, body: &'b [u8]) -> Result<Prepared<'b>, Answer<'b>> {
        let mut request = decode(body)?;
        let now = (self.clock)();
        let judged = match request.reviewed_kind() {
            Err(message) => Err(Failure::BadRequest(message)),
            Ok(Reviewed::MaintenanceSchedule) => {
                let uid = std::mem::take(&mut request.uid);
                let context = LogContext::of(&request);
                return Err(context.logged(schedule::review(&request, uid)));
            }
            Ok(Reviewed::OperatorRepository) => {
                let uid = std::mem::take(&mut request.uid);
                let context = LogContext::of(&request);
                return Err(context.logged(repository::review(&request, uid)));
            }
            Ok(Reviewed::OperatorVersion) => {
                return versions::prepare(&mut request).map(Prepared::Version);
            }
            Ok(Reviewed::Instance) => instances(&request, now),
        };
        // Only who writes is judged (a metadata write that changes what
        // the Instance's account does, a status write).
        let mut writer_only = false;
        let judged = match judged {
            Err(failure) => Err(failure),
            // The status names the OperatorVersion a channel installed and
            // the values a plan run renders: whoever writes it chooses what
            // runs as the account.
            Ok(Some(pair)) if request.is_status_write() => {
                writer_only = true;
                Ok(Some(pair))
            }
            // Other subresources and CONNECT are not ours to judge.
            Ok(None) => Ok(None),
            // Metadata-only writes (finalizers, labels) and deletions change
            // no spec: nothing to judge, and they must work even when the
            // OperatorVersion is gone or unreadable (the controller removes
            // its finalizer that way).
            Ok(Some((Some(old), new))) if old.spec == new.spec => {
                if request.asks_to_delete_crds() {
                    writer_only = true;
                    Ok(Some((Some(old), new)))
                } else {
                    Ok(None)
                }
            }
            Ok(Some(pair)) => Ok(Some(pair)),
        };
        let uid = std::mem::take(&mut request.uid);
        let context = LogContext::of(&request);
        let user = std::mem::take(&mut request.user_info);
        let (mut old, mut new) = match judged {
            Ok(Some(pair)) => pair,
            Ok(None) => return Err(context.logged(Answer::allowed(uid, vec![]))),
            Err(failure) => return Err(context.logged(failure.into_answer(uid))),
        };
        // An Instance that tracks a channel runs the OperatorVersion its
        // stored status names: the change is judged against that one.
        let tracked = old
            .as_ref()
            .and_then(|o| o.status.as_ref())
            .and_then(|s| s.upgrades.clone());
        if let Some(tracked) = &tracked {
            for subject in old.iter_mut().chain(std::iter::once(&mut new)) {
                runs_tracked(subject, tracked);
            }
        }
        if old
            .as_ref()
            .is_none_or(|o| o.spec.upgrades != new.spec.upgrades)
            && let Some(problem) = repository::upgrades_problem(new.spec.upgrades.as_ref())
        {
            return Err(context.logged(Answer::refused(uid, 403, "Forbidden", problem)));
        }
        // The rules judge an OperatorVersion reference from the Instance's
        // namespace: the request's when the object leaves it out.
        let own = instance_namespace(&new, context.namespace.as_deref()).to_string();
        new.metadata.namespace = Some(own);
        let namespace = instance_namespace(&new, None);
        // Another namespace's OperatorVersion is read, but the rules refuse it
        // in the same words whether it is missing or not shared with this
        // namespace (`kudo_engine::tenancy`): the answer tells nothing more.
        let new_ref = ov_ref(&new, namespace);
        let same_ov = old
            .as_ref()
            .is_some_and(|old| ov_ref(old, namespace) == new_ref);
        Ok(Prepared::Instance(Pending {
            uid,
            context,
            old,
            new,
            same_ov,
            now,
            user,
            writer_only,
        }))
    }

    /// The new object's OperatorVersion and, when it names another one, the
    /// old object's (`None` when both name the same: `finish` shares it,
    /// without touching the shared count again).
    async fn read_operator_versions(&self, pending: &Pending<'_>) -> Result<Versions, Failure> {
        let namespace = instance_namespace(&pending.new, pending.context.namespace.as_deref());
        let new_ref = ov_ref(&pending.new, namespace);
        // The old object's OperatorVersion only from its own namespace
        // too: one elsewhere is not read (as if not found).
        let old_ref = match &pending.old {
            Some(old) if !pending.same_ov => {
                ov_ref(old, namespace).filter(|(ov_namespace, _)| *ov_namespace == namespace)
            }
            _ => None,
        };
        // An upgrade reads two OperatorVersions: both at once, so a slow
        // API server costs one read's time and budget, not two (two 3 s
        // budgets in a row would outlast the request's 4 s). Boxed: held
        // inline, the pair made every review's future bigger and slower.
        let (new_ov, old_ov) = match old_ref {
            None => (self.read(new_ref).await, Ok(None)),
            old_ref => {
                Box::pin(futures::future::join(
                    self.read(new_ref),
                    self.read(old_ref),
                ))
                .await
            }
        };
        // The new one's failure first: it is the one the change is judged by.
        let new_ov = new_ov?;
        Ok((old_ov?, new_ov))
    }

    /// Reads one OperatorVersion; `None` for "no reference" and "not found"
    /// (the engine denies both with a message naming it).
    async fn read(
        &self,
        reference: Option<OvRef<'_>>,
    ) -> Result<Option<Arc<OperatorVersion>>, Failure> {
        let Some((namespace, name)) = reference else {
            return Ok(None);
        };
        match tokio::time::timeout(self.read_timeout, self.source.get(namespace, name)).await {
            Ok(Ok(ov)) => Ok(ov),
            Ok(Err(err)) => Err(Failure::Internal(format!(
                "cannot read OperatorVersion {namespace}/{name}: {err}; the change was not \
                 checked, retry when the API server answers again"
            ))),
            Err(_) => Err(Failure::Internal(format!(
                "reading OperatorVersion {namespace}/{name} took longer than {}s; the change was \
                 not checked, retry shortly",
                self.read_timeout.as_secs_f32()
            ))),
        }
    }
}

/// Points `subject` at the OperatorVersion a channel move installed, while
/// that is in force.
fn runs_tracked(subject: &mut Subject, tracked: &kudo_api::upgrades::UpgradeStatus) {
    if let Some(ov) = tracked.in_force(&subject.spec).map(str::to_owned) {
        let reference = &mut subject.spec.operator_version;
        reference.name = Some(ov);
        reference.namespace = None;
    }
}

/// The (old, new) Instances to review, or `None` when the request is not
/// one judged (a subresource write other than the status, CONNECT).
type Pair = (Option<Box<Subject>>, Box<Subject>);

fn instances(request: &Request<'_>, now: jiff::Timestamp) -> Result<Option<Pair>, Failure> {
    if request
        .sub_resource
        .as_deref()
        .is_some_and(|s| !s.is_empty())
        && !request.is_status_write()
    {
        return Ok(None);
    }
    if matches!(request.operation, Operation::Connect) {
        return Ok(None);
    }
    let (old, new): Objects = request.objects().map_err(Failure::BadRequest)?;
    let present = |object: Option<Box<Subject>>, field: &str| {
        object.ok_or_else(|| {
            Failure::BadRequest(format!(
                "request.{field} is missing; the API server always sends it for this operation"
            ))
        })
    };
    match request.operation {
        Operation::Create => Ok(Some((None, present(new, "object")?))),
        Operation::Update => Ok(Some((
            Some(present(old, "oldObject")?),
            present(new, "object")?,
        ))),
        Operation::Delete => {
            // The engine reviews a deletion as the old object with a
            // deletionTimestamp.
            let old = present(old, "oldObject")?;
            let mut new = old.clone();
            if new.metadata.deletion_timestamp.is_none() {
                new.metadata.deletion_timestamp = Some(Time(now));
            }
            Ok(Some((Some(old), new)))
        }
        Operation::Connect => Ok(None),
    }
}

/// The OperatorVersions read for a review: the old object's (when it names
/// another one than the new object) and the new object's.
type Versions = (Option<Arc<OperatorVersion>>, Option<Arc<OperatorVersion>>);

/// A decoded request still to judge.
enum Prepared<'b> {
    /// An Instance write.
    Instance(Pending<'b>),
    /// An OperatorVersion write that changes what Instances would run.
    Version(versions::VersionWrite<'b>),
}

/// A decoded request the rules judge once its OperatorVersions are read.
struct Pending<'b> {
    uid: Cow<'b, str>,
    context: LogContext<'b>,
    old: Option<Box<Subject>>,
    new: Box<Subject>,
    /// Both objects name the same OperatorVersion: it is read once.
    same_ov: bool,
    now: jiff::Timestamp,
    /// Who writes.
    user: UserInfo,
    /// Only whether the writer may act as the account is judged.
    writer_only: bool,
}

impl Failure {
    fn into_answer(self, uid: Cow<'_, str>) -> Answer<'_> {
        match self {
            Failure::BadRequest(message) => Answer::bad_request(uid, message),
            Failure::Internal(message) => Answer::refused(uid, 500, "InternalError", message),
        }
    }
}

/// Asks the engine, with the OperatorVersions read, and answers.
fn finish(pending: Pending<'_>, read: Result<Versions, Failure>) -> Answer<'_> {
    let Pending {
        uid,
        context,
        old,
        new,
        same_ov,
        now,
        ..
    } = pending;
    let verdict = read.and_then(|(other_old_ov, new_ov)| {
        let old_ov = if same_ov { &new_ov } else { &other_old_ov };
        // The engine is pure and must not panic; if it ever does, answer an
        // error for this request instead of dropping the connection.
        catch_unwind(AssertUnwindSafe(|| {
            kudo_engine::admission::review(
                old.as_deref(),
                &new,
                old_ov.as_deref(),
                new_ov.as_deref(),
                Some(now),
            )
        }))
        .map_err(|_| {
            Failure::Internal(
                "the admission rules failed unexpectedly (a bug in kudo-rs; please report it); \
                 the change was not checked"
                    .to_string(),
            )
        })
    });
    let answer = match verdict {
        Ok(Verdict::Allowed { warnings }) => Answer::allowed(uid, warnings),
        Ok(Verdict::Denied { message }) => Answer::refused(uid, 403, "Forbidden", message),
        Err(failure) => failure.into_answer(uid),
    };
    context.logged(answer)
}

/// What the log line of a decoded request names.
struct LogContext<'b> {
    name: Cow<'b, str>,
    namespace: Option<Cow<'b, str>>,
}

impl<'b> LogContext<'b> {
    fn of(request: &Request<'b>) -> Self {
        Self {
            name: request.name.clone(),
            namespace: request.namespace.clone(),
        }
    }

    /// Logs how the request was answered and hands the answer on.
    fn logged<'a>(self, answer: Answer<'a>) -> Answer<'a> {
        let namespace = self.namespace.as_deref().unwrap_or("");
        let (uid, name) = (&answer.uid, &self.name);
        match &answer.refusal {
            None => tracing::debug!(%uid, namespace, %name, "admitted"),
            Some(refusal) if refusal.code >= 500 => {
                tracing::warn!(%uid, namespace, %name, reason = %refusal.message, "review failed");
            }
            Some(refusal) => {
                tracing::info!(%uid, namespace, %name, reason = %refusal.message, "denied");
            }
        }
        answer
    }
}

#[path = "review_checks.rs"]
mod checks;

#[path = "review_versions.rs"]
mod versions;

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
