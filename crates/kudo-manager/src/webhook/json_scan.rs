//! A validating JSON cursor for the review's fast path.
//!
//! It reads the usual shape of an AdmissionReview without serde's visitor
//! machinery: keys are matched in place, strings are borrowed, and values
//! the rules never read are skipped by a scanner that still checks them to
//! be JSON. It is deliberately conservative: on anything it is not sure
//! serde reads the same way (an escaped surrogate, an escaped key, a control
//! character, very deep nesting, a duplicate field) it gives up, and the
//! caller decodes the body with serde, which decides and explains. Giving up
//! is never wrong, only slower.

use std::borrow::Cow;

/// The cursor gave up: let serde decode the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GiveUp;

/// What the cursor reads, or [`GiveUp`].
pub(crate) type Scan<T> = Result<T, GiveUp>;

/// Nesting deeper than this is left to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 100;

/// A position in a JSON text.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    depth: u32,
    /// An object or array was just opened: no separator before its first member.
    fresh: bool,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            text,
            pos: 0,
            depth: 0,
            fresh: false,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, not consumed.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.pos = non_space(self.bytes(), self.pos);
        self.bytes().get(self.pos).copied()
    }

    /// Only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    fn open(&mut self, byte: u8) -> Scan<()> {
        if self.peek() != Some(byte) {
            return Err(GiveUp);
        }
        self.enter()?;
        self.fresh = true;
        Ok(())
    }

    /// Whether another member follows in the open object or array (its
    /// separator consumed), or it ends (`close` consumed).
    #[inline]
    fn more(&mut self, close: u8) -> Scan<bool> {
        let first = std::mem::take(&mut self.fresh);
        let bytes = self.bytes();
        let pos = non_space(bytes, self.pos);
        match bytes.get(pos) {
            Some(&byte) if byte == close => {
                self.pos = pos;
                self.leave();
                Ok(false)
            }
            Some(b',') if !first => {
                self.pos = pos + 1;
                Ok(true)
            }
            Some(_) if first => {
                self.pos = pos;
                Ok(true)
            }
            _ => Err(GiveUp),
        }
    }

    /// Opens an object; read it with [`Cursor::next_key`] until `None`.
    pub(crate) fn object(&mut self) -> Scan<()> {
        self.open(b'{')
    }

    /// The next key of the open object (its `:` consumed), or `None` at its end.
    /// Keys with escapes are left to serde: Kubernetes field names and
    /// parameter names have none, and the common case needs no `Cow`.
    #[inline(always)]
    pub(crate) fn next_key(&mut self) -> Scan<Option<&'a str>> {
        if !self.more(b'}')? {
            return Ok(None);
        }
        let (start, stop) = self.string_run()?;
        let bytes = self.bytes();
        if bytes.get(stop) != Some(&b'"') {
            return Err(GiveUp);
        }
        let key = self.text.get(start..stop).ok_or(GiveUp)?;
        self.pos = colon_end(bytes, stop + 1)?;
        Ok(Some(key))
    }

    /// Opens an array; read it with [`Cursor::next_item`] until `false`.
    pub(crate) fn array(&mut self) -> Scan<()> {
        self.open(b'[')
    }

    /// Whether another item follows in the open array.
    pub(crate) fn next_item(&mut self) -> Scan<bool> {
        self.more(b']')
    }

    /// Consumes `null` if it comes next.
    pub(crate) fn null(&mut self) -> Scan<bool> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.pos = literal_end(self.bytes(), self.pos, b"null")?;
        Ok(true)
    }

    /// `true` or `false`.
    pub(crate) fn bool(&mut self) -> Scan<bool> {
        let (value, word): (bool, &[u8]) = match self.peek() {
            Some(b't') => (true, b"true"),
            Some(b'f') => (false, b"false"),
            _ => return Err(GiveUp),
        };
        self.pos = literal_end(self.bytes(), self.pos, word)?;
        Ok(value)
    }

    /// A string, borrowed unless it has escapes.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Scan<Cow<'a, str>> {
        let (start, stop) = self.string_run()?;
        match self.bytes().get(stop) {
            Some(b'"') => {
                self.pos = stop + 1;
                self.text.get(start..stop).map(Cow::Borrowed).ok_or(GiveUp)
            }
            Some(b'\\') => self.unescape(start, stop).map(Cow::Owned),
            _ => Err(GiveUp),
        }
    }

    /// The string that must come next: where its text starts (after the
    /// quote) and where the first quote, backslash or control character
    /// after that is. Nothing is consumed.
    #[inline]
    fn string_run(&self) -> Scan<(usize, usize)> {
        let bytes = self.bytes();
        let pos = non_space(bytes, self.pos);
        if bytes.get(pos) != Some(&b'"') {
            return Err(GiveUp);
        }
        Ok((pos + 1, special_from(bytes, pos + 1)))
    }

    /// The string from `start` (after its quote), whose first escape is at
    /// `at`. Out of line: escapes are rare, and inlined this slowed the
    /// common case.
    #[cold]
    #[inline(never)]
    fn unescape(&mut self, start: usize, mut at: usize) -> Scan<String> {
        let bytes = self.bytes();
        let mut out = String::with_capacity(at - start + 16);
        let mut from = start;
        loop {
            out.push_str(self.text.get(from..at).ok_or(GiveUp)?);
            match bytes.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let (character, length) = escape(bytes, at)?;
                    out.push(character);
                    from = at + length;
                    at = special_from(bytes, from);
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// `null` as `None`, or what `read` reads.
    pub(crate) fn nullable<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Scan<T>,
    ) -> Scan<Option<T>> {
        if self.null()? {
            return Ok(None);
        }
        read(self).map(Some)
    }

    /// An integer that fits `i64`. serde refuses fractions and exponents
    /// for it, and reads `-0` as a float.
    pub(crate) fn i64(&mut self) -> Scan<i64> {
        let number = self.number()?;
        if number.starts_with("-0") {
            return Err(GiveUp);
        }
        number.parse().map_err(|_| GiveUp)
    }

    fn number(&mut self) -> Scan<&'a str> {
        let start = non_space(self.bytes(), self.pos);
        let stop = number_end(self.bytes(), start)?;
        self.pos = stop;
        self.text.get(start..stop).ok_or(GiveUp)
    }

    /// Skips one value of any kind, checking it is JSON. A loop over the
    /// bytes with the open containers' kinds kept as bits, rather than a
    /// call per value: skipping is much of the work on a real review.
    pub(crate) fn skip(&mut self) -> Scan<()> {
        let bytes = self.bytes();
        // How many containers may still open (serde's limit, see MAX_DEPTH).
        let room = MAX_DEPTH.saturating_sub(self.depth);
        // Bit `n` set: the container open at level `n` is an object.
        let mut objects: u128 = 0;
        let mut level: u32 = 0;
        let mut pos = self.pos;
        'value: loop {
            pos = non_space(bytes, pos);
            match bytes.get(pos).copied().ok_or(GiveUp)? {
                b'"' => pos = string_end(bytes, pos + 1)?,
                open @ (b'{' | b'[') => {
                    if level >= room {
                        return Err(GiveUp);
                    }
                    level += 1;
                    let object = open == b'{';
                    if object {
                        objects |= 1 << level;
                    } else {
                        objects &= !(1 << level);
                    }
                    pos = non_space(bytes, pos + 1);
                    if bytes.get(pos) == Some(&if object { b'}' } else { b']' }) {
                        pos += 1;
                        level -= 1;
                    } else {
                        if object {
                            pos = key_end(bytes, pos)?;
                        }
                        continue 'value;
                    }
                }
                b't' => pos = literal_end(bytes, pos, b"true")?,
                b'f' => pos = literal_end(bytes, pos, b"false")?,
                b'n' => pos = literal_end(bytes, pos, b"null")?,
                b'-' | b'0'..=b'9' => pos = number_end(bytes, pos)?,
                _ => return Err(GiveUp),
            }
            // After a value: close containers until one has another member.
            loop {
                if level == 0 {
                    self.pos = pos;
                    return Ok(());
                }
                let object = objects & (1 << level) != 0;
                pos = non_space(bytes, pos);
                match bytes.get(pos) {
                    Some(b',') => {
                        pos += 1;
                        if object {
                            pos = key_end(bytes, non_space(bytes, pos))?;
                        }
                        continue 'value;
                    }
                    Some(b'}') if object => {}
                    Some(b']') if !object => {}
                    _ => return Err(GiveUp),
                }
                pos += 1;
                level -= 1;
            }
        }
    }

    /// Steps into the container whose opening byte is next.
    fn enter(&mut self) -> Scan<()> {
        self.pos += 1;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// Steps out of the container whose closing byte is next.
    fn leave(&mut self) {
        self.pos += 1;
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skips one value and returns its text (for serde to decode).
    pub(crate) fn raw(&mut self) -> Scan<&'a str> {
        let start = non_space(self.bytes(), self.pos);
        self.pos = start;
        self.skip()?;
        self.text.get(start..self.pos).ok_or(GiveUp)
    }
}

/// The first position from `pos` on that is not JSON whitespace.
#[inline(always)]
fn non_space(bytes: &[u8], pos: usize) -> usize {
    // Compact JSON, as the API server sends it, has no whitespace: one
    // comparison settles the usual case.
    match bytes.get(pos) {
        Some(&byte) if byte > b' ' => pos,
        _ => space_end(bytes, pos),
    }
}

fn space_end(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = bytes.get(pos) {
        pos += 1;
    }
    pos
}

/// After the `:` that must follow a key ending before `pos`.
#[inline]
fn colon_end(bytes: &[u8], pos: usize) -> Scan<usize> {
    let pos = non_space(bytes, pos);
    if bytes.get(pos) != Some(&b':') {
        return Err(GiveUp);
    }
    Ok(pos + 1)
}

/// After the key (any string) at `pos` and its `:`.
#[inline]
fn key_end(bytes: &[u8], pos: usize) -> Scan<usize> {
    if bytes.get(pos) != Some(&b'"') {
        return Err(GiveUp);
    }
    colon_end(bytes, string_end(bytes, pos + 1)?)
}

/// After the closing quote of the string whose text starts at `pos`.
#[inline]
fn string_end(bytes: &[u8], pos: usize) -> Scan<usize> {
    let mut at = special_from(bytes, pos);
    loop {
        match bytes.get(at) {
            Some(b'"') => return Ok(at + 1),
            Some(b'\\') => {
                let (_, length) = escape(bytes, at)?;
                at = special_from(bytes, at + length);
            }
            _ => return Err(GiveUp),
        }
    }
}

/// After `word`, which must be at `pos`.
fn literal_end(bytes: &[u8], pos: usize, word: &[u8]) -> Scan<usize> {
    if !bytes.get(pos..).is_some_and(|rest| rest.starts_with(word)) {
        return Err(GiveUp);
    }
    Ok(pos + word.len())
}

/// After the number at `pos`, checked against JSON's grammar.
fn number_end(bytes: &[u8], start: usize) -> Scan<usize> {
    let digits = |at: &mut usize| {
        let from = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > from
    };
    let mut at = start;
    if bytes.get(at) == Some(&b'-') {
        at += 1;
    }
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => {
            digits(&mut at);
        }
        _ => return Err(GiveUp),
    }
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        if !digits(&mut at) {
            return Err(GiveUp);
        }
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        if !digits(&mut at) {
            return Err(GiveUp);
        }
    }
    Ok(at)
}

/// The escape whose backslash is at `at`: the character it stands for and
/// its length. `\\uXXXX` is read unless it is half of a surrogate pair
/// (serde's rules for those differ between reading and skipping: left to
/// it). Go escapes `<`, `>` and `&` this way, so kubectl's
/// last-applied-configuration often has such escapes.
fn escape(bytes: &[u8], at: usize) -> Scan<(char, usize)> {
    let short = match bytes.get(at + 1).copied().ok_or(GiveUp)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let digits = bytes.get(at + 2..at + 6).ok_or(GiveUp)?;
            let mut code = 0;
            for &digit in digits {
                code = code * 16 + char::from(digit).to_digit(16).ok_or(GiveUp)?;
            }
            // `None` for surrogates.
            return char::from_u32(code).map(|c| (c, 6)).ok_or(GiveUp);
        }
        _ => return Err(GiveUp),
    };
    Ok((short, 2))
}

/// Where, from `from` on, the next quote, backslash or control character
/// is (`bytes.len()` if none): eight bytes at a time.
fn special_from(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let is_special = |byte: u8| byte == b'"' || byte == b'\\' || byte < 0x20;
    let mut at = from;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // The lowest flagged byte of each "has a zero / a byte below"
        // test is exact (later ones may be borrow artefacts).
        let flagged = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH;
        if flagged != 0 {
            let hit = at + (flagged.trailing_zeros() / 8) as usize;
            if bytes.get(hit).copied().is_some_and(is_special) {
                return hit;
            }
            at = hit + 1;
            continue;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if is_special(byte) {
            return at;
        }
        at += 1;
    }
    at
}

#[cfg(test)]
#[path = "json_scan_tests.rs"]
mod tests;
