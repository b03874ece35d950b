//! Helpers shared by the integration tests (`mod support;` in each).

pub mod admission;
pub mod local_webhook;
pub mod tls_client;
