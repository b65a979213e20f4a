//! A hand-written envelope struct: literals (one placed with `after`), a renamed key, an
//! optional key, a nullable key and an integer minimum.

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{decode_message, encode_item, CborLimits, ErrorKind, Integer, Number, Payload, Rule};

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "type", value = "job"), literal(key = "v", value = 2, after = "jobId"))]
pub struct Job {
    #[codec(rename = "jobId", min_length = 1)]
    pub job_id: String,
    #[codec(minimum = 1)]
    pub priority: Integer,
    pub input: Option<Payload>,
    #[codec(nullable)]
    pub parent: Option<String>,
}

fn main() {
    let limits = CborLimits::default();
    let job = Job {
        job_id: "j1".to_owned(),
        priority: Integer::from(3u8),
        input: Some(Payload::from_json_str(r#"{"a":[1,true]}"#).unwrap()),
        parent: None,
    };
    let bytes = encode_item(&job, limits).unwrap();
    // {type: "job", jobId: "j1", v: 2, priority: 3, input: {...}, parent: null}
    assert_eq!(bytes[0], 0xa6);
    assert_eq!(&bytes[1..10], b"\x64type\x63job");
    assert_eq!(decode_message::<Job>(&bytes, limits).unwrap(), job);

    let without_input = Job { input: None, ..job.clone() };
    let bytes = encode_item(&without_input, limits).unwrap();
    assert_eq!(bytes[0], 0xa5);
    assert_eq!(decode_message::<Job>(&bytes, limits).unwrap(), without_input);

    let low = Job { priority: Integer::from(0u8), ..job };
    let err = encode_item(&low, limits).unwrap_err();
    assert_eq!(
        (err.kind(), err.rule(), err.path_string()),
        (ErrorKind::Schema, Rule::Minimum { min: Number::from(1) }, "priority".to_owned())
    );
}
