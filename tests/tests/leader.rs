//! End-to-end: Lease leader election against the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kudo_e2e::Env;
use kudo_manager::leader::{Elector, LeaderConfig};

fn config(env: &Env, identity: &str) -> LeaderConfig {
    LeaderConfig {
        identity: identity.into(),
        ..LeaderConfig::new(&env.ns)
    }
}

#[tokio::test]
async fn only_one_replica_leads_until_it_releases_the_lease() {
    let env = Env::start_without_controller().await.unwrap();
    let a = Elector::new(env.client.clone(), config(&env, "replica-a"));
    let b = Elector::new(env.client.clone(), config(&env, "replica-b"));
    assert!(
        a.try_once().await.unwrap(),
        "the first replica should take the free Lease"
    );
    assert!(
        !b.try_once().await.unwrap(),
        "the second replica must not lead while the Lease is valid"
    );
    assert!(
        a.try_once().await.unwrap(),
        "the leader renews its own Lease"
    );
    // Shutting the leader down releases the Lease at once.
    let leading = a.leading();
    a.run(async {}).await;
    assert!(!*leading.borrow());
    assert!(
        b.try_once().await.unwrap(),
        "the second replica takes over a released Lease"
    );
}
