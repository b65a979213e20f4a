//! The cancellation signal of one call ([`super::Context::cancelled`]): one allocation per
//! call, a flag and a [`Notify`], cheaper to make and drop than a
//! `tokio_util::sync::CancellationToken` (no tree of parents and children, no lock on drop),
//! which matters because the server makes one for every call it admits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A call's cancellation flag, shared by the connection's task and the call's handler.
#[derive(Debug, Clone, Default)]
pub(super) struct CallCancel(Arc<State>);

#[derive(Debug, Default)]
struct State {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CallCancel {
    /// Sets the flag and wakes every waiter; later calls do nothing more.
    pub(super) fn cancel(&self) {
        if !self.0.cancelled.swap(true, Ordering::AcqRel) {
            self.0.notify.notify_waiters();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub(super) fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Whether this is the only handle and it never fired: then it may serve another call.
    pub(super) fn is_unshared(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && !self.is_cancelled()
    }

    /// Completes once the flag is set (at once if it already is).
    pub(super) async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a `cancel` between the two still wakes it.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_waiter_wakes_on_cancel_and_a_late_one_returns_at_once() {
        let cancel = CallCancel::default();
        assert!(!cancel.is_cancelled());
        let waiter = tokio::spawn({
            let cancel = cancel.clone();
            async move { cancel.cancelled().await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished(), "woke before the cancel");
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken").expect("no panic");
        assert!(cancel.is_cancelled());
        tokio::time::timeout(Duration::from_secs(5), cancel.cancelled()).await.expect("returns at once");
        cancel.cancel();
        assert!(cancel.is_cancelled());
        assert!(!cancel.is_unshared(), "a fired signal serves no other call");
    }

    #[test]
    fn only_a_lone_unfired_signal_is_unshared() {
        let cancel = CallCancel::default();
        assert!(cancel.is_unshared());
        let held = cancel.clone();
        assert!(!cancel.is_unshared());
        drop(held);
        assert!(cancel.is_unshared());
    }
}
