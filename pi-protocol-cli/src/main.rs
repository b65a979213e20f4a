//! `pi-protocol`: decode and encode Pi protocol version 8 streams from the command line.
//!
//! `decode` turns a framed byte stream into one JSON message per line; `encode` turns JSON lines
//! into frames. Both exit 1 on the first invalid input (after writing everything before it) and 2
//! on bad arguments.

mod diag;
mod frames;
mod inspect;
mod messages;
mod stats;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pi_protocol::{
    encode_client_json_str, encode_server_json_str, ClientMessageDecoder, CodecOptions, ProtocolError,
    ServerMessageDecoder,
};

/// Decode and encode Pi protocol version 8 streams (4-byte big-endian length + strict CBOR).
#[derive(Parser, Debug)]
#[command(name = "pi-protocol", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read a framed byte stream and print each message as one JSON line on stdout.
    ///
    /// The input is read incrementally and fed to the decoder in chunks of --chunk-size bytes.
    /// On the first invalid frame the messages before it are printed, then one line on stderr
    /// gives the byte offset of the failing frame, the field path and the rule; exit status 1.
    Decode(DecodeArgs),
    /// Read JSON messages, one per line, and write their frames to stdout.
    ///
    /// Keys are written in the order a JavaScript object holds them, so the bytes equal what the
    /// reference TypeScript encoder produces for the same JSON. A line that is not a valid
    /// message stops the run with its line number and field path on stderr; exit status 1.
    Encode(EncodeArgs),
    /// Print every frame of a stream: its index, byte offset, payload length and message type,
    /// then the payload in CBOR diagnostic notation (RFC 8949 section 8).
    ///
    /// A bad frame is labelled INVALID, followed by the error, the offending item marked with
    /// `>>>` and `<<<` in the diagnostic text, and a hex dump of the offending bytes marked with
    /// `^^`.
    /// Frames after a bad one are still shown while their headers can be followed. Exit status 1
    /// when any frame is bad, truncated or longer than --max-frame-length.
    Inspect(inspect::InspectArgs),
    /// Summarise a stream: frame count and bytes, frame payload lengths (min, max, mean,
    /// total), messages by type, and the largest opaque payload (call, result or update).
    ///
    /// On a bad frame the summary covers the frames before it, the error goes to stderr, and
    /// the exit status is 1.
    Stats(stats::StatsArgs),
}

/// Which peer wrote the stream: `client` streams hold client messages, `server` streams server
/// messages.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Side {
    /// Messages sent by a client (hello, request, cancel).
    Client,
    /// Messages sent by a server (hello, hello_error, response, service_update, attachment).
    Server,
}

#[derive(Args, Debug)]
struct CommonArgs {
    /// Whose messages the stream holds.
    #[arg(long, value_enum)]
    side: Side,
    /// Largest accepted frame payload in bytes (0..=4294967295).
    #[arg(long, value_name = "N", default_value_t = u64::from(pi_protocol::DEFAULT_MAX_FRAME_LENGTH))]
    max_frame_length: u64,
    /// Input file; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    input: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct DecodeArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Bytes read and pushed to the decoder at a time (at least 1).
    #[arg(long, value_name = "N", default_value_t = 64 * 1024, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    chunk_size: u64,
}

#[derive(Args, Debug)]
struct EncodeArgs {
    #[command(flatten)]
    common: CommonArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Decode(args) => decode(args),
        Command::Encode(args) => encode(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Stats(args) => stats::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("pi-protocol: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Input(message)) => {
            eprintln!("pi-protocol: {message}");
            ExitCode::from(1)
        }
    }
}

/// Why a run stopped: bad arguments (exit 2) or bad input (exit 1).
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Input(String),
}

fn options(common: &CommonArgs) -> Result<CodecOptions, Failure> {
    CodecOptions::new().max_frame_length(common.max_frame_length).map_err(|e| Failure::Usage(e.to_string()))
}

fn open_input(input: &Option<PathBuf>) -> Result<Box<dyn Read>, Failure> {
    match input {
        None => Ok(Box::new(io::stdin().lock())),
        Some(path) if path.as_os_str() == "-" => Ok(Box::new(io::stdin().lock())),
        Some(path) => File::open(path)
            .map(|f| Box::new(f) as Box<dyn Read>)
            .map_err(|e| Failure::Usage(format!("cannot open {}: {e}", path.display()))),
    }
}

/// One line describing a protocol error: byte offset, field path, rule.
fn describe(error: &ProtocolError) -> String {
    let offset = error.offset().map_or_else(|| "unknown".to_owned(), |o| o.to_string());
    let path = error.path_string();
    let path = if path.is_empty() { "(message)".to_owned() } else { path };
    format!("frame at byte {offset}: {}: field {path}: {}", error.kind().as_str(), error.rule())
}

fn io_failure(e: io::Error) -> Failure {
    Failure::Input(format!("I/O error: {e}"))
}

/// Feeds `input` to `push` in chunks, printing messages as they complete.
fn decode(args: &DecodeArgs) -> Result<(), Failure> {
    let options = options(&args.common)?;
    let mut input = open_input(&args.common.input)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut buf = vec![0u8; args.chunk_size as usize];
    let mut sink = Sink { out: &mut out, error: None, io: None };
    match args.common.side {
        Side::Client => {
            let mut decoder = ClientMessageDecoder::with_options(&options);
            pump(&mut input, &mut buf, &mut sink, |chunk, sink| decoder.push_each(chunk, |m| sink.take(m)))?;
            if sink.error.is_none() {
                decoder.end().map_err(|e| sink.error = Some(e)).ok();
            }
        }
        Side::Server => {
            let mut decoder = ServerMessageDecoder::with_options(&options);
            pump(&mut input, &mut buf, &mut sink, |chunk, sink| decoder.push_each(chunk, |m| sink.take(m)))?;
            if sink.error.is_none() {
                decoder.end().map_err(|e| sink.error = Some(e)).ok();
            }
        }
    }
    if let Some(e) = sink.io.take() {
        return Err(io_failure(e));
    }
    let error = sink.error.take();
    out.flush().map_err(io_failure)?;
    match error {
        Some(e) => Err(Failure::Input(describe(&e))),
        None => Ok(()),
    }
}

/// Collects decoded messages into the output, remembering the first error.
struct Sink<'a, W: Write> {
    out: &'a mut W,
    error: Option<ProtocolError>,
    io: Option<io::Error>,
}

impl<W: Write> Sink<'_, W> {
    /// Writes a message as one JSON line (streamed from its wire encoding, so a huge payload
    /// never becomes a value tree), or remembers the first error.
    fn take<M: serde::Serialize>(&mut self, message: Result<M, ProtocolError>) {
        match message {
            Ok(message) => {
                if self.io.is_none() {
                    let written = serde_json::to_writer(&mut *self.out, &message)
                        .map_err(io::Error::from)
                        .and_then(|()| self.out.write_all(b"\n"));
                    if let Err(e) = written {
                        self.io = Some(e);
                    }
                }
            }
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }
}

fn pump<W: Write>(
    input: &mut dyn Read,
    buf: &mut [u8],
    sink: &mut Sink<'_, W>,
    mut push: impl FnMut(&[u8], &mut Sink<'_, W>),
) -> Result<(), Failure> {
    loop {
        let n = match input.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_failure(e)),
        };
        push(&buf[..n], sink);
        if sink.error.is_some() || sink.io.is_some() {
            return Ok(());
        }
    }
}

fn encode(args: &EncodeArgs) -> Result<(), Failure> {
    let options = options(&args.common)?;
    let input = BufReader::new(open_input(&args.common.input)?);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for (index, line) in input.lines().enumerate() {
        let line_number = index + 1;
        let line = line.map_err(io_failure)?;
        if line.trim().is_empty() {
            continue;
        }
        // serde_json names what is wrong with text that is not JSON; the line itself is
        // encoded from its text, keys in its order and numbers exact, as the reference would.
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&line) {
            out.flush().map_err(io_failure)?;
            return Err(Failure::Input(format!("line {line_number}: not JSON ({})", e.classify_name())));
        }
        let frame = match args.common.side {
            Side::Client => encode_client_json_str(&line, &options),
            Side::Server => encode_server_json_str(&line, &options),
        };
        match frame {
            Ok(frame) => out.write_all(&frame).map_err(io_failure)?,
            Err(e) => {
                out.flush().map_err(io_failure)?;
                let path = e.path_string();
                let path = if path.is_empty() { "(message)".to_owned() } else { path };
                return Err(Failure::Input(format!(
                    "line {line_number}: {}: field {path}: {}",
                    e.kind().as_str(),
                    e.rule()
                )));
            }
        }
    }
    out.flush().map_err(io_failure)
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "I/O error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "data error",
            serde_json::error::Category::Eof => "unexpected end",
        }
    }
}
