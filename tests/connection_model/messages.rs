//! Envelope values for the fuzz targets and the connection model, built in this one place: the
//! few constructors the model needs, and generators of arbitrary messages from fuzzer bytes.
//!
//! The generators draw identifiers from small pools most of the time (this server's id, three
//! request ids, three attachment routes), so hostile frames collide with a connection's real
//! state (a response to a pending id, a request on the current route), and arbitrary values the
//! rest of the time.

use arbitrary::{Result, Unstructured};
use pi_protocol::{
    Attachment, AttachmentId, Cancel, ClientHello, ClientMessage, ErrorBody, ErrorCode, ErrorResponse, Integer,
    Payload, Request, RequestId, Response, RpcTarget, ServerHello, ServerHelloError, ServerId, ServerMessage,
    ServerTarget, ServiceUpdate, SessionId, SessionTarget, SubscriptionId, SuccessResponse,
};
use serde_json::{Map, Number, Value};

/// The server the model's connections serve.
pub const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
/// Another server, for foreign targets and routes.
pub const OTHER_SERVER: &str = "9c858901-8a57-4791-81fe-4c455b099bc9";

const MAX_SAFE: i64 = (1 << 53) - 1;

/// [`SERVER`] as a [`ServerId`].
pub fn this_server() -> ServerId {
    ServerId::new(SERVER).expect("a v4 UUID")
}

/// The route `att-{k}` of session `s-1` on [`SERVER`].
pub fn route(k: u8) -> SessionTarget {
    SessionTarget::new(
        this_server(),
        SessionId::new("s-1").expect("non-empty"),
        AttachmentId::new(format!("att-{k}")).expect("non-empty"),
    )
}

/// `{ serverId }` of `server_id`.
pub fn server_target(server_id: ServerId) -> RpcTarget {
    RpcTarget::Server(ServerTarget::new(server_id))
}

/// The client's `hello` offering `version`.
pub fn client_hello(version: u32) -> ClientMessage {
    ClientMessage::Hello(ClientHello::new(Integer::from(version)))
}

/// A `request`.
pub fn request(id: RequestId, target: RpcTarget, call: Payload) -> ClientMessage {
    ClientMessage::Request(Request::new(id, target, call))
}

/// A `cancel`.
pub fn cancel(id: RequestId, target: RpcTarget) -> ClientMessage {
    ClientMessage::Cancel(Cancel::new(id, target))
}

/// The server's `hello`.
pub fn server_hello(server_id: ServerId) -> ServerMessage {
    ServerMessage::Hello(ServerHello::new(server_id))
}

/// A `hello_error`.
pub fn hello_error(error: ErrorBody) -> ServerMessage {
    ServerMessage::HelloError(ServerHelloError::new(error))
}

/// A `response`: `ok: true` for `Ok`, `ok: false` for `Err`.
pub fn response(id: RequestId, result: std::result::Result<Option<Payload>, ErrorBody>) -> ServerMessage {
    ServerMessage::Response(match result {
        Ok(result) => {
            let mut success = SuccessResponse::new(id);
            success.result = result;
            Response::Success(success)
        }
        Err(error) => Response::Failure(ErrorResponse::new(id, error)),
    })
}

/// A `service_update`.
pub fn service_update(subscription_id: SubscriptionId, update: Payload) -> ServerMessage {
    ServerMessage::ServiceUpdate(ServiceUpdate::new(subscription_id, update))
}

/// An `attachment` message.
pub fn attachment(route: Option<SessionTarget>) -> ServerMessage {
    ServerMessage::Attachment(Attachment::new(route))
}

/// An error body.
pub fn error_body(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).expect("non-empty code"), message)
}

/// Arbitrary strict JSON, nested at most `depth` levels.
pub fn json(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Number(u.int_in_range(-MAX_SAFE..=MAX_SAFE)?.into()),
        3 => {
            let f: f64 = u.arbitrary()?;
            if f.is_finite() && (f.fract() != 0.0 || f.abs() <= MAX_SAFE as f64) {
                Value::Number(Number::from_f64(f).expect("finite"))
            } else {
                Value::Null
            }
        }
        4 => Value::String(u.arbitrary()?),
        5 => {
            let n = u.int_in_range(0..=5)?;
            Value::Array((0..n).map(|_| json(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=5)?;
            let mut map = Map::new();
            for _ in 0..n {
                map.insert(u.arbitrary()?, json(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

/// An arbitrary payload.
pub fn payload(u: &mut Unstructured) -> Result<Payload> {
    Ok(Payload::from_value(&json(u, 4)?).expect("strict JSON encodes"))
}

fn non_empty(u: &mut Unstructured) -> Result<String> {
    let s: String = u.arbitrary()?;
    Ok(if s.is_empty() { "x".to_owned() } else { s })
}

/// One of `pool` three times in four, else an arbitrary non-empty string.
fn pooled(u: &mut Unstructured, pool: &[&str]) -> Result<String> {
    let pick = usize::from(u.arbitrary::<u8>()?);
    if pick % 4 == 3 {
        non_empty(u)
    } else {
        Ok(pool[pick % pool.len()].to_owned())
    }
}

/// A random version 4 UUID.
fn random_server_id(u: &mut Unstructured) -> Result<ServerId> {
    let mut b: [u8; 16] = u.arbitrary()?;
    b[6] = 0x40 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let text = format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    );
    Ok(ServerId::new(text).expect("a v4 UUID"))
}

/// [`SERVER`] half the time, [`OTHER_SERVER`] a quarter, else a random one.
pub fn server_id(u: &mut Unstructured) -> Result<ServerId> {
    Ok(match u.arbitrary::<u8>()? % 4 {
        0 | 1 => this_server(),
        2 => ServerId::new(OTHER_SERVER).expect("a v4 UUID"),
        _ => random_server_id(u)?,
    })
}

/// A request id, most often `req-1` to `req-3` (the ids a client connection assigns first).
pub fn request_id(u: &mut Unstructured) -> Result<RequestId> {
    Ok(RequestId::new(pooled(u, &["req-1", "req-2", "req-3"])?).expect("non-empty"))
}

/// A session target, most often one of the routes [`route`] builds.
pub fn session_target(u: &mut Unstructured) -> Result<SessionTarget> {
    Ok(SessionTarget::new(
        server_id(u)?,
        SessionId::new(pooled(u, &["s-1"])?).expect("non-empty"),
        AttachmentId::new(pooled(u, &["att-0", "att-1", "att-2"])?).expect("non-empty"),
    ))
}

/// A server target or a session target.
pub fn target(u: &mut Unstructured) -> Result<RpcTarget> {
    Ok(if u.arbitrary()? { server_target(server_id(u)?) } else { RpcTarget::Session(session_target(u)?) })
}

/// An arbitrary error body.
pub fn arbitrary_error_body(u: &mut Unstructured) -> Result<ErrorBody> {
    Ok(ErrorBody::new(ErrorCode::new(non_empty(u)?).expect("non-empty"), u.arbitrary::<String>()?))
}

/// An arbitrary subscription id.
pub fn subscription_id(u: &mut Unstructured) -> Result<SubscriptionId> {
    Ok(SubscriptionId::new(pooled(u, &["sub-1"])?).expect("non-empty"))
}

/// An arbitrary client message.
pub fn client_message(u: &mut Unstructured) -> Result<ClientMessage> {
    Ok(match u.int_in_range(0..=2)? {
        0 => ClientMessage::Hello(ClientHello::new(
            Integer::new(if u.arbitrary()? { 8 } else { u.int_in_range(0..=MAX_SAFE)? }).expect("safe"),
        )),
        1 => request(request_id(u)?, target(u)?, payload(u)?),
        _ => cancel(request_id(u)?, target(u)?),
    })
}

/// An arbitrary server message.
pub fn server_message(u: &mut Unstructured) -> Result<ServerMessage> {
    Ok(match u.int_in_range(0..=5)? {
        0 => server_hello(server_id(u)?),
        1 => hello_error(arbitrary_error_body(u)?),
        2 => response(request_id(u)?, Ok(if u.arbitrary()? { Some(payload(u)?) } else { None })),
        3 => response(request_id(u)?, Err(arbitrary_error_body(u)?)),
        4 => service_update(subscription_id(u)?, payload(u)?),
        _ => attachment(if u.arbitrary()? { Some(session_target(u)?) } else { None }),
    })
}
