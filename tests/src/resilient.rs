//! Test-side calls that survive an API server injecting faults: writes
//! retried until they succeed, and waits on a reflector whose watcher backs
//! off and re-lists instead of ending at the first error (as
//! `await_condition` does).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Result, anyhow};
use futures::StreamExt;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kudo_api::Instance;

/// Runs `call` until it succeeds (or answers 404, when `gone_is_ok`),
/// at most `attempts` times, 100 ms apart. Returns the retries it took.
pub async fn retry<T, F, Fut>(
    what: &str,
    attempts: usize,
    gone_is_ok: bool,
    call: F,
) -> Result<usize>
where
    F: Fn() -> Fut,
    Fut: Future<Output = kube::Result<T>>,
{
    let mut last = None;
    for attempt in 0..attempts.max(1) {
        match call().await {
            Ok(_) => return Ok(attempt),
            Err(kube::Error::Api(s)) if gone_is_ok && s.code == 404 => return Ok(attempt),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(anyhow!(
        "{what}: still failing after {attempts} attempts: {}",
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}

/// Watches the Instances of `api` (re-listing after errors, with backoff)
/// until `done` holds for all of them, or fails after `timeout` with what
/// `describe` says about the last state seen.
pub async fn wait_for_instances(
    api: Api<Instance>,
    timeout: Duration,
    done: impl Fn(&[Arc<Instance>]) -> bool,
    describe: impl Fn(&[Arc<Instance>]) -> String,
) -> Result<()> {
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    let mut stream = std::pin::pin!(stream);
    let mut synced = false;
    let waited = tokio::time::timeout(timeout, async {
        while let Some(event) = stream.next().await {
            // Until the first full list the store is partial.
            if matches!(event, Ok(watcher::Event::InitDone)) {
                synced = true;
            }
            if synced && done(&reader.state()) {
                return true;
            }
        }
        false
    })
    .await;
    match waited {
        Ok(true) => Ok(()),
        Ok(false) => Err(anyhow!("the Instance watch ended")),
        Err(_) => Err(anyhow!(
            "timed out after {timeout:?}: {}",
            describe(&reader.state())
        )),
    }
}

/// Counts the panics of the whole process (every thread, tokio tasks
/// included) from the moment it is installed, passing them on to the hook
/// that was there before.
pub fn count_panics() -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        seen.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    count
}

/// The sum of the `kudo_manager_errors_total` series in metrics text, and
/// the series themselves (`kind` label → value).
pub fn error_counts(metrics: &str) -> (u64, Vec<(String, u64)>) {
    let series: Vec<(String, u64)> = metrics
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("kudo_manager_errors_total{kind=\"")?;
            let (kind, value) = rest.split_once("\"} ")?;
            Some((kind.to_string(), value.trim().parse().ok()?))
        })
        .collect();
    (series.iter().map(|(_, v)| v).sum(), series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_counts_reads_the_labelled_series() {
        let text = "# TYPE kudo_manager_errors counter\n\
                    kudo_manager_errors_total{kind=\"kube\"} 7\n\
                    kudo_manager_errors_total{kind=\"transient_task\"} 3\n\
                    kudo_manager_reconciles_total 40\n";
        let (total, series) = error_counts(text);
        assert_eq!(total, 10);
        assert_eq!(series[0], ("kube".to_string(), 7));
    }
}
