//! Whoever writes an Instance's spec, or changes the OperatorVersion an
//! Instance runs, must be allowed to act as the ServiceAccount its plans
//! run as.
//!
//! The manager applies an Instance's objects by impersonating a
//! ServiceAccount of its namespace, so creating or changing an Instance
//! makes that account act. A user who could not impersonate the account
//! would gain its rights through a package; the webhook asks the API server
//! (a LocalSubjectAccessReview of `impersonate` on that ServiceAccount)
//! and refuses the write otherwise. The built-in `edit` and `admin` roles
//! hold that right in their namespace; an account acting as itself (a
//! parent Instance creating its children) needs nothing.
//!
//! An "allowed" is kept for [`ANSWER_TTL`] per user and account, at most
//! [`MAX_ANSWERS`] of them (none for a user of more than
//! [`MAX_KEPT_USER_BYTES`]), so a burst of writes costs one review (a right
//! taken away holds within that time). A refusal is not kept: a right
//! granted holds at the next write.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, ResourceAttributes, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use serde::Deserialize;

use crate::identity::{WriteAs, service_account_of, service_account_user};

/// How long an "allowed" of the API server is used again.
pub const ANSWER_TTL: Duration = Duration::from_secs(10);

/// Answers kept at most; past it, new answers are not kept until old ones
/// expire.
pub const MAX_ANSWERS: usize = 4096;

/// The answer for a user whose name, groups and extras together pass this
/// many bytes is not kept (the API server is asked each time): the answers
/// kept stay within a few tens of MiB.
pub const MAX_KEPT_USER_BYTES: usize = 4096;

/// `request.userInfo` of an AdmissionReview: who is writing. Absent and
/// `null` fields read as empty (the API server may send either).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// The user name (`system:serviceaccount:NS:NAME` for an account).
    #[serde(default, deserialize_with = "or_empty")]
    pub username: String,
    /// The user's uid, when the authenticator gives one.
    #[serde(default, deserialize_with = "or_empty")]
    pub uid: String,
    /// Its groups.
    #[serde(default, deserialize_with = "or_empty")]
    pub groups: Vec<String>,
    /// What the authenticator adds (token ids, scopes).
    #[serde(default, deserialize_with = "extra_or_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Bytes of its strings: what keeping it as a key costs.
    fn size(&self) -> usize {
        let extra: usize = self
            .extra
            .iter()
            .map(|(k, v)| k.len() + v.iter().map(String::len).sum::<usize>())
            .sum();
        self.username.len()
            + self.uid.len()
            + self.groups.iter().map(String::len).sum::<usize>()
            + extra
    }
}

fn or_empty<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn extra_or_empty<'de, D>(d: D) -> Result<BTreeMap<String, Vec<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let extra: Option<BTreeMap<String, Option<Vec<String>>>> = Option::deserialize(d)?;
    Ok(extra
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect())
}

/// Asks whether a user may impersonate a ServiceAccount.
pub trait AccessReviews: Send + Sync {
    /// `Ok(true)` when `user` may impersonate ServiceAccount `account` of
    /// `namespace`; `Err` when the question could not be answered.
    fn may_impersonate<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: &'a str,
        account: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>>;
}

/// [`AccessReviews`] by LocalSubjectAccessReviews to the API server (the
/// manager needs `create` on `localsubjectaccessreviews`).
pub struct SubjectAccessReviews {
    client: kube::Client,
}

impl SubjectAccessReviews {
    /// Reviews sent with `client` (the manager's own).
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

impl AccessReviews for SubjectAccessReviews {
    fn may_impersonate<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: &'a str,
        account: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let review = LocalSubjectAccessReview {
                metadata: kube::api::ObjectMeta {
                    namespace: Some(namespace.to_string()),
                    ..Default::default()
                },
                spec: SubjectAccessReviewSpec {
                    user: Some(user.username.clone()),
                    uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                    groups: Some(user.groups.clone()),
                    extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
                    resource_attributes: Some(ResourceAttributes {
                        namespace: Some(namespace.to_string()),
                        verb: Some("impersonate".into()),
                        group: Some(String::new()),
                        resource: Some("serviceaccounts".into()),
                        name: Some(account.to_string()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                status: None,
            };
            let api: Api<LocalSubjectAccessReview> =
                Api::namespaced(self.client.clone(), namespace);
            let answered = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| e.to_string())?;
            Ok(answered
                .status
                .is_some_and(|s| s.allowed && s.denied != Some(true)))
        })
    }
}

/// Which account a write must be allowed to act as.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Needed {
    /// None: the Instance runs as the manager (`--manager-writes-as-itself`
    /// and no `spec.serviceAccountName`), or its writer is the account.
    Nothing,
    /// `impersonate` on this ServiceAccount of the Instance's namespace.
    Impersonate(String),
}

/// What `user` must be allowed to do to write an Instance in `namespace`
/// that names `instance_account` (pure). An account name that cannot be
/// one is an error (the message says why).
pub(crate) fn needed(
    write_as: &WriteAs,
    instance_account: Option<&str>,
    namespace: &str,
    user: &UserInfo,
) -> Result<Needed, String> {
    let Some(account) = service_account_of(instance_account, write_as.default_account())? else {
        return Ok(Needed::Nothing);
    };
    if user.username == service_account_user(namespace, account) {
        return Ok(Needed::Nothing);
    }
    Ok(Needed::Impersonate(account.to_string()))
}

/// Why a write was refused, or could not be judged.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotAllowed {
    /// The writer may not act as the account (or names an invalid one).
    Denied(String),
    /// The API server did not answer the question.
    Unanswered(String),
}

type AnswerKey = (UserInfo, String, String);

/// Whether a user may act as an Instance's account.
enum Judged {
    Allowed,
    /// Not as this account (its name).
    Refused(String),
    /// The Instance names no account that can be one (why).
    Invalid(String),
}

/// The check, with the answers it keeps.
#[derive(Clone)]
pub struct ActingAs {
    write_as: WriteAs,
    reviews: Arc<dyn AccessReviews>,
    /// When each "allowed" was answered.
    answers: Arc<Mutex<HashMap<AnswerKey, Instant>>>,
}

impl std::fmt::Debug for ActingAs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActingAs")
            .field("write_as", &self.write_as)
            .finish_non_exhaustive()
    }
}

impl ActingAs {
    /// Instances that name no account run as `write_as`; `reviews` answers.
    pub fn new(write_as: WriteAs, reviews: Arc<dyn AccessReviews>) -> Self {
        Self {
            write_as,
            reviews,
            answers: Arc::default(),
        }
    }

    /// Refuses the write of Instance `namespace/name` (naming
    /// `instance_account`) by `user` unless they may act as the account it
    /// runs as. The review waits at most `timeout`.
    pub(crate) async fn check(
        &self,
        user: &UserInfo,
        namespace: &str,
        name: &str,
        instance_account: Option<&str>,
        timeout: Duration,
    ) -> Result<(), NotAllowed> {
        let account = match self
            .judge(user, namespace, instance_account, timeout)
            .await?
        {
            Judged::Allowed => return Ok(()),
            Judged::Invalid(problem) => {
                return Err(NotAllowed::Denied(format!(
                    "Instance {namespace}/{name}: {problem}"
                )));
            }
            Judged::Refused(account) => account,
        };
        Err(NotAllowed::Denied(format!(
            "Instance {namespace}/{name} runs its plans as ServiceAccount {namespace}/{account}, \
             and {} may not act as it: writing the Instance would give its rights to whoever \
             writes it. Grant impersonate on serviceaccounts {account:?} in {namespace} (the \
             edit and admin roles hold it), or name in spec.serviceAccountName an account you \
             may act as",
            shown(&user.username)
        )))
    }

    /// Refuses a write by `user` that changes what OperatorVersion
    /// `ov_namespace/ov_name` holds, when Instance `namespace/name` (naming
    /// `instance_account`) runs it and `user` may not act as its account.
    /// An Instance whose account cannot be one runs nothing: not asked.
    pub(crate) async fn check_version_writer(
        &self,
        user: &UserInfo,
        (ov_namespace, ov_name): (&str, &str),
        (namespace, name): (&str, &str),
        instance_account: Option<&str>,
        timeout: Duration,
    ) -> Result<(), NotAllowed> {
        let account = match self
            .judge(user, namespace, instance_account, timeout)
            .await?
        {
            Judged::Allowed | Judged::Invalid(_) => return Ok(()),
            Judged::Refused(account) => account,
        };
        Err(NotAllowed::Denied(format!(
            "OperatorVersion {ov_namespace}/{ov_name} is run by Instance {namespace}/{name} as \
             ServiceAccount {namespace}/{account}, and {} may not act as it: changing or \
             replacing the OperatorVersion would give that account's rights to whoever writes \
             it. Create the package's next version as a new OperatorVersion and move the \
             Instance to it (kubectl kudo upgrade), or have someone who may impersonate \
             serviceaccounts {account:?} in {namespace} write it",
            shown(&user.username)
        )))
    }

    /// Whether `user` may act as the account an Instance of `namespace`
    /// naming `instance_account` runs as.
    async fn judge(
        &self,
        user: &UserInfo,
        namespace: &str,
        instance_account: Option<&str>,
        timeout: Duration,
    ) -> Result<Judged, NotAllowed> {
        let account = match needed(&self.write_as, instance_account, namespace, user) {
            Err(problem) => return Ok(Judged::Invalid(problem)),
            Ok(Needed::Nothing) => return Ok(Judged::Allowed),
            Ok(Needed::Impersonate(account)) => account,
        };
        // A very large user is asked about each time, not kept.
        let key = (user.size() <= MAX_KEPT_USER_BYTES)
            .then(|| (user.clone(), namespace.to_string(), account.clone()));
        if key.as_ref().is_some_and(|key| self.is_kept(key)) {
            return Ok(Judged::Allowed);
        }
        let allowed = self.ask(user, namespace, &account, timeout).await?;
        if let (true, Some(key)) = (allowed, key) {
            self.keep(key);
        }
        Ok(if allowed {
            Judged::Allowed
        } else {
            Judged::Refused(account)
        })
    }

    /// Asks the API server, within `timeout`, whether `user` may
    /// impersonate `account`.
    async fn ask(
        &self,
        user: &UserInfo,
        namespace: &str,
        account: &str,
        timeout: Duration,
    ) -> Result<bool, NotAllowed> {
        let asked = self.reviews.may_impersonate(user, namespace, account);
        match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(allowed)) => Ok(allowed),
            Ok(Err(err)) => Err(NotAllowed::Unanswered(format!(
                "cannot ask the API server whether {} may act as ServiceAccount \
                 {namespace}/{account}: {err}; the change was not admitted, retry shortly",
                shown(&user.username)
            ))),
            Err(_) => Err(NotAllowed::Unanswered(format!(
                "the API server did not answer within {}s whether {} may act as \
                 ServiceAccount {namespace}/{account}; the change was not admitted, retry \
                 shortly",
                timeout.as_secs_f32(),
                shown(&user.username)
            ))),
        }
    }

    /// Whether an "allowed" for `key` is still fresh.
    fn is_kept(&self, key: &AnswerKey) -> bool {
        self.answers
            .lock()
            .is_ok_and(|answers| answers.get(key).is_some_and(|at| at.elapsed() < ANSWER_TTL))
    }

    fn keep(&self, key: AnswerKey) {
        let Ok(mut answers) = self.answers.lock() else {
            return;
        };
        if answers.len() >= MAX_ANSWERS {
            answers.retain(|_, at| at.elapsed() < ANSWER_TTL);
        }
        if answers.len() < MAX_ANSWERS || answers.contains_key(&key) {
            answers.insert(key, Instant::now());
        }
    }
}

/// A user name for a message: quoted, and cut when very long.
pub(super) fn shown(user: &str) -> String {
    format!("user {:?}", kudo_api::message::bounded_to(user, 256))
}

#[cfg(test)]
#[path = "acting_as_tests.rs"]
pub(crate) mod tests;
