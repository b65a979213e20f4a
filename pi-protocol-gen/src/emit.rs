//! Checked [`Model`] -> Rust source: tokens built with `quote`, printed by `prettyplease`.
//!
//! The output is plain Rust: one item per named type, each annotated with `#[derive(Codec)]`
//! and the `#[codec(...)]` attributes of the derive's grammar (see `src/generated/v8.rs` for the
//! canonical example), with the schema's descriptions as doc comments and a pointer to the
//! schema each type comes from. Structs and enums are `#[non_exhaustive]`: other crates build
//! structs with `new` (the required fields) and `with_*` setters (the optional ones), and
//! match enums with a wildcard arm, so a schema that grows breaks none of their code.

use proc_macro2::{Ident, Literal as Lit, Span, TokenStream};
use quote::{format_ident, quote};

use crate::accessors::{emit_accessors, union_accessors};
use crate::error::{GenError, Result};
use crate::model::{
    Checks, Dispatch, Field, LiteralValue, Member, Model, Shape, Struct, TypeDef, TypeExpr, TypeKind, Union, Variant,
    VariantKind,
};
use crate::rust_type::type_tokens;

/// The widest doc comment line the generator writes, indentation and `/// ` included.
const DOC_WIDTH: usize = 100;

/// The runtime path the derive assumes when no `crate = "..."` is given.
const DEFAULT_RUNTIME: &str = "pi_protocol_runtime";

/// Choices about the generated text that do not come from the schema.
///
/// ```
/// let options = pi_protocol_gen::Options::default()
///     .command("build.rs")
///     .runtime_path("pi_protocol::runtime")
///     .derive_path("pi_protocol")
///     .type_attribute("*", "#[allow(missing_docs)]");
/// assert_eq!(options.command_name(), "build.rs");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    command: String,
    runtime_path: String,
    derive_path: String,
    max_width: usize,
    json: bool,
    inner_docs: bool,
    type_attributes: Vec<(String, String)>,
    field_attributes: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            command: "cargo xtask gen".to_string(),
            runtime_path: DEFAULT_RUNTIME.to_string(),
            derive_path: "pi_protocol_derive".to_string(),
            max_width: 120,
            json: true,
            inner_docs: true,
            type_attributes: Vec::new(),
            field_attributes: Vec::new(),
        }
    }
}

impl Options {
    /// The command named in the `// @generated` preamble (default `cargo xtask gen`).
    #[must_use]
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.command = command.into();
        self
    }

    /// The command named in the preamble.
    #[must_use]
    pub fn command_name(&self) -> &str {
        &self.command
    }

    /// Path of the runtime crate (default `pi_protocol_runtime`; `pi_protocol::runtime` for a
    /// crate that depends on the facade only). Any other path is also passed to the derive as
    /// `#[codec(crate = "...")]` on every type.
    #[must_use]
    pub fn runtime_path(mut self, path: impl Into<String>) -> Self {
        self.runtime_path = path.into();
        self
    }

    /// Path of the crate that exports `#[derive(Codec)]` (default `pi_protocol_derive`;
    /// `pi_protocol` re-exports it).
    #[must_use]
    pub fn derive_path(mut self, path: impl Into<String>) -> Self {
        self.derive_path = path.into();
        self
    }

    /// The `max_width` of the rustfmt configuration the output should be stable under (default
    /// 120): attributes that fit are kept on one line.
    #[must_use]
    pub fn max_width(mut self, width: usize) -> Self {
        self.max_width = width;
        self
    }

    /// Whether every type gets the JSON view: serde impls in wire shape, `to_json`, `from_json`
    /// (`#[codec(json)]`; default on).
    #[must_use]
    pub fn json(mut self, on: bool) -> Self {
        self.json = on;
        self
    }

    /// Whether the module documentation is written as inner doc comments (`//!`; default on).
    /// A file brought in with `include!` must not have them: the `build.rs` builder turns this
    /// off and writes the module documentation as a plain comment.
    #[must_use]
    pub fn inner_docs(mut self, on: bool) -> Self {
        self.inner_docs = on;
        self
    }

    /// Adds the outer attribute `attribute` (for example `#[derive(Default)]` or
    /// `#[serde(rename_all = "camelCase")]`) to the type named `type_name`, or to every type
    /// when `type_name` is `*`.
    #[must_use]
    pub fn type_attribute(mut self, type_name: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.type_attributes.push((type_name.into(), attribute.into()));
        self
    }

    /// Adds the outer attribute `attribute` to the field `Type.field` (Rust names); `*` stands
    /// for every type or every field (`Usage.*`, `*.id`).
    #[must_use]
    pub fn field_attribute(mut self, field: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.field_attributes.push((field.into(), attribute.into()));
        self
    }
}

/// The one-line preamble that opens every generated file.
#[must_use]
pub fn preamble(options: &Options, source_name: &str) -> String {
    format!("// @generated by `{}` from {source_name}. Do not edit by hand.", options.command)
}

/// What every item is emitted with.
struct Context<'m> {
    model: &'m Model,
    crate_arg: Option<TokenStream>,
    json: bool,
    type_attributes: Vec<(String, syn::Attribute)>,
    field_attributes: Vec<(String, String, syn::Attribute)>,
}

/// Renders `model` as a Rust source file (preamble included).
pub(crate) fn emit(model: &Model, source_name: &str, options: &Options) -> Result<String> {
    let path_option = |option: &'static str, value: &str| {
        syn::parse_str::<syn::Path>(value).map_err(|e| GenError::Option { option, message: format!("{value:?}: {e}") })
    };
    let runtime = path_option("runtime_path", &options.runtime_path)?;
    let derive = path_option("derive_path", &options.derive_path)?;
    let crate_arg = (options.runtime_path != DEFAULT_RUNTIME).then(|| {
        let path = Lit::string(&options.runtime_path);
        quote!(crate = #path)
    });
    let attribute = |option: &'static str, text: &str| -> Result<syn::Attribute> {
        let parsed: syn::Result<Vec<syn::Attribute>> = syn::parse::Parser::parse_str(syn::Attribute::parse_outer, text);
        match parsed {
            Ok(mut attrs) if attrs.len() == 1 => Ok(attrs.remove(0)),
            _ => Err(GenError::Option { option, message: format!("{text:?} is not one outer attribute `#[...]`") }),
        }
    };
    let type_attributes = options
        .type_attributes
        .iter()
        .map(|(ty, text)| Ok((ty.clone(), attribute("type_attribute", text)?)))
        .collect::<Result<Vec<_>>>()?;
    let field_attributes = options
        .field_attributes
        .iter()
        .map(|(field, text)| {
            let (ty, name) = field.split_once('.').ok_or_else(|| GenError::Option {
                option: "field_attribute",
                message: format!("{field:?} is not `Type.field`"),
            })?;
            Ok((ty.to_string(), name.to_string(), attribute("field_attribute", text)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let cx = Context { model, crate_arg, json: options.json, type_attributes, field_attributes };

    let mut module_doc = vec![match &model.title {
        Some(title) => format!("{title}, generated from `{source_name}`."),
        None => format!("Types generated from `{source_name}`."),
    }];
    if let Some(description) = &model.description {
        module_doc.push(description.clone());
    }
    let module_doc = doc_lines(&module_doc.join("\n\n"), 0);

    let mut leaves: Vec<&str> = Vec::new();
    for def in &model.types {
        collect_leaves(def, &mut leaves);
    }
    leaves.sort_unstable();
    leaves.dedup();
    let leaf_imports: Vec<Ident> = leaves.iter().map(|name| Ident::new(name, Span::call_site())).collect();
    // `use` items sorted by path, as rustfmt orders them.
    let mut uses_items = vec![(options.derive_path.clone(), quote!(use #derive::Codec;))];
    match leaf_imports.len() {
        0 => {}
        1 => uses_items.push((options.runtime_path.clone(), quote!(use #runtime::#(#leaf_imports)*;))),
        _ => uses_items.push((options.runtime_path.clone(), quote!(use #runtime::{#(#leaf_imports),*};))),
    }
    uses_items.sort_by(|a, b| a.0.cmp(&b.0));
    let uses_items = uses_items.into_iter().map(|(_, tokens)| tokens);

    let version = model.protocol_version.map(|v| {
        let v = Lit::u32_unsuffixed(v);
        quote! {
            #[doc = " The protocol version this module implements (`x-protocol-version` of the schema)."]
            pub const PROTOCOL_VERSION: u32 = #v;
        }
    });

    // prettyplease separates items by a single newline; printing each group of items on its own
    // and joining them with a blank line gives the layout of hand-written code.
    let mut sections = vec![preamble(options, source_name)];
    if options.inner_docs {
        sections.push(unparse(quote!(#(#![doc = #module_doc])*))?);
    } else {
        sections.push(module_doc.iter().map(|line| format!("//{line}")).collect::<Vec<_>>().join("\n"));
    }
    sections.push(unparse(quote!(#(#uses_items)*))?);
    if let Some(version) = version {
        sections.push(unparse(version)?);
    }
    for def in &model.types {
        let item = unparse_spaced(cx.emit_type(def))?;
        sections.push(join_attributes(&item, options.max_width));
    }
    let mut out = String::new();
    for section in sections {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(section.trim_end_matches('\n'));
        out.push('\n');
    }
    Ok(out)
}

/// The runtime leaf types a definition names.
fn collect_leaves<'m>(def: &'m TypeDef, out: &mut Vec<&'m str>) {
    fn shape<'m>(s: &'m Shape, out: &mut Vec<&'m str>) {
        match &s.ty {
            TypeExpr::Named { .. } | TypeExpr::String | TypeExpr::Boolean => {}
            TypeExpr::Integer => out.push("Integer"),
            TypeExpr::Number => out.push("Number"),
            TypeExpr::Null => out.push("Null"),
            TypeExpr::Payload => out.push("Payload"),
            TypeExpr::Array(inner) | TypeExpr::Nullable(inner) => shape(inner, out),
            TypeExpr::Record(record) => {
                out.push("Record");
                shape(&record.values, out);
            }
        }
    }
    match &def.kind {
        TypeKind::Newtype(s) => match text_storage(s) {
            Some(TextStorage::Fixed(_)) => out.push("ArrayString"),
            Some(TextStorage::Compact) => out.push("CompactString"),
            None => shape(s, out),
        },
        TypeKind::Struct(st) => st.fields().for_each(|f| shape(&f.shape, out)),
        TypeKind::Union(u) => u.variants.iter().for_each(|v| {
            if let VariantKind::Value(s) = &v.kind {
                shape(s, out);
            }
        }),
    }
}

/// Where a string newtype keeps its text.
enum TextStorage {
    /// `ArrayString<N>`: the pattern fixes the length at N bytes.
    Fixed(usize),
    /// `CompactString`: inline up to 24 bytes.
    Compact,
}

/// The storage of a newtype over a string, or `None` for other newtypes.
fn text_storage(shape: &Shape) -> Option<TextStorage> {
    if shape.ty != TypeExpr::String {
        return None;
    }
    let fixed = shape.checks.pattern.as_deref().and_then(|p| pi_protocol_runtime::pattern::Pattern::parse(p).ok());
    Some(match fixed {
        Some(pattern) => TextStorage::Fixed(pattern.length()),
        None => TextStorage::Compact,
    })
}

impl Context<'_> {
    /// One named type as an item (and its constructors).
    fn emit_type(&self, def: &TypeDef) -> TokenStream {
        let mut doc = String::new();
        if let Some(description) = &def.doc {
            doc.push_str(description);
            doc.push_str("\n\n");
        }
        doc.push_str(&format!("Schema: `{}`.", def.pointer));
        let docs = doc_attrs(&doc, 0);
        let name = format_ident!("{}", def.rust_name);
        let mut args: Vec<TokenStream> = self.crate_arg.iter().cloned().collect();
        if self.json {
            args.push(quote!(json));
        }
        let extra: Vec<&syn::Attribute> = self
            .type_attributes
            .iter()
            .filter(|(ty, _)| ty == "*" || *ty == def.rust_name)
            .map(|(_, attr)| attr)
            .collect();
        let docs = quote!(#docs #(#extra)*);
        match &def.kind {
            TypeKind::Newtype(shape) => self.emit_newtype(docs, &name, shape, args),
            TypeKind::Struct(s) => {
                args.extend(struct_args(s));
                self.emit_struct(docs, def, &name, s, args)
            }
            TypeKind::Union(u) => {
                let union = self.emit_union(docs, &name, u, args);
                let accessors = emit_accessors(&name, &union_accessors(self.model, u));
                quote!(#union #accessors)
            }
        }
    }

    fn emit_newtype(&self, docs: TokenStream, name: &Ident, shape: &Shape, mut args: Vec<TokenStream>) -> TokenStream {
        let (storage, derives) = match text_storage(shape) {
            Some(TextStorage::Fixed(length)) => {
                let length = Lit::usize_unsuffixed(length);
                (quote!(ArrayString<#length>), quote!(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec))
            }
            Some(TextStorage::Compact) => {
                (quote!(CompactString), quote!(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec))
            }
            None => (type_tokens(shape), quote!(Debug, Clone, PartialEq, Eq, Hash, Codec)),
        };
        args.extend(check_args(shape));
        let attr = codec_attr(&args);
        quote! {
            #docs
            #[derive(#derives)]
            #attr
            pub struct #name(#storage);
        }
    }

    fn emit_struct(
        &self,
        docs: TokenStream,
        def: &TypeDef,
        name: &Ident,
        s: &Struct,
        args: Vec<TokenStream>,
    ) -> TokenStream {
        let attr = codec_attr(&args);
        let fields = s.fields().map(|f| self.emit_field(&def.rust_name, f));
        let constructors = constructors(name, s);
        // Without required fields, `new()` is the default value (every optional field absent).
        let default = s.fields().all(|f| f.optional).then(|| quote!(Default,));
        // Several literals read as repeated attribute arguments to clippy.
        let allow = (s.literals().count() > 1).then(|| quote!(#[allow(clippy::duplicated_attributes)]));
        quote! {
            #docs
            #[derive(Debug, Clone, PartialEq, Eq, Hash, #default Codec)]
            #[non_exhaustive]
            #attr
            #allow
            pub struct #name {
                #(#fields)*
            }

            #constructors
        }
    }

    fn emit_field(&self, type_name: &str, field: &Field) -> TokenStream {
        let docs = doc_attrs(&self.field_doc(field), 4);
        let extra: Vec<&syn::Attribute> = self
            .field_attributes
            .iter()
            .filter(|(ty, f, _)| (ty == "*" || ty == type_name) && (f == "*" || *f == field.rust_name))
            .map(|(_, _, attr)| attr)
            .collect();
        let mut args = Vec::new();
        if field.rust_name != field.key {
            let key = Lit::string(&field.key);
            args.push(quote!(rename = #key));
        }
        let (nullable, value) = match &field.shape.ty {
            TypeExpr::Nullable(inner) => (true, inner.as_ref()),
            _ => (false, &field.shape),
        };
        if nullable {
            args.push(quote!(nullable));
        }
        args.extend(check_args(value));
        let ty = field_type(field);
        let attr = codec_attr(&args);
        let name = format_ident!("{}", field.rust_name);
        quote! {
            #docs
            #(#extra)*
            #attr
            pub #name: #ty,
        }
    }

    fn emit_union(&self, docs: TokenStream, name: &Ident, u: &Union, mut args: Vec<TokenStream>) -> TokenStream {
        match &u.dispatch {
            Dispatch::Tag(key) => {
                let key = Lit::string(key);
                args.push(quote!(tag = #key));
            }
            Dispatch::Tags(keys) => {
                let keys = keys.iter().map(|k| Lit::string(k));
                args.push(quote!(tags(#(#keys),*)));
            }
            Dispatch::KeySet => args.push(quote!(key_set)),
            Dispatch::ByType => {}
        }
        let attr = codec_attr(&args);
        let variants = u.variants.iter().map(|v| {
            let doc = v.doc.clone().unwrap_or_else(|| self.variant_doc(v));
            let docs = doc_attrs(&doc, 4);
            let vname = format_ident!("{}", v.rust_name);
            match &v.kind {
                VariantKind::Value(shape) => {
                    let ty = type_tokens(shape);
                    quote! {
                        #docs
                        #vname(#ty),
                    }
                }
                VariantKind::Literal(value) => {
                    let value = literal_tokens(value);
                    quote! {
                        #docs
                        #[codec(value = #value)]
                        #vname,
                    }
                }
            }
        });
        let derives = if u.is_enumeration() {
            quote!(Debug, Clone, Copy, PartialEq, Eq, Hash, Codec)
        } else {
            quote!(Debug, Clone, PartialEq, Eq, Hash, Codec)
        };
        quote! {
            #docs
            #[derive(#derives)]
            #[non_exhaustive]
            #attr
            // Variants are held inline: a decoded message is one value, with no allocation of its
            // own, whatever the sizes of the other variants.
            #[allow(clippy::large_enum_variant)]
            pub enum #name {
                #(#variants)*
            }
        }
    }

    /// A field's doc: its `description`, else that of the type it holds, else its wire key, so
    /// generated code passes `missing_docs` whatever the schema documents.
    fn field_doc(&self, field: &Field) -> String {
        if let Some(doc) = &field.doc {
            return doc.clone();
        }
        let mut shape = &field.shape;
        while let TypeExpr::Nullable(inner) = &shape.ty {
            shape = inner;
        }
        let held = match &shape.ty {
            TypeExpr::Named { name, .. } => self
                .model
                .by_rust_name(name)
                .and_then(|t| t.doc.as_deref())
                .and_then(|doc| doc.split("\n\n").next())
                .map(str::to_owned),
            _ => None,
        };
        held.unwrap_or_else(|| format!("The `{}` property.", field.key))
    }

    /// The default doc of a variant: its tags (`` `type: "hello"`. ``), its value, or its keys
    /// (`` `{ serverId, result? }`. ``).
    fn variant_doc(&self, v: &Variant) -> String {
        if !v.tags.is_empty() {
            let tags: Vec<String> = v.tags.iter().map(|(k, value)| format!("{k}: {value}")).collect();
            return format!("`{}`.", tags.join(", "));
        }
        match &v.kind {
            VariantKind::Literal(value) => format!("`{value}`."),
            VariantKind::Value(Shape { ty: TypeExpr::Named { name, .. }, .. }) => {
                match self.model.by_rust_name(name).map(|t| &t.kind) {
                    Some(TypeKind::Struct(s)) => {
                        let keys: Vec<String> = s
                            .members
                            .iter()
                            .map(|m| if m.is_required() { m.key().to_string() } else { format!("{}?", m.key()) })
                            .collect();
                        format!("`{{ {} }}`.", keys.join(", "))
                    }
                    _ => format!("A [`{name}`]."),
                }
            }
            VariantKind::Value(shape) => format!("{}.", describe_shape(shape)),
        }
    }
}

/// A shape in words (`a string`, `an array of Part`), for docs.
fn describe_shape(shape: &Shape) -> String {
    match &shape.ty {
        TypeExpr::Named { name, .. } => format!("A [`{name}`]"),
        TypeExpr::String => "A string".to_string(),
        TypeExpr::Integer => "An integer".to_string(),
        TypeExpr::Number => "A number".to_string(),
        TypeExpr::Boolean => "A boolean".to_string(),
        TypeExpr::Null => "`null`".to_string(),
        TypeExpr::Payload => "Any JSON value".to_string(),
        TypeExpr::Array(_) => "An array".to_string(),
        TypeExpr::Record(_) => "An object with free keys".to_string(),
        TypeExpr::Nullable(inner) => format!("{}, or `null`", describe_shape(inner)),
    }
}

/// `new` (the required fields) and one `with_*` setter per optional field.
fn constructors(name: &Ident, s: &Struct) -> TokenStream {
    let required: Vec<&Field> = s.fields().filter(|f| !f.optional).collect();
    let optional: Vec<&Field> = s.fields().filter(|f| f.optional).collect();
    let params = required.iter().map(|f| {
        let ident = format_ident!("{}", f.rust_name);
        let ty = field_type(f);
        quote!(#ident: impl Into<#ty>)
    });
    let inits = s.fields().map(|f| {
        let ident = format_ident!("{}", f.rust_name);
        if f.optional {
            quote!(#ident: None)
        } else {
            quote!(#ident: #ident.into())
        }
    });
    let listed: Vec<String> = required.iter().map(|f| format!("`{}`", f.key)).collect();
    let article = if name.to_string().starts_with(['A', 'E', 'I', 'O', 'U']) { "An" } else { "A" };
    let new_doc = match listed.len() {
        0 => format!(
            "{article} [`{name}`]{}.",
            if optional.is_empty() { "" } else { " with every optional field absent" }
        ),
        _ => format!(
            "{article} [`{name}`] from its required fields ({}){}.",
            listed.join(", "),
            if optional.is_empty() { "" } else { "; the optional ones are absent until set with the `with_` methods" }
        ),
    };
    let new_doc = doc_attrs(&new_doc, 4);
    // Clippy's limit on arguments (7): a wide object's constructor says it means it.
    let many = (required.len() > 7).then(|| quote!(#[allow(clippy::too_many_arguments)]));
    let setters = optional.iter().map(|f| {
        let ident = format_ident!("{}", f.rust_name);
        let setter = format_ident!("with_{}", f.rust_name);
        let value_ty = match &f.shape.ty {
            TypeExpr::Nullable(inner) => {
                let inner = type_tokens(inner);
                quote!(Option<#inner>)
            }
            _ => type_tokens(&f.shape),
        };
        let doc = doc_attrs(&format!("Sets the optional `{}`.", f.key), 4);
        quote! {
            #doc
            #[must_use]
            pub fn #setter(mut self, #ident: impl Into<#value_ty>) -> Self {
                self.#ident = Some(#ident.into());
                self
            }
        }
    });
    quote! {
        impl #name {
            #new_doc
            #[must_use]
            #many
            pub fn new(#(#params),*) -> Self {
                #name { #(#inits),* }
            }

            #(#setters)*
        }
    }
}

/// The Rust type of a field: the value's type, in an `Option` when the key may be absent.
fn field_type(field: &Field) -> TokenStream {
    let ty = type_tokens(&field.shape);
    if field.optional {
        quote!(Option<#ty>)
    } else {
        ty
    }
}

/// The `#[codec(...)]` check arguments of a value of `shape`, nested into `items(..)`,
/// `values(..)` and `keys(..)` (the derive looks through `Option` by itself).
fn check_args(shape: &Shape) -> Vec<TokenStream> {
    let mut args = own_checks(&shape.checks);
    match &shape.ty {
        TypeExpr::Nullable(inner) => args.extend(check_args(inner)),
        TypeExpr::Array(inner) => {
            let inner = check_args(inner);
            if !inner.is_empty() {
                args.push(quote!(items(#(#inner),*)));
            }
        }
        TypeExpr::Record(record) => {
            let values = check_args(&record.values);
            if !values.is_empty() {
                args.push(quote!(values(#(#values),*)));
            }
            let keys = own_checks(&record.keys);
            if !keys.is_empty() {
                args.push(quote!(keys(#(#keys),*)));
            }
        }
        _ => {}
    }
    args
}

/// `min_length = N`, `pattern = ".."`, `minimum = N`, ... for a set of checks.
fn own_checks(checks: &Checks) -> Vec<TokenStream> {
    let mut args = Vec::new();
    let lengths = [
        ("min_length", checks.min_length),
        ("max_length", checks.max_length),
        ("min_items", checks.min_items),
        ("max_items", checks.max_items),
    ];
    for (name, value) in lengths {
        if let Some(n) = value {
            let name = format_ident!("{}", name);
            let n = Lit::u64_unsuffixed(n);
            args.push(quote!(#name = #n));
        }
    }
    if let Some(p) = &checks.pattern {
        let p = Lit::string(p);
        args.push(quote!(pattern = #p));
    }
    let bounds = [
        ("minimum", checks.minimum),
        ("maximum", checks.maximum),
        ("exclusive_minimum", checks.exclusive_minimum),
        ("exclusive_maximum", checks.exclusive_maximum),
    ];
    for (name, value) in bounds {
        if let Some(v) = value {
            let name = format_ident!("{}", name);
            let v = number_tokens(v);
            args.push(quote!(#name = #v));
        }
    }
    args
}

/// A number as a literal: an integer when integral (`8`, `-1`), else a float (`0.5`).
fn number_tokens(v: f64) -> TokenStream {
    if v.fract() == 0.0 {
        let n = Lit::i64_unsuffixed(v.abs() as i64);
        if v < 0.0 {
            quote!(-#n)
        } else {
            quote!(#n)
        }
    } else {
        let n = Lit::f64_unsuffixed(v.abs());
        if v < 0.0 {
            quote!(-#n)
        } else {
            quote!(#n)
        }
    }
}

/// `#[codec(...)]` from `args`, or nothing when there are none.
fn codec_attr(args: &[TokenStream]) -> TokenStream {
    if args.is_empty() {
        quote!()
    } else {
        quote!(#[codec(#(#args),*)])
    }
}

/// `literal(key = .., value = .., after = ..)` for each literal of a struct.
fn struct_args(s: &Struct) -> Vec<TokenStream> {
    s.members
        .iter()
        .filter_map(|m| match m {
            Member::Literal(l) => Some(l),
            Member::Field(_) => None,
        })
        .map(|l| {
            let key = Lit::string(&l.key);
            let value = literal_tokens(&l.value);
            let after = l.after.as_ref().map(|a| {
                let a = Lit::string(a);
                quote!(, after = #a)
            });
            quote!(literal(key = #key, value = #value #after))
        })
        .collect()
}

fn literal_tokens(value: &LiteralValue) -> TokenStream {
    match value {
        LiteralValue::String(s) => {
            let s = Lit::string(s);
            quote!(#s)
        }
        LiteralValue::Bool(true) => quote!(true),
        LiteralValue::Bool(false) => quote!(false),
        LiteralValue::Number(n) => number_tokens(*n),
        LiteralValue::Null => quote!(null),
    }
}

/// Puts every attribute that prettyplease spread over several lines back on one line when it
/// fits in `max_width` columns, as rustfmt does (prettyplease breaks lines at 89 columns), so
/// the output is stable under the project's `cargo fmt`.
fn join_attributes(text: &str, max_width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[") && trimmed.ends_with('(') {
            let close = format!("{})]", &line[..indent]);
            let mut parts: Vec<&str> = Vec::new();
            let mut block = vec![line];
            let mut closed = false;
            for next in lines.by_ref() {
                block.push(next);
                if next == close {
                    closed = true;
                    break;
                }
                parts.push(next.trim());
            }
            let joined = format!("{line}{})]", join_parts(&parts));
            if closed && joined.len() <= max_width {
                out.push_str(&joined);
                out.push('\n');
            } else {
                for l in block {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Joins the inner lines of a broken attribute: a space between list elements, none after `(`
/// or before `)`, and no trailing comma before a `)`.
fn join_parts(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts {
        if part.starts_with(')') {
            if out.ends_with(',') {
                out.pop();
            }
        } else if !out.is_empty() && !out.ends_with('(') {
            out.push(' ');
        }
        out.push_str(part);
    }
    if out.ends_with(',') {
        out.pop();
    }
    out
}

/// Prints the items (and inner attributes) in `tokens` with prettyplease.
fn unparse(tokens: TokenStream) -> Result<String> {
    let file: syn::File = syn::parse2(tokens)?;
    Ok(prettyplease::unparse(&file))
}

/// Like [`unparse`], with a blank line between the items (a type and its `impl` blocks), as
/// hand-written code separates them.
fn unparse_spaced(tokens: TokenStream) -> Result<String> {
    let file: syn::File = syn::parse2(tokens)?;
    let items: Vec<String> = file
        .items
        .into_iter()
        .map(|item| prettyplease::unparse(&syn::File { shebang: None, attrs: Vec::new(), items: vec![item] }))
        .collect();
    Ok(items.iter().map(|item| item.trim_end_matches('\n')).collect::<Vec<_>>().join("\n\n") + "\n")
}

/// `#[doc = ".."]` attributes for `text`, wrapped for an item indented by `indent` columns.
fn doc_attrs(text: &str, indent: usize) -> TokenStream {
    let lines = doc_lines(text, indent);
    quote!(#(#[doc = #lines])*)
}

/// Splits `text` into doc comment lines (each with its leading space, empty for a paragraph
/// break): paragraphs are separated by blank lines, words are wrapped greedily so that a line
/// stays within [`DOC_WIDTH`] columns.
fn doc_lines(text: &str, indent: usize) -> Vec<String> {
    let width = DOC_WIDTH.saturating_sub(indent + 4).max(20);
    let mut lines = Vec::new();
    for (i, paragraph) in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).enumerate() {
        if i > 0 {
            lines.push(String::new());
        }
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                lines.push(format!(" {line}"));
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            lines.push(format!(" {line}"));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_lines_wrap_and_keep_paragraphs() {
        let text = format!("{}\n\nSecond.", "word ".repeat(30));
        let lines = doc_lines(&text, 0);
        assert!(lines.iter().all(|l| l.len() < DOC_WIDTH - 4 + 1));
        assert_eq!(lines[0].len(), 95);
        assert_eq!(lines[lines.len() - 2], "");
        assert_eq!(lines[lines.len() - 1], " Second.");
        assert_eq!(doc_lines("  a   b ", 4), vec![" a b".to_string()]);
    }

    #[test]
    fn broken_attributes_are_joined_when_they_fit() {
        let text = "#[codec(\n    a(x = 1),\n    b(\n        y = 2,\n    ),\n)]\npub struct A;\n";
        assert_eq!(join_attributes(text, 120), "#[codec(a(x = 1), b(y = 2))]\npub struct A;\n");
        assert_eq!(join_attributes(text, 20), text);
        let field = "    #[codec(\n        rename = \"a\"\n    )]\n    pub a: A,\n";
        assert_eq!(join_attributes(field, 120), "    #[codec(rename = \"a\")]\n    pub a: A,\n");
    }

    #[test]
    fn numbers_print_as_integers_when_integral() {
        assert_eq!(number_tokens(8.0).to_string(), "8");
        assert_eq!(number_tokens(-3.0).to_string(), "- 3");
        assert_eq!(number_tokens(0.5).to_string(), "0.5");
    }
}
