//! Lexer: splits template text into text runs and action tokens, applying
//! `{{-`/`-}}` trimming and dropping comments.

/// One token; `pos` is a byte offset into the template source.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: Tok,
    pub pos: usize,
    pub end: usize,
}

/// Token kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Literal text between actions (already trimmed).
    Text(String),
    /// `{{`
    LeftDelim,
    /// `}}`
    RightDelim,
    /// Identifier or keyword.
    Ident(String),
    /// `.name` (name only).
    Field(String),
    /// `$name` or `$`.
    Variable(String),
    /// `.` alone.
    Dot,
    /// String literal, unquoted.
    Str(String),
    /// Character constant, as its code point.
    Char(i64),
    /// Number literal text.
    Number(String),
    /// `:=`
    Declare,
    /// `=`
    Assign,
    /// `|`
    Pipe,
    /// `(`
    LeftParen,
    /// `)`
    RightParen,
    /// `,`
    Comma,
}

/// A lexing error at a byte offset.
#[derive(Debug)]
pub struct LexError {
    pub pos: usize,
    pub message: String,
}

fn err<T>(pos: usize, message: impl Into<String>) -> Result<T, LexError> {
    Err(LexError {
        pos,
        message: message.into(),
    })
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Tokenizes the whole template.
pub fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut trim_next_text = false;
    while i < bytes.len() {
        let open = src[i..].find("{{").map(|o| o + i);
        let text_end = open.unwrap_or(bytes.len());
        let mut text = &src[i..text_end];
        if trim_next_text {
            text = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
        }
        let Some(open) = open else {
            push_text(&mut tokens, text, i);
            break;
        };
        let trim_left = bytes.get(open + 2) == Some(&b'-')
            && bytes.get(open + 3).copied().is_some_and(is_space);
        if trim_left {
            text = text.trim_end_matches(|c: char| c.is_ascii_whitespace());
        }
        push_text(&mut tokens, text, i);
        let mut j = open + 2;
        if trim_left {
            j += 2;
        }
        // Comment: `{{/* ... */}}` possibly with trim markers.
        let after_space = skip_spaces(bytes, j);
        if src[if trim_left { after_space } else { j }..].starts_with("/*") {
            let cstart = if trim_left { after_space } else { j };
            let Some(cend) = src[cstart + 2..].find("*/").map(|c| c + cstart + 2) else {
                return err(open, "unclosed comment");
            };
            let mut k = cend + 2;
            let (close, trim_right) = right_delim_at(src, k)
                .or_else(|| {
                    let s = skip_spaces(bytes, k);
                    right_delim_at(src, s).filter(|(_, t)| *t)
                })
                .ok_or(LexError {
                    pos: open,
                    message: "comment ends before closing delimiter".into(),
                })?;
            k = close;
            trim_next_text = trim_right;
            i = k;
            continue;
        }
        tokens.push(Token {
            kind: Tok::LeftDelim,
            pos: open,
            end: j,
        });
        let (next, trim_right) = lex_action(src, j, &mut tokens)?;
        trim_next_text = trim_right;
        i = next;
    }
    Ok(tokens)
}

fn push_text(tokens: &mut Vec<Token>, text: &str, pos: usize) {
    if !text.is_empty() {
        tokens.push(Token {
            kind: Tok::Text(text.to_string()),
            pos,
            end: pos + text.len(),
        });
    }
}

fn skip_spaces(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_space(bytes[i]) {
        i += 1;
    }
    i
}

/// If a right delimiter (`}}` or ` -}}`) starts at `i`, returns the offset after it
/// and whether it trims. `i` points at the space for the trimming form.
fn right_delim_at(src: &str, i: usize) -> Option<(usize, bool)> {
    let rest = &src[i..];
    if rest.starts_with("}}") {
        return Some((i + 2, false));
    }
    let b = rest.as_bytes();
    if b.len() >= 4 && is_space(b[0]) && rest[1..].starts_with("-}}") {
        return Some((i + 4, true));
    }
    None
}

/// Lexes inside an action starting at `i`; returns the offset after `}}`.
fn lex_action(src: &str, mut i: usize, tokens: &mut Vec<Token>) -> Result<(usize, bool), LexError> {
    let bytes = src.as_bytes();
    let action_start = i;
    loop {
        if let Some((next, trim)) = right_delim_at(src, i) {
            let start = if trim { i + 1 } else { i };
            tokens.push(Token {
                kind: Tok::RightDelim,
                pos: start,
                end: next,
            });
            return Ok((next, trim));
        }
        let Some(&c) = bytes.get(i) else {
            return err(action_start, "unclosed action");
        };
        let start = i;
        let push = |tokens: &mut Vec<Token>, kind: Tok, end: usize| {
            tokens.push(Token {
                kind,
                pos: start,
                end,
            })
        };
        match c {
            c if is_space(c) => i += 1,
            b'|' => {
                i += 1;
                push(tokens, Tok::Pipe, i);
            }
            b'(' => {
                i += 1;
                push(tokens, Tok::LeftParen, i);
            }
            b')' => {
                i += 1;
                push(tokens, Tok::RightParen, i);
            }
            b',' => {
                i += 1;
                push(tokens, Tok::Comma, i);
            }
            b'=' => {
                i += 1;
                push(tokens, Tok::Assign, i);
            }
            b':' => {
                if bytes.get(i + 1) != Some(&b'=') {
                    return err(i, "expected :=");
                }
                i += 2;
                push(tokens, Tok::Declare, i);
            }
            b'"' => {
                let (s, next) = lex_quoted(src, i)?;
                i = next;
                push(tokens, Tok::Str(s), i);
            }
            b'`' => {
                let Some(close) = src[i + 1..].find('`') else {
                    return err(i, "unterminated raw quoted string");
                };
                let s = src[i + 1..i + 1 + close].to_string();
                i = i + 2 + close;
                push(tokens, Tok::Str(s), i);
            }
            b'\'' => {
                let (ch, next) = lex_char(src, i)?;
                i = next;
                push(tokens, Tok::Char(ch), i);
            }
            b'$' => {
                i += 1;
                let name_end = scan_ident(bytes, i);
                let name = format!("${}", &src[i..name_end]);
                i = name_end;
                push(tokens, Tok::Variable(name), i);
            }
            b'.' => {
                if bytes.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                    let next = scan_number(bytes, i);
                    let text = src[i..next].to_string();
                    i = next;
                    push(tokens, Tok::Number(text), i);
                } else {
                    let name_end = scan_ident(bytes, i + 1);
                    if name_end == i + 1 {
                        i += 1;
                        push(tokens, Tok::Dot, i);
                    } else {
                        let name = src[i + 1..name_end].to_string();
                        i = name_end;
                        push(tokens, Tok::Field(name), i);
                    }
                }
            }
            b'0'..=b'9' | b'-' | b'+' => {
                let next = scan_number(bytes, i);
                if next == i + 1 && !c.is_ascii_digit() {
                    return err(i, format!("bad character {:?}", c as char));
                }
                let text = src[i..next].to_string();
                i = next;
                push(tokens, Tok::Number(text), i);
            }
            c if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 => {
                let name_end = scan_ident(bytes, i);
                let name = src[i..name_end].to_string();
                i = name_end;
                push(tokens, Tok::Ident(name), i);
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return err(i, format!("unexpected {ch:?} in command"));
            }
        }
    }
}

fn scan_ident(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len()
        && (bytes[i] == b'_' || bytes[i].is_ascii_alphanumeric() || bytes[i] >= 0x80)
    {
        i += 1;
    }
    i
}

fn scan_number(bytes: &[u8], mut i: usize) -> usize {
    if matches!(bytes.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    while i < bytes.len() {
        let c = bytes[i];
        let prev = if i > 0 { bytes[i - 1] } else { 0 };
        let exp_sign = matches!(c, b'-' | b'+') && matches!(prev, b'e' | b'E' | b'p' | b'P');
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exp_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn lex_quoted(src: &str, start: usize) -> Result<(String, usize), LexError> {
    let mut out = String::new();
    let mut chars = src[start + 1..].char_indices();
    while let Some((off, c)) = chars.next() {
        match c {
            '"' => return Ok((out, start + 1 + off + 1)),
            '\n' => return err(start, "unterminated quoted string"),
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    break;
                };
                match e {
                    'a' => out.push('\x07'),
                    'b' => out.push('\x08'),
                    'f' => out.push('\x0c'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'v' => out.push('\x0b'),
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    'x' | 'u' | 'U' => {
                        let n = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String =
                            (0..n).filter_map(|_| chars.next().map(|p| p.1)).collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == n)
                            .ok_or(LexError {
                                pos: start,
                                message: format!("invalid syntax in string escape \\{e}{hex}"),
                            })?;
                        let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                        out.push(ch);
                    }
                    '0'..='7' => {
                        let mut code = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.next().and_then(|p| p.1.to_digit(8)) {
                                Some(d) => code = code * 8 + d,
                                None => return err(start, "invalid octal escape in string"),
                            }
                        }
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    other => return err(start, format!("unknown escape sequence \\{other}")),
                }
            }
            c => out.push(c),
        }
    }
    err(start, "unterminated quoted string")
}

fn lex_char(src: &str, start: usize) -> Result<(i64, usize), LexError> {
    let rest = &src[start + 1..];
    let Some(close) = rest.find('\'') else {
        return err(start, "unterminated character constant");
    };
    let body = &rest[..close];
    let ch = if let Some(esc) = body.strip_prefix('\\') {
        match esc {
            "n" => '\n',
            "t" => '\t',
            "r" => '\r',
            "\\" => '\\',
            "'" => '\'',
            "0" => '\0',
            _ => return err(start, format!("unsupported character escape '{body}'")),
        }
    } else {
        let mut cs = body.chars();
        match (cs.next(), cs.next()) {
            (Some(c), None) => c,
            _ => return err(start, format!("malformed character constant '{body}'")),
        }
    };
    Ok((ch as i64, start + 1 + close + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn trims_whitespace_around_trim_markers() {
        assert_eq!(
            kinds("a  {{- .x -}}  b"),
            vec![
                Tok::Text("a".into()),
                Tok::LeftDelim,
                Tok::Field("x".into()),
                Tok::RightDelim,
                Tok::Text("b".into())
            ]
        );
    }

    #[test]
    fn negative_number_is_not_a_trim_marker() {
        assert_eq!(
            kinds("{{-3}}"),
            vec![Tok::LeftDelim, Tok::Number("-3".into()), Tok::RightDelim]
        );
    }

    #[test]
    fn drops_comments() {
        assert_eq!(
            kinds("a{{/* hi */}}b"),
            vec![Tok::Text("a".into()), Tok::Text("b".into())]
        );
    }
}
