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
        let bytes = self.bytes();
        // Compact JSON, as the API server sends it, has no whitespace: one
        // comparison settles the usual case.
        match bytes.get(self.pos) {
            Some(&byte) if byte > b' ' => Some(byte),
            _ => {
                while let Some(b' ' | b'\n' | b'\t' | b'\r') = bytes.get(self.pos) {
                    self.pos += 1;
                }
                bytes.get(self.pos).copied()
            }
        }
    }

    fn eat(&mut self, byte: u8) -> Scan<()> {
        if self.peek() != Some(byte) {
            return Err(GiveUp);
        }
        self.pos += 1;
        Ok(())
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
    fn more(&mut self, close: u8) -> Scan<bool> {
        let first = std::mem::take(&mut self.fresh);
        match self.peek() {
            Some(byte) if byte == close => {
                self.leave();
                Ok(false)
            }
            Some(b',') if !first => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) if first => Ok(true),
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
    pub(crate) fn next_key(&mut self) -> Scan<Option<&'a str>> {
        if !self.more(b'}')? {
            return Ok(None);
        }
        let (start, stop) = self.string_run()?;
        if self.bytes().get(stop) != Some(&b'"') {
            return Err(GiveUp);
        }
        self.pos = stop + 1;
        let key = self.text.get(start..stop).ok_or(GiveUp)?;
        self.eat(b':')?;
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
        self.literal(b"null")?;
        Ok(true)
    }

    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        if !self
            .bytes()
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(word))
        {
            return Err(GiveUp);
        }
        self.pos += word.len();
        Ok(())
    }

    /// A string, borrowed unless it has escapes.
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

    /// Opens a string: where its text starts and where the first quote,
    /// backslash or control character after that is.
    fn string_run(&mut self) -> Scan<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.pos;
        Ok((start, special_from(self.bytes(), start)))
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

    /// Skips the rest of a string whose opening quote was consumed.
    fn skip_string_body(&mut self) -> Scan<()> {
        let bytes = self.bytes();
        let mut at = special_from(bytes, self.pos);
        loop {
            match bytes.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    let (_, length) = escape(bytes, at)?;
                    at = special_from(bytes, at + length);
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// A string, owned.
    pub(crate) fn owned_string(&mut self) -> Scan<String> {
        self.string().map(Cow::into_owned)
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

    /// `null` as `None`, or a string.
    pub(crate) fn optional_string(&mut self) -> Scan<Option<String>> {
        self.nullable(Self::owned_string)
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
        self.peek();
        let bytes = self.bytes();
        let start = self.pos;
        let mut at = start;
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
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
        self.pos = at;
        self.text.get(start..at).ok_or(GiveUp)
    }

    /// Skips one value of any kind, checking it is JSON. Containers are
    /// walked here directly rather than through `next_key` / `next_item`:
    /// skipping is most of the work on a real review.
    pub(crate) fn skip(&mut self) -> Scan<()> {
        match self.peek().ok_or(GiveUp)? {
            b'"' => {
                self.pos += 1;
                self.skip_string_body()
            }
            b'{' => {
                self.enter()?;
                if self.peek() == Some(b'}') {
                    self.leave();
                    return Ok(());
                }
                loop {
                    self.eat(b'"')?;
                    self.skip_string_body()?;
                    self.eat(b':')?;
                    self.skip()?;
                    if self.after_member(b'}')? {
                        return Ok(());
                    }
                }
            }
            b'[' => {
                self.enter()?;
                if self.peek() == Some(b']') {
                    self.leave();
                    return Ok(());
                }
                loop {
                    self.skip()?;
                    if self.after_member(b']')? {
                        return Ok(());
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => Err(GiveUp),
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

    /// After a member: `,` (another follows: `false`) or `close` (the
    /// container ends: `true`).
    fn after_member(&mut self, close: u8) -> Scan<bool> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(byte) if byte == close => {
                self.leave();
                Ok(true)
            }
            _ => Err(GiveUp),
        }
    }

    /// Skips one value and returns its text (for serde to decode).
    pub(crate) fn raw(&mut self) -> Scan<&'a str> {
        self.peek();
        let start = self.pos;
        self.skip()?;
        self.text.get(start..self.pos).ok_or(GiveUp)
    }
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
