//! [`ClientProbe`]: a [`ClientConnection`] beside a model of what it may do, checked after every
//! call (the rules of `pi_protocol::connection`, client side).

use std::collections::HashMap;

use pi_protocol::connection::{
    CallTarget, ClientConnection, ClientEvent, ClientOptions, CloseReason, ConnectionError, Violation,
};
use pi_protocol::{
    encode_client_message_with, ClientMessage, ClientMessageDecoder, Payload, RequestId, RpcTarget, ServerId,
    SessionTarget,
};

use super::frames::FrameCursor;
use super::messages;
use super::wire::ExpectedFrames;

#[derive(Debug)]
struct Pending {
    id: RequestId,
    target: RpcTarget,
    cancel_sent: bool,
}

/// A client connection and the model it is checked against.
///
/// Checks: events come in the order of the handshake (`Ready` once, first; `Closed` once,
/// last); a `Response` settles a pending request, at most once; `Closed` lists exactly the
/// pending requests, in the order they were made; every call returns what the model predicts
/// (ids, refusals, the transmit limit); the transmitted frames are exactly the model's (`hello`,
/// then the requests and cancels the calls accepted), whole and decodable; the queued length
/// is the model's and never above [`ClientOptions::max_pending_transmit`].
#[derive(Debug)]
pub struct ClientProbe {
    conn: ClientConnection,
    options: ClientOptions,
    received: FrameCursor,
    wire: ClientMessageDecoder,
    expected: ExpectedFrames<ClientMessage>,
    ready: Option<ServerId>,
    route: Option<SessionTarget>,
    pending: Vec<Pending>,
    /// Every id made, with how many times it settled.
    settled: HashMap<RequestId, u32>,
    next: u64,
    closed: Option<CloseReason>,
    /// Whether the close came from received bytes (not from a call of the application).
    closed_by_peer: bool,
}

impl ClientProbe {
    /// A new connection with `options`: it queues its `hello`, or starts closed.
    pub fn new(options: ClientOptions) -> Self {
        let mut probe = ClientProbe {
            conn: ClientConnection::new(options.clone()),
            wire: ClientMessageDecoder::with_options(&options.codec),
            options,
            received: FrameCursor::default(),
            expected: ExpectedFrames::default(),
            ready: None,
            route: None,
            pending: Vec::new(),
            settled: HashMap::new(),
            next: 1,
            closed: None,
            closed_by_peer: false,
        };
        let close = match probe.predict_queue(messages::client_hello(probe.options.version)) {
            Ok(true) => None,
            Ok(false) => Some(CloseReason::TransmitQueueFull { limit: probe.options.max_pending_transmit }),
            Err(error) => Some(CloseReason::Encode(error)),
        };
        probe.expect_events_of_a_call(close);
        probe
    }

    /// Encodes `message` as the connection would and queues it in the model: `Ok(true)` when
    /// it fits under the transmit limit, `Ok(false)` when it does not (nothing queued).
    fn predict_queue(&mut self, message: ClientMessage) -> Result<bool, pi_protocol::ProtocolError> {
        let frame = encode_client_message_with(&message, &self.options.codec)?;
        Ok(self.expected.queue(message, frame.len(), self.options.max_pending_transmit))
    }

    /// After a call of the application: no event, or exactly the `Closed` the model predicts.
    fn expect_events_of_a_call(&mut self, close: Option<CloseReason>) {
        let events: Vec<ClientEvent> = std::iter::from_fn(|| self.conn.poll_event()).collect();
        match close {
            None => assert!(events.is_empty(), "a call produced events: {events:?}"),
            Some(reason) => {
                let unsettled = self.pending.iter().map(|p| p.id.clone()).collect();
                assert_eq!(events, vec![ClientEvent::Closed { reason: reason.clone(), unsettled }]);
                self.pending.clear();
                self.closed = Some(reason);
            }
        }
        self.check_state();
    }

    fn check_state(&self) {
        assert_eq!(self.conn.is_closed(), self.closed.is_some());
        assert_eq!(self.conn.is_ready(), self.ready.is_some() && self.closed.is_none());
        assert_eq!(self.conn.route(), self.route.as_ref());
        assert_eq!(self.conn.pending_len(), self.pending.len());
        assert_eq!(self.conn.pending_transmit_len(), self.expected.len(), "queued bytes differ from the model");
        assert!(self.expected.len() <= self.options.max_pending_transmit);
        if self.closed.is_none() {
            assert_eq!(self.conn.server_id(), self.ready.as_ref());
        }
    }

    /// Feeds bytes from the server and checks the events they produce.
    pub fn receive(&mut self, bytes: &[u8]) {
        if self.closed.is_some() {
            self.conn.receive(bytes);
            assert_eq!(self.conn.poll_event(), None, "an event after Closed");
            self.check_state();
            return;
        }
        self.received.feed(bytes);
        self.conn.receive(bytes);
        while let Some(event) = self.conn.poll_event() {
            assert!(self.closed.is_none(), "an event after Closed: {event:?}");
            match event {
                ClientEvent::Ready { server_id } => {
                    assert!(self.ready.is_none(), "Ready twice");
                    self.ready = Some(server_id);
                }
                ClientEvent::Response { id, .. } => {
                    assert!(self.ready.is_some(), "a response before Ready");
                    let at = self.pending.iter().position(|p| p.id == id);
                    let at = at.unwrap_or_else(|| panic!("a response for {id:?}, which is not pending"));
                    self.pending.remove(at);
                    let count = self.settled.get_mut(&id).expect("made");
                    *count += 1;
                    assert_eq!(*count, 1, "{id:?} settled twice");
                }
                ClientEvent::Update { .. } => assert!(self.ready.is_some(), "an update before Ready"),
                ClientEvent::Attachment { route } => {
                    assert!(self.ready.is_some(), "an attachment before Ready");
                    if let Some(route) = &route {
                        assert_eq!(Some(&route.server_id), self.ready.as_ref(), "a route of another server was taken");
                    }
                    self.route = route;
                }
                ClientEvent::Closed { reason, unsettled } => {
                    let made: Vec<RequestId> = self.pending.iter().map(|p| p.id.clone()).collect();
                    assert_eq!(unsettled, made, "Closed lists other requests than the pending ones");
                    self.check_peer_close(&reason);
                    self.pending.clear();
                    self.closed = Some(reason);
                    self.closed_by_peer = true;
                }
                // Every server message of version 8 has a rule in the client connection.
                ClientEvent::Other(message) => panic!("a version 8 message passed on as Other: {message:?}"),
                other => panic!("an event the model does not know: {other:?}"),
            }
        }
        self.check_state();
    }

    /// The reasons received bytes can close a client with, given the model's state.
    fn check_peer_close(&self, reason: &CloseReason) {
        let handshake = self.ready.is_none();
        match reason {
            CloseReason::Rejected(_) | CloseReason::Violation(Violation::ExpectedHello) => {
                assert!(handshake, "{reason:?} after the handshake")
            }
            CloseReason::Violation(Violation::UnexpectedHello) | CloseReason::HelloError(_) => {
                assert!(!handshake, "{reason:?} during the handshake")
            }
            CloseReason::Violation(Violation::ForeignAttachment(server_id)) => {
                assert!(!handshake, "{reason:?} during the handshake");
                assert_ne!(Some(server_id), self.ready.as_ref(), "the route named this server");
            }
            CloseReason::Violation(Violation::UnknownResponse(id)) => {
                assert!(!self.pending.iter().any(|p| &p.id == id), "{id:?} is pending")
            }
            CloseReason::Violation(Violation::Decode(_)) => {}
            other => panic!("received bytes closed the client with {other:?}"),
        }
    }

    /// Makes a request and checks the outcome against the model; the id when it was made.
    pub fn request(&mut self, target: CallTarget, call: Payload) -> Option<RequestId> {
        let result = self.conn.request(target, call.clone());
        let (predicted, close) = self.predict_request(target, call);
        assert_eq!(result, predicted, "request({target:?})");
        self.expect_events_of_a_call(close);
        result.ok()
    }

    fn predict_request(
        &mut self,
        target: CallTarget,
        call: Payload,
    ) -> (Result<RequestId, ConnectionError>, Option<CloseReason>) {
        if self.closed.is_some() {
            return (Err(ConnectionError::Closed), None);
        }
        let Some(server_id) = &self.ready else { return (Err(ConnectionError::NotReady), None) };
        let target = match target {
            CallTarget::Server => messages::server_target(server_id.clone()),
            CallTarget::Session => match &self.route {
                Some(route) => RpcTarget::Session(route.clone()),
                None => return (Err(ConnectionError::NoRoute), None),
            },
        };
        let id = RequestId::new(format!("{}{}", self.options.request_id_prefix, self.next)).expect("non-empty");
        match self.predict_queue(messages::request(id.clone(), target.clone(), call)) {
            Err(error) => (Err(ConnectionError::Encode(error)), None),
            Ok(false) => (
                Err(ConnectionError::Closed),
                Some(CloseReason::TransmitQueueFull { limit: self.options.max_pending_transmit }),
            ),
            Ok(true) => {
                self.next += 1;
                assert!(self.settled.insert(id.clone(), 0).is_none(), "{id:?} made twice");
                self.pending.push(Pending { id: id.clone(), target, cancel_sent: false });
                (Ok(id), None)
            }
        }
    }

    /// Cancels `id` and checks the outcome against the model.
    pub fn cancel(&mut self, id: &RequestId) -> bool {
        let queued = self.conn.cancel(id);
        let mut close = None;
        let predicted = match self.pending.iter().position(|p| &p.id == id) {
            Some(at) if self.closed.is_none() && !self.pending[at].cancel_sent => {
                let message = messages::cancel(id.clone(), self.pending[at].target.clone());
                match self.predict_queue(message) {
                    Ok(true) => {
                        self.pending[at].cancel_sent = true;
                        true
                    }
                    Ok(false) => {
                        close = Some(CloseReason::TransmitQueueFull { limit: self.options.max_pending_transmit });
                        false
                    }
                    Err(error) => panic!("a cancel is smaller than its request, yet: {error}"),
                }
            }
            _ => false,
        };
        assert_eq!(queued, predicted, "cancel({id:?})");
        self.expect_events_of_a_call(close);
        queued
    }

    /// Closes the connection: `Local` between frames, the truncated frame inside one.
    pub fn close(&mut self) {
        self.conn.close();
        let close = if self.closed.is_none() { Some(self.received.close_reason()) } else { None };
        self.expect_events_of_a_call(close);
    }

    /// Takes the queued bytes and checks that they are the frames the model expects.
    pub fn transmit(&mut self) -> Vec<u8> {
        let bytes = self.conn.poll_transmit().unwrap_or_default();
        self.expected.check_taken(bytes.len(), self.wire.push(&bytes));
        self.check_state();
        bytes
    }

    /// The requests pending, in the order they were made.
    pub fn pending(&self) -> Vec<RequestId> {
        self.pending.iter().map(|p| p.id.clone()).collect()
    }

    /// Whether the handshake completed and the connection is open.
    pub fn is_ready(&self) -> bool {
        self.ready.is_some() && self.closed.is_none()
    }

    /// The current route.
    pub fn route(&self) -> Option<&SessionTarget> {
        self.route.as_ref()
    }

    /// Why the connection closed, and whether received bytes closed it.
    pub fn closed(&self) -> Option<(&CloseReason, bool)> {
        self.closed.as_ref().map(|reason| (reason, self.closed_by_peer))
    }

    /// Whether every request made settled exactly once.
    pub fn all_settled(&self) -> bool {
        self.settled.values().all(|&count| count == 1)
    }
}
