//! Closes connections on which no request starts for a while: clients that
//! connect and never finish a request head (slowloris) and keep-alive
//! connections left idle.
//!
//! hyper can do this itself (`header_read_timeout`), but it arms a timer for
//! every request: under load that timer wheel traffic cost the webhook ~3%
//! of its throughput. Here a connection has one watcher task that wakes once
//! per period and compares a request counter the service bumps.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;

/// How often a connection must start a request. Idle time counts, so this
/// must exceed the API server's own idle timeout (client-go closes idle
/// connections after 90 s): when the server closes first, a request the API
/// server sends at that moment fails, and its POST is not retried. A
/// connection is closed after one to two periods without a new request.
pub(super) const IDLE_PERIOD: Duration = Duration::from_secs(120);

/// Requests started on one connection, counted by its service.
#[derive(Clone, Debug, Default)]
pub(super) struct RequestCount(Arc<AtomicU64>);

impl RequestCount {
    /// The service saw a complete request head.
    pub(super) fn started(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Aborts `connection` (its task: dropping it closes the socket) at the
/// first check, every `period`, that finds no request started since the
/// previous one. Ends as soon as the connection task ends, so a stream of
/// short connections leaves no watchers behind.
pub(super) fn watch_idle(mut connection: JoinHandle<()>, requests: RequestCount, period: Duration) {
    tokio::spawn(async move {
        let mut seen = 0;
        loop {
            tokio::select! {
                _ = &mut connection => return,
                () = tokio::time::sleep(period) => {}
            }
            let now = requests.get();
            if now == seen {
                tracing::debug!(requests = now, "closing an idle webhook connection");
                connection.abort();
                return;
            }
            seen = now;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(120);

    /// A connection task that runs until it is aborted or `end` is
    /// dropped; `alive` counts 2 while the task holds its clone.
    fn connection() -> (JoinHandle<()>, Arc<()>, tokio::sync::oneshot::Sender<()>) {
        let alive = Arc::new(());
        let held = alive.clone();
        let (end, ended) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _held = held;
            let _ = ended.await;
        });
        (task, alive, end)
    }

    /// A connection under a watcher that has armed its timer.
    async fn watched() -> (Arc<()>, RequestCount, tokio::sync::oneshot::Sender<()>) {
        let (task, alive, end) = connection();
        let requests = RequestCount::default();
        watch_idle(task, requests.clone(), PERIOD);
        settle().await;
        (alive, requests, end)
    }

    /// Lets the spawned tasks run (the watcher arms its timer, an aborted
    /// connection task ends).
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
        settle().await;
    }

    fn is_open(alive: &Arc<()>) -> bool {
        Arc::strong_count(alive) == 2
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_never_sends_a_request_is_closed_after_one_period() {
        let (alive, _requests, _end) = watched().await;
        advance(PERIOD - Duration::from_secs(1)).await;
        assert!(is_open(&alive));
        advance(Duration::from_secs(2)).await;
        assert!(!is_open(&alive));
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_with_a_request_every_period_stays_open_until_it_goes_idle() {
        let (alive, requests, _end) = watched().await;
        for _ in 0..5 {
            requests.started();
            advance(PERIOD).await;
            assert!(is_open(&alive));
        }
        // The last request came just before the previous check: one more
        // period without one closes it.
        advance(PERIOD).await;
        assert!(!is_open(&alive));
    }

    #[tokio::test(start_paused = true)]
    async fn the_watcher_ends_as_soon_as_its_connection_does() {
        let (alive, requests, end) = watched().await;
        drop(end);
        settle().await;
        assert!(!is_open(&alive));
        // No time has passed: the watcher returned because the connection
        // ended, and dropped its handle on the counter.
        assert_eq!(Arc::strong_count(&requests.0), 1);
    }
}
