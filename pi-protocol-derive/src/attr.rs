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
/// The runtime's `MAX_SAFE_INTEGER` at expansion time: the derive does not depend on the runtime
/// (the test below holds the two equal).
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

/// A literal value as written in `literal(value = ...)` or a unit variant's `value = ...`.
#[derive(Clone, Debug, PartialEq)]
pub enum LitValue {
    /// A string literal.
    Text(String),
    /// `true` or `false`.
    Bool(bool),
    /// A number literal (integer or float), finite, within +-(2^53 - 1) when integral.
    Number(f64),
    /// `null` (unit variants only).
    Null,
}

impl LitValue {
    /// The literal as JSON text, for messages and docs.
    pub fn to_json(&self) -> String {
        match self {
            LitValue::Text(t) => format!("{t:?}"),
            LitValue::Bool(b) => b.to_string(),
            LitValue::Number(n) if n.fract() == 0.0 => format!("{}", *n as i64),
            LitValue::Number(n) => n.to_string(),
            LitValue::Null => "null".to_owned(),
        }
    }
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
    /// `index = N`: the position of the literal in a tuple (`#[codec(tuple)]`).
    pub index: Option<(Span, u64)>,
}

/// The value constraints a field or a newtype may carry, as written (the checks grammar).
pub struct CheckAttrs {
    /// `min_length = N` (strings).
    pub min_length: Attr<u64>,
    /// `max_length = N` (strings).
    pub max_length: Attr<u64>,
    /// `pattern = "..."` (strings).
    pub pattern: Attr<LitStr>,
    /// `minimum = N` (numbers).
    pub minimum: Attr<f64>,
    /// `maximum = N` (numbers).
    pub maximum: Attr<f64>,
    /// `exclusive_minimum = N` (numbers).
    pub exclusive_minimum: Attr<f64>,
    /// `exclusive_maximum = N` (numbers).
    pub exclusive_maximum: Attr<f64>,
    /// `min_items = N` (arrays).
    pub min_items: Attr<u64>,
    /// `max_items = N` (arrays).
    pub max_items: Attr<u64>,
    /// `items(...)`: checks of every array element.
    pub items: Attr<Box<CheckAttrs>>,
    /// `values(...)`: checks of every record value.
    pub values: Attr<Box<CheckAttrs>>,
    /// `keys(...)`: checks of every record key (string checks only).
    pub keys: Attr<Box<CheckAttrs>>,
}

/// The names of the checks grammar, for "expected one of" messages.
const CHECK_NAMES: &str = "`min_length`, `max_length`, `pattern`, `minimum`, `maximum`, `exclusive_minimum`, \
                           `exclusive_maximum`, `min_items`, `max_items`, `items(..)`, `values(..)`, `keys(..)`";

impl CheckAttrs {
    fn new() -> Self {
        CheckAttrs {
            min_length: Attr::none("min_length"),
            max_length: Attr::none("max_length"),
            pattern: Attr::none("pattern"),
            minimum: Attr::none("minimum"),
            maximum: Attr::none("maximum"),
            exclusive_minimum: Attr::none("exclusive_minimum"),
            exclusive_maximum: Attr::none("exclusive_maximum"),
            min_items: Attr::none("min_items"),
            max_items: Attr::none("max_items"),
            items: Attr::none("items"),
            values: Attr::none("values"),
            keys: Attr::none("keys"),
        }
    }

    /// Reads `meta` if it is a check; `Ok(false)` when the name is not part of the grammar.
    fn parse(&mut self, cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
        let span = path_span(meta);
        let Some(ident) = meta.path.get_ident() else { return Ok(false) };
        match ident.to_string().as_str() {
            "min_length" => set_length(cx, meta, span, &mut self.min_length)?,
            "max_length" => set_length(cx, meta, span, &mut self.max_length)?,
            "min_items" => set_length(cx, meta, span, &mut self.min_items)?,
            "max_items" => set_length(cx, meta, span, &mut self.max_items)?,
            "pattern" => {
                let lit: LitStr = meta.value()?.parse()?;
                self.pattern.set(cx, span, lit);
            }
            "minimum" => set_bound(cx, meta, span, &mut self.minimum)?,
            "maximum" => set_bound(cx, meta, span, &mut self.maximum)?,
            "exclusive_minimum" => set_bound(cx, meta, span, &mut self.exclusive_minimum)?,
            "exclusive_maximum" => set_bound(cx, meta, span, &mut self.exclusive_maximum)?,
            "items" => self.items.set(cx, span, Box::new(CheckAttrs::nested(cx, meta)?)),
            "values" => self.values.set(cx, span, Box::new(CheckAttrs::nested(cx, meta)?)),
            "keys" => self.keys.set(cx, span, Box::new(CheckAttrs::nested(cx, meta)?)),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `items(...)`, `values(...)`, `keys(...)`: a parenthesised list of checks.
    fn nested(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<CheckAttrs> {
        let mut inner = CheckAttrs::new();
        if !meta.input.peek(syn::token::Paren) {
            let name = meta.path.to_token_stream().to_string();
            cx.error_spanned_by(&meta.path, format!("`{name}` takes a list of checks: `{name}(min_length = 1)`"));
            skip_value(meta)?;
            return Ok(inner);
        }
        meta.parse_nested_meta(|nested| {
            if !inner.parse(cx, &nested)? {
                unknown(cx, &nested, &format!("expected one of {CHECK_NAMES}"))?;
            }
            Ok(())
        })?;
        Ok(inner)
    }
}

/// Every attribute that may appear on the deriving type, as written.
pub struct ContainerAttrs {
    /// `crate = "path"`: where the runtime lives.
    pub krate: Attr<syn::Path>,
    /// `tag = "key"`: a union told apart by one literal key.
    pub tag: Attr<LitStr>,
    /// `tags("a", "b")`: a union told apart by several literal keys together.
    pub tags: Attr<Vec<LitStr>>,
    /// `key_set`: a union chosen by the keys of the map.
    pub key_set: Attr<()>,
    /// `json`: emit the JSON view (serde impls in wire shape, `to_json`, `from_json`).
    pub json: Attr<()>,
    /// `tuple`: a tuple struct is a fixed-length array, one element per field (and literal).
    pub tuple: Attr<()>,
    /// `tuples`: an enum tells its array variants apart by length and first element.
    pub tuples: Attr<()>,
    /// `literal(...)` entries, in declared order.
    pub literals: Vec<LiteralAttr>,
    /// Value checks of a newtype.
    pub checks: CheckAttrs,
}

impl ContainerAttrs {
    /// Reads every `#[codec(...)]` attribute of the type.
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = ContainerAttrs {
            krate: Attr::none("crate"),
            tag: Attr::none("tag"),
            tags: Attr::none("tags"),
            key_set: Attr::none("key_set"),
            json: Attr::none("json"),
            tuple: Attr::none("tuple"),
            tuples: Attr::none("tuples"),
            literals: Vec::new(),
            checks: CheckAttrs::new(),
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
                } else if meta.path.is_ident("tags") {
                    let keys = parse_key_list(cx, &meta)?;
                    out.tags.set(cx, span, keys);
                } else if meta.path.is_ident("key_set") {
                    flag(cx, &meta)?;
                    out.key_set.set(cx, span, ());
                } else if meta.path.is_ident("json") {
                    flag(cx, &meta)?;
                    out.json.set(cx, span, ());
                } else if meta.path.is_ident("tuple") {
                    flag(cx, &meta)?;
                    out.tuple.set(cx, span, ());
                } else if meta.path.is_ident("tuples") {
                    flag(cx, &meta)?;
                    out.tuples.set(cx, span, ());
                } else if meta.path.is_ident("literal") {
                    out.literals.push(parse_literal(cx, &meta)?);
                } else if !out.checks.parse(cx, &meta)? {
                    unknown(
                        cx,
                        &meta,
                        &format!(
                            "expected one of `tag`, `tags`, `key_set`, `tuple`, `tuples`, `literal`, `json`, `crate`, \
                             {CHECK_NAMES}"
                        ),
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
    /// `nullable`: `null` stands for `None`.
    pub nullable: Attr<()>,
    /// Value checks.
    pub checks: CheckAttrs,
}

impl FieldAttrs {
    /// Reads every `#[codec(...)]` attribute of a field.
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out =
            FieldAttrs { rename: Attr::none("rename"), nullable: Attr::none("nullable"), checks: CheckAttrs::new() };
        for attr in codec_attrs(attrs) {
            let result = attr.parse_nested_meta(|meta| {
                let span = path_span(&meta);
                if meta.path.is_ident("rename") {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.rename.set(cx, span, lit);
                } else if meta.path.is_ident("nullable") {
                    flag(cx, &meta)?;
                    out.nullable.set(cx, span, ());
                } else if !out.checks.parse(cx, &meta)? {
                    unknown(cx, &meta, &format!("expected one of `rename`, `nullable`, {CHECK_NAMES}"))?;
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

/// Reads the `#[codec(value = ...)]` of a unit variant; `None` (after an error) when absent.
pub fn unit_variant_value(cx: &Ctxt, variant: &syn::Variant) -> Option<LitValue> {
    let mut value: Attr<LitValue> = Attr::none("value");
    for attr in codec_attrs(&variant.attrs) {
        let result = attr.parse_nested_meta(|meta| {
            let span = path_span(&meta);
            if meta.path.is_ident("value") {
                let expr: Expr = meta.value()?.parse()?;
                match literal_value(&expr, true) {
                    Some(v) => value.set(cx, span, v),
                    None => cx.error_spanned_by(
                        &expr,
                        "a unit variant's value is a string, `true`, `false`, `null` or a number within +-(2^53 - 1)",
                    ),
                }
            } else {
                unknown(cx, &meta, "a unit variant takes only `value = ...`")?;
            }
            Ok(())
        });
        if let Err(err) = result {
            cx.syn_error(err);
        }
    }
    if value.get().is_none() && !cx.has_errors() {
        cx.error_spanned_by(
            &variant.ident,
            "a unit variant needs its wire value: `#[codec(value = \"name\")]` (or `null`, `true`, a number)",
        );
    }
    value.value.map(|(_, v)| v)
}

/// Reports every `#[codec(...)]` attribute on a tuple variant: they take none.
pub fn reject_variant_attrs(cx: &Ctxt, attrs: &[Attribute]) {
    for attr in codec_attrs(attrs) {
        cx.error_spanned_by(
            attr,
            "tuple variants take no codec attributes: the variant's type decides how it is matched",
        );
    }
}

/// Reports every `#[codec(...)]` attribute on the field of a newtype.
pub fn reject_newtype_field_attrs(cx: &Ctxt, attrs: &[Attribute]) {
    for attr in codec_attrs(attrs) {
        cx.error_spanned_by(
            attr,
            "put the constraints of a newtype on the type: `#[codec(pattern = \"...\")] struct X(String);`",
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

/// `name = N` with a non-negative integer below 2^32.
fn set_length(cx: &Ctxt, meta: &ParseNestedMeta<'_>, span: Span, slot: &mut Attr<u64>) -> syn::Result<()> {
    let expr: Expr = meta.value()?.parse()?;
    let parsed = match &expr {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => int.base10_parse::<u32>().ok(),
        _ => None,
    };
    match parsed {
        Some(n) => slot.set(cx, span, u64::from(n)),
        None => cx.error_spanned_by(&expr, format!("`{}` must be a non-negative integer below 2^32", slot.name())),
    }
    Ok(())
}

/// `name = N` with a number literal (integer or float, possibly negated).
fn set_bound(cx: &Ctxt, meta: &ParseNestedMeta<'_>, span: Span, slot: &mut Attr<f64>) -> syn::Result<()> {
    let expr: Expr = meta.value()?.parse()?;
    match number_literal(&expr) {
        Ok(n) => slot.set(cx, span, n),
        Err(msg) => cx.error_spanned_by(&expr, format!("`{}` {msg}", slot.name())),
    }
    Ok(())
}

/// `tags("a", "b")`: a non-empty list of key strings.
fn parse_key_list(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let keys = content.parse_terminated(|input| input.parse::<LitStr>(), Token![,])?;
    let keys: Vec<LitStr> = keys.into_iter().collect();
    if keys.is_empty() {
        cx.error_spanned_by(&meta.path, "`tags` needs at least one key: `tags(\"role\", \"status\")`");
    }
    Ok(keys)
}

/// Reads a number literal, possibly negated: finite, and within +-(2^53 - 1) when integral.
fn number_literal(expr: &Expr) -> Result<f64, &'static str> {
    let (negative, lit) = match expr {
        Expr::Lit(ExprLit { lit, .. }) => (false, lit),
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => match &**expr {
            Expr::Lit(ExprLit { lit, .. }) => (true, lit),
            _ => return Err("must be a number literal"),
        },
        _ => return Err("must be a number literal"),
    };
    let magnitude: f64 = match lit {
        Lit::Int(int) => {
            let n: i128 = int.base10_parse().map_err(|_| "must be a number literal")?;
            if n > MAX_SAFE_INTEGER {
                return Err("must lie within +-(2^53 - 1), the integers JSON carries exactly");
            }
            n as f64
        }
        Lit::Float(float) => float.base10_parse().map_err(|_| "must be a number literal")?,
        _ => return Err("must be a number literal"),
    };
    if !magnitude.is_finite() || (magnitude.fract() == 0.0 && magnitude > MAX_SAFE_INTEGER as f64) {
        return Err("must be finite, and within +-(2^53 - 1) when integral");
    }
    Ok(if negative { -magnitude } else { magnitude })
}

/// A literal value: a string, `true`, `false`, a number, or (when `allow_null`) `null`.
fn literal_value(expr: &Expr, allow_null: bool) -> Option<LitValue> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(LitValue::Text(s.value())),
        Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Some(LitValue::Bool(b.value)),
        Expr::Path(path) if allow_null && path.path.is_ident("null") => Some(LitValue::Null),
        _ => number_literal(expr).ok().map(LitValue::Number),
    }
}

fn parse_literal(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<LiteralAttr> {
    let mut out =
        LiteralAttr { span: path_span(meta), key: None, value: None, value_written: false, after: None, index: None };
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
            match literal_value(&expr, false) {
                Some(value) => out.value = Some(value),
                None => cx.error_spanned_by(
                    &expr,
                    "a literal value is a string, `true`, `false` or a number within +-(2^53 - 1)",
                ),
            }
        } else if inner.path.is_ident("after") {
            let lit: LitStr = inner.value()?.parse()?;
            if out.after.replace(lit).is_some() {
                cx.error_at(span, "duplicate `after` in `literal`");
            }
        } else if inner.path.is_ident("index") {
            let lit: syn::LitInt = inner.value()?.parse()?;
            match lit.base10_parse::<u64>() {
                Ok(n) if out.index.is_none() => out.index = Some((span, n)),
                Ok(_) => cx.error_at(span, "duplicate `index` in `literal`"),
                Err(_) => cx.error_spanned_by(&lit, "`index` is a position in the tuple, from 0"),
            }
        } else {
            unknown(cx, &inner, "expected one of `key`, `value`, `after`, `index`")?;
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_integer_bound_is_the_runtime_s() {
        assert_eq!(super::MAX_SAFE_INTEGER, i128::from(pi_protocol_runtime::MAX_SAFE_INTEGER));
    }
}
