//! `-v` as people type it: kubectl's and KUDO's levels (`-v=2`, `-v 2`,
//! `--v=2`) are what clap parses; a bare `-v` means level 1 and a counted
//! `-vv` or `-vvv` that many, so habits from other tools keep working.

use std::ffi::OsString;

fn is_level(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The arguments with a bare or counted `-v` written as a level; everything
/// after `--` is left alone.
pub fn counted_verbosity(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = args.into_iter().peekable();
    while let Some(arg) = rest.next() {
        let text = arg.to_str().unwrap_or_default();
        if text == "--" {
            out.push(arg);
            out.extend(rest);
            break;
        }
        let bare = text == "-v" || text == "--v";
        if bare && !rest.peek().and_then(|n| n.to_str()).is_some_and(is_level) {
            out.push(OsString::from("--v=1"));
            continue;
        }
        let counted = text.len() > 2
            && text.starts_with('-')
            && !text.starts_with("--")
            && text.bytes().skip(1).all(|b| b == b'v');
        if counted {
            out.push(OsString::from(format!("--v={}", text.len() - 1)));
            continue;
        }
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Vec<String> {
        counted_verbosity(args.iter().map(OsString::from).collect())
            .into_iter()
            .map(|a| a.into_string().unwrap_or_default())
            .collect()
    }

    #[test]
    fn levels_are_left_to_clap() {
        assert_eq!(run(&["k", "get", "-v", "2"]), ["k", "get", "-v", "2"]);
        assert_eq!(run(&["k", "-v=6", "get"]), ["k", "-v=6", "get"]);
        assert_eq!(run(&["k", "--v", "9", "get"]), ["k", "--v", "9", "get"]);
    }

    #[test]
    fn bare_and_counted_flags_become_levels() {
        assert_eq!(run(&["k", "-v", "get"]), ["k", "--v=1", "get"]);
        assert_eq!(run(&["k", "get", "-v"]), ["k", "get", "--v=1"]);
        assert_eq!(run(&["k", "-vvv", "get"]), ["k", "--v=3", "get"]);
        assert_eq!(
            run(&["k", "-v", "--", "-vv", "2"]),
            ["k", "--v=1", "--", "-vv", "2"]
        );
    }
}
