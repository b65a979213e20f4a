//! `pi-protocol`: decode, encode, inspect and summarise Pi protocol streams from the command
//! line, against the built-in version 8 schema or any schema file (`--schema FILE`), compare
//! two revisions of a schema (`schema diff`), and speak to live servers (`discover`, `call`,
//! `catalogue`, `subscribe`).
//!
//! Exit status: 0 on success, 1 on invalid input (after writing everything before it), a
//! compatibility requirement that breaks or an error answered by a live server, 2 on bad
//! arguments, an unusable schema file or a server that cannot be reached.

mod decode;
mod diag;
mod encode;
mod explain;
mod inspect;
mod protocol;
mod remote;
mod resolve;
mod schema_diff;
mod stats;
mod subscribe;
mod summary;

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pi_protocol::{CodecOptions, ProtocolError};

use protocol::Protocol;

/// Decode, encode, inspect and summarise Pi protocol streams; compare schema revisions; find,
/// call and subscribe to live servers.
///
/// A stream is a sequence of frames: a 4-byte big-endian length, then one item of strict CBOR.
/// Every stream command follows the built-in version 8 schema, or the schema file given with
/// --schema. Exit status: 0 on success, 1 on invalid input, a compatibility requirement that
/// breaks or an error answered by a live server, 2 on bad arguments, an unusable schema file or
/// a server that cannot be reached.
#[derive(Parser, Debug)]
#[command(name = "pi-protocol", version)]
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
    /// When the very first frame is refused but is a valid message of the other side, a second
    /// line says so.
    Decode(decode::DecodeArgs),
    /// Read JSON messages, one per line, and write their frames to stdout.
    ///
    /// Keys are written in the order a JavaScript object holds them, so the bytes equal what the
    /// reference TypeScript encoder produces for the same JSON. A line that is not a valid
    /// message stops the run with its line number and what is wrong on stderr (the unknown or
    /// missing key, the values allowed); exit status 1.
    Encode(encode::EncodeArgs),
    /// Print every frame of a stream: its index, byte offset, payload length, message type, id
    /// and opaque payload sizes, then the payload in CBOR diagnostic notation (RFC 8949 section
    /// 8).
    ///
    /// A bad frame is labelled INVALID, followed by the error, the offending item marked in the
    /// diagnostic text (between >>> and <<<), and a hex dump of the offending bytes marked with
    /// ^^. Frames after a bad one are still shown while their headers can be followed. Exit status 1
    /// when any frame is bad, truncated or longer than --max-frame-length.
    Inspect(inspect::InspectArgs),
    /// Summarise a stream: frame count and bytes, frame payload lengths (min, max, mean,
    /// total), messages by type, and the largest opaque payload.
    ///
    /// On a bad frame the summary covers the frames before it, the error goes to stderr, and
    /// the exit status is 1.
    Stats(stats::StatsArgs),
    /// Work with schema files: compare two revisions of a schema.
    Schema(schema_diff::SchemaArgs),
    /// Find the servers listening in a directory (DIR/<serverId>.sock) and print one JSON line
    /// {"serverId", "path"} per server that answers the handshake with its socket's serverId.
    Discover(remote::DiscoverArgs),
    /// Call a service of a live server: the result as JSON on stdout.
    ///
    /// The call is {"serviceId": SERVICE, "member": MEMBER, "args": ARGS_JSON}, sent to the
    /// server, or with --session ID to that Session after attaching to it through
    /// pi.session-management. A server error prints its code and message on stderr (exit
    /// status 1); usage and connection errors exit with status 2. Ctrl-C while the call is
    /// pending cancels it at the server and exits with status 130.
    Call(remote::CallArgs),
    /// List the services of a live server ($chord.service catalogue): one JSON line
    /// {"serviceId", "mode"} per service.
    Catalogue(remote::CatalogueArgs),
    /// Follow a Chord service of a live server: one JSON line {"member", "instance",
    /// "sequence", "value"} per state member of the snapshot, then one per update, with the
    /// member's whole value after the update's ops.
    ///
    /// A refused subscribe prints the server's code and message on stderr (exit status 1), as an
    /// update that cannot be followed does; usage and connection errors exit with status 2.
    /// Ctrl-C unsubscribes and ends the run with status 0. A snapshot without state members
    /// prints a note on stderr (there is nothing to print until an instance gains one).
    Subscribe(subscribe::SubscribeArgs),
}

/// Which peer wrote the stream: `client` streams hold client messages, `server` streams server
/// messages.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Side {
    /// Messages sent by a client (version 8: hello, request, cancel).
    Client,
    /// Messages sent by a server (version 8: hello, hello_error, response, service_update,
    /// attachment).
    Server,
}

impl Side {
    /// The side in the schema model's terms.
    fn model(self) -> pi_protocol_gen::model::Side {
        match self {
            Side::Client => pi_protocol_gen::model::Side::Client,
            Side::Server => pi_protocol_gen::model::Side::Server,
        }
    }
}

#[derive(Args, Debug)]
struct CommonArgs {
    /// Whose messages the stream holds.
    #[arg(long, value_enum)]
    side: Side,
    /// Follow the schema in FILE instead of the built-in version 8 one: a schema in this
    /// project's form (like schema/pi-protocol.v8.json) or the reference's published form (a
    /// JSON document holding clientMessage, serverMessage and limits). Nothing is compiled;
    /// output, errors and exit statuses are those of the built-in schema.
    #[arg(long, value_name = "FILE")]
    schema: Option<PathBuf>,
    /// Largest accepted frame payload in bytes (0..=4294967295) [default: the schema's
    /// maxFrameLength, 16777216 for version 8].
    #[arg(long, value_name = "N")]
    max_frame_length: Option<u64>,
    /// Input file; stdin when absent or -.
    #[arg(value_name = "FILE")]
    input: Option<PathBuf>,
}

impl CommonArgs {
    /// The schema of the run and its codec options.
    fn protocol(&self) -> Result<(Protocol, CodecOptions), Failure> {
        let protocol = Protocol::load(self.schema.as_deref())?;
        if protocol.model.message_type(self.side.model()).is_none() {
            let file = self.schema.as_deref().map_or_else(String::new, |f| f.display().to_string());
            let side = self.side.model().as_str();
            return Err(Failure::usage(format!("the schema {file} defines no {side} messages")));
        }
        let options = protocol.options(self.max_frame_length)?;
        Ok((protocol, options))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Decode(args) => decode::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Schema(args) => schema_diff::run(args),
        Command::Discover(args) => remote::discover(args),
        Command::Call(args) => remote::call(args),
        Command::Catalogue(args) => remote::catalogue(args),
        Command::Subscribe(args) => subscribe::subscribe(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) if failure.is_quiet() => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("pi-protocol: {}", failure.message);
            if let Some(hint) = &failure.hint {
                eprintln!("pi-protocol: hint: {hint}");
            }
            ExitCode::from(failure.status)
        }
    }
}

/// Why a run stopped: bad arguments (exit 2) or bad input (exit 1), in one line, and perhaps a
/// hint at the likely cause.
#[derive(Debug)]
pub struct Failure {
    status: u8,
    message: String,
    hint: Option<String>,
}

impl Failure {
    /// Bad arguments or an unusable file given as an argument: exit status 2.
    fn usage(message: impl Into<String>) -> Failure {
        Failure { status: 2, message: message.into(), hint: None }
    }

    /// Invalid input, or a requirement that does not hold: exit status 1.
    fn input(message: impl Into<String>) -> Failure {
        Failure { status: 1, message: message.into(), hint: None }
    }

    /// The user pressed Ctrl-C (SIGINT) during a live command: exit status 130, as a shell
    /// reports a process that SIGINT ended.
    fn interrupted(message: impl Into<String>) -> Failure {
        Failure { status: 130, message: message.into(), hint: None }
    }

    /// The reader of the output went away: the run stops with status 0 and prints nothing.
    fn output_closed() -> Failure {
        Failure { status: 0, message: String::new(), hint: None }
    }

    /// Whether the run stops quietly and successfully (see [`Failure::output_closed`]).
    fn is_quiet(&self) -> bool {
        self.status == 0
    }

    /// The same failure, with a line about its likely cause.
    fn with_hint(mut self, hint: Option<String>) -> Failure {
        self.hint = hint;
        self
    }
}

fn open_input(input: &Option<PathBuf>) -> Result<Box<dyn Read>, Failure> {
    match input {
        None => Ok(Box::new(io::stdin().lock())),
        Some(path) if path.as_os_str() == "-" => Ok(Box::new(io::stdin().lock())),
        Some(path) => File::open(path)
            .map(|f| Box::new(f) as Box<dyn Read>)
            .map_err(|e| Failure::usage(format!("cannot open {}: {e}", path.display()))),
    }
}

/// One line describing a protocol error: the byte offset of the frame when known, then what
/// the library says (kind, field path when there is one, rule).
fn describe(error: &ProtocolError) -> String {
    let path = error.path_string();
    let at = if path.is_empty() { String::new() } else { format!(" at {path}") };
    let text = format!("{}{at}: {}", error.kind().as_str(), error.rule());
    match error.offset() {
        Some(offset) => format!("frame at byte {offset}: {text}"),
        None => text,
    }
}

/// An I/O error as a failure; except that a reader of the output going away (`... | head`)
/// ends the run quietly and successfully, as it ends any filter: nothing is left to do.
fn io_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Failure::output_closed();
    }
    Failure::input(format!("I/O error: {e}"))
}
