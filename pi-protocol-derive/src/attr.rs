//! Parsing of `#[codec(...)]` attributes into raw, span-carrying values.
//!
//! Nothing here knows which shape the attributes end up on: this module only reads the
//! attribute grammar (documented in the crate root) and reports syntax problems — unknown
//! names, duplicates, values of the wrong kind — at the user's span. [`crate::ast`] then checks
//! that the attributes make sense together and for the item they sit on.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, ExprLit, ExprUnary, Lit, LitStr, Token, UnOp};

/// The largest magnitude an integer may have on the wire: 2^53 - 1 (docs/PROTOCOL.md section 2).
pub const MAX_SAFE_INTEGER: i128 = (1 << 53) - 1;

/// Collects every error found while reading one derive input, so the user sees all of them
/// at once, each at its own span.
pub struct Ctxt {
    errors: RefCell<Option<syn::Error>>,
}

impl Ctxt {
    /// An empty error collector.
    pub fn new() -> Self {
        Ctxt { errors: RefCell::new(None) }
    }

    /// Records `msg` at the span of `tokens` (the whole token range, first to last).
    pub fn error_spanned_by<T: ToTokens>(&self, tokens: T, msg: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, msg));
    }

    /// Records `msg` at `span`.
    pub fn error_at(&self, span: Span, msg: impl Display) {
        self.syn_error(syn::Error::new(span, msg));
    }

    /// Records an error produced by `syn`.
    pub fn syn_error(&self, err: syn::Error) {
        let mut slot = self.errors.borrow_mut();
        match slot.as_mut() {
            Some(all) => all.combine(err),
            None => *slot = Some(err),
        }
    }

    /// Whether any error was recorded so far.
    pub fn has_errors(&self) -> bool {
        self.errors.borrow().is_some()
    }

    /// Consumes the collector: `Err` with every recorded error combined, or `Ok`.
    pub fn check(self) -> syn::Result<()> {
        match self.errors.into_inner() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}

/// One attribute value together with the span of the attribute name that set it.
pub struct Attr<T> {
    name: &'static str,
    value: Option<(Span, T)>,
}

impl<T> Attr<T> {
    fn none(name: &'static str) -> Self {
        Attr { name, value: None }
    }

    /// Sets the value; a second occurrence is reported as a duplicate at its own span.
    fn set(&mut self, cx: &Ctxt, span: Span, value: T) {
        if self.value.is_some() {
            cx.error_at(span, format!("duplicate codec attribute `{}`", self.name));
        } else {
            self.value = Some((span, value));
        }
    }

    /// The value, if the attribute was given.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref().map(|(_, v)| v)
    }

    /// The span of the attribute name, if the attribute was given.
    pub fn span(&self) -> Option<Span> {
        self.value.as_ref().map(|(s, _)| *s)
    }

    /// The attribute's name as written by users.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// A literal value as written in `literal(value = ...)`.
#[derive(Clone)]
pub enum LitValue {
    /// A string literal.
    Text(String),
    /// `true` or `false`.
    Bool(bool),
    /// A (possibly negative) integer literal within the safe range.
    Integer(i64),
}

/// One `literal(key = "...", value = ..., after = "...")` entry, fields still unchecked.
pub struct LiteralAttr {
    /// Span of the word `literal`.
    pub span: Span,
    /// The wire key.
    pub key: Option<LitStr>,
    /// The fixed value.
    pub value: Option<LitValue>,
    /// Whether `value = ...` was written (even if it was not a valid literal value).
    pub value_written: bool,
    /// The key this literal follows in canonical order.
    pub after: Option<LitStr>,
}

/// Every attribute that may appear on the deriving type, as written.
pub struct ContainerAttrs {
    /// `crate = "path"`: where the runtime lives.
    pub krate: Attr<syn::Path>,
    /// `tag = "key"`: a tagged enum.
    pub tag: Attr<LitStr>,
    /// `key_set`: an enum chosen by the keys of the map.
    pub key_set: Attr<()>,
    /// `literal(...)` entries, in declared order.
    pub literals: Vec<LiteralAttr>,
    /// `pattern = "..."` on a string newtype.
    pub pattern: Attr<LitStr>,
    /// `min_length = N` on a string newtype.
    pub min_length: Attr<u64>,
}

impl ContainerAttrs {
    /// Reads every `#[codec(...)]` attribute of the type.
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = ContainerAttrs {
            krate: Attr::none("crate"),
            tag: Attr::none("tag"),
            key_set: Attr::none("key_set"),
            literals: Vec::new(),
            pattern: Attr::none("pattern"),
            min_length: Attr::none("min_length"),
        };
        for attr in codec_attrs(attrs) {
            let result = attr.parse_nested_meta(|meta| {
                let span = path_span(&meta);
                if meta.path.is_ident("crate") {
                    let lit: LitStr = meta.value()?.parse()?;
                    match lit.parse::<syn::Path>() {
                        Ok(path) => out.krate.set(cx, span, path),
                        Err(_) => cx.error_spanned_by(&lit, "`crate` must name a path, such as `my_crate::runtime`"),
                    }
                } else if meta.path.is_ident("tag") {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.tag.set(cx, span, lit);
                } else if meta.path.is_ident("key_set") {
                    flag(cx, &meta)?;
                    out.key_set.set(cx, span, ());
                } else if meta.path.is_ident("literal") {
                    out.literals.push(parse_literal(cx, &meta)?);
                } else if meta.path.is_ident("pattern") {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.pattern.set(cx, span, lit);
                } else if meta.path.is_ident("min_length") {
                    if let Some(n) = parse_length(cx, &meta)? {
                        out.min_length.set(cx, span, n);
                    }
                } else {
                    unknown(
                        cx,
                        &meta,
                        "expected one of `tag`, `key_set`, `literal`, `pattern`, `min_length`, `crate`",
                    )?;
                }
                Ok(())
            });
            if let Err(err) = result {
                cx.syn_error(err);
            }
        }
        out
    }
}

/// Every attribute that may appear on a named field, as written.
pub struct FieldAttrs {
    /// `rename = "wireKey"`.
    pub rename: Attr<LitStr>,
    /// `nullable`: the key is required and `null` stands for `None`.
    pub nullable: Attr<()>,
    /// `minimum = N` on an `Integer` field.
    pub minimum: Attr<i64>,
    /// `min_length = N` on a `String` field.
    pub min_length: Attr<u64>,
    /// `pattern = "..."` on a `String` field.
    pub pattern: Attr<LitStr>,
}

impl FieldAttrs {
    /// Reads every `#[codec(...)]` attribute of a field.
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = FieldAttrs {
            rename: Attr::none("rename"),
            nullable: Attr::none("nullable"),
            minimum: Attr::none("minimum"),
            min_length: Attr::none("min_length"),
            pattern: Attr::none("pattern"),
        };
        for attr in codec_attrs(attrs) {
            let result = attr.parse_nested_meta(|meta| {
                let span = path_span(&meta);
                if meta.path.is_ident("rename") {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.rename.set(cx, span, lit);
                } else if meta.path.is_ident("nullable") {
                    flag(cx, &meta)?;
                    out.nullable.set(cx, span, ());
                } else if meta.path.is_ident("minimum") {
                    let expr: Expr = meta.value()?.parse()?;
                    match safe_integer(&expr) {
                        Ok(n) => out.minimum.set(cx, span, n),
                        Err(msg) => cx.error_spanned_by(&expr, format!("`minimum` {msg}")),
                    }
                } else if meta.path.is_ident("min_length") {
                    if let Some(n) = parse_length(cx, &meta)? {
                        out.min_length.set(cx, span, n);
                    }
                } else if meta.path.is_ident("pattern") {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.pattern.set(cx, span, lit);
                } else {
                    unknown(cx, &meta, "expected one of `rename`, `nullable`, `minimum`, `min_length`, `pattern`")?;
                }
                Ok(())
            });
            if let Err(err) = result {
                cx.syn_error(err);
            }
        }
        out
    }
}

/// Reports every `#[codec(...)]` attribute on an enum variant: variants take none.
pub fn reject_variant_attrs(cx: &Ctxt, attrs: &[Attribute]) {
    for attr in codec_attrs(attrs) {
        cx.error_spanned_by(
            attr,
            "enum variants take no codec attributes: the variant's type decides how it is matched",
        );
    }
}

/// Reports every `#[codec(...)]` attribute on the field of a string newtype.
pub fn reject_newtype_field_attrs(cx: &Ctxt, attrs: &[Attribute]) {
    for attr in codec_attrs(attrs) {
        cx.error_spanned_by(
            attr,
            "put the constraints of a string newtype on the type: `#[codec(pattern = \"...\")] struct X(String);`",
        );
    }
}

fn codec_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("codec"))
}

fn path_span(meta: &ParseNestedMeta<'_>) -> Span {
    meta.path.get_ident().map_or_else(Span::call_site, |ident| ident.span())
}

/// Records an unknown attribute at its name and skips whatever value it carries, so the
/// attributes after it are still read.
fn unknown(cx: &Ctxt, meta: &ParseNestedMeta<'_>, expected: &str) -> syn::Result<()> {
    let name = meta.path.to_token_stream().to_string().replace(' ', "");
    cx.error_spanned_by(&meta.path, format!("unknown codec attribute `{name}`: {expected}"));
    skip_value(meta)
}

fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

/// A flag attribute such as `nullable` or `key_set`: it takes no value.
fn flag(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        let name = meta.path.to_token_stream().to_string();
        cx.error_spanned_by(&meta.path, format!("`{name}` takes no value: write just `{name}`"));
        skip_value(meta)?;
    }
    Ok(())
}

fn parse_length(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Option<u64>> {
    let expr: Expr = meta.value()?.parse()?;
    let parsed = match &expr {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => int.base10_parse::<u32>().ok(),
        _ => None,
    };
    if parsed.is_none() {
        cx.error_spanned_by(&expr, "`min_length` must be a non-negative integer below 2^32");
    }
    Ok(parsed.map(u64::from))
}

/// Reads an integer literal, possibly negated, within +-(2^53 - 1).
fn safe_integer(expr: &Expr) -> Result<i64, &'static str> {
    let (negative, lit) = match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => (false, int),
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => match &**expr {
            Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => (true, int),
            _ => return Err("must be an integer literal"),
        },
        _ => return Err("must be an integer literal"),
    };
    let magnitude: i128 = lit.base10_parse().map_err(|_| "must be an integer literal")?;
    if magnitude > MAX_SAFE_INTEGER {
        return Err("must lie within +-(2^53 - 1), the integers JSON carries exactly");
    }
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).map_err(|_| "is out of range")
}

fn parse_literal(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<LiteralAttr> {
    let mut out = LiteralAttr { span: path_span(meta), key: None, value: None, value_written: false, after: None };
    if !meta.input.peek(syn::token::Paren) {
        cx.error_spanned_by(
            &meta.path,
            "`literal` needs its entries in parentheses: `literal(key = \"type\", value = \"hello\")`",
        );
        skip_value(meta)?;
        return Ok(out);
    }
    meta.parse_nested_meta(|inner| {
        let span = path_span(&inner);
        if inner.path.is_ident("key") {
            let lit: LitStr = inner.value()?.parse()?;
            if out.key.replace(lit).is_some() {
                cx.error_at(span, "duplicate `key` in `literal`");
            }
        } else if inner.path.is_ident("value") {
            let expr: Expr = inner.value()?.parse()?;
            if out.value_written {
                cx.error_at(span, "duplicate `value` in `literal`");
            }
            out.value_written = true;
            let value = match &expr {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(LitValue::Text(s.value())),
                Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Some(LitValue::Bool(b.value)),
                _ => match safe_integer(&expr) {
                    Ok(n) => Some(LitValue::Integer(n)),
                    Err(_) => None,
                },
            };
            match value {
                Some(value) => out.value = Some(value),
                None => cx.error_spanned_by(
                    &expr,
                    "a literal value is a string, `true`, `false` or an integer within +-(2^53 - 1)",
                ),
            }
        } else if inner.path.is_ident("after") {
            let lit: LitStr = inner.value()?.parse()?;
            if out.after.replace(lit).is_some() {
                cx.error_at(span, "duplicate `after` in `literal`");
            }
        } else {
            unknown(cx, &inner, "expected one of `key`, `value`, `after`")?;
        }
        Ok(())
    })?;
    Ok(out)
}
