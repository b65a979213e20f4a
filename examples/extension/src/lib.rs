//! Pi protocol version 8 extended with messages of this crate: an example of a downstream crate
//! that follows the protocol and adds to it (see `README.md`).
//!
//! `schema/metrics.json` is the facade's `schema/pi-protocol.v8.json`, every definition as it
//! is, plus two messages: a client `report`s a measurement ([`Report`]: a number, an array of
//! numbers, an enumeration, a record of labels and an optional nested object), and its server
//! answers with a `report_ack` ([`ReportAck`]). `build.rs` generates the types with
//! `pi_protocol_gen::Builder`; the facade's generic machinery does the rest, exactly as for its
//! own types: the strict codec, serde in the wire shape and the JSON view come with the types,
//! and the decoders, the tokio codec and blocking I/O are the facade's, named with this crate's
//! messages ([`ServerCodec`], [`ClientMessageDecoder`], ...).
//!
//! On the wire the extended messages are Pi frames like any other; a version 8 peer decodes
//! every version 8 message this crate sends and refuses a `report` (no member of its
//! `ClientMessage` has that `type`). Send them only to peers that speak the extension.
//!
//! ```
//! use pi_metrics_extension::{ClientMessage, ClientMessageDecoder, MetricName, Report, Unit};
//! use pi_protocol::{encode_message, CodecOptions, Number};
//!
//! let number = |value: f64| Number::new(value).expect("finite");
//! let report = ClientMessage::from(Report::new(
//!     MetricName::new("latency.p50")?,
//!     number(12.5),
//!     vec![number(12.0), number(13.0)],
//!     Unit::Ms,
//!     pi_protocol::Record::new(),
//! ));
//! let frame = encode_message(&report, &CodecOptions::default())?;
//! let mut decoder = ClientMessageDecoder::new();
//! assert_eq!(decoder.messages(&frame).next().transpose()?, Some(report));
//! # Ok::<(), pi_protocol::ProtocolError>(())
//! ```

#![forbid(unsafe_code)]

/// The types generated from `schema/metrics.json` by `build.rs`: the version 8 envelopes (this
/// crate's own copies of them) and this crate's messages.
pub mod metrics {
    include!(concat!(env!("OUT_DIR"), "/metrics.rs"));
}

pub use metrics::{ClientMessage, MetricName, Origin, Report, ReportAck, ServerMessage, Unit};

/// The schema the types were generated from, as text.
pub const SCHEMA_JSON: &str = include_str!("../schema/metrics.json");

/// Decodes the stream a client of the extended protocol sends (on a server).
pub type ClientMessageDecoder = pi_protocol::MessageDecoder<ClientMessage>;

/// Decodes the stream a server of the extended protocol sends (on a client).
pub type ServerMessageDecoder = pi_protocol::MessageDecoder<ServerMessage>;

/// The server side's tokio codec: decodes [`ClientMessage`]s, encodes [`ServerMessage`]s.
pub type ServerCodec = pi_protocol::io::MessageCodec<ClientMessage, ServerMessage>;

/// The client side's tokio codec: decodes [`ServerMessage`]s, encodes [`ClientMessage`]s.
pub type ClientCodec = pi_protocol::io::MessageCodec<ServerMessage, ClientMessage>;
