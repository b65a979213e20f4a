//! Every envelope the router builds, readdresses or reads, in one place.
//!
//! The router never builds a message field by field anywhere else: it forwards the values it
//! was given, swapping only the request id, and builds its own few frames (handshake answers,
//! error responses, cancels) here. Payloads are moved, never copied or re-encoded.

use crate::{
    Attachment, Cancel, ClientHello, ClientMessage, ErrorBody, ErrorResponse, Payload, Request, RequestId, Response,
    RpcTarget, ServerHello, ServerHelloError, ServerId, ServerMessage, ServerTarget, ServiceUpdate, SessionTarget,
    SubscriptionId, PROTOCOL_VERSION,
};

/// The `hello` the router sends to an upstream server: protocol version 8.
pub(super) fn client_hello() -> ClientMessage {
    ClientMessage::Hello(ClientHello::new(PROTOCOL_VERSION))
}

/// The `hello` the router answers a client with, naming `server_id`.
pub(super) fn server_hello(server_id: ServerId) -> ServerMessage {
    ServerMessage::Hello(ServerHello::new(server_id))
}

/// The `hello_error` the router answers an unsupported version with.
pub(super) fn hello_error(error: ErrorBody) -> ServerMessage {
    ServerMessage::HelloError(ServerHelloError::new(error))
}

/// An error response of the router's own.
pub(super) fn error_response(id: RequestId, error: ErrorBody) -> ServerMessage {
    ServerMessage::Response(Response::Failure(ErrorResponse::new(id, error)))
}

/// A `cancel` of the upstream request `id`.
pub(super) fn cancel(id: RequestId, target: RpcTarget) -> ClientMessage {
    ClientMessage::Cancel(Cancel::new(id, target))
}

/// A request of the router's own (on behalf of a client that went away).
pub(super) fn request(id: RequestId, target: RpcTarget, call: Payload) -> ClientMessage {
    ClientMessage::Request(Request::new(id, target, call))
}

/// The server target `{ serverId }`.
pub(super) fn server_target(server_id: ServerId) -> RpcTarget {
    RpcTarget::Server(ServerTarget::new(server_id))
}

/// `request` under the upstream id `id`, and the id it had: the target and the call are moved.
pub(super) fn readdress_request(mut request: Request, id: RequestId) -> (RequestId, ClientMessage) {
    let previous = std::mem::replace(&mut request.id, id);
    (previous, ClientMessage::Request(request))
}

/// `response` under the client's id `id`: the result or error is moved.
pub(super) fn readdress_response(response: Response, id: RequestId) -> ServerMessage {
    ServerMessage::Response(match response {
        Response::Success(mut success) => {
            success.id = id;
            Response::Success(success)
        }
        Response::Failure(mut failure) => {
            failure.id = id;
            Response::Failure(failure)
        }
    })
}

/// The message forwarding `update` unchanged.
pub(super) fn forward_update(update: ServiceUpdate) -> ServerMessage {
    ServerMessage::ServiceUpdate(update)
}

/// The message forwarding `attachment` unchanged.
pub(super) fn forward_attachment(attachment: Attachment) -> ServerMessage {
    ServerMessage::Attachment(attachment)
}

/// The id and target of a request.
pub(super) fn request_head(request: &Request) -> (&RequestId, &RpcTarget) {
    (&request.id, &request.target)
}

/// The id and target of a cancel, taken out of it.
pub(super) fn cancel_parts(cancel: Cancel) -> (RequestId, RpcTarget) {
    (cancel.id, cancel.target)
}

/// The logical server a target names.
pub(super) fn target_server(target: &RpcTarget) -> &ServerId {
    match target {
        RpcTarget::Server(server) => &server.server_id,
        RpcTarget::Session(session) => &session.server_id,
    }
}

/// The id a response settles, and whether it is `ok: true`.
pub(super) fn response_head(response: &Response) -> (&RequestId, bool) {
    match response {
        Response::Success(success) => (&success.id, true),
        Response::Failure(failure) => (&failure.id, false),
    }
}

/// The subscription an update belongs to.
pub(super) fn update_subscription(update: &ServiceUpdate) -> &SubscriptionId {
    &update.subscription_id
}

/// The route an attachment message publishes (`None`: no route).
pub(super) fn attachment_route(attachment: &Attachment) -> Option<&SessionTarget> {
    attachment.attachment.as_ref()
}

/// The server id an upstream's `hello` announces.
pub(super) fn hello_server(hello: ServerHello) -> ServerId {
    hello.server_id
}

/// The error of a `hello_error`.
pub(super) fn hello_error_body(rejection: ServerHelloError) -> ErrorBody {
    rejection.error
}

/// The version a client's `hello` offers.
pub(super) fn hello_version(hello: &ClientHello) -> i64 {
    hello.version.get()
}

/// What the router counts for each message it queues, on top of its payloads and identifiers:
/// the envelope's keys, type tag and CBOR heads.
pub(super) const ENVELOPE_BYTES: usize = 64;

fn target_bytes(target: &RpcTarget) -> usize {
    match target {
        RpcTarget::Server(server) => server.server_id.as_str().len(),
        RpcTarget::Session(session) => {
            session.server_id.as_str().len() + session.session_id.as_str().len() + session.attachment_id.as_str().len()
        }
    }
}

fn error_bytes(error: &ErrorBody) -> usize {
    error.code.as_str().len() + error.message.len()
}

/// The bytes a request id and target cost the router while their request is in flight: the id
/// twice (the client's record and the upstream's) and the target once.
pub(super) fn held_bytes(id: &RequestId, target: &RpcTarget) -> usize {
    2 * id.as_str().len() + target_bytes(target) + ENVELOPE_BYTES
}

/// The bytes a message to an upstream counts for while queued: its payload and identifiers,
/// plus [`ENVELOPE_BYTES`].
pub(super) fn client_message_bytes(message: &ClientMessage) -> usize {
    ENVELOPE_BYTES
        + match message {
            ClientMessage::Request(request) => {
                request.id.as_str().len() + target_bytes(&request.target) + request.call.as_cbor().len()
            }
            ClientMessage::Cancel(cancel) => cancel.id.as_str().len() + target_bytes(&cancel.target),
            ClientMessage::Hello(_) => 0,
            // A message type the schema gains later: its encoded frame is what it costs.
            #[allow(unreachable_patterns)]
            other => crate::encode_client_message(other).map_or(0, |frame| frame.len()),
        }
}

/// The bytes a message to a client counts for while queued: its payload and identifiers, plus
/// [`ENVELOPE_BYTES`].
pub(super) fn server_message_bytes(message: &ServerMessage) -> usize {
    ENVELOPE_BYTES
        + match message {
            ServerMessage::Response(Response::Success(success)) => {
                success.id.as_str().len() + success.result.as_ref().map_or(0, |result| result.as_cbor().len())
            }
            ServerMessage::Response(Response::Failure(failure)) => {
                failure.id.as_str().len() + error_bytes(&failure.error)
            }
            ServerMessage::ServiceUpdate(update) => {
                update.subscription_id.as_str().len() + update.update.as_cbor().len()
            }
            ServerMessage::Attachment(attachment) => attachment.attachment.as_ref().map_or(0, |route| {
                route.server_id.as_str().len() + route.session_id.as_str().len() + route.attachment_id.as_str().len()
            }),
            ServerMessage::HelloError(rejection) => error_bytes(&rejection.error),
            ServerMessage::Hello(hello) => hello.server_id.as_str().len(),
            // A message type the schema gains later: its encoded frame is what it costs.
            #[allow(unreachable_patterns)]
            other => crate::encode_server_message(other).map_or(0, |frame| frame.len()),
        }
}
