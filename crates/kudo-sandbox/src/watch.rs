//! Watch streams: newline-delimited JSON events with resourceVersion
//! resumption, bookmarks, timeouts, streaming initial events and 410 Gone.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;

use crate::handlers::{selectors, shown};
use crate::http::{Body, Query};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::Inner;
use crate::status::ApiError;
use crate::store::{Change, EventKind, Owners};
use crate::table::table;

struct Filter {
    res: ResourceInfo,
    version: String,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    table: bool,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    fn event_type(&self, c: &Change) -> Option<&'static str> {
        if c.group != self.res.group || c.plural != self.res.plural {
            return None;
        }
        if self
            .namespace
            .as_deref()
            .is_some_and(|ns| ns != c.namespace)
        {
            return None;
        }
        let now = self.matches(&c.object);
        let before = c.old.as_deref().is_some_and(|o| self.matches(o));
        match (c.kind, before, now) {
            (EventKind::Added, _, true) => Some("ADDED"),
            (EventKind::Deleted, true, _) => Some("DELETED"),
            (EventKind::Modified, true, true) => Some("MODIFIED"),
            (EventKind::Modified, false, true) => Some("ADDED"),
            (EventKind::Modified, true, false) => Some("DELETED"),
            _ => None,
        }
    }

    /// One event line. `shared` (the change's cache) lets watchers of the
    /// same apiVersion serialise the object once between them.
    fn frame(
        &self,
        kind: &str,
        obj: &Value,
        owners: &Owners,
        first: &mut bool,
        shared: Option<&OnceLock<(String, Bytes)>>,
    ) -> Bytes {
        if self.table {
            let rv = obj["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let t = table(&self.res, [obj].into_iter(), &rv, *first);
            *first = false;
            return line(&json!({"type": kind, "object": t}));
        }
        let api_version = self.res.api_version(&self.version);
        let object = match shared.and_then(OnceLock::get) {
            Some((v, bytes)) if *v == api_version => bytes.clone(),
            _ => {
                let shown = shown(obj, owners, &self.res, &api_version);
                let bytes = Bytes::from(serde_json::to_vec(&shown).unwrap_or_default());
                if let Some(cell) = shared {
                    let _ = cell.set((api_version, bytes.clone()));
                }
                bytes
            }
        };
        event_line(kind, &object)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.res.kind, "apiVersion": self.res.api_version(&self.version), "metadata": meta});
        line(&json!({"type": "BOOKMARK", "object": object}))
    }
}

fn line(v: &Value) -> Bytes {
    let mut buf = serde_json::to_vec(v).unwrap_or_default();
    buf.push(b'\n');
    Bytes::from(buf)
}

/// `{"type":KIND,"object":OBJECT}` and a newline, around an object already in JSON.
fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut buf = Vec::with_capacity(object.len() + kind.len() + 24);
    buf.extend_from_slice(b"{\"type\":");
    buf.extend_from_slice(&serde_json::to_vec(kind).unwrap_or_default());
    buf.extend_from_slice(b",\"object\":");
    buf.extend_from_slice(object);
    buf.extend_from_slice(b"}\n");
    Bytes::from(buf)
}

fn error_line(e: &ApiError) -> Bytes {
    line(&json!({"type": "ERROR", "object": e.to_status()}))
}

/// An event to send before live ones: type, object, its ownership, and the
/// change it came from.
type Backlogged = (&'static str, Arc<Value>, Owners, Option<Arc<Change>>);

type Tx = mpsc::Sender<Result<Frame<Bytes>, Infallible>>;

async fn send(tx: &Tx, bytes: Bytes) -> bool {
    tx.send(Ok(Frame::data(bytes))).await.is_ok()
}

/// Starts a watch and returns the streaming response.
pub fn serve(
    inner: Arc<Inner>,
    res: ResourceInfo,
    version: String,
    namespace: Option<String>,
    q: &Query,
    table_mode: bool,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(q)?;
    let filter = Filter {
        res,
        version,
        namespace,
        labels,
        fields,
        table: table_mode,
    };
    let bookmarks = q.flag("allowWatchBookmarks");
    let send_initial = q.flag("sendInitialEvents");
    let timeout = q
        .non_empty("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let requested_rv = q.non_empty("resourceVersion").map(str::to_string);
    let requested_num = match requested_rv.as_deref() {
        None | Some("0") => None,
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid resourceVersion {s:?}: must be a number"))
        })?),
    };

    // Subscribing and reading the backlog under one lock: no change is missed or doubled.
    let (mut rx, backlog, gone, start_rv) = {
        let st = inner.lock();
        let rx = st.store.subscribe();
        let current = st.store.resource_version();
        let mut gone = None;
        let backlog: Vec<Backlogged> = if send_initial || requested_num.is_none() {
            st.store
                .list_named(
                    &filter.res.group,
                    &filter.res.plural,
                    filter.namespace.as_deref(),
                    filter.fields.pinned_name(),
                )
                .filter(|s| filter.matches(&s.value))
                .map(|s| ("ADDED", s.value.clone(), s.owners.clone(), None))
                .collect()
        } else {
            match st.store.changes_since(requested_num.unwrap_or(0)) {
                Ok(changes) => changes
                    .iter()
                    .filter_map(|c| {
                        filter
                            .event_type(c)
                            .map(|t| (t, c.object.clone(), c.owners.clone(), Some(c.clone())))
                    })
                    .collect(),
                Err(c) => {
                    gone = Some(ApiError::expired(requested_num.unwrap_or(0), c.oldest));
                    Vec::new()
                }
            }
        };
        (rx, backlog, gone, current)
    };

    let (tx, body_rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(256);
    let bookmark_every = inner.settings.bookmark_interval;
    tokio::spawn(async move {
        if let Some(e) = gone {
            let _ = send(&tx, error_line(&e)).await;
            return;
        }
        let mut first = true;
        let mut sent: u64 = 0;
        // Read per event, so faults set at runtime reach open watches too.
        let limit_hit = |sent: u64| {
            let hit = inner
                .faults()
                .close_watches_after
                .is_some_and(|n| sent >= n);
            if hit {
                inner.injected.watch_closed();
            }
            hit
        };
        for (kind, obj, owners, change) in &backlog {
            let shared = change.as_ref().map(|c| &c.presented);
            if !send(&tx, filter.frame(kind, obj, owners, &mut first, shared)).await {
                return;
            }
            sent += 1;
            if limit_hit(sent) {
                return;
            }
        }
        if send_initial && !send(&tx, filter.bookmark(start_rv, true)).await {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(bookmark_every);
        ticker.tick().await;
        let mut shutdown = inner.shutdown.clone();
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = shutdown.changed() => return,
                _ = ticker.tick(), if bookmarks => {
                    // Read the counter first, then drain: every change up to it
                    // is already queued, so the bookmark never runs ahead.
                    let rv = inner.rv.load(Ordering::Acquire);
                    loop {
                        match rx.try_recv() {
                            Ok(c) => {
                                if let Some(kind) = filter.event_type(&c) {
                                    if !send(&tx, filter.frame(kind, &c.object, &c.owners, &mut first, Some(&c.presented))).await { return; }
                                    sent += 1;
                                    if limit_hit(sent) { return; }
                                }
                            }
                            Err(TryRecvError::Empty) => break,
                            Err(TryRecvError::Lagged(_)) => {
                                let _ = send(&tx, error_line(&ApiError::expired(rv, rv))).await;
                                return;
                            }
                            Err(TryRecvError::Closed) => return,
                        }
                    }
                    if !send(&tx, filter.bookmark(rv, false)).await { return; }
                }
                c = rx.recv() => match c {
                    Ok(c) => {
                        if let Some(kind) = filter.event_type(&c) {
                            if !send(&tx, filter.frame(kind, &c.object, &c.owners, &mut first, Some(&c.presented))).await { return; }
                            sent += 1;
                            if limit_hit(sent) { return; }
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        // The watcher fell too far behind: make it re-list.
                        let rv = inner.rv.load(Ordering::Acquire);
                        let _ = send(&tx, error_line(&ApiError::expired(rv, rv))).await;
                        return;
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = tx.closed() => return,
            }
        }
    });

    let stream = futures::stream::unfold(body_rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let body = StreamBody::new(stream).boxed();
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn filter(version: &str) -> Filter {
        Filter {
            res: Registry::builtin()
                .find("apps", "v1", "deployments")
                .cloned()
                .unwrap(),
            version: version.to_string(),
            namespace: None,
            labels: LabelSelector::parse("").unwrap(),
            fields: FieldSelector::parse("").unwrap(),
            table: false,
        }
    }

    fn event(bytes: &Bytes) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn an_event_is_serialised_once_per_api_version_and_shown_in_each() {
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web", "resourceVersion": "7"}});
        let shared = OnceLock::new();
        let none = Owners::new();
        let mut first = true;
        let a = filter("v1").frame("ADDED", &obj, &none, &mut first, Some(&shared));
        assert!(a.ends_with(b"\n"));
        assert_eq!(event(&a), json!({"type": "ADDED", "object": obj}));
        let cached = shared.get().map(|(v, b)| (v.clone(), b.as_ptr()));
        let b = filter("v1").frame("MODIFIED", &obj, &none, &mut first, Some(&shared));
        assert_eq!(event(&b), json!({"type": "MODIFIED", "object": obj}));
        assert_eq!(
            shared.get().map(|(v, b)| (v.clone(), b.as_ptr())),
            cached,
            "the second watcher reused the first one's bytes"
        );
        let old = filter("v1beta2").frame("ADDED", &obj, &none, &mut first, Some(&shared));
        assert_eq!(event(&old)["object"]["apiVersion"], "apps/v1beta2");
        assert_eq!(event(&old)["object"]["metadata"], obj["metadata"]);
    }
}
