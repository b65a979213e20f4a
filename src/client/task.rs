//! The background task of one connection: it owns the [`ClientDriver`], turns the handles'
//! commands into the sans-IO connection's calls, and the connection's events into answers,
//! watch values and update streams. Every protocol rule stays in [`crate::ClientConnection`]; this
//! only schedules.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use super::error::RequestError;
use super::updates::{Queue, UpdatesError};
use super::ConnectionState;
use crate::connection::{CallTarget, ClientEvent, CloseReason, ConnectionError};
use crate::io::ClientDriver;
use crate::{CodecOptions, Payload, RequestId, ServerId, SessionTarget, SubscriptionId};

/// A byte stream a [`Client`](super::Client) runs over: any tokio stream that is `Send`.
pub(crate) trait Transport: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Transport for T {}

/// A boxed [`Transport`].
pub(crate) type BoxedTransport = Box<dyn Transport>;

/// The answer to one request, as the waiting future receives it.
pub(crate) type Reply = Result<Option<Payload>, RequestError>;

/// What a handle asks of the connection's task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Send `call` to `target`; answer on `reply`. `token` names the request for a later
    /// [`Command::Cancel`] (the request id is the connection's to choose).
    Request { token: u64, target: CallTarget, call: Payload, reply: oneshot::Sender<Reply> },
    /// Send `cancel` for the request made under `token`, if it is still pending.
    Cancel { token: u64 },
    /// Queue the updates of `subscription_id` in `queue` from now on.
    Subscribe { subscription_id: SubscriptionId, queue: Queue },
    /// Stop queuing for `subscription_id`, if `queue` is still the one registered.
    Forget { subscription_id: SubscriptionId, queue: Queue },
    /// Close the connection (as [`CloseReason::Local`]).
    Close,
}

/// What the task shares with the handles of its [`Client`](super::Client).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: watch::Sender<ConnectionState>,
    pub(crate) attachment: watch::Sender<Option<SessionTarget>>,
}

/// How the task treats update payloads (see [`Queue::push`]), and how long it lets an ended
/// connection write and shut down.
#[derive(Debug, Clone)]
pub(crate) struct UpdateCopy {
    pub(crate) below: usize,
    pub(crate) codec: CodecOptions,
    pub(crate) shutdown_timeout: std::time::Duration,
}

struct Waiter {
    token: u64,
    reply: oneshot::Sender<Reply>,
}

/// What the task keeps for the calls and subscriptions of its connection.
#[derive(Default)]
struct Book {
    waiters: HashMap<RequestId, Waiter>,
    tokens: HashMap<u64, RequestId>,
    subscriptions: HashMap<SubscriptionId, Queue>,
    /// Requests whose frame closed the connection (the transmit cap): answered with the
    /// reason of the `Closed` event that follows.
    orphans: Vec<oneshot::Sender<Reply>>,
    /// The connection's end, once reported.
    closed: Option<CloseReason>,
}

/// Runs the connection until its driver is done. `ready` hears once: the handshake's
/// `serverId`, or the reason the connection closed before it.
pub(crate) async fn run(
    mut driver: ClientDriver<BoxedTransport>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    shared: Arc<Shared>,
    ready: oneshot::Sender<Result<ServerId, CloseReason>>,
    copy: UpdateCopy,
) {
    let mut ready = Some(ready);
    let mut book = Book::default();
    let mut listening = true;
    // Set once the connection ended: the last writes and the shutdown must be done by then.
    let mut give_up: Option<tokio::time::Instant> = None;
    loop {
        if give_up.is_none() && book.closed.is_some() {
            give_up = Some(tokio::time::Instant::now() + copy.shutdown_timeout);
        }
        let deadline = give_up.unwrap_or_else(tokio::time::Instant::now);
        tokio::select! {
            () = tokio::time::sleep_until(deadline), if give_up.is_some() => break,
            command = commands.recv(), if listening => match command {
                None => {
                    // Every handle is gone: nobody can make or await a call any more.
                    listening = false;
                    driver.connection_mut().close();
                }
                Some(command) => book.command(&mut driver, command),
            },
            event = driver.next_event() => match event {
                None => break,
                Some(ClientEvent::Ready { server_id }) => {
                    shared.state.send_replace(ConnectionState::Connected { server_id: server_id.clone() });
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(Ok(server_id));
                    }
                }
                Some(ClientEvent::Response { id, result }) => {
                    if let Some(waiter) = book.waiters.remove(&id) {
                        book.tokens.remove(&waiter.token);
                        let _ = waiter.reply.send(result.map_err(RequestError::Server));
                    }
                }
                Some(ClientEvent::Update { subscription_id, update }) => {
                    if let Some(queue) = book.subscriptions.get(&subscription_id) {
                        if !queue.push(update, copy.below, &copy.codec) {
                            book.subscriptions.remove(&subscription_id);
                        }
                    }
                }
                Some(ClientEvent::Attachment { route }) => {
                    shared.attachment.send_if_modified(|current| {
                        let changed = *current != route;
                        *current = route;
                        changed
                    });
                }
                Some(ClientEvent::Closed { reason, unsettled: _ }) => {
                    shared.attachment.send_if_modified(|current| current.take().is_some());
                    book.close(&reason);
                    shared.state.send_replace(ConnectionState::Disconnected { reason: Some(reason.clone()) });
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(Err(reason));
                    }
                }
                Some(_) => {}
            },
        }
    }
    // Commands that raced the end: answered, never sent.
    commands.close();
    while let Ok(command) = commands.try_recv() {
        if let Command::Request { reply, .. } = command {
            let _ = reply.send(Err(RequestError::NotConnected));
        }
    }
}

impl Book {
    fn command(&mut self, driver: &mut ClientDriver<BoxedTransport>, command: Command) {
        match command {
            Command::Request { token, target, call, reply } => {
                if reply.is_closed() {
                    return; // the caller stopped waiting before the call left
                }
                match driver.connection_mut().request(target, call) {
                    Ok(id) => {
                        self.tokens.insert(token, id.clone());
                        self.waiters.insert(id, Waiter { token, reply });
                    }
                    Err(ConnectionError::NoRoute) => {
                        let _ = reply.send(Err(RequestError::NoAttachment));
                    }
                    Err(ConnectionError::Encode(error)) => {
                        let _ = reply.send(Err(RequestError::Encode(error)));
                    }
                    Err(_) => match &self.closed {
                        Some(_) => {
                            let _ = reply.send(Err(RequestError::NotConnected));
                        }
                        // This very frame closed the connection: its Closed event is next.
                        None => self.orphans.push(reply),
                    },
                }
            }
            Command::Cancel { token } => {
                if let Some(id) = self.tokens.get(&token) {
                    driver.connection_mut().cancel(id);
                }
            }
            Command::Subscribe { subscription_id, queue } => {
                if let Some(reason) = &self.closed {
                    queue.end(UpdatesError::Disconnected(reason.clone()));
                } else if let Some(previous) = self.subscriptions.insert(subscription_id, queue) {
                    previous.end(UpdatesError::Superseded);
                }
            }
            Command::Forget { subscription_id, queue } => {
                if self.subscriptions.get(&subscription_id).is_some_and(|current| current.same(&queue)) {
                    self.subscriptions.remove(&subscription_id);
                }
            }
            Command::Close => driver.connection_mut().close(),
        }
    }

    /// The connection closed: every pending call fails, every update stream ends.
    fn close(&mut self, reason: &CloseReason) {
        for (_, waiter) in self.waiters.drain() {
            let _ = waiter.reply.send(Err(RequestError::Disconnected(reason.clone())));
        }
        for reply in self.orphans.drain(..) {
            let _ = reply.send(Err(RequestError::Disconnected(reason.clone())));
        }
        self.tokens.clear();
        for (_, queue) in self.subscriptions.drain() {
            queue.end(UpdatesError::Disconnected(reason.clone()));
        }
        self.closed = Some(reason.clone());
    }
}
