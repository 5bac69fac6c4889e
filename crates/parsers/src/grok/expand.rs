//! Expansion of a grok expression into one PCRE2 regex plus a field table.
//!
//! Grok patterns are written for Ruby (Onigmo) regexes. This pass does, in a
//! single scan per pattern definition:
//! - `%{NAME}`, `%{NAME:field}`, `%{NAME:field:int|float}` and inline
//!   `%{NAME=regex}` expansion, recursively, with cycle detection;
//! - renaming of every capture (grok field or raw `(?<name>...)`) to a
//!   PCRE-safe `gN`, recording the real field name in a side table (field
//!   names such as `[http][request][method]` or `@metadata` are not valid
//!   PCRE group names, and the same field may be captured several times);
//! - the Onigmo-isms PCRE2 reads differently: `\h` (hex digit in Ruby),
//!   `(?m)` (DOTALL in Ruby), nested character classes (`[[[:alnum:]]_]`),
//!   and POSIX classes, which are Unicode-aware in Ruby.
//!
//! Like Logstash (`named_captures_only => true`), `%{NAME}` without a field
//! name becomes a non-capturing group.

use super::error::GrokError;
use super::library::{is_valid_name, GrokLibrary};
use super::pattern::Conversion;

/// Upper bound on the expanded regex size, so a pathological library (each
/// pattern referencing the next one twice) fails fast instead of eating memory.
const MAX_EXPANDED_LEN: usize = 4 << 20;

/// One capture of the expanded regex: group `g{index}` fills this field.
#[derive(Debug, Clone)]
pub(crate) struct FieldSpec {
    /// Field path segments: `[http][request][method]` -> `["http", "request", "method"]`.
    pub path: Vec<Box<str>>,
    /// Segments joined with `.`.
    pub dotted: Box<str>,
    /// Value conversion (`:int` / `:float`).
    pub conversion: Conversion,
}

/// Result of expanding a grok expression.
#[derive(Debug)]
pub(crate) struct Expanded {
    /// The regex source for PCRE2 (without option prefix).
    pub regex: String,
    /// `fields[i]` is captured by group `g{i}`.
    pub fields: Vec<FieldSpec>,
}

/// Expands `pattern` against `library`.
pub(crate) fn expand(library: &GrokLibrary, pattern: &str) -> Result<Expanded, GrokError> {
    let mut ex = Expander {
        library,
        pattern,
        out: String::with_capacity(pattern.len() * 8),
        fields: Vec::new(),
        stack: Vec::new(),
        raw_names: Vec::new(),
    };
    ex.expand_text(pattern)?;
    Ok(Expanded { regex: ex.out, fields: ex.fields })
}

struct Expander<'a> {
    library: &'a GrokLibrary,
    /// The user's pattern, for error messages.
    pattern: &'a str,
    out: String,
    fields: Vec<FieldSpec>,
    /// Names of the patterns being expanded (cycle detection).
    stack: Vec<String>,
    /// Raw group name -> group index, for `\k<name>` back-references.
    raw_names: Vec<(String, usize)>,
}

/// A parsed `%{...}` reference.
struct GrokRef<'t> {
    name: &'t str,
    field: Option<&'t str>,
    conversion: Conversion,
    definition: Option<&'t str>,
    /// Byte length of the whole `%{...}`.
    len: usize,
}

impl Expander<'_> {
    fn expand_text(&mut self, text: &str) -> Result<(), GrokError> {
        let bytes = text.as_bytes();
        let mut i = 0;
        // Start of the pending run of bytes copied verbatim.
        let mut run = 0;
        // Output offset of the last complete atom, for wrapping it when Ruby
        // stacks quantifiers (`.?*`), which PCRE2 rejects.
        let mut atom: Option<usize> = None;
        let mut quant = Quant::None;
        let mut groups: Vec<usize> = Vec::new();
        while i < bytes.len() {
            // Where text[i] lands in the output if copied verbatim.
            let pos = self.out.len() + (i - run);
            match bytes[i] {
                b'\\' => {
                    atom = Some(pos);
                    quant = Quant::None;
                    let Some(c) = text[i + 1..].chars().next() else {
                        i += 1;
                        continue;
                    };
                    match c {
                        'h' | 'H' => {
                            self.out.push_str(&text[run..i]);
                            self.out.push_str(if c == 'h' { "[0-9a-fA-F]" } else { "[^0-9a-fA-F]" });
                            i += 2;
                            run = i;
                        }
                        'k' => {
                            if let Some((name, len)) = group_name_at(&text[i + 2..]) {
                                if let Some(idx) = self.raw_group(name) {
                                    self.out.push_str(&text[run..i]);
                                    self.out.push_str(&format!("\\k<g{idx}>"));
                                    i += 2 + len;
                                    run = i;
                                    continue;
                                }
                            }
                            i += 2;
                        }
                        _ => i += 1 + c.len_utf8(),
                    }
                }
                b'[' => {
                    self.out.push_str(&text[run..i]);
                    atom = Some(self.out.len());
                    quant = Quant::None;
                    i = self.translate_class(text, i)?;
                    run = i;
                }
                b'(' => {
                    quant = Quant::None;
                    groups.push(pos);
                    if bytes.get(i + 1) != Some(&b'?') {
                        i += 1;
                        continue;
                    }
                    let rest = &text[i + 2..];
                    let named = if let Some(r) = rest.strip_prefix('P') {
                        r.starts_with('<').then(|| (group_name_at(r), 3))
                    } else if (rest.starts_with('<') && !rest[1..].starts_with(['=', '!'])) || rest.starts_with('\'') {
                        Some((group_name_at(rest), 2))
                    } else {
                        None
                    };
                    if let Some((parsed, prefix)) = named {
                        let Some((name, len)) = parsed else {
                            return Err(GrokError::InvalidField {
                                name: rest.chars().take(20).collect(),
                                pattern: self.pattern.to_owned(),
                            });
                        };
                        self.out.push_str(&text[run..i]);
                        let idx = self.add_field(name, Conversion::None);
                        self.raw_names.push((name.to_owned(), idx));
                        self.out.push_str(&format!("(?<g{idx}>"));
                        i += prefix + len;
                        run = i;
                    } else {
                        // Ruby option groups: `m` is DOTALL there, `s` does not exist.
                        let flags = rest.bytes().take_while(|b| matches!(b, b'i' | b'm' | b'x' | b'-')).count();
                        if flags > 0 && matches!(rest.as_bytes().get(flags), Some(b')' | b':')) {
                            self.out.push_str(&text[run..i]);
                            self.out.push_str("(?");
                            self.out.push_str(&rest[..flags].replace('m', "s"));
                            i += 2 + flags;
                            run = i;
                        } else {
                            i += 2;
                        }
                    }
                }
                b')' => {
                    atom = groups.pop();
                    quant = Quant::None;
                    i += 1;
                }
                b'|' => {
                    atom = None;
                    quant = Quant::None;
                    i += 1;
                }
                b'%' if bytes.get(i + 1) == Some(&b'{') => {
                    if let Some(r) = parse_ref(&text[i..]) {
                        self.out.push_str(&text[run..i]);
                        atom = Some(self.out.len());
                        quant = Quant::None;
                        self.expand_ref(&r)?;
                        i += r.len;
                        run = i;
                    } else {
                        atom = Some(pos);
                        quant = Quant::None;
                        i += 1;
                    }
                }
                c @ (b'*' | b'+' | b'?' | b'{') => {
                    let len = if c == b'{' { quantifier_braces(&text[i..]) } else { 1 };
                    if len == 0 {
                        // A literal `{`.
                        atom = Some(pos);
                        quant = Quant::None;
                        i += 1;
                        continue;
                    }
                    match quant {
                        Quant::None => quant = Quant::Quantified,
                        Quant::Quantified if matches!(c, b'?' | b'+') => {
                            // Lazy / possessive modifier.
                            quant = Quant::Modified;
                        }
                        _ => {
                            // Nested repeat (`x?*`): Onigmo repeats the
                            // quantified atom, PCRE2 needs a group for that.
                            if let Some(start) = atom {
                                self.out.push_str(&text[run..i]);
                                self.out.insert_str(start, "(?:");
                                self.out.push(')');
                                run = i;
                            }
                            quant = Quant::Quantified;
                        }
                    }
                    i += len;
                }
                _ => {
                    atom = Some(pos);
                    quant = Quant::None;
                    i += text[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        self.out.push_str(&text[run..]);
        if self.out.len() > MAX_EXPANDED_LEN {
            return Err(GrokError::TooLarge { pattern: self.pattern.to_owned(), limit: MAX_EXPANDED_LEN });
        }
        Ok(())
    }

    fn expand_ref(&mut self, r: &GrokRef<'_>) -> Result<(), GrokError> {
        let definition = match r.definition {
            Some(d) => d,
            None => self
                .library
                .get(r.name)
                .ok_or_else(|| GrokError::UndefinedPattern { name: r.name.to_owned(), context: self.context() })?,
        };
        if self.stack.iter().any(|s| s == r.name) {
            let mut chain = self.stack.clone();
            chain.push(r.name.to_owned());
            return Err(GrokError::RecursivePattern { name: r.name.to_owned(), chain: chain.join(" -> ") });
        }
        match r.field {
            Some(field) => {
                let idx = self.add_field(field, r.conversion);
                self.out.push_str(&format!("(?<g{idx}>"));
            }
            None => self.out.push_str("(?:"),
        }
        self.stack.push(r.name.to_owned());
        self.expand_text(definition)?;
        self.stack.pop();
        self.out.push(')');
        Ok(())
    }

    fn context(&self) -> String {
        if self.stack.is_empty() {
            format!("{:?}", self.pattern)
        } else {
            self.stack.join(" -> ")
        }
    }

    fn raw_group(&self, name: &str) -> Option<usize> {
        self.raw_names.iter().rev().find(|(n, _)| n == name).map(|(_, i)| *i)
    }

    /// Records a capture. A malformed bracket path (the ECS library has
    /// `[source][user][name?]`, which grok reads as `[source][user][name`)
    /// is kept as one literal key rather than failing the whole pattern.
    fn add_field(&mut self, name: &str, conversion: Conversion) -> usize {
        let path: Vec<Box<str>> = match parse_field_path(name) {
            Some(p) => p.into_iter().map(Into::into).collect(),
            None => vec![name.into()],
        };
        let dotted = path.join(".").into_boxed_str();
        self.fields.push(FieldSpec { path, dotted, conversion });
        self.fields.len() - 1
    }

    /// Copies the character class starting at `text[start] == '['` to the
    /// output, translated for PCRE2; returns the index after its `]`.
    fn translate_class(&mut self, text: &str, start: usize) -> Result<usize, GrokError> {
        self.out.push('[');
        let mut i = start + 1;
        let bytes = text.as_bytes();
        if bytes.get(i) == Some(&b'^') {
            self.out.push('^');
            i += 1;
        }
        i = self.class_body(text, i, true)?;
        self.out.push(']');
        Ok(i)
    }

    /// Translates class members from `i` up to and including the closing `]`.
    fn class_body(&mut self, text: &str, mut i: usize, first: bool) -> Result<usize, GrokError> {
        let bytes = text.as_bytes();
        if first && bytes.get(i) == Some(&b']') {
            // `[]...]`: a leading `]` is literal in both dialects.
            self.out.push_str("\\]");
            i += 1;
        }
        while i < bytes.len() {
            match bytes[i] {
                b']' => return Ok(i + 1),
                b'\\' => {
                    let Some(c) = text[i + 1..].chars().next() else {
                        break;
                    };
                    if c == 'h' {
                        self.out.push_str("0-9a-fA-F");
                    } else {
                        self.out.push('\\');
                        self.out.push(c);
                    }
                    i += 1 + c.len_utf8();
                }
                b'[' if bytes.get(i + 1) == Some(&b':') => {
                    let Some(end) = text[i + 2..].find(":]") else {
                        self.out.push_str("\\[");
                        i += 1;
                        continue;
                    };
                    let name = &text[i + 2..i + 2 + end];
                    self.out.push_str(&posix_class(name));
                    i += 2 + end + 2;
                }
                b'[' => {
                    // Onigmo nested class: a union, so inline its members.
                    // Negated nested classes have no PCRE2 equivalent here.
                    if bytes.get(i + 1) == Some(&b'^') {
                        return Err(GrokError::Unsupported {
                            what: "negated nested character class",
                            pattern: self.pattern.to_owned(),
                        });
                    }
                    i = self.class_body(text, i + 1, true)?;
                }
                _ => {
                    let c = text[i..].chars().next().unwrap_or('\0');
                    self.out.push(c);
                    i += c.len_utf8().max(1);
                }
            }
        }
        // Unterminated class: leave it to PCRE2 to report.
        Ok(i)
    }
}

/// Quantifier state while scanning (to spot Ruby's nested repeats).
#[derive(Clone, Copy, PartialEq)]
enum Quant {
    /// The last item is not quantified.
    None,
    /// The last item has a quantifier (`*`, `+`, `?`, `{n,m}`).
    Quantified,
    /// ... followed by a lazy `?` or possessive `+` modifier.
    Modified,
}

/// Length of a `{n}`, `{n,}`, `{n,m}` or `{,m}` quantifier at the start of
/// `text`, or 0 if the `{` is a literal.
fn quantifier_braces(text: &str) -> usize {
    let Some(end) = text.find('}') else { return 0 };
    let inner = &text[1..end];
    let (a, b) = match inner.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (inner, None),
    };
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    let ok = digits(a) && b.is_none_or(digits) && !(a.is_empty() && b.is_none_or(str::is_empty));
    if ok {
        end + 1
    } else {
        0
    }
}

/// POSIX bracket classes are Unicode-aware in Ruby; PCRE2 without UCP makes
/// them ASCII-only, so map the letter classes to Unicode properties.
fn posix_class(name: &str) -> String {
    let (neg, base) = match name.strip_prefix('^') {
        Some(b) => (true, b),
        None => (false, name),
    };
    let prop = match base {
        "alpha" => Some("L"),
        "alnum" => Some("Xan"),
        "upper" => Some("Lu"),
        "lower" => Some("Ll"),
        "word" => Some("Xwd"),
        _ => None,
    };
    match prop {
        Some(p) if neg => format!("\\P{{{p}}}"),
        Some(p) => format!("\\p{{{p}}}"),
        None => format!("[:{name}:]"),
    }
}

/// Parses `<name>rest` or `'name'rest` (after `(?` or `\k`); returns the name
/// and the byte length up to and including the closing delimiter.
fn group_name_at(text: &str) -> Option<(&str, usize)> {
    let close = match text.as_bytes().first()? {
        b'<' => '>',
        b'\'' => '\'',
        _ => return None,
    };
    let end = text[1..].find(close)?;
    let name = &text[1..1 + end];
    (!name.is_empty()).then_some((name, end + 2))
}

/// Parses a `%{NAME}`, `%{NAME:field}`, `%{NAME:field:type}` or
/// `%{NAME=definition}` reference at the start of `text`
/// (jls-grok's `PATTERN_RE`). Returns `None` if it is not one, in which case
/// the text is kept literally (as Ruby does).
fn parse_ref(text: &str) -> Option<GrokRef<'_>> {
    let body = text.strip_prefix("%{")?;
    let name_len = body.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let name = &body[..name_len];
    if !is_valid_name(name) {
        return None;
    }
    let mut i = name_len;
    let mut field = None;
    let mut conversion = Conversion::None;
    if body[i..].starts_with(':') {
        let sub_len = body[i + 1..].bytes().take_while(|b| b.is_ascii_alphanumeric() || b"@[]_:.-".contains(b)).count();
        let sub = &body[i + 1..i + 1 + sub_len];
        let mut parts = sub.splitn(3, ':');
        field = parts.next().filter(|f| !f.is_empty());
        conversion = match parts.next() {
            Some("int") => Conversion::Int,
            Some("float") => Conversion::Float,
            _ => Conversion::None,
        };
        i += 1 + sub_len;
    }
    let mut definition = None;
    if body[i..].starts_with('=') {
        let start = i + 1;
        let mut depth = 0usize;
        let bytes = body.as_bytes();
        let mut j = start;
        while j < bytes.len() {
            match bytes[j] {
                b'\\' => j += 1,
                b'{' => depth += 1,
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        if j >= bytes.len() {
            return None;
        }
        definition = Some(&body[start..j]);
        i = j;
    }
    let close = body[i..].find('}')?;
    Some(GrokRef { name, field, conversion, definition, len: 2 + i + close + 1 })
}

/// Field name -> path segments. `[a][b]` is a Logstash field reference
/// (nested); anything else is one top-level key, as in Logstash (so `a.b`
/// stays a single key named `a.b`).
pub(crate) fn parse_field_path(name: &str) -> Option<Vec<&str>> {
    if name.is_empty() {
        return None;
    }
    if !name.starts_with('[') {
        return (!name.contains(['[', ']'])).then(|| vec![name]);
    }
    let mut segments = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        let inner = rest.strip_prefix('[')?;
        let end = inner.find(']')?;
        let seg = &inner[..end];
        if seg.is_empty() || seg.contains('[') {
            return None;
        }
        segments.push(seg);
        rest = &inner[end + 1..];
    }
    Some(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib() -> GrokLibrary {
        let mut l = GrokLibrary::new();
        l.add_pattern("A", "a+").unwrap();
        l.add_pattern("B", "%{A:x}b").unwrap();
        l
    }

    #[test]
    fn nested_and_named() {
        let e = expand(&lib(), "%{B:y} (?<[z][w]>c)").unwrap();
        assert_eq!(e.regex, "(?<g0>(?<g1>a+)b) (?<g2>c)");
        let names: Vec<_> = e.fields.iter().map(|f| &*f.dotted).collect();
        assert_eq!(names, ["y", "x", "z.w"]);
    }

    #[test]
    fn ruby_isms() {
        let l = GrokLibrary::new();
        assert_eq!(expand(&l, r"\h{2}[\h_]").unwrap().regex, "[0-9a-fA-F]{2}[0-9a-fA-F_]");
        assert_eq!(expand(&l, "(?m)x(?i:y)").unwrap().regex, "(?s)x(?i:y)");
        assert_eq!(expand(&l, "[[[:alnum:]]_-]").unwrap().regex, r"[\p{Xan}_-]");
        assert_eq!(expand(&l, r"(?<!\\)(?<=a)(?!b)").unwrap().regex, r"(?<!\\)(?<=a)(?!b)");
        assert_eq!(expand(&l, r"(?<q>.)\k<q>").unwrap().regex, r"(?<g0>.)\k<g0>");
        assert_eq!(expand(&l, ".?*x(a)+*").unwrap().regex, "(?:.?)*x(?:(a)+)*");
        assert_eq!(expand(&l, "a+?b*+c{2}{3}d{x}").unwrap().regex, "a+?b*+(?:c{2}){3}d{x}");
    }

    #[test]
    fn refs() {
        let r = parse_ref("%{NUMBER:[a][b]:int} x").unwrap();
        assert_eq!((r.name, r.field, r.len), ("NUMBER", Some("[a][b]"), 20));
        assert_eq!(r.conversion, Conversion::Int);
        let r = parse_ref("%{FOO=a{2}b}").unwrap();
        assert_eq!(r.definition, Some("a{2}b"));
        assert!(parse_ref("%{ x}").is_none());
        assert_eq!(expand(&GrokLibrary::new(), "%{FOO:f=a{2}}").unwrap().regex, "(?<g0>a{2})");
    }

    #[test]
    fn field_paths() {
        assert_eq!(parse_field_path("[a][b]").unwrap(), ["a", "b"]);
        assert_eq!(parse_field_path("a.b").unwrap(), ["a.b"]);
        assert_eq!(parse_field_path("@metadata").unwrap(), ["@metadata"]);
        assert!(parse_field_path("[a]b").is_none());
        assert!(parse_field_path("[]").is_none());
        assert!(parse_field_path("a[b]").is_none());
    }
}
