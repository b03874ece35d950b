//! Encoding functions: base64, sha256sum, toJson/toPrettyJson and KUDO's toYaml.

use super::{Entry, FuncError, FuncResult, SizedEntry, arg, arg_str};
use crate::limits::Meter;
use crate::value::{Value, format_float_json};
use crate::walk::{MAX_NESTING, Overflow, each_entry, each_item};

pub const TABLE: &[Entry] = &[
    ("b64enc", 1, Some(1), b64enc),
    ("b64dec", 1, Some(1), b64dec),
    ("sha256sum", 1, Some(1), sha256sum),
];

/// Encoders write nested values whose parts may be shared many times: the
/// text is refused once it passes what is left of the value budget.
pub const SIZED: &[SizedEntry] = &[
    ("toJson", 1, Some(1), to_json),
    ("toPrettyJson", 1, Some(1), to_pretty_json),
    ("toYaml", 1, Some(1), to_yaml),
];

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 decoding; the error is Go's `illegal base64 data at input byte N`.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes: Vec<(usize, u8)> = text
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b != b'\n' && *b != b'\r')
        .collect();
    let corrupt = |at: usize| format!("illegal base64 data at input byte {at}");
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let mut padded = false;
    for quantum in bytes.chunks(4) {
        let start = quantum[0].0;
        if padded {
            // Data after padding.
            return Err(corrupt(start));
        }
        let mut vals = Vec::with_capacity(4);
        let mut padding = 0;
        for (k, &(pos, b)) in quantum.iter().enumerate() {
            if b == b'=' {
                if k < 2 {
                    return Err(corrupt(pos));
                }
                padding += 1;
                continue;
            }
            if padding > 0 {
                return Err(corrupt(pos));
            }
            match ALPHABET.iter().position(|a| *a == b) {
                Some(v) => vals.push(v as u32),
                None => return Err(corrupt(pos)),
            }
        }
        if quantum.len() < 4 {
            return Err(corrupt(start));
        }
        let mut n = 0u32;
        for (k, v) in vals.iter().enumerate() {
            n |= v << (18 - 6 * k);
        }
        let produced = vals.len().saturating_sub(1);
        for k in 0..produced {
            out.push(((n >> (16 - 8 * k)) & 0xff) as u8);
        }
        padded = padding > 0;
    }
    Ok(out)
}

fn b64enc<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::string(base64_encode(arg_str(args, 0)?.as_bytes())))
}

/// Sprig returns the decoder's error text as the result instead of failing.
fn b64dec<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::string(match base64_decode(arg_str(args, 0)?) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => e,
    }))
}

fn sha256sum<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(arg_str(args, 0)?.as_bytes());
    Ok(Value::string(
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    ))
}

/// Why JSON writing stopped.
enum JsonStop {
    /// NaN or ±Inf: Go's json.Marshal fails and sprig returns "".
    NonFinite,
    /// Past the cap or too deep.
    Overflow(Overflow),
}

fn json_text<'a>(v: &Value<'a>, indent: Option<&str>, meter: &Meter) -> FuncResult<'a> {
    let mut out = String::new();
    match write_json(&mut out, v, indent, 0, meter.left()) {
        Ok(()) => Ok(Value::string(out)),
        Err(JsonStop::NonFinite) => Ok(Value::string("")),
        Err(JsonStop::Overflow(overflow)) => Err(FuncError::from(overflow)),
    }
}

fn to_json<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    json_text(&arg(args, 0), None, meter)
}

fn to_pretty_json<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    json_text(&arg(args, 0), Some("  "), meter)
}

fn to_yaml<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    Ok(Value::string(crate::yaml::to_yaml(
        &arg(args, 0),
        meter.left(),
    )?))
}

/// Go `encoding/json` output: sorted keys, HTML-safe escaping, Go float
/// format; stops past `cap` bytes or [`MAX_NESTING`] levels.
fn write_json(
    out: &mut String,
    v: &Value<'_>,
    indent: Option<&str>,
    level: usize,
    cap: usize,
) -> Result<(), JsonStop> {
    let newline = |out: &mut String, level: usize| {
        if let Some(unit) = indent {
            out.push('\n');
            for _ in 0..level {
                out.push_str(unit);
            }
        }
    };
    let enter = |out: &String| {
        if level >= MAX_NESTING {
            Err(JsonStop::Overflow(Overflow::TooDeep))
        } else if out.len() > cap {
            Err(JsonStop::Overflow(Overflow::TooLong))
        } else {
            Ok(())
        }
    };
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) if !f.is_finite() => return Err(JsonStop::NonFinite),
        Value::Float(f) => out.push_str(&format_float_json(*f)),
        Value::Str(s) => json_string(out, s),
        list if list.is_list() => {
            enter(out)?;
            out.push('[');
            let mut count = 0;
            each_item(list, |item| {
                if count > 0 {
                    out.push(',');
                }
                count += 1;
                newline(out, level + 1);
                write_json(out, item, indent, level + 1, cap)
            })
            .unwrap_or(Ok(()))?;
            if count > 0 {
                newline(out, level);
            }
            out.push(']');
        }
        map => {
            enter(out)?;
            out.push('{');
            let mut count = 0;
            each_entry(map, |k, item| {
                if count > 0 {
                    out.push(',');
                }
                count += 1;
                newline(out, level + 1);
                json_string(out, k);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(out, item, indent, level + 1, cap)
            })
            .unwrap_or(Ok(()))?;
            if count > 0 {
                newline(out, level);
            }
            out.push('}');
        }
    }
    if out.len() > cap {
        return Err(JsonStop::Overflow(Overflow::TooLong));
    }
    Ok(())
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_reports_go_offsets() {
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(
            base64_decode("aGV$bG8=").unwrap_err(),
            "illegal base64 data at input byte 3"
        );
        assert_eq!(
            base64_decode("abc").unwrap_err(),
            "illegal base64 data at input byte 0"
        );
    }
}
