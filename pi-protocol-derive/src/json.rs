//! Emission of the JSON view (`#[codec(json)]`): `serde::Serialize` and `serde::Deserialize` in
//! the exact wire shape, and the inherent `to_json` / `from_json`, all through the runtime's
//! `wire_json` module.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Container;

/// The JSON view of the type.
pub fn view(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let private = quote!(#krate::wire_json::__private);
    let to_json_doc = format!(" The [`{ident}`] as JSON in its wire shape (keys in wire order), without validation.");
    let from_json_doc = format!(
        " Validates `value` as a [`{ident}`] with exactly the rules of the wire decoder (and its default limits)."
    );
    quote! {
        #[automatically_derived]
        impl #private::serde::Serialize for #ident {
            fn serialize<__S: #private::serde::Serializer>(
                &self,
                __serializer: __S,
            ) -> ::core::result::Result<__S::Ok, __S::Error> {
                #krate::wire_json::serialize_wire(self, __serializer)
            }
        }

        #[automatically_derived]
        impl<'de> #private::serde::Deserialize<'de> for #ident {
            fn deserialize<__D: #private::serde::Deserializer<'de>>(
                __deserializer: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                #krate::wire_json::deserialize_wire(__deserializer)
            }
        }

        impl #ident {
            #[doc = #to_json_doc]
            #[must_use]
            pub fn to_json(&self) -> #private::serde_json::Value {
                #krate::wire_json::to_json(self)
            }

            #[doc = #from_json_doc]
            ///
            /// # Errors
            /// A `Schema` `ProtocolError` naming the field path and the rule that failed.
            pub fn from_json(value: &#private::serde_json::Value) -> ::core::result::Result<Self, #krate::ProtocolError> {
                #krate::wire_json::from_json(value)
            }
        }
    }
}
