//! Durations on the command line: `300`, `30s`, `5m`, `1h30m`, `250ms`.

use std::time::Duration;

/// Parses `300`, `300s`, `5m`, `1h30m`, `500ms`; `0` means no limit.
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let text = raw.trim();
    if text.is_empty() {
        return Err("empty duration; use e.g. 30s, 5m or 1h".into());
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("invalid duration {raw:?}; use e.g. 30s, 5m or 1h"));
        }
        let (number, tail) = rest.split_at(digits);
        let value: u64 = number
            .parse()
            .map_err(|_| format!("invalid duration {raw:?}: number too large"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let part = match unit {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.saturating_mul(60)),
            "h" => Duration::from_secs(value.saturating_mul(3600)),
            "" => {
                return Err(format!(
                    "invalid duration {raw:?}: a number needs a unit (ms, s, m, h)"
                ));
            }
            other => {
                return Err(format!(
                    "invalid duration {raw:?}: unknown unit {other:?}; use ms, s, m or h"
                ));
            }
        };
        total = total.saturating_add(part);
        rest = next;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_plain_seconds_and_units() {
        assert_eq!(parse_duration("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn durations_reject_unknown_units_with_a_hint() {
        let err = parse_duration("5d").unwrap_err();
        assert!(err.contains("unknown unit \"d\""), "{err}");
        assert!(parse_duration("m5").is_err());
        assert!(parse_duration("").is_err());
    }
}
