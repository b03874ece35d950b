//! A decode that keeps what the rules read as borrowed text in vectors with
//! inline room, on the stack, and checks nothing (statuses stay strings,
//! timestamps and plan requests raw text, repeated fields unnoticed). It
//! was the measurement that led to the engine's views; now it is the floor
//! under the real decode (`wire_fast.rs`), which reads the same fields into
//! `kudo_engine::view` with serde's checks. Diagnostic only.

use std::borrow::Cow;

use smallvec::SmallVec;

use super::super::json_scan::{Cursor, Scan};

type Text<'a> = Cow<'a, str>;
/// Inline up to this many; more spill to the heap, as a real design would.
type Pairs<'a> = SmallVec<[(&'a str, Text<'a>); 8]>;

#[derive(Default)]
struct StatusView<'a> {
    active: [Text<'a>; 3],
    applied: Pairs<'a>,
    applied_ov: Option<Text<'a>>,
    last_uid: Option<Text<'a>>,
    raw: [Option<&'a str>; 2],
    /// (name, status, uid) of every plan, phase and step.
    steps: SmallVec<[[Text<'a>; 3]; 16]>,
}

#[derive(Default)]
struct InstanceView<'a> {
    meta: [Option<Text<'a>>; 2],
    deleting: Option<&'a str>,
    ov: [Option<Text<'a>>; 2],
    params: Pairs<'a>,
    raw_spec: [Option<&'a str>; 4],
    status: Option<StatusView<'a>>,
}

/// The body read into views; `false` when the cursor gives up.
pub(super) fn views_body(body: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    let mut cursor = Cursor::new(text);
    let mut request: [Option<Text<'_>>; 8] = Default::default();
    let mut objects: [InstanceView<'_>; 2] = Default::default();
    let read = read_review(&mut cursor, &mut request, &mut objects).is_ok() && cursor.at_end();
    std::hint::black_box((&request, &objects));
    read
}

fn read_review<'a>(
    c: &mut Cursor<'a>,
    request: &mut [Option<Text<'a>>; 8],
    objects: &mut [InstanceView<'a>; 2],
) -> Scan<()> {
    c.object()?;
    while let Some(key) = c.next_key()? {
        match key {
            "apiVersion" => request[0] = Some(c.string()?),
            "kind" => request[1] = Some(c.string()?),
            "request" => {
                c.object()?;
                while let Some(key) = c.next_key()? {
                    match key {
                        "uid" => request[2] = Some(c.string()?),
                        "kind" => {
                            c.object()?;
                            while let Some(field) = c.next_key()? {
                                let slot = match field {
                                    "group" => 3,
                                    "version" => 4,
                                    "kind" => 5,
                                    _ => {
                                        c.skip()?;
                                        continue;
                                    }
                                };
                                request[slot] = Some(c.string()?);
                            }
                        }
                        "name" => request[6] = Some(c.string()?),
                        "operation" => request[7] = Some(c.string()?),
                        "object" => {
                            c.nullable(|c| read_instance(c, &mut objects[0], false))?;
                        }
                        "oldObject" => {
                            c.nullable(|c| read_instance(c, &mut objects[1], true))?;
                        }
                        _ => c.skip()?,
                    }
                }
            }
            _ => c.skip()?,
        }
    }
    Ok(())
}

fn read_pairs<'a>(c: &mut Cursor<'a>, pairs: &mut Pairs<'a>) -> Scan<()> {
    c.object()?;
    while let Some(key) = c.next_key()? {
        pairs.push((key, c.string()?));
    }
    Ok(())
}

fn read_instance<'a>(c: &mut Cursor<'a>, view: &mut InstanceView<'a>, status: bool) -> Scan<()> {
    c.object()?;
    while let Some(key) = c.next_key()? {
        match key {
            "metadata" => {
                c.object()?;
                while let Some(field) = c.next_key()? {
                    match field {
                        "name" => view.meta[0] = Some(c.string()?),
                        "namespace" => view.meta[1] = Some(c.string()?),
                        "deletionTimestamp" => view.deleting = Some(c.raw()?),
                        _ => c.skip()?,
                    }
                }
            }
            "spec" => {
                c.object()?;
                while let Some(field) = c.next_key()? {
                    match field {
                        "operatorVersion" => {
                            c.object()?;
                            while let Some(part) = c.next_key()? {
                                match part {
                                    "name" => view.ov[0] = Some(c.string()?),
                                    "namespace" => view.ov[1] = Some(c.string()?),
                                    _ => c.skip()?,
                                }
                            }
                        }
                        "parameters" => read_pairs(c, &mut view.params)?,
                        "planExecution" => view.raw_spec[0] = Some(c.raw()?),
                        "planOperations" => view.raw_spec[1] = Some(c.raw()?),
                        "maintenanceWindows" => view.raw_spec[2] = Some(c.raw()?),
                        "suppressions" => view.raw_spec[3] = Some(c.raw()?),
                        _ => c.skip()?,
                    }
                }
            }
            "status" if status => {
                c.nullable(|c| read_status(c, view.status.insert(StatusView::default())))?;
            }
            _ => c.skip()?,
        }
    }
    Ok(())
}

fn read_status<'a>(c: &mut Cursor<'a>, view: &mut StatusView<'a>) -> Scan<()> {
    c.object()?;
    while let Some(key) = c.next_key()? {
        match key {
            "activePlan" => {
                c.object()?;
                while let Some(field) = c.next_key()? {
                    match field {
                        "name" => view.active[0] = c.string()?,
                        "uid" => view.active[1] = c.string()?,
                        "status" => view.active[2] = c.string()?,
                        _ => c.skip()?,
                    }
                }
            }
            "planStatus" => {
                c.object()?;
                while let Some(plan) = c.next_key()? {
                    let _ = plan;
                    read_node(c, view)?;
                }
            }
            "appliedParameters" => read_pairs(c, &mut view.applied)?,
            "appliedOperatorVersion" => view.applied_ov = Some(c.string()?),
            "lastPlanExecutionUid" => view.last_uid = Some(c.string()?),
            "lastSuccessful" => view.raw[0] = Some(c.raw()?),
            "autoSuppression" => view.raw[1] = Some(c.raw()?),
            _ => c.skip()?,
        }
    }
    Ok(())
}

/// A plan, phase or step status with its children, each kept as (name,
/// status, uid) in order: the views a rule would walk.
fn read_node<'a>(c: &mut Cursor<'a>, view: &mut StatusView<'a>) -> Scan<()> {
    let mut record: [Text<'a>; 3] = Default::default();
    c.object()?;
    while let Some(field) = c.next_key()? {
        match field {
            "name" => record[0] = c.string()?,
            "status" => record[1] = c.string()?,
            "uid" => record[2] = c.string()?,
            "phases" | "steps" => {
                c.array()?;
                while c.next_item()? {
                    read_node(c, view)?;
                }
            }
            _ => c.skip()?,
        }
    }
    view.steps.push(record);
    Ok(())
}
