//! Stands for an application that depends on `pi-protocol` (and `serde_json` with its default
//! features): its tests check that `serde_json` behaves here as if `pi-protocol` were absent
//! (no `preserve_order`, no `float_roundtrip` forced on the application), and that
//! `pi-protocol` keeps wire key order and exact numbers in its own outputs all the same.

#[cfg(test)]
mod tests {
    use pi_protocol::{encode_client_json_str, ClientMessage, Payload, ServerMessage, ServerMessageDecoder};
    use serde_json::{Map, Value};

    /// Text that `serde_json` without `float_roundtrip` reads one unit in the last place away
    /// from the nearest float64 (and with it, exactly).
    const INEXACT: &str = "104501.28571428571";

    #[test]
    fn serde_json_maps_iterate_sorted() {
        // With `preserve_order` a Map keeps insertion order; without it, keys come out sorted.
        let map: Map<String, Value> = serde_json::from_str(r#"{"b": 1, "a": 2, "c": 3}"#).unwrap();
        assert_eq!(map.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn serde_json_reads_floats_its_default_way() {
        let exact: f64 = INEXACT.parse().unwrap();
        let read: f64 = serde_json::from_str(INEXACT).unwrap();
        assert_ne!(read.to_bits(), exact.to_bits(), "float_roundtrip is on in this application");
        assert_eq!(read.to_bits().abs_diff(exact.to_bits()), 1);
    }

    #[test]
    fn pi_protocol_keeps_wire_order_and_exact_numbers_all_the_same() {
        let text = format!(r#"{{"serviceId":"s","member":"m","args":[{INEXACT},{{"z":1,"a":2}}]}}"#);
        let payload = Payload::from_json_str(&text).unwrap();
        // Streamed out: the wire order and the exact number.
        assert_eq!(serde_json::to_string(&payload).unwrap(), text);
        // As a Value: the application's Map, sorted here.
        let value = payload.to_value();
        assert_eq!(value["args"][0].as_f64().unwrap().to_bits(), INEXACT.parse::<f64>().unwrap().to_bits());
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["args", "member", "serviceId"]);
        // A message read from text keeps its payload's order, and encodes from text exactly as
        // the text says.
        let line = format!(r#"{{"type":"request","id":"r","target":{{"serverId":"3b241101-e2bb-4255-8caf-4136c566a962"}},"call":{text}}}"#);
        let message: ClientMessage = serde_json::from_str(&line).unwrap();
        assert_eq!(serde_json::to_string(&message).unwrap(), line.replace(INEXACT, &read_back(INEXACT)));
        let frame = encode_client_json_str(&line, &Default::default()).unwrap();
        let round = Payload::from_cbor(frame[4..].to_vec().into(), Default::default()).unwrap();
        assert_eq!(serde_json::to_string(&round).unwrap(), line);
    }

    /// What this application's serde_json makes of `text` when it reads it as a number.
    fn read_back(text: &str) -> String {
        serde_json::to_string(&serde_json::from_str::<f64>(text).unwrap()).unwrap()
    }

    #[test]
    fn a_recorded_stream_decodes_to_wire_ordered_json() {
        let stream = include_bytes!("../../captures/session-server.bin");
        let expected = include_str!("../../captures/session-server.jsonl");
        let mut decoder = ServerMessageDecoder::new();
        let mut lines = Vec::new();
        for message in decoder.push(stream) {
            let message: ServerMessage = message.unwrap();
            lines.push(serde_json::to_string(&message).unwrap());
        }
        decoder.end().unwrap();
        assert_eq!(lines, expected.lines().collect::<Vec<_>>());
    }
}
