//! [`Updates`]: the `service_update`s of one subscription, queued by the connection's task for
//! the application, bounded in bytes.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedSender;

use super::task::Command;
use crate::connection::CloseReason;
use crate::{CodecOptions, Payload, SubscriptionId};

/// What one queued update counts for besides its payload bytes: the queue's own bookkeeping,
/// so that a flood of tiny updates is bounded too.
pub(crate) const UPDATE_OVERHEAD: usize = 64;

/// Why a subscription's [`Updates`] stream ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdatesError {
    /// The application fell behind: queuing the next update would have taken the stream past
    /// [`ClientBuilder::max_buffered_update_bytes`](super::ClientBuilder::max_buffered_update_bytes)
    /// (`limit` bytes). The updates queued before it are still delivered; later ones are
    /// dropped, so the stream no longer follows the subscription.
    #[error("more than {limit} bytes of updates were waiting to be read")]
    Overflow {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The connection ended (see [`CloseReason`] for the three ways: the peer, this
    /// application, the transport).
    #[error("the connection ended: {0}")]
    Disconnected(CloseReason),
    /// A later [`Client::updates`](super::Client::updates) for the same subscription id took
    /// its updates over.
    #[error("another stream took over this subscription's updates")]
    Superseded,
}

#[derive(Debug, Default)]
struct State {
    items: VecDeque<Payload>,
    /// Bytes counted for `items`: payload bytes plus [`UPDATE_OVERHEAD`] each.
    bytes: usize,
    /// Set once: the error to hand out after `items`, then the end.
    end: Option<UpdatesError>,
    /// The error was handed out: only `None` from now on.
    ended: bool,
    waker: Option<Waker>,
}

/// The producer side, held by the connection's task.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    state: Arc<Mutex<State>>,
    limit: usize,
}

impl Queue {
    pub(crate) fn new(limit: usize) -> Queue {
        Queue { state: Arc::default(), limit }
    }

    /// Whether `other` is this very queue (not one of a later subscription with the same id).
    pub(crate) fn same(&self, other: &Queue) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `update`; returns `false` when the stream ended (overflowed now or before, or the
    /// reader is gone), after which the task forgets the subscription.
    ///
    /// A small payload may be a slice of a whole read buffer (the driver shares its read chunks
    /// with the messages decoded from them): it is copied into its own bytes first, so that what
    /// is counted is what is held.
    pub(crate) fn push(&self, update: Payload, copy_below: usize, codec: &CodecOptions) -> bool {
        let cost = update.as_cbor().len() + UPDATE_OVERHEAD;
        let mut state = self.lock();
        if state.end.is_some() || state.ended {
            return false;
        }
        if state.bytes + cost > self.limit {
            state.end = Some(UpdatesError::Overflow { limit: self.limit });
            wake(&mut state);
            return false;
        }
        let update = if update.as_cbor().len() < copy_below {
            match Payload::from_cbor(Bytes::copy_from_slice(update.as_cbor()), codec.limits()) {
                Ok(copy) => copy,
                Err(_) => update,
            }
        } else {
            update
        };
        state.bytes += cost;
        state.items.push_back(update);
        wake(&mut state);
        true
    }

    /// Ends the stream with `error` after what is queued (if it has not ended already).
    pub(crate) fn end(&self, error: UpdatesError) {
        let mut state = self.lock();
        if state.end.is_none() && !state.ended {
            state.end = Some(error);
        }
        wake(&mut state);
    }
}

fn wake(state: &mut State) {
    if let Some(waker) = state.waker.take() {
        waker.wake();
    }
}

/// The updates of one subscription, in the order the server sent them (from
/// [`Client::updates`](super::Client::updates)): a [`Stream`](futures_core::Stream) of
/// `Result<Payload, UpdatesError>`, also read with [`next`](Self::next).
///
/// The stream holds at most
/// [`ClientBuilder::max_buffered_update_bytes`](super::ClientBuilder::max_buffered_update_bytes)
/// bytes of unread updates (each counted as its payload bytes plus 64): a server that floods
/// updates faster than the application reads them ends the stream with
/// [`UpdatesError::Overflow`] instead of growing memory. It ends with
/// [`UpdatesError::Disconnected`] when the connection ends, after the updates received before.
/// Dropping it stops the queuing (it does not unsubscribe on the server: that is the service's
/// own call, such as Chord's `unsubscribe`).
#[derive(Debug)]
#[must_use = "updates are queued until the stream is read or dropped"]
pub struct Updates {
    subscription_id: SubscriptionId,
    queue: Queue,
    commands: Option<UnboundedSender<Command>>,
}

impl Updates {
    pub(crate) fn new(
        subscription_id: SubscriptionId,
        queue: Queue,
        commands: Option<UnboundedSender<Command>>,
    ) -> Self {
        Updates { subscription_id, queue, commands }
    }

    /// The subscription these updates belong to.
    pub fn subscription_id(&self) -> &SubscriptionId {
        &self.subscription_id
    }

    /// The next update; `Some(Err(_))` once when the stream ends for a reason, then `None`.
    pub async fn next(&mut self) -> Option<Result<Payload, UpdatesError>> {
        std::future::poll_fn(|cx| self.poll_update(cx)).await
    }

    /// How many bytes of unread updates the stream holds, as counted against the limit.
    pub fn buffered_bytes(&self) -> usize {
        self.queue.lock().bytes
    }

    fn poll_update(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Payload, UpdatesError>>> {
        let mut state = self.queue.lock();
        if let Some(update) = state.items.pop_front() {
            state.bytes -= update.as_cbor().len() + UPDATE_OVERHEAD;
            return Poll::Ready(Some(Ok(update)));
        }
        if state.ended {
            return Poll::Ready(None);
        }
        if let Some(error) = state.end.take() {
            state.ended = true;
            return Poll::Ready(Some(Err(error)));
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl futures_core::Stream for Updates {
    type Item = Result<Payload, UpdatesError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_update(cx)
    }
}

impl Drop for Updates {
    fn drop(&mut self) {
        if let Some(commands) = &self.commands {
            let _ = commands
                .send(Command::Forget { subscription_id: self.subscription_id.clone(), queue: self.queue.clone() });
        }
    }
}
