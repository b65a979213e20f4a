//! [`ServerProbe`]: a [`ServerConnection`] beside a model of what it may do, checked after every
//! call (the rules of `pi_protocol::connection`, server side).

use pi_protocol::connection::{
    CloseReason, ConnectionError, FenceReason, ServerConnection, ServerEvent, ServerOptions, Violation,
};
use pi_protocol::{
    encode_server_message_with, is_supported_protocol_version, ErrorBody, Payload, ProtocolError, RequestId, RpcTarget,
    ServerId, ServerMessage, ServerMessageDecoder, SessionTarget, SubscriptionId,
};

use super::frames::FrameCursor;
use super::messages;
use super::wire::ExpectedFrames;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    AwaitingHello,
    Open,
    Closing,
    Closed,
}

/// A server connection and the model it is checked against.
///
/// Checks: events follow the connection's life (`Ready` once, first; `Closing` once; `Closed`
/// once, last, only when every admitted request settled, releasing the route the model holds);
/// an admitted request passes every fence and its id is not in flight; a fence names the
/// reason the model's state allows; `respond` succeeds once per admitted id; every call returns
/// what the model predicts (refusals, encode errors, the transmit limit); the transmitted frames
/// are exactly the model's (the `hello` or `hello_error`, fencing errors, responses,
/// attachments, updates, in order), whole and decodable; nothing is queued once closing; the
/// queued length is the model's and never above [`ServerOptions::max_pending_transmit`].
#[derive(Debug)]
pub struct ServerProbe {
    conn: ServerConnection,
    server_id: ServerId,
    options: ServerOptions,
    received: FrameCursor,
    wire: ServerMessageDecoder,
    expected: ExpectedFrames<ServerMessage>,
    state: State,
    attachment: Option<SessionTarget>,
    /// Admitted requests awaiting their answer, in the order they were admitted, with whether
    /// a cancel was reported.
    in_flight: Vec<(RequestId, bool)>,
    closing: Option<CloseReason>,
    closed_by_peer: bool,
    fences: Vec<FenceReason>,
    release: Option<Option<SessionTarget>>,
}

impl ServerProbe {
    /// A new connection for `server_id`, waiting for the client's `hello`.
    pub fn new(server_id: ServerId, options: ServerOptions) -> Self {
        ServerProbe {
            conn: ServerConnection::new(server_id.clone(), options.clone()),
            wire: ServerMessageDecoder::with_options(&options.codec),
            server_id,
            options,
            received: FrameCursor::default(),
            expected: ExpectedFrames::default(),
            state: State::AwaitingHello,
            attachment: None,
            in_flight: Vec::new(),
            closing: None,
            closed_by_peer: false,
            fences: Vec::new(),
            release: None,
        }
    }

    fn reading(&self) -> bool {
        matches!(self.state, State::AwaitingHello | State::Open)
    }

    fn position(&self, id: &RequestId) -> Option<usize> {
        self.in_flight.iter().position(|(admitted, _)| admitted == id)
    }

    /// Encodes `message` as the connection would and queues it in the model: `Ok(true)` when it
    /// fits under the transmit limit, `Ok(false)` when it does not (nothing queued).
    fn predict_queue(&mut self, message: ServerMessage) -> Result<bool, ProtocolError> {
        assert_eq!(self.state, State::Open, "only an open connection queues frames for the application");
        let frame = encode_server_message_with(&message, &self.options.codec)?;
        Ok(self.expected.queue(message, frame.len(), self.options.max_pending_transmit))
    }

    /// A frame the connection queued (its event says so); its size is checked by `check_state`.
    fn push_expected(&mut self, message: ServerMessage) {
        let frame = encode_server_message_with(&message, &self.options.codec).expect("the connection encoded it");
        // Past the limit, the length check of `check_state` fails.
        self.expected.queue(message, frame.len(), usize::MAX);
    }

    fn check_state(&self) {
        assert_eq!(self.conn.is_ready(), self.state == State::Open);
        assert_eq!(self.conn.is_closed(), self.state == State::Closed);
        assert_eq!(self.conn.in_flight_len(), self.in_flight.len());
        assert_eq!(self.conn.attachment(), self.attachment.as_ref());
        for (id, _) in &self.in_flight {
            assert!(self.conn.is_in_flight(id));
        }
        assert_eq!(self.conn.pending_transmit_len(), self.expected.len(), "queued bytes differ from the model");
        assert!(self.expected.len() <= self.options.max_pending_transmit);
    }

    /// Handles one event against the model.
    fn on_event(&mut self, event: ServerEvent, from_peer: bool) {
        assert_ne!(self.state, State::Closed, "an event after Closed: {event:?}");
        match event {
            ServerEvent::Ready => {
                assert!(from_peer && self.state == State::AwaitingHello, "Ready out of place");
                self.state = State::Open;
                self.push_expected(messages::server_hello(self.server_id.clone()));
            }
            ServerEvent::Request(request) => {
                assert!(from_peer && self.state == State::Open, "a request out of place");
                assert!(self.position(&request.id).is_none(), "{:?} admitted while in flight", request.id);
                assert!(self.in_flight.len() < self.options.max_in_flight, "admitted past max_in_flight");
                match &request.target {
                    RpcTarget::Server(target) => assert_eq!(target.server_id, self.server_id),
                    RpcTarget::Session(target) => assert_eq!(Some(target), self.attachment.as_ref(), "stale route"),
                    other => panic!("a target version 8 does not have: {other:?}"),
                }
                self.in_flight.push((request.id, false));
            }
            ServerEvent::Cancel { id } => {
                assert!(from_peer && self.state == State::Open, "a cancel out of place");
                let at = self.position(&id).unwrap_or_else(|| panic!("a cancel of {id:?}, not in flight"));
                assert!(!self.in_flight[at].1, "{id:?} cancelled twice");
                self.in_flight[at].1 = true;
            }
            ServerEvent::Fenced { id, reason } => {
                assert!(from_peer && self.state == State::Open, "a fence out of place");
                assert_eq!(reason == FenceReason::DuplicateId, self.position(&id).is_some(), "{reason:?} of {id:?}");
                if reason == FenceReason::TooManyRequests {
                    let id_bytes: usize = self.in_flight.iter().map(|(id, _)| id.as_str().len()).sum();
                    assert!(
                        self.in_flight.len() >= self.options.max_in_flight
                            || id_bytes + id.as_str().len() > self.options.max_in_flight_id_bytes
                    );
                }
                let body = match reason {
                    FenceReason::DuplicateId => &self.options.duplicate_id,
                    FenceReason::InvalidCall => self.options.invalid_call.as_ref().expect("the check is on"),
                    FenceReason::WrongServer => &self.options.wrong_server,
                    FenceReason::StaleRoute => &self.options.stale_route,
                    FenceReason::TooManyRequests => &self.options.too_many_requests,
                    other => panic!("a fence reason the model does not know: {other:?}"),
                };
                let reply = messages::response(id, Err(body.clone()));
                self.push_expected(reply);
                self.fences.push(reason);
            }
            ServerEvent::Closing { reason } => {
                assert!(self.reading(), "Closing twice");
                if from_peer {
                    self.check_peer_close(&reason);
                }
                self.state = State::Closing;
                self.closing = Some(reason);
                self.closed_by_peer = from_peer;
            }
            ServerEvent::Closed { release } => {
                assert_eq!(self.state, State::Closing, "Closed before Closing");
                assert!(self.in_flight.is_empty(), "released with requests in flight");
                assert_eq!(release, self.attachment.take(), "released another route");
                self.state = State::Closed;
                self.release = Some(release);
            }
            // Every client message of version 8 has a rule in the server connection.
            ServerEvent::Other(message) => panic!("a version 8 message passed on as Other: {message:?}"),
            other => panic!("an event the model does not know: {other:?}"),
        }
    }

    /// The reasons received bytes can begin closing a server with, given the model's state.
    fn check_peer_close(&mut self, reason: &CloseReason) {
        let handshake = self.state == State::AwaitingHello;
        match reason {
            CloseReason::UnsupportedVersion(version) => {
                assert!(handshake && !is_supported_protocol_version(*version));
                let template = &self.options.unsupported_version;
                let message = template.message.replace("{version}", &version.to_string());
                self.push_expected(messages::hello_error(ErrorBody::new(template.code.clone(), message)));
            }
            // Every violation is answered with a hello_error saying why (the reference server's rule).
            CloseReason::Violation(Violation::ExpectedHello) => {
                assert!(handshake);
                self.push_expected(messages::hello_error(self.options.expected_hello.clone()));
            }
            CloseReason::Violation(Violation::UnexpectedHello) => {
                assert!(!handshake);
                self.push_expected(messages::hello_error(self.options.unexpected_hello.clone()));
            }
            CloseReason::Violation(Violation::Decode(error)) => {
                let body = if error.kind() == pi_protocol::ErrorKind::Schema {
                    self.options.malformed_message.clone()
                } else {
                    ErrorBody::new(
                        self.options.malformed_frame_code.clone(),
                        format!("Invalid client protocol frame: {}", error.reference_text()),
                    )
                };
                self.push_expected(messages::hello_error(body));
            }
            // A frame of its own (hello, hello_error, a fencing error) did not fit.
            CloseReason::Encode(_) => {}
            CloseReason::TransmitQueueFull { limit } => assert_eq!(*limit, self.options.max_pending_transmit),
            other => panic!("received bytes closed the server with {other:?}"),
        }
    }

    /// Takes every event the connection reports and checks it.
    fn drain_events(&mut self, from_peer: bool) {
        while let Some(event) = self.conn.poll_event() {
            self.on_event(event, from_peer);
        }
        self.check_state();
    }

    /// After a call of the application: exactly the events the model predicts.
    fn expect_events(&mut self, predicted: Vec<ServerEvent>) {
        let events: Vec<ServerEvent> = std::iter::from_fn(|| self.conn.poll_event()).collect();
        assert_eq!(events, predicted);
        for event in events {
            self.on_event(event, false);
        }
        self.check_state();
    }

    /// The events of beginning to close for `reason` now: `Closing`, and `Closed` at once when
    /// nothing is in flight.
    fn closing_events(&self, reason: CloseReason) -> Vec<ServerEvent> {
        let mut events = vec![ServerEvent::Closing { reason }];
        if self.in_flight.is_empty() {
            events.push(ServerEvent::Closed { release: self.attachment.clone() });
        }
        events
    }

    /// Feeds bytes from the client and checks the events they produce.
    pub fn receive(&mut self, bytes: &[u8]) {
        if self.reading() {
            self.received.feed(bytes);
        }
        self.conn.receive(bytes);
        self.drain_events(true);
    }

    /// Answers `id` and checks the outcome against the model.
    pub fn respond(&mut self, id: &RequestId, result: Result<Option<Payload>, ErrorBody>) {
        let outcome = self.conn.respond(id, result.clone());
        let mut events = Vec::new();
        let predicted = match self.position(id) {
            None => Err(ConnectionError::NotInFlight(id.clone())),
            Some(at) => {
                let queued = if self.state == State::Open {
                    self.predict_queue(messages::response(id.clone(), result))
                } else {
                    Ok(true)
                };
                match queued {
                    Err(error) => Err(ConnectionError::Encode(error)),
                    Ok(fits) => {
                        if !fits {
                            events.push(ServerEvent::Closing { reason: self.full() });
                        }
                        // Settling the last request of a closing connection releases its route.
                        if (!fits || self.state == State::Closing) && self.in_flight.len() == 1 {
                            events.push(ServerEvent::Closed { release: self.attachment.clone() });
                        }
                        self.in_flight.remove(at);
                        Ok(())
                    }
                }
            }
        };
        assert_eq!(outcome, predicted, "respond({id:?})");
        self.expect_events(events);
    }

    fn full(&self) -> CloseReason {
        CloseReason::TransmitQueueFull { limit: self.options.max_pending_transmit }
    }

    /// Publishes or clears the route and checks the outcome against the model.
    pub fn set_attachment(&mut self, route: Option<SessionTarget>) {
        let outcome = self.conn.set_attachment(route.clone());
        let mut events = Vec::new();
        let predicted = match (&route, self.state) {
            (Some(route), _) if route.server_id != self.server_id => {
                Err(ConnectionError::ForeignRoute(route.server_id.clone()))
            }
            (_, State::AwaitingHello) => Err(ConnectionError::NotReady),
            (_, State::Closed) => Err(ConnectionError::Closed),
            (_, State::Closing) => {
                self.attachment = route;
                Ok(())
            }
            (_, State::Open) => match self.predict_queue(messages::attachment(route.clone())) {
                Err(error) => Err(ConnectionError::Encode(error)),
                Ok(fits) => {
                    // Past the limit, the new route is the one the closing connection releases.
                    self.attachment = route;
                    if !fits {
                        events = self.closing_events(self.full());
                    }
                    Ok(())
                }
            },
        };
        assert_eq!(outcome, predicted, "set_attachment");
        self.expect_events(events);
    }

    /// Queues an update and checks the outcome against the model.
    pub fn publish_update(&mut self, subscription_id: SubscriptionId, update: Payload) {
        let outcome = self.conn.publish_update(subscription_id.clone(), update.clone());
        let mut events = Vec::new();
        let predicted = match self.state {
            State::AwaitingHello => Err(ConnectionError::NotReady),
            State::Closing | State::Closed => Err(ConnectionError::Closed),
            State::Open => match self.predict_queue(messages::service_update(subscription_id, update)) {
                Err(error) => Err(ConnectionError::Encode(error)),
                Ok(true) => Ok(()),
                Ok(false) => {
                    events = self.closing_events(self.full());
                    Err(ConnectionError::Closed)
                }
            },
        };
        assert_eq!(outcome, predicted, "publish_update");
        self.expect_events(events);
    }

    /// The transport went away: `Local` between frames, the truncated frame inside one.
    pub fn disconnect(&mut self) {
        self.conn.disconnect();
        let events = if self.reading() { self.closing_events(self.received.close_reason()) } else { Vec::new() };
        self.expect_events(events);
    }

    /// Takes the queued bytes and checks that they are the frames the model expects.
    pub fn transmit(&mut self) -> Vec<u8> {
        let bytes = self.conn.poll_transmit().unwrap_or_default();
        self.expected.check_taken(bytes.len(), self.wire.push(&bytes));
        self.check_state();
        bytes
    }

    /// Admitted requests awaiting their answer, in the order they were admitted.
    pub fn in_flight(&self) -> Vec<RequestId> {
        self.in_flight.iter().map(|(id, _)| id.clone()).collect()
    }

    /// Whether the handshake completed and the connection reads.
    pub fn is_ready(&self) -> bool {
        self.state == State::Open
    }

    /// Why the connection began closing, and whether received bytes made it.
    pub fn closing(&self) -> Option<(&CloseReason, bool)> {
        self.closing.as_ref().map(|reason| (reason, self.closed_by_peer))
    }

    /// Whether `Closed` was reported.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// The fences reported so far.
    pub fn fences(&self) -> &[FenceReason] {
        &self.fences
    }
}
