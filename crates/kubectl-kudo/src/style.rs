//! Terminal colours for statuses, used only when stdout is a terminal and
//! `NO_COLOR` is not set.

use std::io::IsTerminal;

use kudo_api::ExecutionStatus;

/// Whether to colour output written to stdout.
pub fn stdout_colours() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}

/// ANSI colour of a status.
fn colour_code(status: Option<ExecutionStatus>) -> &'static str {
    match status {
        Some(ExecutionStatus::Complete) => "32", // green
        Some(ExecutionStatus::InProgress | ExecutionStatus::Pending) => "33", // yellow
        Some(ExecutionStatus::Error | ExecutionStatus::FatalError) => "31", // red
        Some(ExecutionStatus::Waiting) => "36",  // cyan
        Some(ExecutionStatus::NeverRun) | None => "2", // dim
    }
}

/// `[STATUS]`, coloured when `colour` is on. `None` prints `[NOT ACTIVE]`.
pub fn status_tag(status: Option<ExecutionStatus>, colour: bool) -> String {
    let text = status.map_or("NOT ACTIVE", ExecutionStatus::as_str);
    if colour {
        format!("[\x1b[{}m{text}\x1b[0m]", colour_code(status))
    } else {
        format!("[{text}]")
    }
}

/// Text in bold red (blockers, errors), when `colour` is on.
pub fn warn(text: &str, colour: bool) -> String {
    if colour {
        format!("\x1b[1;31m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_tags_have_no_escape_codes() {
        assert_eq!(
            status_tag(Some(ExecutionStatus::Complete), false),
            "[COMPLETE]"
        );
        assert_eq!(status_tag(None, false), "[NOT ACTIVE]");
    }

    #[test]
    fn coloured_tags_wrap_the_status_in_ansi_codes() {
        let tag = status_tag(Some(ExecutionStatus::FatalError), true);
        assert_eq!(tag, "[\x1b[31mFATAL_ERROR\x1b[0m]");
    }
}
