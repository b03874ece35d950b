//! KUDO's spellings that clap cannot take as they are: klog's numeric
//! verbosity (`-v 2`, `-v=2`, `--v 2`, `--v=2`) becomes that many `-v`
//! (at most three: info, debug, trace), so scripts written for KUDO run.

use std::ffi::OsString;

fn level(text: &str) -> Option<usize> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<usize>().unwrap_or(usize::MAX).min(3))
}

/// The arguments with numeric verbosity rewritten; everything after `--`
/// is left alone.
pub fn numeric_verbosity(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = args.into_iter().peekable();
    while let Some(arg) = rest.next() {
        let text = arg.to_str().unwrap_or_default();
        if text == "--" {
            out.push(arg);
            out.extend(rest);
            break;
        }
        let inline = text
            .strip_prefix("-v=")
            .or_else(|| text.strip_prefix("--v="))
            .and_then(level);
        let separate = if text == "-v" || text == "--v" {
            rest.peek().and_then(|next| next.to_str()).and_then(level)
        } else {
            None
        };
        match (inline, separate) {
            (Some(n), _) => out.extend(std::iter::repeat_n(OsString::from("-v"), n)),
            (None, Some(n)) => {
                rest.next();
                out.extend(std::iter::repeat_n(OsString::from("-v"), n));
            }
            (None, None) => out.push(arg),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Vec<String> {
        numeric_verbosity(args.iter().map(OsString::from).collect())
            .into_iter()
            .map(|a| a.into_string().unwrap_or_default())
            .collect()
    }

    #[test]
    fn klog_levels_become_counted_flags() {
        assert_eq!(run(&["k", "get", "-v", "2"]), ["k", "get", "-v", "-v"]);
        assert_eq!(run(&["k", "-v=1", "get"]), ["k", "-v", "get"]);
        assert_eq!(
            run(&["k", "--v", "9", "get"]),
            ["k", "-v", "-v", "-v", "get"]
        );
        assert_eq!(run(&["k", "--v=0", "get"]), ["k", "get"]);
    }

    #[test]
    fn counted_flags_and_other_values_are_left_alone() {
        assert_eq!(run(&["k", "-vv", "get"]), ["k", "-vv", "get"]);
        assert_eq!(run(&["k", "-v", "get"]), ["k", "-v", "get"]);
        assert_eq!(
            run(&["k", "-v", "--", "-v", "2"]),
            ["k", "-v", "--", "-v", "2"]
        );
    }
}
