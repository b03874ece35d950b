//! Events about an Instance, within what the API server stores.

use kube::Resource;
use kube::runtime::events::{Event, EventType as KubeEventType};
use kudo_api::Instance;
use kudo_engine::EventType;

use crate::context::Context;

/// Records an Event on `inst` (and logs it).
pub(crate) async fn publish(
    ctx: &Context,
    inst: &Instance,
    event_type: EventType,
    reason: &str,
    message: &str,
) {
    let type_ = match event_type {
        EventType::Normal => KubeEventType::Normal,
        EventType::Warning => KubeEventType::Warning,
    };
    match event_type {
        EventType::Normal => tracing::info!(%reason, %message, "event"),
        EventType::Warning => tracing::warn!(%reason, %message, "event"),
    }
    let event = Event {
        type_,
        reason: reason.to_string(),
        note: Some(head_bytes(message, MAX_EVENT_NOTE).to_string()),
        // The recorder folds events with the same (reason, action) into one
        // series and keeps the first note; the message as action keeps
        // "plan deploy finished" and "plan cleanup finished" apart.
        action: head_bytes(message, MAX_EVENT_ACTION).to_string(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, &inst.object_ref(&())).await {
        ctx.metrics.count_error("event");
        tracing::warn!(error = %e, %reason, "could not publish an Event");
    }
}

/// The API server's limits on an Event's note and action, in bytes: a
/// longer one (a message in another script counts its bytes) is refused.
pub(super) const MAX_EVENT_NOTE: usize = 1024;
pub(super) const MAX_EVENT_ACTION: usize = 128;

pub(super) use kudo_api::message::head_bytes;
