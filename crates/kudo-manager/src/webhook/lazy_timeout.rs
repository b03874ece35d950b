//! A timeout that costs nothing while the future it guards finishes at once.
//!
//! `tokio::time::timeout` looks up the runtime's timer and builds a timer
//! entry on every call. Most reviews finish on their first poll (the body
//! arrived with the headers, an in-memory read answers at once), so here the
//! timer is only made when the guarded future first has to wait, and the
//! limit counts from then: the first poll is CPU work, not waiting.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;

/// The guarded future waited longer than its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimedOut;

pin_project! {
    /// See [`lazy_timeout`].
    pub(crate) struct LazyTimeout<F> {
        #[pin]
        inner: F,
        limit: Duration,
        sleep: Option<Pin<Box<Sleep>>>,
    }
}

/// `inner`, failed with [`TimedOut`] when it waits longer than `limit`.
pub(crate) fn lazy_timeout<F: Future>(limit: Duration, inner: F) -> LazyTimeout<F> {
    LazyTimeout {
        inner,
        limit,
        sleep: None,
    }
}

impl<F: Future> Future for LazyTimeout<F> {
    type Output = Result<F::Output, TimedOut>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.inner.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let limit = *this.limit;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(TimedOut)),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_that_is_ready_at_once_needs_no_timer() {
        // Outside any runtime: making a tokio timer here would panic.
        let output = futures::executor::block_on(lazy_timeout(Duration::ZERO, async { 7 }));
        assert_eq!(output, Ok(7));
    }

    #[tokio::test]
    async fn a_future_that_waits_too_long_times_out() {
        let never = std::future::pending::<()>();
        let started = tokio::time::Instant::now();
        let limit = Duration::from_millis(30);
        assert_eq!(lazy_timeout(limit, never).await, Err(TimedOut));
        assert!(started.elapsed() >= limit);
    }

    #[tokio::test]
    async fn a_future_that_waits_less_than_the_limit_finishes() {
        let slow = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            "done"
        };
        assert_eq!(
            lazy_timeout(Duration::from_secs(30), slow).await,
            Ok("done")
        );
    }
}
