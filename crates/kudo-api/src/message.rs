//! Lists in messages, capped: a refusal naming 60,000 unknown parameters
//! must stay a short line in a terminal, a log and an API answer.

use std::fmt;

use crate::param_value::{PREVIEW_MAX_CHARS, preview};

/// How many items a message lists before "and N more".
pub const MAX_LISTED: usize = 20;

/// `items` joined by `, `: at most [`MAX_LISTED`] of them, each longer than
/// [`PREVIEW_MAX_CHARS`] characters as a [`preview`], then `and N more`.
/// A list of names is so at most about 2 KB, whatever it holds.
pub fn listed<T: AsRef<str>>(items: &[T]) -> Listed<'_, T> {
    Listed {
        items,
        separator: ", ",
        more: "more",
        whole: false,
    }
}

/// Whole sentences (one problem each, already bounded) joined by
/// `separator`, at most [`MAX_LISTED`] of them, then `and N more problems`.
pub fn listed_problems<'a, T: AsRef<str>>(items: &'a [T], separator: &'a str) -> Listed<'a, T> {
    Listed {
        items,
        separator,
        more: "more problems",
        whole: true,
    }
}

/// See [`listed`].
#[derive(Clone, Copy, Debug)]
pub struct Listed<'a, T> {
    items: &'a [T],
    separator: &'a str,
    more: &'static str,
    /// Items are shown whole rather than as previews.
    whole: bool,
}

impl<'a, T> Listed<'a, T> {
    /// The same list with another separator (`,` in a plan's trigger).
    #[must_use]
    pub fn separated_by(self, separator: &'a str) -> Self {
        Self { separator, ..self }
    }
}

impl<T: AsRef<str>> fmt::Display for Listed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().take(MAX_LISTED).enumerate() {
            if i > 0 {
                f.write_str(self.separator)?;
            }
            let item = item.as_ref();
            if !self.whole && item.chars().nth(PREVIEW_MAX_CHARS).is_some() {
                write!(f, "{}", preview(item))?;
            } else {
                f.write_str(item)?;
            }
        }
        let rest = self.items.len().saturating_sub(MAX_LISTED);
        if rest > 0 {
            let lead = if self.separator.contains('\n') {
                self.separator
            } else {
                " "
            };
            write!(f, "{lead}and {} {}", grouped(rest), self.more)?;
        }
        Ok(())
    }
}

/// Most bytes of a message kudo-rs writes into a status (a task's, a
/// step's, a plan's, a blocker's): errors and template `fail` texts can be
/// megabytes, and a status past the API server's limit can never be
/// written again. Room for a step's notes about a dozen objects applied in
/// other API versions (about 5 KiB).
pub const MAX_STATUS_MESSAGE: usize = 8192;

/// The longest start of `text` within `max` bytes, cut at a character.
pub fn head_bytes(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` if it fits in [`MAX_STATUS_MESSAGE`] bytes; otherwise its start,
/// cut at a character, and how long it was, within that many bytes.
pub fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    bounded_to(text, MAX_STATUS_MESSAGE)
}

/// [`bounded`] within `max` bytes (at least 64): for a message that is
/// part of a longer one.
pub fn bounded_to(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let tail = format!("… ({} bytes in all)", grouped(text.len()));
    let head = head_bytes(text, max.max(64).saturating_sub(tail.len()));
    std::borrow::Cow::Owned(format!("{head}{tail}"))
}

/// `59980` as `59,980`.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_cut_at_a_character_within_the_status_limit() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MAX_STATUS_MESSAGE);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_STATUS_MESSAGE, "{}", cut.len());
        assert!(cut.ends_with("é… (16,384 bytes in all)"), "{cut}");
        assert_eq!(head_bytes("aé", 2), "a");
    }

    #[test]
    fn a_short_list_is_shown_whole() {
        assert_eq!(listed(&["A", "B", "C"]).to_string(), "A, B, C");
        assert_eq!(listed::<&str>(&[]).to_string(), "");
    }

    #[test]
    fn a_long_list_names_twenty_and_counts_the_rest() {
        let names: Vec<String> = (0..60_000).map(|i| format!("P{i}")).collect();
        let text = listed(&names).to_string();
        assert!(text.starts_with("P0, P1, "), "{text}");
        assert!(text.ends_with("P19 and 59,980 more"), "{text}");
        assert!(text.len() < 200, "{} bytes", text.len());
    }

    #[test]
    fn long_names_are_shown_as_a_prefix_with_their_length() {
        let long = "x".repeat(1_000_000);
        let names = vec![long; 30];
        let text = listed(&names).to_string();
        assert!(text.len() < 2_500, "{} bytes", text.len());
        assert!(text.contains("(1000000 bytes)"), "{text}");
        assert!(text.ends_with(" and 10 more"), "{text}");
    }

    #[test]
    fn problems_on_lines_count_the_rest_on_a_line_of_their_own() {
        let problems: Vec<String> = (0..25).map(|i| format!("problem {i}")).collect();
        let text = listed_problems(&problems, "\n").to_string();
        assert_eq!(text.lines().count(), 21, "{text}");
        assert!(text.ends_with("\nand 5 more problems"), "{text}");
        let sentence = "s".repeat(200);
        assert_eq!(listed_problems(&[&sentence], "; ").to_string(), sentence);
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        for (n, shown) in [(0, "0"), (999, "999"), (1_000, "1,000"), (59_980, "59,980")] {
            assert_eq!(grouped(n), shown);
        }
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
