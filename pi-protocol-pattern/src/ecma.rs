//! ECMAScript patterns (`u` flag, no other flag) read into the syntax tree of the linear-time
//! engine (`regex-syntax`'s `Hir`, run by `regex-automata`).
//!
//! Each construct is given the meaning ECMAScript gives it, spelled in the engine's terms:
//! `.` is any code point but `\n`, `\r`, U+2028 and U+2029; `^` and `$` hold only at the ends
//! of the text; `\d`, `\w` and `\b` are ASCII; `\s` is ECMAScript's white space and line
//! terminators; a negated class holds every code point outside it (line terminators included);
//! `\b` inside a class is U+0008; a lone surrogate (`\uD800`) matches nothing, since a decoded
//! text never holds one. Greedy and lazy quantifiers match the same strings, and a test only
//! asks whether some substring matches, so the order in which a backtracking engine would try
//! the alternatives changes no verdict.
//!
//! What needs a backtracking engine or would mean something else is refused, naming its byte
//! offset and what to write instead: backreferences (`\1`, `\k<name>`), lookahead and
//! lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`), modifier groups (`(?i:`), and property escapes
//! (`\p{...}`) the engine's Unicode tables do not know.
//!
//! The caller checks the text first ([`super::check_size`]): the parser here recurses once per
//! group, and the text it reads holds at most [`super::MAX_PATTERN_NESTING`] nested groups.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition};

use super::{PatternError, MAX_PATTERN_NESTING};

/// Reads `source`, already known to be a valid ECMAScript pattern with the `u` flag.
pub(super) fn translate(source: &str) -> Result<Hir, PatternError> {
    let mut parser = Parser { chars: source.char_indices().collect(), at: 0, end: source.len() };
    let hir = parser.disjunction(0)?;
    match parser.peek() {
        None => Ok(hir),
        Some(_) => Err(parser.refuse("an unbalanced `)`")),
    }
}

/// One side of a class: a single code point (surrogates included, as ECMAScript reads
/// `\uD800`) or a set of them (`\d`, `\p{L}`).
enum ClassAtom {
    Char(u32),
    Set(ClassUnicode),
}

struct Parser {
    chars: Vec<(usize, char)>,
    at: usize,
    end: usize,
}

type Parsed<T> = Result<T, PatternError>;

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).map(|&(_, c)| c)
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).map(|&(_, c)| c)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.at += 1;
        }
        found
    }

    /// The byte offset of the cursor.
    fn position(&self) -> usize {
        self.chars.get(self.at).map_or(self.end, |&(at, _)| at)
    }

    fn error_at(&self, position: usize, reason: String) -> PatternError {
        PatternError { position: Some(position), reason }
    }

    /// A construct this engine cannot read (the ECMAScript parser accepted the pattern, so this
    /// only happens where the two disagree about validity).
    fn refuse(&self, what: &str) -> PatternError {
        self.error_at(self.position(), format!("{what} is not supported here"))
    }

    fn disjunction(&mut self, depth: usize) -> Parsed<Hir> {
        let mut alternatives = vec![self.alternative(depth)?];
        while self.eat('|') {
            alternatives.push(self.alternative(depth)?);
        }
        Ok(Hir::alternation(alternatives))
    }

    fn alternative(&mut self, depth: usize) -> Parsed<Hir> {
        let mut terms = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            terms.push(self.term(depth)?);
        }
        Ok(Hir::concat(terms))
    }

    fn term(&mut self, depth: usize) -> Parsed<Hir> {
        let start = self.position();
        let atom = match self.peek() {
            // Assertions: ECMAScript refuses a quantifier after them with the u flag.
            Some('^') => {
                self.bump();
                return Ok(Hir::look(Look::Start));
            }
            Some('$') => {
                self.bump();
                return Ok(Hir::look(Look::End));
            }
            Some('\\') if matches!(self.peek_at(1), Some('b' | 'B')) => {
                self.bump();
                let negated = self.bump() == Some('B');
                return Ok(Hir::look(if negated { Look::WordAsciiNegate } else { Look::WordAscii }));
            }
            Some('(') => self.group(depth)?,
            Some('.') => {
                self.bump();
                Hir::class(Class::Unicode(dot()))
            }
            Some('[') => self.class()?,
            Some('\\') => {
                self.bump();
                self.atom_escape(start)?
            }
            Some('*' | '+' | '?' | '{') => return Err(self.refuse("a quantifier with nothing to repeat")),
            Some(c) => {
                self.bump();
                literal(u32::from(c))
            }
            None => return Err(self.refuse("the end of the pattern")),
        };
        self.quantified(atom)
    }

    /// `atom`, repeated as the quantifier after it says (if any).
    fn quantified(&mut self, atom: Hir) -> Parsed<Hir> {
        let start = self.position();
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => {
                self.bump();
                let min = self.count(start)?;
                let max = if self.eat(',') {
                    if self.peek() == Some('}') {
                        None
                    } else {
                        Some(self.count(start)?)
                    }
                } else {
                    Some(min)
                };
                if self.peek() != Some('}') {
                    return Err(self.refuse("an unclosed `{`"));
                }
                if max.is_some_and(|max| max < min) {
                    return Err(self.error_at(start, "a count `{n,m}` with m below n".to_string()));
                }
                (min, max)
            }
            _ => return Ok(atom),
        };
        self.bump();
        // Lazy or greedy: the same strings match, so the verdict is the same.
        let greedy = !self.eat('?');
        Ok(Hir::repetition(Repetition { min, max, greedy, sub: Box::new(atom) }))
    }

    /// The decimal number of a `{n,m}` count.
    fn count(&mut self, quantifier: usize) -> Parsed<u32> {
        let mut value: u64 = 0;
        let mut digits = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            self.bump();
            digits += 1;
            value = value.saturating_mul(10).saturating_add(u64::from(d));
        }
        if digits == 0 {
            return Err(self.refuse("a count without digits"));
        }
        u32::try_from(value).map_err(|_| {
            self.error_at(quantifier, format!("a repetition count above {}; write a smaller count", u32::MAX))
        })
    }

    fn group(&mut self, depth: usize) -> Parsed<Hir> {
        let start = self.position();
        self.bump();
        if self.eat('?') {
            match (self.peek(), self.peek_at(1)) {
                (Some(':'), _) => {
                    self.bump();
                }
                (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                    return Err(self.error_at(
                        start,
                        "a lookahead or lookbehind group, which needs a backtracking engine: the decoders match \
                         patterns in linear time; write the condition into the pattern itself (a class or an \
                         alternation), or check it in the application"
                            .to_string(),
                    ));
                }
                (Some('<'), _) => {
                    // A named group `(?<name>...)`: the name matters only to backreferences.
                    while let Some(c) = self.bump() {
                        if c == '>' {
                            break;
                        }
                    }
                }
                _ => {
                    return Err(self.error_at(
                        start,
                        "a modifier group such as `(?i:...)`; spell the cases out (`[Aa]`)".to_string(),
                    ));
                }
            }
        }
        if depth + 1 > MAX_PATTERN_NESTING {
            return Err(self.error_at(start, format!("groups nested more than {MAX_PATTERN_NESTING} deep")));
        }
        let inner = self.disjunction(depth + 1)?;
        if !self.eat(')') {
            return Err(self.error_at(start, "an unclosed group".to_string()));
        }
        Ok(inner)
    }

    /// What follows a `\` outside a class (`start` is the offset of the `\`).
    fn atom_escape(&mut self, start: usize) -> Parsed<Hir> {
        match self.peek() {
            Some('1'..='9' | 'k') => Err(self.error_at(
                start,
                "a backreference, which needs a backtracking engine: the decoders match patterns in linear time; \
                 repeat the group's pattern instead of referring to what it matched"
                    .to_string(),
            )),
            _ => Ok(match self.class_escape(start, false)? {
                ClassAtom::Char(c) => literal(c),
                ClassAtom::Set(set) => Hir::class(Class::Unicode(set)),
            }),
        }
    }

    /// An escape after its `\`: inside a class (`\b` is then U+0008 and `\-` a dash) or not.
    fn class_escape(&mut self, start: usize, in_class: bool) -> Parsed<ClassAtom> {
        let Some(c) = self.bump() else {
            return Err(self.refuse("a `\\` at the end"));
        };
        let char = |c: u32| Ok(ClassAtom::Char(c));
        match c {
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                let mut set = match c.to_ascii_lowercase() {
                    'd' => ranges(&[(0x30, 0x39)]),
                    'w' => ranges(&[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)]),
                    _ => ranges(WHITE_SPACE),
                };
                if c.is_ascii_uppercase() {
                    set.negate();
                }
                Ok(ClassAtom::Set(set))
            }
            'p' | 'P' => self.property(start, c == 'P').map(ClassAtom::Set),
            'b' if in_class => char(0x08),
            '-' if in_class => char(0x2d),
            't' => char(0x09),
            'n' => char(0x0a),
            'v' => char(0x0b),
            'f' => char(0x0c),
            'r' => char(0x0d),
            '0' => char(0),
            'c' => match self.bump() {
                Some(letter) if letter.is_ascii_alphabetic() => char(u32::from(letter) % 32),
                _ => Err(self.error_at(start, "a `\\c` without a letter".to_string())),
            },
            'x' => self.hex(start, 2).map(ClassAtom::Char),
            'u' => self.unicode_escape(start).map(ClassAtom::Char),
            c if "^$\\.*+?()[]{}|/".contains(c) => char(u32::from(c)),
            _ => Err(self.error_at(start, format!("the escape `\\{c}`"))),
        }
    }

    /// `digits` hexadecimal digits.
    fn hex(&mut self, start: usize, digits: usize) -> Parsed<u32> {
        let mut value = 0;
        for _ in 0..digits {
            let Some(d) = self.bump().and_then(|c| c.to_digit(16)) else {
                return Err(self.error_at(start, "an escape with too few hexadecimal digits".to_string()));
            };
            value = value * 16 + d;
        }
        Ok(value)
    }

    /// `\uHHHH` (a surrogate pair written as two such escapes is one code point) or `\u{H...}`.
    fn unicode_escape(&mut self, start: usize) -> Parsed<u32> {
        if self.eat('{') {
            let mut value: u32 = 0;
            while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                self.bump();
                value = value.saturating_mul(16).saturating_add(d);
            }
            if !self.eat('}') || value > 0x10ffff {
                return Err(self.error_at(start, "a `\\u{...}` escape beyond U+10FFFF".to_string()));
            }
            return Ok(value);
        }
        let first = self.hex(start, 4)?;
        if (0xd800..0xdc00).contains(&first) && self.peek() == Some('\\') && self.peek_at(1) == Some('u') {
            let saved = self.at;
            self.at += 2;
            match self.hex(start, 4) {
                Ok(second) if (0xdc00..0xe000).contains(&second) => {
                    return Ok(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00));
                }
                _ => self.at = saved,
            }
        }
        Ok(first)
    }

    /// `\p{...}` or `\P{...}` after the letter: a property the engine's Unicode tables know.
    fn property(&mut self, start: usize, negated: bool) -> Parsed<ClassUnicode> {
        if !self.eat('{') {
            return Err(self.error_at(start, "a `\\p` without `{...}`".to_string()));
        }
        let mut name = String::new();
        loop {
            match self.bump() {
                Some('}') => break,
                Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '=' => name.push(c),
                _ => return Err(self.error_at(start, "a malformed `\\p{...}`".to_string())),
            }
        }
        let unknown = || {
            self.error_at(
                start,
                format!(
                    "the property `\\p{{{name}}}`, unknown to the engine's Unicode tables; write its ranges as a class"
                ),
            )
        };
        let hir = regex_syntax::ParserBuilder::new().build().parse(&format!("\\p{{{name}}}")).map_err(|_| unknown())?;
        let HirKind::Class(Class::Unicode(set)) = hir.kind() else {
            return Err(unknown());
        };
        let mut set = set.clone();
        if negated {
            set.negate();
        }
        Ok(set)
    }

    /// A class `[...]`.
    fn class(&mut self) -> Parsed<Hir> {
        let start = self.position();
        self.bump();
        let negated = self.eat('^');
        let mut set = ClassUnicode::empty();
        loop {
            match self.peek() {
                None => return Err(self.error_at(start, "an unclosed class".to_string())),
                Some(']') => {
                    self.bump();
                    break;
                }
                Some(_) => {}
            }
            let first = self.class_atom()?;
            let is_range = self.peek() == Some('-') && !matches!(self.peek_at(1), Some(']') | None);
            if !is_range {
                add(&mut set, first);
                continue;
            }
            let dash = self.position();
            self.bump();
            match (first, self.class_atom()?) {
                (ClassAtom::Char(lo), ClassAtom::Char(hi)) if lo <= hi => set.union(&ranges(&[(lo, hi)])),
                _ => return Err(self.error_at(dash, "a class range between sets or out of order".to_string())),
            }
        }
        if negated {
            set.negate();
        }
        Ok(Hir::class(Class::Unicode(set)))
    }

    fn class_atom(&mut self) -> Parsed<ClassAtom> {
        let start = self.position();
        match self.bump() {
            Some('\\') => self.class_escape(start, true),
            Some(c) => Ok(ClassAtom::Char(u32::from(c))),
            None => Err(self.error_at(start, "an unclosed class".to_string())),
        }
    }
}

/// ECMAScript's `WhiteSpace` and `LineTerminator` code points, the set of `\s`.
const WHITE_SPACE: &[(u32, u32)] = &[
    (0x09, 0x0d),
    (0x20, 0x20),
    (0xa0, 0xa0),
    (0x1680, 0x1680),
    (0x2000, 0x200a),
    (0x2028, 0x2029),
    (0x202f, 0x202f),
    (0x205f, 0x205f),
    (0x3000, 0x3000),
    (0xfeff, 0xfeff),
];

/// `.`: every code point but the line terminators.
fn dot() -> ClassUnicode {
    let mut set = ranges(&[(0x0a, 0x0a), (0x0d, 0x0d), (0x2028, 0x2029)]);
    set.negate();
    set
}

/// The code points of `spans` (inclusive), surrogates left out: a decoded text holds none.
fn ranges(spans: &[(u32, u32)]) -> ClassUnicode {
    let mut set = ClassUnicode::empty();
    for &(lo, hi) in spans {
        for (lo, hi) in [(lo, hi.min(0xd7ff)), (lo.max(0xe000), hi)] {
            if let (Some(lo), Some(hi)) = (char::from_u32(lo), char::from_u32(hi)) {
                if lo <= hi {
                    set.push(ClassUnicodeRange::new(lo, hi));
                }
            }
        }
    }
    set
}

fn add(set: &mut ClassUnicode, atom: ClassAtom) {
    match atom {
        ClassAtom::Char(c) => set.union(&ranges(&[(c, c)])),
        ClassAtom::Set(other) => set.union(&other),
    }
}

/// The code point `c`, or nothing for a lone surrogate.
fn literal(c: u32) -> Hir {
    match char::from_u32(c) {
        Some(c) => Hir::literal(c.encode_utf8(&mut [0; 4]).as_bytes()),
        None => Hir::fail(),
    }
}
