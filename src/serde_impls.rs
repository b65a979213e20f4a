//! `serde` support: every envelope type serializes to, and deserializes from, its exact wire JSON
//! shape (docs/PROTOCOL.md section 4: `type` tags, camelCase keys, `ok` discriminating responses,
//! `null` for a cleared attachment), going through the same JSON path as
//! [`ClientMessage::to_json`] and [`parse_client_message`](crate::parse_client_message). The
//! impls are derived with every generated type (`#[codec(json)]`), so a type added to the schema
//! has them too; this module holds the optional conversions and the tests.
//!
//! Deserializing applies every rule of the wire decoder (unknown keys, literals, id patterns,
//! strict-JSON payloads, integer ranges, the default CBOR limits), so a value that deserializes
//! is a value the protocol accepts; errors carry the [`ProtocolError`] text with its field path.
//! The impls read the whole message first (written as CBOR as it is read, keys in the order of
//! the input, no `serde_json::Value`), so they need a self-describing format (JSON, CBOR,
//! YAML, ...). Serializing renders the value as it is, streaming its wire encoding (wire key
//! order, whatever `serde_json` features are on).
//!
//! Id newtypes ([`ServerId`], [`RequestId`], ...) are plain JSON strings.
//!
//! ```
//! use pi_protocol::{ClientMessage, Response, ServerMessage};
//! let text = r#"{"type":"response","id":"req-1","ok":false,"error":{"code":"not_found","message":"gone"}}"#;
//! let message: ServerMessage = serde_json::from_str(text)?;
//! assert!(matches!(&message, ServerMessage::Response(Response::Failure(f)) if f.error.code.as_str() == "not_found"));
//! assert_eq!(serde_json::to_string(&message)?, text);
//!
//! // The wire rules apply on the way in: a server id must be a lowercase version 4 UUID.
//! let bad = r#"{"type":"request","id":"r","target":{"serverId":"NOT-A-UUID"},"call":null}"#;
//! let error = serde_json::from_str::<ClientMessage>(bad).unwrap_err();
//! assert!(error.to_string().contains("target.serverId"));
//! # Ok::<(), serde_json::Error>(())
//! ```

#[cfg(feature = "uuid")]
mod uuid_impls {
    use pi_protocol_runtime::{ErrorKind, ProtocolError, Rule};
    use uuid::{Uuid, Variant, Version};

    use crate::ServerId;

    /// A server id is a version 4 UUID; every [`ServerId`] converts (feature `uuid`).
    ///
    /// ```
    /// let id = pi_protocol::ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap();
    /// let uuid = uuid::Uuid::from(&id);
    /// assert_eq!(uuid.get_version_num(), 4);
    /// assert_eq!(pi_protocol::ServerId::try_from(uuid).unwrap(), id);
    /// ```
    impl From<&ServerId> for Uuid {
        fn from(id: &ServerId) -> Uuid {
            // A `ServerId` can only hold a string matching the lowercase UUID pattern.
            Uuid::try_parse(id.as_str()).expect("a ServerId always holds a valid UUID")
        }
    }

    impl From<ServerId> for Uuid {
        fn from(id: ServerId) -> Uuid {
            Uuid::from(&id)
        }
    }

    /// Accepts RFC 4122 (variant 10x) version 4 UUIDs, as `#/$defs/ServerId` requires
    /// (feature `uuid`).
    ///
    /// # Errors
    /// `Schema`/`Pattern` for any other version or variant (the nil UUID included).
    ///
    /// ```
    /// assert!(pi_protocol::ServerId::try_from(uuid::Uuid::new_v4()).is_ok());
    /// assert!(pi_protocol::ServerId::try_from(uuid::Uuid::nil()).is_err());
    /// ```
    impl TryFrom<Uuid> for ServerId {
        type Error = ProtocolError;

        fn try_from(uuid: Uuid) -> Result<ServerId, ProtocolError> {
            if uuid.get_version() != Some(Version::Random) || uuid.get_variant() != Variant::RFC4122 {
                return Err(ProtocolError::new(ErrorKind::Schema, Rule::Pattern));
            }
            ServerId::new(uuid.hyphenated().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::*;

    #[test]
    fn deserializing_applies_the_wire_rules() {
        let cases = [
            (json!({"type": "hello", "version": -1}), "version"),
            (json!({"type": "hello", "version": 8, "extra": 1}), ""),
            (json!({"type": "cancel", "id": "", "target": {"serverId": "3b241101-e2bb-4255-8caf-4136c566a962"}}), "id"),
            (json!({"type": "hello", "version": 1.5}), "version"),
        ];
        for (value, path) in cases {
            let error = serde_json::from_value::<ClientMessage>(value.clone()).unwrap_err().to_string();
            let expected = crate::parse_client_message(&value).unwrap_err();
            assert_eq!(error, expected.to_string());
            assert_eq!(expected.path_string(), path);
        }
        // `ok` picks the response shape: ok=true with an error body is refused.
        let mixed = json!({"type": "response", "id": "a", "ok": true, "error": {"code": "x", "message": ""}});
        assert!(serde_json::from_value::<ServerMessage>(mixed).is_err());
    }

    #[test]
    fn parts_use_wire_shapes() {
        let target: RpcTarget = serde_json::from_value(json!({
            "serverId": "3b241101-e2bb-4255-8caf-4136c566a962", "sessionId": "s", "attachmentId": "a"
        }))
        .unwrap();
        assert!(matches!(&target, RpcTarget::Session(t) if t.attachment_id.as_str() == "a"));
        assert_eq!(
            serde_json::to_string(&target).unwrap(),
            r#"{"serverId":"3b241101-e2bb-4255-8caf-4136c566a962","sessionId":"s","attachmentId":"a"}"#
        );
        let cleared: Attachment = serde_json::from_str(r#"{"type":"attachment","attachment":null}"#).unwrap();
        assert_eq!(cleared.attachment, None);
        let id: RequestId = serde_json::from_str(r#""req-9""#).unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""req-9""#);
        assert!(serde_json::from_str::<RequestId>(r#""""#).is_err());
        assert!(serde_json::from_str::<ServerId>(r#""3B241101-E2BB-4255-8CAF-4136C566A962""#).is_err());
        let body: ErrorBody = serde_json::from_str(r#"{"code":"c","message":""}"#).unwrap();
        assert_eq!(body.code.as_str(), "c");
    }

    #[cfg(feature = "uuid")]
    #[test]
    fn uuid_conversions_check_version_and_variant() {
        let id = ServerId::try_from(uuid::Uuid::new_v4()).unwrap();
        assert_eq!(ServerId::try_from(uuid::Uuid::from(id.clone())).unwrap(), id);
        let v1 = uuid::Uuid::parse_str("3b241101-e2bb-1255-8caf-4136c566a962").unwrap();
        assert!(ServerId::try_from(v1).is_err());
        let wrong_variant = uuid::Uuid::parse_str("3b241101-e2bb-4255-cfaf-4136c566a962").unwrap();
        assert!(ServerId::try_from(wrong_variant).is_err());
    }
}
