//! The fast path of [`super::parse`]: the usual AdmissionReview read with
//! [`Cursor`] straight into the slim request, without serde's visitors.
//!
//! It reads exactly what the serde-derived [`WireReview`] reads, with the
//! same rules (required fields, `null` for optional ones, last key wins in
//! maps); the nested parts that are rare, or small and intricate (plan
//! requests, windows, suppressions, timestamps, the applied configuration)
//! are handed to serde as the raw text of just that value. Whatever it is
//! not sure about makes it give up, and `parse` decodes the whole body with
//! serde. The differential tests in `wire_fast_tests.rs` hold it to serde's
//! results.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::admission::Operation;
use kudo_api::{
    ActivePlan, ExecutionStatus, Instance, InstanceSpec, InstanceStatus, ObjectReference,
    PhaseStatus, PlanStatus, StepStatus, Time,
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
    object: Option<Option<Box<Instance>>>,
    old_object: Option<Option<Box<Instance>>>,
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

/// An Instance, built in its box: the engine's `Instance` is over a
/// kilobyte, mostly empty metadata, and moving it twice per object wrote
/// more memory than the decode itself.
fn read_instance(cursor: &mut Cursor<'_>, keep: Status) -> Scan<Box<Instance>> {
    let mut instance = Box::new(Instance {
        metadata: ObjectMeta::default(),
        spec: InstanceSpec::default(),
        status: None,
    });
    let (mut metadata, mut spec, mut status) = (false, false, false);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "metadata" => {
                first(&mut metadata)?;
                read_meta(cursor, &mut instance.metadata)?;
            }
            "spec" => {
                first(&mut spec)?;
                instance.spec = read_spec(cursor)?;
            }
            "status" => {
                first(&mut status)?;
                match keep {
                    Status::Read => {
                        instance.status = cursor.nullable(read_status)?;
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
fn read_spec(cursor: &mut Cursor<'_>) -> Scan<InstanceSpec> {
    let (mut operator_version, mut parameters, mut plan_execution) = (None, None, None);
    let (mut plan_operations, mut maintenance_windows, mut suppressions) = (None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "operatorVersion" => once(&mut operator_version, read_reference(cursor)?)?,
            "parameters" => once(&mut parameters, cursor.nullable(read_string_map)?)?,
            "planExecution" => once(&mut plan_execution, serde_value(cursor)?)?,
            "planOperations" => once(&mut plan_operations, serde_value(cursor)?)?,
            "maintenanceWindows" => once(&mut maintenance_windows, serde_value(cursor)?)?,
            "suppressions" => once(&mut suppressions, serde_value(cursor)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(InstanceSpec {
        operator_version: operator_version.unwrap_or_default(),
        parameters: parameters.flatten(),
        plan_execution: plan_execution.flatten(),
        plan_operations: plan_operations.unwrap_or_default(),
        maintenance_windows: maintenance_windows.unwrap_or_default(),
        suppressions: suppressions.unwrap_or_default(),
    })
}

/// An `ObjectReference` (every field an optional string).
fn read_reference(cursor: &mut Cursor<'_>) -> Scan<ObjectReference> {
    let mut reference = ObjectReference::default();
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
        *field = cursor.optional_string()?;
    }
    Ok(reference)
}

/// The metadata the rules read, into the Instance's (otherwise empty) one.
fn read_meta(cursor: &mut Cursor<'_>, meta: &mut ObjectMeta) -> Scan<()> {
    let (mut name, mut namespace, mut uid) = (None, None, None);
    let (mut generation, mut deletion_timestamp) = (None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "name" => once(&mut name, cursor.optional_string()?)?,
            "namespace" => once(&mut namespace, cursor.optional_string()?)?,
            "uid" => once(&mut uid, cursor.optional_string()?)?,
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
    meta.name = name.flatten();
    meta.namespace = namespace.flatten();
    meta.uid = uid.flatten();
    meta.generation = generation.flatten();
    meta.deletion_timestamp = deletion_timestamp.flatten();
    Ok(())
}

/// The status fields the rules read (as `WireStatus` keeps them).
fn read_status(cursor: &mut Cursor<'_>) -> Scan<InstanceStatus> {
    let mut plan_status = None;
    let (mut active_plan, mut applied_parameters, mut applied_operator_version) =
        (None, None, None);
    let (mut last_plan_execution_uid, mut last_successful, mut auto_suppression) =
        (None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "planStatus" => once(&mut plan_status, read_plans(cursor)?)?,
            "activePlan" => once(&mut active_plan, cursor.nullable(read_active_plan)?)?,
            "appliedParameters" => {
                once(&mut applied_parameters, cursor.nullable(read_string_map)?)?
            }
            "appliedOperatorVersion" => {
                once(&mut applied_operator_version, cursor.optional_string()?)?;
            }
            "lastPlanExecutionUid" => {
                once(&mut last_plan_execution_uid, cursor.optional_string()?)?;
            }
            "lastSuccessful" => once(&mut last_successful, serde_value(cursor)?)?,
            "autoSuppression" => once(&mut auto_suppression, serde_value(cursor)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(InstanceStatus {
        plan_status: plan_status.unwrap_or_default(),
        active_plan: active_plan.flatten(),
        applied_parameters: applied_parameters.flatten(),
        applied_operator_version: applied_operator_version.flatten(),
        last_plan_execution_uid: last_plan_execution_uid.flatten(),
        last_successful: last_successful.flatten(),
        auto_suppression: auto_suppression.flatten(),
        ..InstanceStatus::default()
    })
}

/// A map of strings (the last of repeated keys wins, as in a `BTreeMap`).
fn read_string_map(cursor: &mut Cursor<'_>) -> Scan<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        map.insert(key.to_owned(), cursor.owned_string()?);
    }
    Ok(map)
}

fn execution_status(cursor: &mut Cursor<'_>) -> Scan<ExecutionStatus> {
    cursor.string()?.parse().map_err(|_| GiveUp)
}

fn optional_status(cursor: &mut Cursor<'_>) -> Scan<Option<ExecutionStatus>> {
    cursor.nullable(execution_status)
}

/// `status.activePlan`: name and status required, the rest optional.
fn read_active_plan(cursor: &mut Cursor<'_>) -> Scan<ActivePlan> {
    let (mut name, mut uid, mut status, mut trigger, mut break_glass) =
        (None, None, None, None, None);
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        match key {
            "name" => once(&mut name, cursor.owned_string()?)?,
            "uid" => once(&mut uid, cursor.optional_string()?)?,
            "status" => once(&mut status, execution_status(cursor)?)?,
            "trigger" => once(&mut trigger, cursor.optional_string()?)?,
            "breakGlass" => once(&mut break_glass, cursor.nullable(Cursor::bool)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(ActivePlan {
        name: name.ok_or(GiveUp)?,
        uid: uid.flatten(),
        status: status.ok_or(GiveUp)?,
        trigger: trigger.flatten(),
        break_glass: break_glass.flatten(),
    })
}

/// `planStatus`: plans by name, each with its name, status, uid and phases.
fn read_plans(cursor: &mut Cursor<'_>) -> Scan<BTreeMap<String, PlanStatus>> {
    let mut plans = BTreeMap::new();
    cursor.object()?;
    while let Some(key) = cursor.next_key()? {
        let (mut name, mut status, mut phases, mut uid) = (None, None, None, None);
        cursor.object()?;
        while let Some(field) = cursor.next_key()? {
            match field {
                "name" => once(&mut name, cursor.owned_string()?)?,
                "status" => once(&mut status, optional_status(cursor)?)?,
                "phases" => once(&mut phases, read_list(cursor, read_phase)?)?,
                "uid" => once(&mut uid, cursor.optional_string()?)?,
                _ => cursor.skip()?,
            }
        }
        let plan = PlanStatus {
            name: name.unwrap_or_default(),
            status: status.flatten(),
            phases: phases.unwrap_or_default(),
            uid: uid.flatten(),
            ..PlanStatus::default()
        };
        plans.insert(key.to_owned(), plan);
    }
    Ok(plans)
}

fn read_list<'a, T>(cursor: &mut Cursor<'a>, item: fn(&mut Cursor<'a>) -> Scan<T>) -> Scan<Vec<T>> {
    let mut list = Vec::new();
    cursor.array()?;
    while cursor.next_item()? {
        list.push(item(cursor)?);
    }
    Ok(list)
}

fn read_phase(cursor: &mut Cursor<'_>) -> Scan<PhaseStatus> {
    let (mut name, mut status, mut steps) = (None, None, None);
    cursor.object()?;
    while let Some(field) = cursor.next_key()? {
        match field {
            "name" => once(&mut name, cursor.owned_string()?)?,
            "status" => once(&mut status, optional_status(cursor)?)?,
            "steps" => once(&mut steps, read_list(cursor, read_step)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(PhaseStatus {
        name: name.unwrap_or_default(),
        status: status.flatten(),
        steps: steps.unwrap_or_default(),
        ..PhaseStatus::default()
    })
}

fn read_step(cursor: &mut Cursor<'_>) -> Scan<StepStatus> {
    let (mut name, mut status) = (None, None);
    cursor.object()?;
    while let Some(field) = cursor.next_key()? {
        match field {
            "name" => once(&mut name, cursor.owned_string()?)?,
            "status" => once(&mut status, optional_status(cursor)?)?,
            _ => cursor.skip()?,
        }
    }
    Ok(StepStatus {
        name: name.unwrap_or_default(),
        status: status.flatten(),
        ..StepStatus::default()
    })
}
