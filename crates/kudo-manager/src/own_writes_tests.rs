//! Own writes: matched once, bounded, and waited for while under way.

use std::sync::Arc;
use std::time::Duration;

use super::*;

#[test]
fn a_recorded_write_matches_its_event_once() {
    let own = OwnWrites::default();
    own.record(Some("u1"), Some("7"));
    assert!(
        !own.is_own(Some("u1"), Some("8")),
        "another version is not ours"
    );
    assert!(
        !own.is_own(Some("u2"), Some("7")),
        "another object is not ours"
    );
    assert!(own.is_own(Some("u1"), Some("7")));
    assert!(!own.is_own(Some("u1"), Some("7")), "matched already");
}

#[test]
fn objects_without_uid_or_version_are_never_own() {
    let own = OwnWrites::default();
    own.record(None, Some("7"));
    own.record(Some("u1"), None);
    assert!(!own.is_own(None, Some("7")));
    assert!(!own.is_own(Some("u1"), None));
}

const WAIT: Duration = Duration::from_secs(5);

/// Whether an event at `event_rv` that arrives while a write is under
/// way counts as own once that write records `written_rv`.
async fn own_after_write(event_rv: &str, written_rv: &str) -> bool {
    let own = Arc::new(OwnWrites::default());
    let writing = own.start(Some("u1"));
    let waiter = tokio::spawn({
        let (own, event_rv) = (own.clone(), event_rv.to_string());
        async move {
            own.is_own_after_writes(Some("u1"), Some(&event_rv), WAIT)
                .await
        }
    });
    tokio::task::yield_now().await;
    own.record(Some("u1"), Some(written_rv));
    drop(writing);
    waiter.await.unwrap()
}

#[tokio::test]
async fn an_event_that_overtakes_its_write_response_is_still_own() {
    assert!(own_after_write("8", "8").await);
}

#[tokio::test]
async fn another_version_during_a_write_is_an_outside_change() {
    assert!(!own_after_write("7", "8").await);
}

#[tokio::test]
async fn without_a_write_under_way_nothing_waits() {
    let own = OwnWrites::default();
    let _other = own.start(Some("u2"));
    let started = std::time::Instant::now();
    assert!(!own.is_own_after_writes(Some("u1"), Some("7"), WAIT).await);
    assert!(started.elapsed() < WAIT);
}

#[tokio::test]
async fn a_write_that_never_answers_holds_its_events_only_so_long() {
    let own = OwnWrites::default();
    let _writing = own.start(Some("u1"));
    let wait = Duration::from_millis(20);
    assert!(!own.is_own_after_writes(Some("u1"), Some("7"), wait).await);
}

#[test]
fn recorded_writes_are_bounded_per_object_and_others_are_kept() {
    let own = OwnWrites::default();
    own.record(Some("other"), Some("1"));
    for i in 0..=OWN_WRITES_PER_OBJECT {
        own.record(Some("u"), Some(&i.to_string()));
    }
    assert!(own.is_own(Some("u"), Some(&OWN_WRITES_PER_OBJECT.to_string())));
    assert!(!own.is_own(Some("u"), Some("0")), "the oldest went");
    assert!(own.is_own(Some("u"), Some("1")));
    assert!(
        own.is_own(Some("other"), Some("1")),
        "another object's stays"
    );
    assert!(
        !own.is_own(Some("other"), Some("1")),
        "each version matches once"
    );
}
