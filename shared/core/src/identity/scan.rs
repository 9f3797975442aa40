//! The identity step's JSON pass: one scan over the body that validates it as JSON and keeps the
//! raw text of the top-level members a rule reads, skipping strings at memchr speed.
//!
//! A provider body is mostly string contents (ids, addresses, HTML, padding): serde_json walks
//! them byte by byte, which cost about as much as the HMAC over the same body. Here a string's
//! contents are skipped to the next quote or backslash with `memchr2`, checked for control
//! characters in one vectorized pass, and the whole body's UTF-8 is checked once up front.
//!
//! The grammar is RFC 8259, made a little stricter than serde_json's where serde_json's own rules
//! are subtle (an escaped lone surrogate, nesting deeper than its 128 levels): anything this scan
//! refuses is decided by serde_json instead ([`super::JsonObject::parse`]), so a body is valid
//! exactly when serde_json says so, and the fast path never accepts what serde_json refuses.

use std::borrow::Cow;

/// serde_json's nesting limit.
const MAX_DEPTH: usize = 128;

/// The scan refused the body (serde_json decides then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refused;

type Scan<T> = Result<T, Refused>;

/// The raw text of the top-level members of a JSON object named in `wanted` (`"*"`: every
/// member), keys unescaped; the whole body validated.
pub(super) fn members<'a>(body: &'a [u8], wanted: &[&str]) -> Scan<Vec<(Cow<'a, str>, &'a str)>> {
    let text = std::str::from_utf8(body).map_err(|_| Refused)?;
    let mut s = Scanner {
        text,
        b: body,
        i: 0,
        depth: 0,
    };
    s.ws();
    if s.peek() != Some(b'{') {
        return Err(Refused);
    }
    s.i += 1;
    s.depth = 1;
    let mut kept = Vec::with_capacity(wanted.len());
    s.ws();
    if s.peek() == Some(b'}') {
        s.i += 1;
    } else {
        loop {
            s.ws();
            let key_start = s.i;
            let escaped = s.string()?;
            let raw_key = &text[key_start + 1..s.i - 1];
            s.ws();
            s.expect(b':')?;
            s.ws();
            let value_start = s.i;
            s.value()?;
            let value = &text[value_start..s.i];
            let key: Cow<'a, str> = if escaped {
                Cow::Owned(
                    serde_json::from_str::<String>(&text[key_start..key_start + raw_key.len() + 2])
                        .map_err(|_| Refused)?,
                )
            } else {
                Cow::Borrowed(raw_key)
            };
            if wanted.iter().any(|w| *w == "*" || *w == key.as_ref()) {
                kept.push((key, value));
            }
            s.ws();
            match s.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                _ => return Err(Refused),
            }
        }
    }
    s.ws();
    if s.i != body.len() {
        return Err(Refused);
    }
    Ok(kept)
}

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += 1;
        c
    }

    fn expect(&mut self, c: u8) -> Scan<()> {
        if self.next() == Some(c) {
            Ok(())
        } else {
            Err(Refused)
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Scan<()> {
        match self.peek().ok_or(Refused)? {
            b'{' => self.nested(b'}', true),
            b'[' => self.nested(b']', false),
            b'"' => self.string().map(|_| ()),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Refused),
        }
    }

    fn literal(&mut self, word: &str) -> Scan<()> {
        if self.text[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Refused)
        }
    }

    /// An object (`members`: key-value pairs) or an array.
    fn nested(&mut self, close: u8, members: bool) -> Scan<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Refused);
        }
        self.i += 1;
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.ws();
            if members {
                if self.peek() != Some(b'"') {
                    return Err(Refused);
                }
                self.string()?;
                self.ws();
                self.expect(b':')?;
                self.ws();
            }
            self.value()?;
            self.ws();
            match self.next() {
                Some(b',') => continue,
                Some(c) if c == close => break,
                _ => return Err(Refused),
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// A string (at its opening quote); whether it has escapes.
    fn string(&mut self) -> Scan<bool> {
        if self.next() != Some(b'"') {
            return Err(Refused);
        }
        let mut escaped = false;
        loop {
            let rest = &self.b[self.i..];
            let at = memchr::memchr2(b'"', b'\\', rest).ok_or(Refused)?;
            if has_control(&rest[..at]) {
                return Err(Refused);
            }
            self.i += at + 1;
            if rest[at] == b'"' {
                return Ok(escaped);
            }
            escaped = true;
            self.escape()?;
        }
    }

    /// After a backslash.
    fn escape(&mut self) -> Scan<()> {
        match self.next().ok_or(Refused)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(()),
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    // A leading surrogate must be followed by a trailing one.
                    0xD800..=0xDBFF => {
                        if self.next() != Some(b'\\') || self.next() != Some(b'u') {
                            return Err(Refused);
                        }
                        match self.hex4()? {
                            0xDC00..=0xDFFF => Ok(()),
                            _ => Err(Refused),
                        }
                    }
                    0xDC00..=0xDFFF => Err(Refused),
                    _ => Ok(()),
                }
            }
            _ => Err(Refused),
        }
    }

    fn hex4(&mut self) -> Scan<u16> {
        let digits = self.b.get(self.i..self.i + 4).ok_or(Refused)?;
        let text = std::str::from_utf8(digits).map_err(|_| Refused)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(Refused);
        }
        self.i += 4;
        u16::from_str_radix(text, 16).map_err(|_| Refused)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Scan<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Refused),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(Refused);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(Refused);
            }
        }
        Ok(())
    }
}

/// Whether `text` holds a control character (not allowed raw in a JSON string). Eight bytes at a
/// time, without a branch inside: a word has a byte below 0x20 exactly when
/// `(word - 0x20…20) & !word & 0x80…80` is not zero (no byte at or above 0x20 borrows, and the
/// lowest byte below it sets its top bit).
fn has_control(text: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut words = text.chunks_exact(8);
    let mut seen = 0u64;
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let x = u64::from_le_bytes(bytes);
        seen |= x.wrapping_sub(ONES * 0x20) & !x;
    }
    seen & (ONES * 0x80) != 0 || words.remainder().iter().any(|&c| c < 0x20)
}

#[cfg(test)]
mod tests;
