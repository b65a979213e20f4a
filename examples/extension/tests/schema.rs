//! `schema/metrics.json` follows the protocol: every definition of the facade's version 8
//! schema (`pi_protocol::SCHEMA_JSON`, the schema its types were generated from) is here
//! unchanged, its message unions list the facade's members first and in order, and its version
//! and limits are the facade's. When `pi-protocol` changes its schema, this test names the
//! definition to bring over before this crate regenerates.

use serde_json::Value;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("a JSON schema")
}

#[test]
fn every_version_8_definition_is_the_facade_s() {
    let facade = parse(pi_protocol::SCHEMA_JSON);
    let ours = parse(pi_metrics_extension::SCHEMA_JSON);
    for key in ["x-protocol-version", "x-limits"] {
        assert_eq!(ours[key], facade[key], "{key}");
    }
    let (facade_defs, our_defs) = (facade["$defs"].as_object().unwrap(), ours["$defs"].as_object().unwrap());
    for (name, definition) in facade_defs {
        let ours = our_defs.get(name).unwrap_or_else(|| panic!("#/$defs/{name} is missing"));
        if matches!(name.as_str(), "ClientMessage" | "ServerMessage") {
            let (members, our_members) = (definition["anyOf"].as_array().unwrap(), ours["anyOf"].as_array().unwrap());
            assert!(our_members.len() > members.len(), "#/$defs/{name} adds this crate's messages");
            assert_eq!(&our_members[..members.len()], &members[..], "#/$defs/{name} starts with the facade's members");
        } else {
            assert_eq!(ours, definition, "#/$defs/{name} differs from the facade's");
        }
    }
    // Version 8 definitions first, in the facade's order, then this crate's.
    let names: Vec<&String> = our_defs.keys().take(facade_defs.len()).collect();
    assert_eq!(names, facade_defs.keys().collect::<Vec<_>>());
}
