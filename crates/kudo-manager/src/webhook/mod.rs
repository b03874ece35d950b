//! The validating admission webhook: `engine::admission::review` behind an
//! HTTPS endpoint at [`kudo_api::names::WEBHOOK_PATH`].
