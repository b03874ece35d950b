//! Rendering away from the async workers. A render is CPU work that a
//! template can make long (up to its step budget); run on the runtime's
//! workers it would stall the webhook, the probes and the leader lease.
//! Renders run on the blocking pool instead, a few at a time, each within a
//! deadline: past it the caller gets an error while the render runs out
//! its step budget on its own thread (its slot stays taken until then).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

/// Renders at once (the rest wait for a slot).
const SLOTS: usize = 4;

/// How long a render may take unless configured.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// Where renders run.
#[derive(Clone, Debug)]
pub struct RenderPool {
    slots: Arc<Semaphore>,
    deadline: Duration,
}

impl Default for RenderPool {
    fn default() -> Self {
        Self::new(DEFAULT_DEADLINE)
    }
}

/// Why a render gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stalled {
    /// It took longer than the deadline.
    Deadline(Duration),
    /// It panicked (a bug), or the pool is shutting down.
    Failed(String),
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stalled::Deadline(d) => write!(
                f,
                "rendering took longer than {}s (--render-deadline); make the templates or \\
                 their loops smaller",
                d.as_secs()
            ),
            Stalled::Failed(e) => write!(f, "rendering failed unexpectedly: {e}"),
        }
    }
}

impl RenderPool {
    /// A pool whose renders may take `deadline` each.
    pub fn new(deadline: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(SLOTS)),
            deadline,
        }
    }

    /// How long a render may take.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Takes every slot until the permit is dropped (tests of what waits).
    #[cfg(test)]
    pub(crate) async fn hold_all_slots(&self) -> tokio::sync::OwnedSemaphorePermit {
        #[allow(clippy::cast_possible_truncation)]
        let all = SLOTS as u32;
        #[allow(clippy::expect_used)]
        self.slots
            .clone()
            .acquire_many_owned(all)
            .await
            .expect("the pool's semaphore is never closed")
    }

    /// Runs `work` on the blocking pool when a slot is free; its result, or
    /// why there is none within the deadline (the wait for a slot counts).
    pub async fn run<T, F>(&self, work: F) -> Result<T, Stalled>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        tokio::time::timeout(self.deadline, self.run_to_end(work))
            .await
            .unwrap_or(Err(Stalled::Deadline(self.deadline)))
    }

    /// Runs `work` on the blocking pool when a slot is free, however long
    /// that takes: for work whose own budgets bound it, and whose result
    /// is kept for later callers rather than given up.
    pub async fn run_to_end<T, F>(&self, work: F) -> Result<T, Stalled>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| Stalled::Failed(e.to_string()))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        })
        .await
        .map_err(|e| Stalled::Failed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_render_past_its_deadline_is_given_up_while_others_go_on() {
        let pool = RenderPool::new(Duration::from_millis(200));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let stuck = pool.run(move || {
            // Held until the test ends: a render that does not finish.
            let _ = rx.recv();
        });
        assert_eq!(
            stuck.await,
            Err(Stalled::Deadline(Duration::from_millis(200)))
        );
        assert_eq!(pool.run(|| 7).await, Ok(7));
        drop(tx);
    }

    #[tokio::test]
    async fn a_panicking_render_is_an_error_not_a_crash() {
        let pool = RenderPool::default();
        #[allow(clippy::panic)]
        let failed = pool.run(|| -> u8 { panic!("boom") }).await;
        assert!(matches!(failed, Err(Stalled::Failed(_))), "{failed:?}");
    }
}
