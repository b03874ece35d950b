//! yaml.v2's `resolve`, as its encoder uses it: a string is written plain
//! only if reading that plain text back would give the same string, so text
//! that reads as null, bool, int, float or timestamp (or a YAML 1.1 base-60
//! float) is double-quoted.

use crate::funcs::{parse_float, parse_int};

/// Whether yaml.v2 quotes `s` instead of writing it plain.
pub(super) fn needs_quotes(s: &str) -> bool {
    resolves_to_non_string(s) || is_base60_float(s)
}

/// Would the plain scalar `s` read back as something other than a string?
fn resolves_to_non_string(s: &str) -> bool {
    // yaml.v2 looks words up only when the first character hints at one of
    // them, and `<` is not such a hint: the merge key `<<` stays a string.
    const WORDS: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true",
        "True", "TRUE", "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    match s.chars().next() {
        // Go's ParseFloat fails on overflow, so `.5e999` stays a string.
        Some('.') => parse_float(s).is_some_and(f64::is_finite),
        Some('0'..='9' | '+' | '-') => resolves_to_number_or_time(s),
        _ => false,
    }
}

fn resolves_to_number_or_time(s: &str) -> bool {
    if is_timestamp(s) {
        return true;
    }
    let plain = s.replace('_', "");
    if parse_int(&plain).is_some() || parses_as_go_uint(&plain) {
        return true;
    }
    if is_yaml_float(&plain) && plain.parse::<f64>().is_ok_and(f64::is_finite) {
        return true;
    }
    let binary = plain
        .strip_prefix("0b")
        .or_else(|| plain.strip_prefix("-0b"));
    binary.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b == b'0' || b == b'1'))
}

/// Go `strconv.ParseUint(s, 0, 64)`: no sign, optional base prefix, and a
/// value that fits 64 bits (ParseInt already took everything below 2^63).
fn parses_as_go_uint(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    !digits.is_empty()
        && digits.chars().all(|c| c.is_digit(radix))
        && u64::from_str_radix(digits, radix).is_ok()
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let b = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match b.find(['e', 'E']) {
        Some(p) => (&b[..p], Some(&b[p + 1..])),
        None => (b, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => all_digits(frac),
        Some((int, frac)) => all_digits(int) && (frac.is_empty() || all_digits(frac)),
        None => all_digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| all_digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exp_ok
}

fn all_digits(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit())
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
fn is_base60_float(s: &str) -> bool {
    let b = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (main, frac) = match b.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (b, None),
    };
    let mut parts = main.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok = head.starts_with(|c: char| c.is_ascii_digit())
        && head.bytes().all(|c| c.is_ascii_digit() || c == b'_');
    let rest: Vec<&str> = parts.collect();
    let rest_ok = !rest.is_empty()
        && rest.iter().all(|p| match p.as_bytes() {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        });
    let frac_ok = frac.is_none_or(|f| f.bytes().all(|c| c.is_ascii_digit() || c == b'_'));
    head_ok && rest_ok && frac_ok
}

/// yaml.v2's `parseTimestamp`: Go's `time.Parse` with the layouts
/// `2006-1-2`, `2006-1-2 15:4:5.999999999` and
/// `2006-1-2T15:4:5.999999999Z07:00` (also with `t`), field ranges included.
fn is_timestamp(s: &str) -> bool {
    let mut p = Cursor(s.as_bytes());
    let Some(date) = p.date() else {
        return false;
    };
    if !date {
        return false;
    }
    match p.0.first() {
        None => true,
        Some(b' ') => {
            p.0 = &p.0[1..];
            p.clock() && p.0.is_empty()
        }
        Some(b'T' | b't') => {
            p.0 = &p.0[1..];
            p.clock() && p.zone() && p.0.is_empty()
        }
        Some(_) => false,
    }
}

/// The unparsed rest of a timestamp.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    /// Go's `getnum` for a non-fixed field: one or two digits, greedily.
    fn number(&mut self, max_digits: usize) -> Option<u32> {
        let n = self
            .0
            .iter()
            .take(max_digits)
            .take_while(|b| b.is_ascii_digit())
            .count();
        if n == 0 {
            return None;
        }
        let value = self.0[..n]
            .iter()
            .fold(0, |acc, b| acc * 10 + u32::from(b - b'0'));
        self.0 = &self.0[n..];
        Some(value)
    }

    fn literal(&mut self, byte: u8) -> bool {
        match self.0.split_first() {
            Some((&b, rest)) if b == byte => {
                self.0 = rest;
                true
            }
            _ => false,
        }
    }

    /// `YYYY-M-D`: `None` if the text is not shaped like a date, `Some(false)`
    /// for an impossible date (month 13, 30 February), which Go rejects.
    fn date(&mut self) -> Option<bool> {
        let year_digits = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        if year_digits != 4 {
            return None;
        }
        let year = self.number(4)?;
        if !self.literal(b'-') {
            return None;
        }
        let month = self.number(2)?;
        if !self.literal(b'-') {
            return None;
        }
        let day = self.number(2)?;
        Some((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month))
    }

    /// `15:4:5` with an optional `.fraction` (KUDO's Go 1.15 knows no `,`).
    fn clock(&mut self) -> bool {
        let fields = (|| {
            let hour = self.number(2)?;
            self.literal(b':').then_some(())?;
            let minute = self.number(2)?;
            self.literal(b':').then_some(())?;
            let second = self.number(2)?;
            Some(hour < 24 && minute < 60 && second < 60)
        })();
        if fields != Some(true) {
            return false;
        }
        if let [b'.', d, ..] = self.0
            && d.is_ascii_digit()
        {
            let digits = self.0[1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            self.0 = &self.0[1 + digits..];
        }
        true
    }

    /// `Z07:00`: `Z` or `±hh:mm`.
    fn zone(&mut self) -> bool {
        if self.literal(b'Z') {
            return true;
        }
        match self.0 {
            [b'+' | b'-', h1, h2, b':', m1, m2, ..]
                if [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()) =>
            {
                self.0 = &self.0[6..];
                true
            }
            _ => false,
        }
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}
