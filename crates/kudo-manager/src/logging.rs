//! Structured logging: human text by default, JSON with `--log-format json`.
//! Step-level spans carry `instance`, `plan`, `phase` and `step` fields.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (with the current span fields).
    Json,
}

/// Install the global subscriber (`RUST_LOG` overrides the default `info`).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("info,kube_runtime=warn,kube_client=warn,hyper=warn,warp=warn")
    });
    // Colour codes only for a person at a terminal: not in a log file.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    if let Err(e) = result {
        eprintln!("kudo-manager: logging was already initialised: {e}");
    }
}
