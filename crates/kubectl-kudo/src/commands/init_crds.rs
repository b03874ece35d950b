//! After `init` writes the CRDs: wait until the API server serves them, so
//! that the next command (`kubectl kudo install`) finds the kinds. A real
//! API server establishes a new CRD a moment after it is created.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::wait::POLL_INTERVAL;

/// How long a CRD may take to be established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until every CRD named in `names` has the condition Established.
pub(super) async fn wait_established(ctx: &KubeContext, names: &[String]) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    let started = Instant::now();
    for name in names {
        loop {
            let crd = api
                .get_opt(name)
                .await
                .map_err(|e| CliError::api(format!("reading CRD {name}"), e))?;
            let condition = crd
                .as_ref()
                .and_then(|c| c.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "Established"));
            if condition.is_some_and(|c| c.status == "True") {
                break;
            }
            if started.elapsed() >= ESTABLISH_TIMEOUT {
                let why = condition
                    .and_then(|c| c.message.clone())
                    .unwrap_or_else(|| "no Established condition yet".into());
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
