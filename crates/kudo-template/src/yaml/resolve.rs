//! yaml.v2's `resolve`: which plain scalars would read back as a non-string
//! (null, bool, int, float, timestamp) and therefore must be quoted.

/// yaml.v2 `resolve`: would this plain text read back as something other than a string?
pub(super) fn resolves_to_non_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true",
        "True", "TRUE", "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return true;
    }
    let Some(first) = s.chars().next() else {
        return true;
    };
    if first == '.' {
        return crate::funcs::parse_float(s).is_some();
    }
    if !(first.is_ascii_digit() || first == '+' || first == '-') {
        return false;
    }
    if is_timestamp(s) || is_base60_float(s) {
        return true;
    }
    let plain = s.replace('_', "");
    if crate::funcs::parse_int(&plain).is_some() || plain.parse::<u64>().is_ok() {
        return true;
    }
    if is_yaml_float(&plain) {
        return true;
    }
    let bin = plain.strip_prefix('-').unwrap_or(&plain);
    bin.strip_prefix("0b")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b == b'0' || b == b'1'))
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let b = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match b.find(['e', 'E']) {
        Some(p) => (&b[..p], Some(&b[p + 1..])),
        None => (b, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exp_ok
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
        && rest.iter().all(|p| {
            let bytes = p.as_bytes();
            match bytes {
                [d] => d.is_ascii_digit(),
                [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
                _ => false,
            }
        });
    let frac_ok = frac.is_none_or(|f| f.bytes().all(|c| c.is_ascii_digit() || c == b'_'));
    head_ok && rest_ok && frac_ok
}

/// Dates (`2006-1-2`) and date-times that yaml.v2 would read as timestamps.
fn is_timestamp(s: &str) -> bool {
    let date_len = {
        let b = s.as_bytes();
        let mut i = 0;
        let mut ok = true;
        for (part, (min, max)) in [(4, 4), (1, 2), (1, 2)].iter().enumerate() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = i - start;
            if n < *min || n > *max {
                ok = false;
                break;
            }
            if part < 2 {
                if b.get(i) != Some(&b'-') {
                    ok = false;
                    break;
                }
                i += 1;
            }
        }
        if ok { Some(i) } else { None }
    };
    match date_len {
        Some(n) if n == s.len() => true,
        Some(n) => {
            let rest = &s[n..];
            rest.starts_with(['T', 't', ' ']) && rest[1..].contains(':')
        }
        None => false,
    }
}
