//! An opt-in, bounded log of the API requests the sandbox answered, so tests
//! can count what a client did (e.g. how often an object was applied).

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::faults::Verb;

/// Which object (or collection) a request addressed, from its path; for a
/// create (POST) the name comes from the JSON body's `metadata.name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ObjectIdentity {
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource, e.g. `configmaps`.
    pub resource: String,
    /// Namespace, for namespaced requests.
    pub namespace: Option<String>,
    /// Object name; None for a collection request (list, watch, a create
    /// whose body has no name).
    pub name: Option<String>,
    /// Subresource (`status`, `scale`, `exec`, ...).
    pub subresource: Option<String>,
}

/// One request as the sandbox answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// Position in the order of logging, from 0; records dropped by the
    /// bound or cleared leave their numbers unused.
    pub seq: u64,
    /// HTTP method.
    pub method: String,
    /// Request path without the query.
    pub path: String,
    /// The verb as RBAC names it (`watch` for `GET ?watch=true`); None for
    /// discovery, OpenAPI and health paths.
    pub verb: Option<Verb>,
    /// `fieldManager` query parameter, if given.
    pub field_manager: Option<String>,
    /// `dryRun` was given.
    pub dry_run: bool,
    /// `Impersonate-User`, if the request impersonated someone.
    pub impersonated_user: Option<String>,
    /// The object addressed; None for non-resource paths.
    pub object: Option<ObjectIdentity>,
    /// HTTP status code of the answer (a watch is logged with 200 when its
    /// stream starts).
    pub code: u16,
    /// The answer was an error injected by [`crate::Faults`], not the
    /// outcome of handling the request.
    pub injected: bool,
}

impl RequestRecord {
    /// The answer was 2xx.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// A write (create, update, patch, delete, deletecollection).
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb,
            Some(Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection)
        )
    }

    /// A server-side apply: a PATCH with a field manager on the object itself
    /// (kube-rs and kubectl send `fieldManager` with every apply).
    pub fn is_apply(&self) -> bool {
        self.verb == Some(Verb::Patch)
            && self.field_manager.is_some()
            && self
                .object
                .as_ref()
                .is_some_and(|o| o.subresource.is_none())
    }
}

#[derive(Debug, Default)]
struct Log {
    capacity: usize,
    records: VecDeque<RequestRecord>,
    next_seq: u64,
    dropped: u64,
}

/// The log shared by the server tasks and the `Sandbox` handle. Capacity 0
/// (the default) logs nothing.
#[derive(Debug, Default)]
pub struct RequestLog(Mutex<Log>);

impl RequestLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether requests are being logged.
    pub fn enabled(&self) -> bool {
        self.lock().capacity > 0
    }

    /// Appends a record (its `seq` is assigned here), dropping the oldest
    /// beyond the capacity.
    pub fn push(&self, mut record: RequestRecord) {
        let mut log = self.lock();
        if log.capacity == 0 {
            return;
        }
        record.seq = log.next_seq;
        log.next_seq += 1;
        while log.records.len() >= log.capacity {
            log.records.pop_front();
            log.dropped += 1;
        }
        log.records.push_back(record);
    }

    /// The records kept, oldest first.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.lock().records.iter().cloned().collect()
    }

    /// The records kept with `seq >= from`, oldest first.
    pub fn records_since(&self, from: u64) -> Vec<RequestRecord> {
        let log = self.lock();
        let start = log.records.partition_point(|r| r.seq < from);
        log.records.range(start..).cloned().collect()
    }

    /// The `seq` the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.lock().next_seq
    }

    /// How many records were dropped because the log was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Forgets the records kept and the dropped count (sequence numbers go on).
    pub fn clear(&self) {
        let mut log = self.lock();
        log.records.clear();
        log.dropped = 0;
    }

    /// Changes the capacity (0 turns logging off and empties the log).
    pub fn set_capacity(&self, capacity: usize) {
        let mut log = self.lock();
        log.capacity = capacity;
        while log.records.len() > capacity {
            log.records.pop_front();
            log.dropped += 1;
        }
    }
}

/// `metadata.name` of a JSON body, if it has one.
pub fn body_name(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        name: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Option<Meta>,
    }
    serde_json::from_slice::<Object>(body)
        .ok()?
        .metadata?
        .name
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(code: u16) -> RequestRecord {
        RequestRecord {
            seq: 0,
            method: "GET".into(),
            path: "/api/v1/namespaces/default/configmaps/a".into(),
            verb: Some(Verb::Get),
            field_manager: None,
            dry_run: false,
            impersonated_user: None,
            object: None,
            code,
            injected: false,
        }
    }

    #[test]
    fn keeps_the_last_records_up_to_its_capacity() {
        let log = RequestLog::default();
        log.set_capacity(2);
        for code in [200, 404, 409] {
            log.push(record(code));
        }
        let kept = log.records();
        assert_eq!(
            kept.iter().map(|r| (r.seq, r.code)).collect::<Vec<_>>(),
            vec![(1, 404), (2, 409)]
        );
        assert_eq!(log.dropped(), 1);
        assert_eq!(
            log.records_since(2)
                .iter()
                .map(|r| r.code)
                .collect::<Vec<_>>(),
            vec![409]
        );
        assert_eq!(log.records_since(0).len(), 2);
        assert!(log.records_since(3).is_empty());
        assert_eq!(log.next_seq(), 3);
    }

    #[test]
    fn logs_nothing_when_off() {
        let log = RequestLog::default();
        log.push(record(200));
        assert!(log.records().is_empty());
        assert!(!log.enabled());
    }

    #[test]
    fn body_name_reads_json_metadata_only() {
        assert_eq!(
            body_name(br#"{"metadata":{"name":"cm"},"data":{}}"#).as_deref(),
            Some("cm")
        );
        assert_eq!(body_name(br#"{"metadata":{"generateName":"x-"}}"#), None);
        assert_eq!(body_name(b"metadata:\n  name: yaml\n"), None);
    }
}
