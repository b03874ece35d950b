//! JSON string literals written straight into the answer's bytes.
//!
//! serde_json looks each byte up in an escape table; the answer's text is
//! mostly a long refusal message with nothing to escape, so here eight
//! bytes are checked at once and copied as a run. The output is
//! byte-for-byte serde_json's (a property test checks it), so the API
//! server sees the same answer as before.

/// Appends `text` as a JSON string literal, quotes included.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run_start = 0;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            break;
        };
        let mask = escape_mask(u64::from_le_bytes(word));
        if mask == 0 {
            at += 8;
            continue;
        }
        // The lowest flagged byte is always a real one (false flags only
        // appear above a real one), so jump straight to it.
        let found = at + (mask.trailing_zeros() / 8) as usize;
        out.extend_from_slice(&bytes[run_start..found]);
        write_escape(out, bytes[found]);
        run_start = found + 1;
        at = found + 1;
    }
    for (offset, &byte) in bytes[at..].iter().enumerate() {
        if needs_escape(byte) {
            let found = at + offset;
            out.extend_from_slice(&bytes[run_start..found]);
            write_escape(out, byte);
            run_start = found + 1;
        }
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The high bit of each of the eight bytes that may be a control
/// character, `"` or `\`: zero when none is; when not, the lowest set bit
/// marks the first one that is.
fn escape_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte below n (n <= 0x80) borrows through its high bit.
    let below = |n: u64| word.wrapping_sub(ONES * n) & !word & HIGHS;
    let zero_after_xor = |b: u64| {
        let x = word ^ (ONES * b);
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    below(0x20) | zero_after_xor(u64::from(b'"')) | zero_after_xor(u64::from(b'\\'))
}

fn write_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_quotes_backslashes_and_control_characters_as_serde_json_does() {
        for text in [
            "",
            "plain",
            "plan \"deploy\" is IN_PROGRESS (phase \"nodes\", step \"node-2\")",
            "back\\slash and\ttab\nnewline\r\u{8}\u{c}\u{1}\u{1f}",
            "\u{7f} ünïcode ✓ and 🦀 stay as they are",
            "exactly8",
            "seven..\"",
            "\"\"\"\"\"\"\"\"\"\"",
            "ab\u{1}\"\\cdefgh\"ijklmnop\n",
        ] {
            assert_eq!(written(text), serde_json::to_string(text).unwrap());
        }
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in "\\PC*|[\\x00-\\x7f]{0,40}") {
            proptest::prop_assert_eq!(written(&text), serde_json::to_string(&text).unwrap());
        }
    }
}
