//! After `init` writes the CRDs: wait until the API server serves them, so
//! that the next command (`kubectl kudo install`) finds the kinds. A real
//! API server establishes a new CRD a moment after it is created.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kudo_engine::health::Health;

use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::wait::POLL_INTERVAL;

/// How long a CRD may take to be established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until every CRD named in `names` is Established, as the engine
/// judges a CRD's health.
pub(super) async fn wait_established(ctx: &KubeContext, names: &[String]) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    let started = Instant::now();
    for name in names {
        loop {
            let crd = api
                .get_opt(name)
                .await
                .map_err(|e| CliError::api(format!("reading CRD {name}"), e))?;
            let health = match crd.map(serde_json::to_value) {
                Some(Ok(crd)) => kudo_engine::health::evaluate(&crd),
                Some(Err(e)) => return Err(CliError::Other(format!("CRD {name}: {e}"))),
                None => Health::Progressing(format!("CRD {name} is not there yet")),
            };
            let why = match health {
                Health::Healthy => break,
                Health::Progressing(why) | Health::Failed(why) => why,
            };
            if started.elapsed() >= ESTABLISH_TIMEOUT {
                return Err(CliError::Timeout(format!(
                    "CRD {name} is not established after {}s: {why}",
                    ESTABLISH_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
    Ok(())
}
