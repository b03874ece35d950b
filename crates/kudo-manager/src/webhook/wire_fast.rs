//! The fast path of [`super::parse`]: the usual AdmissionReview read with
//! [`Cursor`] straight into the slim request, without serde's visitors.
//!
//! It reads exactly what the serde-derived [`WireReview`] reads, with the
//! same rules (required fields, `null` for optional ones, last key wins in
//! maps), straight into the engine's borrowed views: a usual review
//! allocates only the two boxes. The nested parts that are rare, or small
//! and intricate (plan requests, windows, suppressions, timestamps, the
//! automatic suppression) are handed to serde as the raw text of just that
//! value. Whatever it is
//! not sure about makes it give up, and `parse` decodes the whole body with
//! serde. The differential tests in `wire_fast_tests.rs` hold it to serde's
//! results.

use std::borrow::Cow;

use kube::core::admission::Operation;
use kudo_api::{ExecutionStatus, Time};
use kudo_engine::view::{
    AppliedView, InstanceView, Params, PhaseView, PlanView, ReferenceView, SpecView, StatusView,
    StepView, Text,
};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde::de::value::{Error as ValueError, StrDeserializer};

use super::super::json_scan::{Cursor, GiveUp, Scan};
use super::{WireKind, WireRequest, WireReview};

/// The review, or `None` when serde should decode it.
pub(super) fn review(text: &str) -> Option<WireReview<'_>> {
    let mut cursor = Cursor::new(text);
    let review = read_review(&mut cursor).ok()?;
    cursor.at_end().then_some(review)
}

/// Fills a field once; a second occurrence is an error for serde's derived
/// structs, so it gives up.
fn once<T>(slot: &mut Option<T>, value: T) -> Scan<()> {
    if slot.replace(value).is_some() {
        return Err(GiveUp);
    }
    Ok(())
}

/// Decodes a value's raw text with serde (small, rare or intricate parts).
fn serde_value<'a, T: Deserialize<'a>>(cursor: &mut Cursor<'a>) -> Scan<T> {
    serde_json::from_str(cursor.raw()?).map_err(|_| GiveUp)
}

/// A string naming an enum variant, as serde names it.
fn variant<'de, T: Deserialize<'de>>(name: &'de str) -> Scan<T> {
    T::deserialize(StrDeserializer::<ValueError>::new(name)).map_err(|_| GiveUp)
}

fn read_review<'a>(cursor: &mut Cursor<'a>) -> Scan<WireReview<'a>> {
    let (mut api_version, mut kind, mut request) = (None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "apiVersion" => once(&mut api_version, cursor.string()?)?,
            "kind" => once(&mut kind, cursor.string()?)?,
            "request" => once(&mut request, cursor.nullable(read_request)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(WireReview {
        api_version: api_version.ok_or(GiveUp)?,
        kind: kind.ok_or(GiveUp)?,
        request: request.flatten(),
    })
}

#[derive(Default)]
struct RequestFields<'a> {
    uid: Option<Cow<'a, str>>,
    kind: Option<WireKind<'a>>,
    resource: Option<()>,
    sub_resource: Option<Option<Cow<'a, str>>>,
    name: Option<Cow<'a, str>>,
    namespace: Option<Option<Cow<'a, str>>>,
    operation: Option<Operation>,
    user_info: Option<()>,
    object: Option<Option<Box<InstanceView<'a>>>>,
    old_object: Option<Option<Box<InstanceView<'a>>>>,
}

fn optional_str<'a>(cursor: &mut Cursor<'a>) -> Scan<Option<Cow<'a, str>>> {
    cursor.nullable(Cursor::string)
}

fn read_request<'a>(cursor: &mut Cursor<'a>) -> Scan<WireRequest<'a>> {
    let mut f = RequestFields::default();
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "uid" => once(&mut f.uid, cursor.string()?)?,
            "kind" => once(&mut f.kind, read_kind(cursor)?)?,
            "resource" => once(&mut f.resource, cursor.skip()?)?,
            "subResource" => once(&mut f.sub_resource, optional_str(cursor)?)?,
            "name" => once(&mut f.name, cursor.string()?)?,
            "namespace" => once(&mut f.namespace, optional_str(cursor)?)?,
            "operation" => once(&mut f.operation, variant(&cursor.string()?)?)?,
            "userInfo" => once(&mut f.user_info, cursor.skip()?)?,
            "object" => once(
                &mut f.object,
                cursor.nullable(|c| read_instance(c, Status::Skip))?,
            )?,
            "oldObject" => once(
                &mut f.old_object,
                cursor.nullable(|c| read_instance(c, Status::Read))?,
            )?,
            _ => cursor.skip()?,
        }
    }
    f.resource.ok_or(GiveUp)?;
    f.user_info.ok_or(GiveUp)?;
    Ok(WireRequest {
        uid: f.uid.ok_or(GiveUp)?,
        kind: f.kind.ok_or(GiveUp)?,
        resource: IgnoredAny,
        sub_resource: f.sub_resource.flatten(),
        name: f.name.unwrap_or_default(),
        namespace: f.namespace.flatten(),
        operation: f.operation.ok_or(GiveUp)?,
        user_info: IgnoredAny,
        object: f.object.flatten(),
        old_object: f.old_object.flatten(),
    })
}

fn read_kind<'a>(cursor: &mut Cursor<'a>) -> Scan<WireKind<'a>> {
    let (mut group, mut version, mut kind) = (None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "group" => once(&mut group, cursor.string()?)?,
            "version" => once(&mut version, cursor.string()?)?,
            "kind" => once(&mut kind, cursor.string()?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(WireKind {
        group: group.ok_or(GiveUp)?,
        version: version.ok_or(GiveUp)?,
        kind: kind.ok_or(GiveUp)?,
    })
}

/// Whether an object's status is read (the old object) or skipped.
#[derive(Clone, Copy)]
enum Status {
    Read,
    Skip,
}

/// An Instance view, built in its box (views with their inline room are
/// kilobytes, and the request moves by value).
fn read_instance<'a>(cursor: &mut Cursor<'a>, keep: Status) -> Scan<Box<InstanceView<'a>>> {
    let mut instance = Box::<InstanceView<'a>>::default();
    let (mut metadata, mut spec, mut status) = (false, false, false);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "metadata" => {
                first(&mut metadata)?;
                read_meta(cursor, &mut instance)?;
            }
            "spec" => {
                first(&mut spec)?;
                read_spec(cursor, &mut instance.spec)?;
            }
            "status" => {
                first(&mut status)?;
                match keep {
                    Status::Read if cursor.null()? => instance.status = None,
                    // Filled where it lies: a status view is kilobytes.
                    Status::Read => {
                        read_status(cursor, instance.status.insert(StatusView::default()))?
                    }
                    Status::Skip => cursor.skip()?,
                }
            }
            _ => cursor.skip()?,
        }
    }
    if !(metadata && spec) {
        return Err(GiveUp);
    }
    Ok(instance)
}

/// Marks a field seen; a second occurrence is an error for serde's derived
/// structs, so it gives up.
fn first(seen: &mut bool) -> Scan<()> {
    if std::mem::replace(seen, true) {
        return Err(GiveUp);
    }
    Ok(())
}

/// `spec`; the plan requests, windows and suppressions (rare, and
/// intricate) are left to serde.
fn read_spec<'a>(cursor: &mut Cursor<'a>, view: &mut SpecView<'a>) -> Scan<()> {
    let (mut operator_version, mut parameters, mut plan_execution) = (None, false, None);
    let (mut plan_operations, mut maintenance_windows, mut suppressions) = (None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "operatorVersion" => once(&mut operator_version, read_reference(cursor)?)?,
            "parameters" => {
                first(&mut parameters)?;
                view.has_parameters = !cursor.null()?;
                view.parameters = Params::default();
                if view.has_parameters {
                    read_params(cursor, &mut view.parameters)?;
                }
            }
            "planExecution" => once(&mut plan_execution, serde_value(cursor)?)?,
            "planOperations" => once(&mut plan_operations, serde_value(cursor)?)?,
            "maintenanceWindows" => once(&mut maintenance_windows, serde_value(cursor)?)?,
            "suppressions" => once(&mut suppressions, serde_value(cursor)?)?,
            _ => cursor.skip()?,
        }
    }
    view.operator_version = operator_version.unwrap_or_default();
    view.plan_execution = plan_execution.flatten().map(Cow::Owned);
    if let Some(list) = plan_operations {
        view.plan_operations = Cow::Owned(list);
    }
    if let Some(list) = maintenance_windows {
        view.maintenance_windows = Cow::Owned(list);
    }
    if let Some(list) = suppressions {
        view.suppressions = Cow::Owned(list);
    }
    Ok(())
}

/// An `ObjectReference` (every field an optional string).
fn read_reference<'a>(cursor: &mut Cursor<'a>) -> Scan<ReferenceView<'a>> {
    let mut reference = ReferenceView::default();
    let mut seen = [false; 7];
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        let (index, field) = match key {
            "apiVersion" => (0, &mut reference.api_version),
            "fieldPath" => (1, &mut reference.field_path),
            "kind" => (2, &mut reference.kind),
            "name" => (3, &mut reference.name),
            "namespace" => (4, &mut reference.namespace),
            "resourceVersion" => (5, &mut reference.resource_version),
            "uid" => (6, &mut reference.uid),
            _ => {
                cursor.skip()?;
                continue;
            }
        };
        first(&mut seen[index])?;
        *field = optional_str(cursor)?;
    }
    Ok(reference)
}

/// The metadata the rules read.
fn read_meta<'a>(cursor: &mut Cursor<'a>, view: &mut InstanceView<'a>) -> Scan<()> {
    let (mut name, mut namespace, mut uid) = (None, None, None);
    let (mut generation, mut deletion_timestamp) = (None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "name" => once(&mut name, optional_str(cursor)?)?,
            "namespace" => once(&mut namespace, optional_str(cursor)?)?,
            "uid" => once(&mut uid, optional_str(cursor)?)?,
            "generation" => once(&mut generation, cursor.nullable(Cursor::i64)?)?,
            "deletionTimestamp" => {
                once(
                    &mut deletion_timestamp,
                    serde_value::<Option<Time>>(cursor)?,
                )?;
            }
            _ => cursor.skip()?,
        }
    }
    view.name = name.flatten();
    view.namespace = namespace.flatten();
    view.uid = uid.flatten();
    view.generation = generation.flatten();
    view.deletion_timestamp = deletion_timestamp.flatten();
    Ok(())
}

/// The status fields the rules read (as `WireStatus` keeps them).
fn read_status<'a>(cursor: &mut Cursor<'a>, view: &mut StatusView<'a>) -> Scan<()> {
    let (mut plan_status, mut active_plan, mut applied_parameters) = (None, None, false);
    let (mut applied_operator_version, mut last_plan_execution_uid) = (None, None);
    let (mut last_successful, mut auto_suppression) = (None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "planStatus" => once(&mut plan_status, read_plans(cursor, view)?)?,
            "activePlan" => once(&mut active_plan, cursor.nullable(read_active_plan)?)?,
            "appliedParameters" => {
                first(&mut applied_parameters)?;
                view.applied_parameters = Params::default();
                if !cursor.null()? {
                    read_params(cursor, &mut view.applied_parameters)?;
                }
            }
            "appliedOperatorVersion" => {
                once(&mut applied_operator_version, optional_str(cursor)?)?;
            }
            "lastPlanExecutionUid" => {
                once(&mut last_plan_execution_uid, optional_str(cursor)?)?;
            }
            "lastSuccessful" => {
                once(&mut last_successful, cursor.nullable(read_applied)?)?;
            }
            "autoSuppression" => once(&mut auto_suppression, serde_value(cursor)?)?,
            _ => cursor.skip()?,
        }
    }
    view.active_plan = active_plan.flatten();
    view.applied_operator_version = applied_operator_version.flatten();
    view.last_plan_execution_uid = last_plan_execution_uid.flatten();
    view.last_successful = last_successful.flatten();
    view.auto_suppression = auto_suppression.flatten().map(Cow::Owned);
    Ok(())
}

/// A map of strings into `params` (the last of repeated keys wins, as in a
/// `BTreeMap`).
fn read_params<'a>(cursor: &mut Cursor<'a>, params: &mut Params<'a>) -> Scan<()> {
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        params.insert(Cow::Borrowed(key), cursor.string()?);
    }
    Ok(())
}

/// `status.lastSuccessful`: `operatorVersion` required as in
/// `AppliedConfig`; `plan` and `completedAt` checked, not kept.
fn read_applied<'a>(cursor: &mut Cursor<'a>) -> Scan<AppliedView<'a>> {
    let (mut operator_version, mut plan, mut at) = (None, None, None);
    let (mut parameters, mut seen_parameters) = (Params::default(), false);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "operatorVersion" => once(&mut operator_version, cursor.string()?)?,
            // `default` without `null` in AppliedConfig: null is an error.
            "parameters" => {
                first(&mut seen_parameters)?;
                read_params(cursor, &mut parameters)?;
            }
            "plan" => once(&mut plan, optional_str(cursor)?)?,
            "completedAt" => once(&mut at, serde_value::<Option<Time>>(cursor)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(AppliedView {
        operator_version: operator_version.ok_or(GiveUp)?,
        parameters,
    })
}

fn execution_status(cursor: &mut Cursor<'_>) -> Scan<ExecutionStatus> {
    cursor.string()?.parse().map_err(|_| GiveUp)
}

fn optional_status(cursor: &mut Cursor<'_>) -> Scan<Option<ExecutionStatus>> {
    cursor.nullable(execution_status)
}

/// `status.activePlan`: name and status required, the rest checked for
/// their types; only the name is kept.
fn read_active_plan<'a>(cursor: &mut Cursor<'a>) -> Scan<Text<'a>> {
    let (mut name, mut uid, mut status, mut trigger, mut break_glass) =
        (None, None, None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "name" => once(&mut name, cursor.string()?)?,
            "uid" => once(&mut uid, optional_str(cursor)?)?,
            "status" => once(&mut status, execution_status(cursor)?)?,
            "trigger" => once(&mut trigger, optional_str(cursor)?)?,
            "breakGlass" => once(&mut break_glass, cursor.nullable(Cursor::bool)?)?,
            _ => cursor.skip()?,
        }
    }
    status.ok_or(GiveUp)?;
    name.ok_or(GiveUp)
}

/// `planStatus`: plans by key, each with its status, uid and phases, into
/// the view's flat lists. Of repeated keys the last wins, as in a map.
fn read_plans<'a>(cursor: &mut Cursor<'a>, view: &mut StatusView<'a>) -> Scan<()> {
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        let (mut name, mut status, mut phases, mut uid) = (None, None, None, None);
        cursor.object()?;
        while let Some(field) = cursor.next_key()? {
            match field {
                "name" => once(&mut name, cursor.string()?)?,
                "status" => once(&mut status, optional_status(cursor)?)?,
                "phases" => once(&mut phases, read_phases(cursor, view)?)?,
                "uid" => once(&mut uid, optional_str(cursor)?)?,
                _ => cursor.skip()?,
            }
        }
        let next = view.next_phase();
        let plan = PlanView {
            key: Cow::Borrowed(key),
            status: status.flatten().unwrap_or_default(),
            uid: uid.flatten(),
            phases: phases.unwrap_or(next..next),
        };
        match view.plans.iter_mut().find(|p| p.key == key) {
            Some(earlier) => *earlier = plan,
            None => view.plans.push(plan),
        }
    }
    Ok(())
}

/// A plan's phases, pushed in order; their range.
fn read_phases<'a>(
    cursor: &mut Cursor<'a>,
    view: &mut StatusView<'a>,
) -> Scan<std::ops::Range<u32>> {
    let mut start = None;
    cursor.array()?;
    while cursor.next_item()? {
        let (mut name, mut status, mut steps) = (None, None, None);
        cursor.object()?;
        while let Some(field) = cursor.next_key()? {
            match field {
                "name" => once(&mut name, cursor.string()?)?,
                "status" => once(&mut status, optional_status(cursor)?)?,
                "steps" => once(&mut steps, read_steps(cursor, view)?)?,
                _ => cursor.skip()?,
            }
        }
        // Pushed after its steps: a nested read pushes no phases, so the
        // plan's phases stay together.
        let next = view.next_step();
        start.get_or_insert(view.next_phase());
        view.phases.push(PhaseView {
            name: name.unwrap_or_default(),
            steps: steps.unwrap_or(next..next),
        });
    }
    let end = view.next_phase();
    Ok(start.unwrap_or(end)..end)
}

/// A phase's steps, pushed in order; their range.
fn read_steps<'a>(
    cursor: &mut Cursor<'a>,
    view: &mut StatusView<'a>,
) -> Scan<std::ops::Range<u32>> {
    let start = view.next_step();
    cursor.array()?;
    while cursor.next_item()? {
        let (mut name, mut status) = (None, None);
        cursor.object()?;
        while let Some(field) = cursor.next_key()? {
            match field {
                "name" => once(&mut name, cursor.string()?)?,
                "status" => once(&mut status, optional_status(cursor)?)?,
                _ => cursor.skip()?,
            }
        }
        view.steps.push(StepView {
            name: name.unwrap_or_default(),
            status: status.flatten().unwrap_or_default(),
        });
    }
    Ok(start..view.next_step())
}
