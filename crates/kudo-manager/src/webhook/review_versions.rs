//! OperatorVersion writes. An Instance runs whatever its OperatorVersion
//! holds, as the Instance's account; so whoever changes what one holds (its
//! spec, or whom it is shared with), or creates one under a name Instances
//! already use, must be allowed to act as the account of every Instance that
//! would run it. Nothing else about an OperatorVersion is judged here: the
//! manager runs `package verify` on each one it uses.

use std::borrow::Cow;
use std::collections::BTreeMap;

use kudo_api::names::SHARED_WITH_ANNOTATION;
use serde::Deserialize;

use super::super::acting_as::{ActingAs, UserInfo, shown};
use super::super::answer::Answer;
use super::super::decode::{Request, object_namespace};
use super::super::instance_uses::InstanceUse;
use super::super::ov_source::OperatorVersionSource;
use super::checks::Refusal;
use super::{LogContext, Reviewer};

/// Accounts asked about at once for one write (an OperatorVersion shared
/// with many namespaces is run by many).
const CONCURRENT_QUESTIONS: usize = 8;

/// An OperatorVersion write that changes what Instances would run.
pub(super) struct VersionWrite<'b> {
    uid: Cow<'b, str>,
    context: LogContext<'b>,
    user: UserInfo,
    target: Target,
}

/// The OperatorVersion as written.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    namespace: String,
    name: String,
    annotations: Option<BTreeMap<String, String>>,
    /// When only whom it is shared with changes: the annotations before
    /// (Instances that ran it before run the same thing).
    sharing_only: Option<Option<BTreeMap<String, String>>>,
}

/// What the review reads of an OperatorVersion.
#[derive(Deserialize)]
struct Written {
    #[serde(default)]
    metadata: WrittenMeta,
    #[serde(default)]
    spec: serde_json::Value,
}

#[derive(Deserialize, Default)]
struct WrittenMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

impl Written {
    fn shared_with(&self) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()?
            .get(SHARED_WITH_ANNOTATION)
            .map(String::as_str)
    }
}

/// The write to judge, or the answer when there is nothing to judge: a
/// write that leaves the spec and the shared-with annotation alone, a
/// subresource write, a deletion, CONNECT (allowed), or an object that
/// does not decode (400).
pub(super) fn prepare<'b>(request: &mut Request<'b>) -> Result<VersionWrite<'b>, Answer<'b>> {
    let judged = request.spec_write_as::<Written>("OperatorVersion");
    let uid = std::mem::take(&mut request.uid);
    let context = LogContext::of(request);
    let (old, new) = match judged {
        Err(message) => return Err(context.logged(Answer::bad_request(uid, message))),
        Ok(None) => return Err(context.logged(Answer::allowed(uid, vec![]))),
        Ok(Some(pair)) => pair,
    };
    let same_spec = old.as_ref().is_some_and(|old| old.spec == new.spec);
    let unchanged = same_spec
        && old
            .as_ref()
            .is_some_and(|old| old.shared_with() == new.shared_with());
    let name = Some(request.name.as_ref())
        .filter(|n| !n.is_empty())
        .or(new.metadata.name.as_deref())
        .unwrap_or_default()
        .to_string();
    // The API server fills a generated name in before validation: an empty
    // one is a hand-made review, and no Instance names it.
    if unchanged || name.is_empty() {
        return Err(context.logged(Answer::allowed(uid, vec![])));
    }
    let namespace = object_namespace(
        new.metadata.namespace.as_deref(),
        request.namespace.as_deref(),
    )
    .to_string();
    let sharing_only = old
        .filter(|_| same_spec)
        .map(|old| old.metadata.annotations);
    Ok(VersionWrite {
        uid,
        context,
        user: std::mem::take(&mut request.user_info),
        target: Target {
            namespace,
            name,
            annotations: new.metadata.annotations,
            sharing_only,
        },
    })
}

impl<S: OperatorVersionSource> Reviewer<S> {
    /// Admits the write only when its writer may act as the account of
    /// every Instance that would run the OperatorVersion, all asked within
    /// the read budget.
    pub(super) async fn review_version_write<'b>(&self, write: VersionWrite<'b>) -> Answer<'b> {
        let VersionWrite {
            uid,
            context,
            user,
            target,
        } = write;
        let judged = match &self.acting_as {
            None => Ok(()),
            Some(acting_as) => {
                let deadline = tokio::time::Instant::now() + self.read_timeout;
                tokio::time::timeout_at(deadline, self.ask_all(acting_as, &user, &target, deadline))
                    .await
                    .unwrap_or_else(|_| {
                        Err(Refusal::Failed(format!(
                            "could not tell within {}s whether {} may act as the accounts of \
                             the Instances that run OperatorVersion {}/{}; the change was not \
                             admitted, retry shortly",
                            self.read_timeout.as_secs_f32(),
                            shown(&user.username),
                            target.namespace,
                            target.name
                        )))
                    })
            }
        };
        context.logged(match judged {
            Ok(()) => Answer::allowed(uid, vec![]),
            Err(refusal) => refusal.into_answer(uid),
        })
    }

    /// Finds the Instances that would run the OperatorVersion and asks
    /// about their accounts, in rounds; a refusal wins over a question
    /// left unanswered, in any round.
    async fn ask_all(
        &self,
        acting_as: &ActingAs,
        user: &UserInfo,
        target: &Target,
        deadline: tokio::time::Instant,
    ) -> Result<(), Refusal> {
        let (ns, name) = (target.namespace.as_str(), target.name.as_str());
        let elsewhere = target
            .annotations
            .as_ref()
            .and_then(|a| a.get(SHARED_WITH_ANNOTATION))
            .is_some_and(|with| !with.trim().is_empty());
        let found = self
            .source
            .instances_naming(ns, name, elsewhere)
            .await
            .map_err(|e| {
                Refusal::Failed(format!(
                    "cannot tell which Instances run OperatorVersion {ns}/{name}: {e}; the \
                     change was not admitted, retry shortly"
                ))
            })?;
        // In rounds, so a version run in many namespaces does not send all
        // its questions at once. A refusal ends it; a question left
        // unanswered is reported only if no later one is refused.
        let mut unanswered = None;
        for round in runners(target, &found).chunks(CONCURRENT_QUESTIONS) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let mut questions = Vec::with_capacity(round.len());
            for instance in round {
                questions.push(acting_as.check_version_writer(
                    user,
                    (ns, name),
                    (instance.namespace(), instance.name()),
                    instance.account(),
                    left,
                ));
            }
            for answer in futures::future::join_all(questions).await {
                match answer.map_err(Refusal::from) {
                    Ok(()) => {}
                    Err(denied @ Refusal::Denied(_)) => return Err(denied),
                    Err(failed) => {
                        unanswered.get_or_insert(failed);
                    }
                }
            }
        }
        unanswered.map_or(Ok(()), Err)
    }
}

/// Of the Instances naming the OperatorVersion, those whose account its
/// writer must be allowed to act as: in another namespace only where the
/// OperatorVersion as written is shared with it (elsewhere it does not run);
/// when only the sharing changes, only in the namespaces it newly reaches;
/// one per namespace and account (the first by name).
fn runners<'a>(target: &Target, found: &'a [InstanceUse]) -> Vec<&'a InstanceUse> {
    let runs_in = |annotations: Option<&BTreeMap<String, String>>, namespace: &str| {
        namespace == target.namespace || kudo_engine::tenancy::shares_with(annotations, namespace)
    };
    let mut by_account: BTreeMap<(&str, Option<&str>), &InstanceUse> = BTreeMap::new();
    for instance in found {
        let namespace = instance.namespace();
        let ran_before = target
            .sharing_only
            .as_ref()
            .is_some_and(|before| runs_in(before.as_ref(), namespace));
        if !runs_in(target.annotations.as_ref(), namespace) || ran_before {
            continue;
        }
        by_account
            .entry((namespace, instance.account()))
            .and_modify(|kept| {
                if instance.name() < kept.name() {
                    *kept = instance;
                }
            })
            .or_insert(instance);
    }
    by_account.into_values().collect()
}

#[cfg(test)]
#[path = "review_versions_tests.rs"]
mod tests;
