//! The tokio transports (feature `tokio`): [`tokio_util::codec`] framing of messages, and a
//! driver that runs a sans-IO connection over any `AsyncRead + AsyncWrite` byte stream.

mod budget;
mod codec;
mod driver;

pub use budget::{ByteBudget, ByteCharge};
pub use codec::{ClientCodec, MessageCodec, ServerCodec};
pub use driver::{
    ClientDriver, Driver, DriverOptions, Endpoint, ServerDriver, DEFAULT_FRAME_TIMEOUT, DEFAULT_WRITE_TIMEOUT,
};
