//! Options and limits as the reference applies them (docs/PROTOCOL.md sections 1, 2 and 6).

use pi_protocol::runtime::limits::number_option;
use pi_protocol::{
    encode_client_message_with, CborLimits, ClientMessage, ClientMessageDecoder, CodecOptions, ErrorKind, Payload,
    Request, RequestId, RpcTarget, Rule, ServerId, ServerTarget,
};

fn request_with_call(call: Payload) -> ClientMessage {
    ClientMessage::Request(Request::new(
        RequestId::new("r").unwrap(),
        RpcTarget::Server(ServerTarget::new(ServerId::new("7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b").unwrap())),
        call,
    ))
}

#[test]
fn out_of_range_options_are_refused_when_built() {
    assert_eq!(CodecOptions::new().max_frame_length(1 << 32).unwrap_err().kind(), ErrorKind::Options);
    assert!(CodecOptions::new().max_frame_length(u64::from(u32::MAX)).is_ok());
    assert!(CodecOptions::new().max_frame_length(0).is_ok());
    assert_eq!(CborLimits::new(0, 0, 513).unwrap_err().kind(), ErrorKind::Options);
    assert_eq!(CborLimits::new(u64::from(u32::MAX), u64::from(u32::MAX), 512).unwrap(), CborLimits::widest());
    for bad in [-1.0, 2.5, f64::NAN, f64::INFINITY, 4_294_967_296.0] {
        assert!(number_option("maxFrameLength", bad, u64::from(u32::MAX)).is_err(), "{bad}");
    }
    assert_eq!(number_option("maxFrameLength", 16.0, u64::from(u32::MAX)).unwrap(), 16);
    let err = ClientMessageDecoder::with_max_frame_length(1 << 40).unwrap_err();
    assert_eq!(err.rule(), Rule::OptionRange { name: "maxFrameLength", min: 0, max: u64::from(u32::MAX) });
}

#[test]
fn cbor_limit_setters_change_one_limit_and_check_its_range() {
    let limits = CborLimits::default().with_max_byte_length(7).unwrap();
    assert_eq!((limits.max_byte_length(), limits.max_container_length(), limits.max_depth()), (7, 1_000_000, 64));
    let limits = limits.with_max_container_length(3).unwrap().with_max_depth(512).unwrap();
    assert_eq!(limits, CborLimits::new(7, 3, 512).unwrap());
    let range = |name| Rule::OptionRange { name, min: 0, max: u64::from(u32::MAX) };
    assert_eq!(CborLimits::default().with_max_byte_length(1 << 32).unwrap_err().rule(), range("maxByteLength"));
    assert_eq!(
        CborLimits::default().with_max_container_length(1 << 32).unwrap_err().rule(),
        range("maxContainerLength")
    );
    assert_eq!(
        CborLimits::default().with_max_depth(513).unwrap_err().rule(),
        Rule::OptionRange { name: "maxDepth", min: 0, max: 512 }
    );
    let frames = CodecOptions::new().cbor_limits(limits).max_frame_length(99).unwrap();
    assert_eq!(frames.limits(), CborLimits::new(99, 3, 512).unwrap(), "the frame limit becomes maxByteLength only");
}

#[test]
fn a_header_over_the_limit_fails_before_its_payload_arrives() {
    let mut decoder = ClientMessageDecoder::with_max_frame_length(16).unwrap();
    assert!(decoder.push(&[0, 0]).is_empty());
    let results = decoder.push(&[0, 17]);
    assert_eq!(results.len(), 1);
    let err = results[0].as_ref().unwrap_err();
    assert_eq!(err.rule(), Rule::FrameTooLong { length: 17, limit: 16 });
    assert_eq!(err.offset(), Some(0));
}

#[test]
fn a_larger_frame_limit_also_raises_the_string_limit() {
    // Measured with the reference: with maxFrameLength 32 MiB, a 17 MiB string in a call decodes.
    let call = Payload::from_value(&serde_json::Value::String("x".repeat(17 << 20))).unwrap();
    let message = request_with_call(call);
    let options = CodecOptions::new().max_frame_length(32 << 20).unwrap();
    let frame = encode_client_message_with(&message, &options).unwrap();
    let mut decoder = ClientMessageDecoder::with_options(&options);
    let results = decoder.push(&frame);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].as_ref().unwrap(), &message);
    // With the default limit the same frame is refused as soon as its header is read.
    let mut decoder = ClientMessageDecoder::new();
    let err = decoder.push(&frame[..4]).pop().unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Frame);
    assert!(pi_protocol::encode_client_message(&message).is_err());
}

#[test]
fn encoders_apply_depth_and_container_limits_to_payloads_in_place() {
    // Measured with the reference: a call nested 63 arrays deep encodes, 64 deep does not; an
    // array of 1,000,001 items does not.
    let nest = |n: usize| {
        let mut v = serde_json::Value::Null;
        for _ in 0..n {
            v = serde_json::Value::Array(vec![v]);
        }
        request_with_call(Payload::from_value(&v).unwrap())
    };
    let options = CodecOptions::new();
    assert!(encode_client_message_with(&nest(63), &options).is_ok());
    let err = encode_client_message_with(&nest(64), &options).unwrap_err();
    assert_eq!((err.kind(), err.rule()), (ErrorKind::Encode, Rule::DepthLimit { limit: 64 }));
    let wide = request_with_call(Payload::from_value(&serde_json::json!(vec![0; 1_000_001])).unwrap());
    let err = encode_client_message_with(&wide, &options).unwrap_err();
    assert_eq!(err.rule(), Rule::ContainerLengthLimit { limit: 1_000_000 });
    let fits = request_with_call(Payload::from_value(&serde_json::json!(vec![0; 1_000_000])).unwrap());
    assert!(encode_client_message_with(&fits, &options).is_ok());
}

#[test]
fn encoding_into_a_buffer_appends_the_frame_or_leaves_the_buffer_as_it_was() {
    use pi_protocol::runtime::encode_message_into;
    let ok = request_with_call(Payload::from_value(&serde_json::json!({"a": [1, 2.5]})).unwrap());
    let mut out = vec![0xee; 3];
    encode_message_into(&ok, &CodecOptions::new(), &mut out).unwrap();
    assert_eq!(&out[..3], &[0xee; 3]);
    assert_eq!(&out[3..], &pi_protocol::encode_client_message(&ok).unwrap()[..]);
    // Refused by the frame limit, by a payload limit, by validation: nothing is appended.
    let before = out.clone();
    let tiny = CodecOptions::new().max_frame_length(10).unwrap();
    // (The frame limit is also the CBOR byte limit, which the encoder meets first.)
    let err = encode_message_into(&ok, &tiny, &mut out).unwrap_err();
    assert_eq!((err.kind(), err.rule()), (ErrorKind::Encode, Rule::ByteLengthLimit { limit: 10 }));
    let wide = request_with_call(Payload::from_value(&serde_json::json!(vec![0; 1_000_001])).unwrap());
    assert_eq!(encode_message_into(&wide, &CodecOptions::new(), &mut out).unwrap_err().kind(), ErrorKind::Encode);
    let bad = ClientMessage::Hello(pi_protocol::ClientHello::new(pi_protocol::Integer::from(-1)));
    assert_eq!(encode_message_into(&bad, &CodecOptions::new(), &mut out).unwrap_err().kind(), ErrorKind::Schema);
    assert_eq!(out, before);
}

/// The typed decoders take fast paths for short maps, keys and strings; every limit must hold
/// on them exactly as on the general path. For a schema-valid message the only reason to refuse
/// is a CBOR limit, so the typed verdict must equal the raw validator's for every setting.
#[test]
fn every_limit_applies_to_the_envelope_on_every_path() {
    let session = ClientMessage::Request(Request::new(
        RequestId::new("req-42").unwrap(),
        RpcTarget::Session(pi_protocol::SessionTarget::new(
            ServerId::new("7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b").unwrap(),
            pi_protocol::SessionId::new("s-7f2a").unwrap(),
            pi_protocol::AttachmentId::new("att-01").unwrap(),
        )),
        Payload::from_json_str(r#"{"serviceId":"session","member":"prompt","args":["hi",[1,{"a":null}]]}"#).unwrap(),
    ));
    let frame = pi_protocol::encode_client_message(&session).unwrap();
    let payload = &frame[4..];
    let mut refused = 0;
    for bytes in [0u64, 1, 5, 6, 7, 8, 35, 36, 37, 1000] {
        for containers in [0u64, 1, 2, 3, 4, 100] {
            for depth in [0u64, 1, 2, 3, 4, 5, 6] {
                let limits = CborLimits::new(bytes, containers, depth).unwrap();
                let raw = pi_protocol::runtime::decode_cbor(payload, limits).err().map(|e| e.rule());
                let options = CodecOptions::new().cbor_limits(limits);
                let typed =
                    ClientMessageDecoder::with_options(&options).push(&frame).pop().unwrap().err().map(|e| e.rule());
                assert_eq!(typed, raw, "limits: bytes {bytes}, containers {containers}, depth {depth}");
                refused += usize::from(raw.is_some());
            }
        }
    }
    // Both verdicts occur, and each limit alone refuses the message.
    assert!(refused > 0 && refused < 10 * 6 * 7, "{refused}");
    for limits in [CborLimits::new(36, 100, 6), CborLimits::new(1000, 3, 6), CborLimits::new(1000, 100, 4)] {
        let options = CodecOptions::new().cbor_limits(limits.unwrap());
        assert!(ClientMessageDecoder::with_options(&options).push(&frame).pop().unwrap().is_err());
    }
}

/// Found by the hostile-input pass: under a `maxContainerLength` below an envelope's own width
/// (a request map has 4 entries) the encoder used to write a frame that a decoder with the same
/// options refuses. What the encoder writes, the decoder must read back.
#[test]
fn the_encoder_applies_the_container_limit_to_the_envelope_itself() {
    let message = request_with_call(Payload::null());
    for containers in 0..=5u64 {
        let options = CodecOptions::new().cbor_limits(CborLimits::new(1 << 20, containers, 64).unwrap());
        let encoded = encode_client_message_with(&message, &options);
        let decoded = encoded.as_ref().ok().map(|frame| ClientMessageDecoder::with_options(&options).push(frame));
        if containers < 4 {
            let err = encoded.unwrap_err();
            assert_eq!(err.rule(), Rule::ContainerLengthLimit { limit: containers }, "{containers}");
        } else {
            assert_eq!(decoded.unwrap().pop().unwrap().unwrap(), message);
        }
    }
}
