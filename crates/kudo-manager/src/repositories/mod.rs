//! OperatorRepositories the manager follows (leader only): each index is
//! fetched on its interval with kudo-repo-client (the CLI's limits and
//! checks), kept parsed in memory for Instances that track a channel, and
//! summed up in the repository's status. A failing repository keeps its
//! last good index and touches no Instance.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client, ResourceExt};
use kudo_api::OperatorRepository;
use kudo_api::names::API_VERSION;
use tokio::task::JoinSet;

mod status;
mod sync;

pub use status::{Outcome, next_status};

/// How often the loop looks for repositories that are due.
const TICK: Duration = Duration::from_secs(1);

/// An index as last read from a repository.
#[derive(Debug)]
pub struct Synced {
    /// The spec URL it was read from.
    pub url: String,
    /// `sha256:` and hex of the index bytes.
    pub digest: String,
    /// The checked index (shared: a Secret change keeps it).
    pub index: Arc<kudo_repo::IndexFile>,
    /// The repository's URL, parsed (packages are resolved against it).
    pub base: kudo_repo::urls::Url,
    /// Credentials from its Secret (never printed).
    pub credentials: Option<kudo_repo::config::Credentials>,
    /// CA bundle from its Secret.
    pub ca_pem: Option<Vec<u8>>,
}

/// The indexes of the repositories, by OperatorRepository name, and the
/// namespaces each serves (from its spec as watched, not as last synced:
/// a narrower list holds at once, whether or not the index can be read).
#[derive(Clone, Debug, Default)]
pub struct Indexes {
    synced: Arc<RwLock<HashMap<String, Arc<Synced>>>>,
    watched: Arc<RwLock<HashMap<String, Arc<OperatorRepository>>>>,
}

impl Indexes {
    /// The last good index of repository `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Synced>> {
        self.synced.read().ok().and_then(|m| m.get(name).cloned())
    }

    /// Whether repository `name` serves the Instances of `namespace` (its
    /// `spec.allowedNamespaces`); `None` when the repository is unknown.
    pub fn serves(&self, name: &str, namespace: &str) -> Option<bool> {
        let watched = self.watched.read().ok()?;
        Some(watched.get(name)?.spec.serves(namespace))
    }

    pub(crate) fn set(&self, name: &str, synced: Synced) {
        if let Ok(mut m) = self.synced.write() {
            m.insert(name.to_string(), Arc::new(synced));
        }
    }

    /// Keeps only the repositories `repos`, with the namespaces they
    /// serve; their names.
    fn keep_only(&self, repos: &[Arc<OperatorRepository>]) -> HashSet<String> {
        let names: HashSet<String> = repos.iter().map(|r| r.name_any()).collect();
        if let Ok(mut m) = self.synced.write() {
            m.retain(|name, _| names.contains(name));
        }
        if let Ok(mut m) = self.watched.write() {
            *m = repos.iter().map(|r| (r.name_any(), r.clone())).collect();
        }
        names
    }
}

/// Whether the OperatorRepository CRD is installed (an older install
/// without it runs on, without repositories).
pub async fn served(client: &Client) -> bool {
    let cache = crate::discovery::ApiCache::new(client.clone());
    let served = matches!(
        cache.resolve(API_VERSION, "OperatorRepository").await,
        Ok(Some(_))
    );
    if !served {
        tracing::warn!(
            "the OperatorRepository CRD is not installed; repositories are not followed \
             (kubectl kudo init --upgrade installs it)"
        );
    }
    served
}

/// Follows every OperatorRepository until `shutdown`: a repository is
/// synced when first seen, when its spec changes and then every interval;
/// one sync per repository at a time, repositories side by side.
/// `secrets_namespace` is where the Secrets they name live.
pub async fn run(
    client: Client,
    indexes: Indexes,
    secrets_namespace: Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let api = Api::<OperatorRepository>::all(client.clone());
    let (store, writer) = reflector::store::<OperatorRepository>();
    let mut events = reflector::reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .touched_objects()
        .boxed();
    // Name → (next sync, the generation synced).
    let mut due: HashMap<String, (Instant, Option<i64>)> = HashMap::new();
    let mut running: JoinSet<(String, Option<i64>, u64)> = JoinSet::new();
    let mut in_flight: HashSet<String> = HashSet::new();
    let mut tick = tokio::time::interval(TICK);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            _ = tick.tick() => {}
            event = events.next() => {
                if event.is_none() {
                    break;
                }
                continue;
            }
            Some(done) = running.join_next() => {
                if let Ok((name, generation, seconds)) = done {
                    in_flight.remove(&name);
                    due.insert(name, (Instant::now() + Duration::from_secs(seconds), generation));
                }
                continue;
            }
        }
        let now = Instant::now();
        let repos = store.state();
        let names = indexes.keep_only(&repos);
        due.retain(|name, _| names.contains(name));
        for repo in repos {
            let name = repo.name_any();
            let generation = repo.metadata.generation;
            let waiting = due
                .get(&name)
                .is_some_and(|(at, g)| *g == generation && now < *at);
            if waiting || in_flight.contains(&name) {
                continue;
            }
            in_flight.insert(name.clone());
            let (client, indexes, ns) =
                (client.clone(), indexes.clone(), secrets_namespace.clone());
            running.spawn(async move {
                let seconds = repo.spec.interval_seconds().unwrap_or(60);
                sync::sync(&client, &repo, &indexes, ns.as_deref()).await;
                (name, generation, seconds)
            });
        }
    }
    running.abort_all();
}
