//! The condition lexer: tokens of the Logstash-style condition language
//! (field references, strings, numbers, regexes, operators), with positions
//! for error messages.

use super::*;

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

#[derive(Debug)]
pub(super) enum Tok {
    Ref(Ref),
    /// `[` opening a list literal.
    ListOpen,
    RBracket,
    Comma,
    LParen,
    RParen,
    Str(String),
    Int(i64),
    Float(f64),
    /// Regex source (escapes resolved), compiled by the parser.
    Regex(String),
    Cmp(CmpOp),
    Match,
    NotMatch,
    Bang,
    And,
    Or,
    Xor,
    Nand,
    Not,
    In,
    True,
    False,
    Null,
    Exists,
    Eof,
}

impl Tok {
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Ref(_) => "a field reference".into(),
            Tok::ListOpen => "a list".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::Str(_) => "a string".into(),
            Tok::Int(_) | Tok::Float(_) => "a number".into(),
            Tok::Regex(_) => "a regex".into(),
            Tok::Cmp(op) => format!("'{}'", op.symbol()),
            Tok::Match => "'=~'".into(),
            Tok::NotMatch => "'!~'".into(),
            Tok::Bang => "'!'".into(),
            Tok::And => "'and'".into(),
            Tok::Or => "'or'".into(),
            Tok::Xor => "'xor'".into(),
            Tok::Nand => "'nand'".into(),
            Tok::Not => "'not'".into(),
            Tok::In => "'in'".into(),
            Tok::True => "'true'".into(),
            Tok::False => "'false'".into(),
            Tok::Null => "'null'".into(),
            Tok::Exists => "'exists'".into(),
            Tok::Eof => "end of condition".into(),
        }
    }
}

#[derive(Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) pos: usize,
}

pub(super) struct Lexer<'s> {
    pub(super) src: &'s str,
    pub(super) pos: usize,
    /// How many list literals enclose the current position.
    pub(super) list_depth: usize,
}

/// Characters that may not appear inside a field reference's brackets.
pub(super) fn forbidden_in_field(c: char) -> bool {
    matches!(c, '[' | ']' | ',' | '"' | '\'') || c.is_control()
}

impl Lexer<'_> {
    pub(super) fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    pub(super) fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub(super) fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    pub(super) fn next_token(&mut self) -> Result<Token, ConditionError> {
        self.skip_ws();
        let start = self.pos;
        let Some(c) = self.peek_char() else {
            return Ok(Token { tok: Tok::Eof, pos: start });
        };
        let rest = self.rest();
        let two = rest.get(..2).unwrap_or("");
        let (tok, len) = match c {
            '[' => return self.bracket(),
            ']' => (Tok::RBracket, 1),
            ',' => (Tok::Comma, 1),
            '(' => (Tok::LParen, 1),
            ')' => (Tok::RParen, 1),
            '"' | '\'' => return self.string(c),
            '/' => return self.regex(),
            '0'..='9' | '-' => return self.number(),
            _ if c.is_ascii_alphabetic() || c == '_' => return self.word(),
            _ => match two {
                "==" => (Tok::Cmp(CmpOp::Eq), 2),
                "!=" => (Tok::Cmp(CmpOp::Ne), 2),
                "<=" => (Tok::Cmp(CmpOp::Le), 2),
                ">=" => (Tok::Cmp(CmpOp::Ge), 2),
                "=~" => (Tok::Match, 2),
                "!~" => (Tok::NotMatch, 2),
                "&&" => return Err(ConditionError::new(start, "unexpected '&&'; use 'and'")),
                "||" => return Err(ConditionError::new(start, "unexpected '||'; use 'or'")),
                _ => match c {
                    '<' => (Tok::Cmp(CmpOp::Lt), 1),
                    '>' => (Tok::Cmp(CmpOp::Gt), 1),
                    '!' => (Tok::Bang, 1),
                    '=' => return Err(ConditionError::new(start, "expected '==' or '=~'")),
                    _ => return Err(ConditionError::new(start, format!("unexpected character {c:?}"))),
                },
            },
        };
        self.pos += len;
        Ok(Token { tok, pos: start })
    }

    /// `[`: a list literal when followed by a quote, `[`, `]`, or when the
    /// bracket holds a comma; a field reference otherwise.
    pub(super) fn bracket(&mut self) -> Result<Token, ConditionError> {
        let start = self.pos;
        let inner = &self.src[start + 1..];
        let first = inner.trim_start().chars().next();
        let before_close = inner.find(']').map_or(inner, |end| &inner[..end]);
        let trimmed = before_close.trim();
        // Inside a list, `[` opens a nested list when it holds a literal.
        let nested_list = self.list_depth > 0
            && (matches!(first, Some('0'..='9' | '-')) || matches!(trimmed, "true" | "false" | "null"));
        if nested_list || matches!(first, Some('"' | '\'' | '[' | ']')) || before_close.contains(',') {
            self.pos += 1;
            return Ok(Token { tok: Tok::ListOpen, pos: start });
        }
        // Field reference: one or more `[name]` groups with nothing between them.
        let mut segments = Vec::new();
        let mut seg_starts = Vec::new();
        while self.peek_char() == Some('[') {
            seg_starts.push(self.pos);
            self.pos += 1;
            let name_start = self.pos;
            let len = self.rest().find(forbidden_in_field).unwrap_or(self.rest().len());
            self.pos += len;
            if self.peek_char() != Some(']') {
                return Err(ConditionError::new(self.pos, "expected ']'"));
            }
            if len == 0 {
                return Err(ConditionError::new(self.pos, "empty field name"));
            }
            segments.push(&self.src[name_start..self.pos]);
            self.pos += 1;
        }
        let special = match segments.first().copied() {
            Some("@timestamp") => Some(Ref::Timestamp),
            Some("@group") => Some(Ref::Group),
            Some("@subgroup") => Some(Ref::Subgroup),
            Some("@host") => Some(Ref::Host),
            Some("@source") => Some(Ref::Source),
            _ => None,
        };
        let r = match special {
            Some(r) => {
                if let Some(&second) = seg_starts.get(1) {
                    return Err(ConditionError::new(
                        second,
                        format!("[{}] has no sub-fields", segments.first().copied().unwrap_or_default()),
                    ));
                }
                r
            }
            None => {
                let path = FieldPath::parse(&self.src[start..self.pos])
                    .map_err(|e| ConditionError::new(start, e.to_string()))?;
                Ref::Field(path)
            }
        };
        Ok(Token { tok: Tok::Ref(r), pos: start })
    }

    pub(super) fn string(&mut self, quote: char) -> Result<Token, ConditionError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.src[self.pos..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                _ if c == quote => {
                    self.pos += i + 1;
                    return Ok(Token { tok: Tok::Str(out), pos: start });
                }
                '\\' => {
                    let esc_pos = self.pos + i;
                    let Some((_, e)) = chars.next() else { break };
                    out.push(match e {
                        '"' => '"',
                        '\'' => '\'',
                        '\\' => '\\',
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        _ => return Err(ConditionError::new(esc_pos, format!("unknown escape '\\{e}'"))),
                    });
                }
                _ => out.push(c),
            }
        }
        Err(ConditionError::new(start, "unterminated string"))
    }

    pub(super) fn regex(&mut self) -> Result<Token, ConditionError> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.src[start + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '/' => {
                    self.pos = start + 1 + i + 1;
                    return Ok(Token { tok: Tok::Regex(out), pos: start });
                }
                '\\' => match chars.next() {
                    Some((_, '/')) => out.push('/'),
                    Some((_, e)) => {
                        out.push('\\');
                        out.push(e);
                    }
                    None => break,
                },
                _ => out.push(c),
            }
        }
        Err(ConditionError::new(start, "unterminated regex"))
    }

    pub(super) fn number(&mut self) -> Result<Token, ConditionError> {
        let start = self.pos;
        let bytes = self.src.as_bytes();
        let mut i = start;
        let digits = |i: &mut usize| {
            let from = *i;
            while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Err(ConditionError::new(start, "unexpected '-'"));
        }
        let mut float = false;
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            float = true;
            if digits(&mut i) == 0 {
                return Err(ConditionError::new(start, "invalid number"));
            }
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            float = true;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                return Err(ConditionError::new(start, "invalid number"));
            }
        }
        if bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.')) {
            return Err(ConditionError::new(start, "invalid number"));
        }
        let text = &self.src[start..i];
        let tok = if float {
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Tok::Float(f),
                _ => return Err(ConditionError::new(start, "number out of range")),
            }
        } else {
            match text.parse::<i64>() {
                Ok(n) => Tok::Int(n),
                Err(_) => return Err(ConditionError::new(start, "number out of range")),
            }
        };
        self.pos = i;
        Ok(Token { tok, pos: start })
    }

    pub(super) fn word(&mut self) -> Result<Token, ConditionError> {
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@' | '-')))
            .unwrap_or(self.rest().len());
        let word = &self.src[start..start + len];
        let tok = match word {
            "and" => Tok::And,
            "or" => Tok::Or,
            "xor" => Tok::Xor,
            "nand" => Tok::Nand,
            "not" => Tok::Not,
            "in" => Tok::In,
            "true" => Tok::True,
            "false" => Tok::False,
            "null" => Tok::Null,
            "exists" => Tok::Exists,
            _ => {
                const KEYWORDS: [&str; 10] =
                    ["and", "or", "xor", "nand", "not", "in", "true", "false", "null", "exists"];
                let lower = word.to_ascii_lowercase();
                if KEYWORDS.contains(&lower.as_str()) {
                    return Err(ConditionError::new(
                        start,
                        format!("unknown word '{word}'; keywords are lowercase: '{lower}'"),
                    ));
                }
                let hint = word.replace('.', "][");
                return Err(ConditionError::new(
                    start,
                    format!("unknown word '{word}'; field references are written [{hint}]"),
                ));
            }
        };
        self.pos += len;
        Ok(Token { tok, pos: start })
    }
}
