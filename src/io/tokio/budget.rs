//! [`ByteBudget`]: bytes shared by many connections, and [`ByteCharge`], one holder's share of
//! it (docs/PROTOCOL.md section 8, "Deadlines and budgets").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A byte budget shared by many connections (docs/PROTOCOL.md section 8, "Deadlines and
/// budgets"): every [`Driver`](super::Driver) of a server connection given it
/// ([`DriverOptions::budget`](super::DriverOptions::budget)) charges the bytes its connection
/// holds for its peer ([`ServerConnection::held_bytes`](crate::connection::ServerConnection::held_bytes):
/// the transmit queue, a partly received frame, the ids of calls in flight), and a connection
/// whose charge would take the sum past the limit is closed at once, its queue dropped
/// ([`CloseReason::BudgetExceeded`](crate::CloseReason::BudgetExceeded)). So N connections
/// hold at most `limit` bytes together, beyond each one's fixed cost (its read buffer,
/// [`DriverOptions::read_chunk`](super::DriverOptions::read_chunk), and its state).
///
/// A transport of its own (a router's reader, say) charges what it holds through a
/// [`ByteCharge`] ([`charge`](Self::charge)).
///
/// Cloning gives another handle on the same budget.
///
/// ```
/// use pi_protocol::io::ByteBudget;
/// let budget = ByteBudget::new(1 << 20);
/// assert_eq!((budget.limit(), budget.used()), (1 << 20, 0));
/// assert_eq!(budget.clone(), budget);
/// ```
#[derive(Debug, Clone)]
pub struct ByteBudget {
    inner: Arc<BudgetInner>,
}

#[derive(Debug)]
struct BudgetInner {
    limit: usize,
    used: AtomicUsize,
}

impl ByteBudget {
    /// A budget of `limit` bytes, none used.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        ByteBudget { inner: Arc::new(BudgetInner { limit, used: AtomicUsize::new(0) }) }
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    /// The bytes charged now, by every holder together.
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// A new holder's share of the budget, charging nothing yet.
    #[must_use]
    pub fn charge(&self) -> ByteCharge {
        ByteCharge { budget: self.clone(), charged: 0 }
    }

    /// Takes `bytes` more: `false` (nothing taken) when that would pass the limit.
    fn take(&self, bytes: usize) -> bool {
        let mut used = self.inner.used.load(Ordering::Relaxed);
        loop {
            let Some(total) = used.checked_add(bytes).filter(|total| *total <= self.inner.limit) else {
                return false;
            };
            match self.inner.used.compare_exchange_weak(used, total, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    fn give_back(&self, bytes: usize) {
        self.inner.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl PartialEq for ByteBudget {
    /// Two handles are equal when they share one budget.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for ByteBudget {}

/// One holder's share of a [`ByteBudget`]: the bytes it holds now, set as they change, and
/// given back when the charge is dropped.
///
/// ```
/// use pi_protocol::io::ByteBudget;
/// let budget = ByteBudget::new(100);
/// let (mut a, mut b) = (budget.charge(), budget.charge());
/// assert!(a.set(60));
/// assert!(!b.set(50)); // 110 would pass the limit: b still holds nothing
/// assert_eq!((b.charged(), budget.used()), (0, 60));
/// assert!(a.set(10) && b.set(50));
/// drop(a);
/// assert_eq!(budget.used(), 50);
/// ```
#[derive(Debug)]
pub struct ByteCharge {
    budget: ByteBudget,
    charged: usize,
}

impl ByteCharge {
    /// Sets the charge to `bytes`: `true` when the budget had room (lowering it always does);
    /// `false` leaves the charge as it was.
    #[must_use = "a holder past its budget must be closed"]
    pub fn set(&mut self, bytes: usize) -> bool {
        if bytes <= self.charged {
            self.lower_to(bytes);
            return true;
        }
        if self.budget.take(bytes - self.charged) {
            self.charged = bytes;
            return true;
        }
        false
    }

    /// Lowers the charge to `bytes` when it is above (nothing changes otherwise).
    pub fn lower_to(&mut self, bytes: usize) {
        if bytes < self.charged {
            self.budget.give_back(self.charged - bytes);
            self.charged = bytes;
        }
    }

    /// The bytes charged now.
    pub fn charged(&self) -> usize {
        self.charged
    }

    /// The whole budget's limit, in bytes.
    pub fn limit(&self) -> usize {
        self.budget.limit()
    }
}

impl Drop for ByteCharge {
    fn drop(&mut self) {
        self.budget.give_back(self.charged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_add_up_to_the_limit_and_no_further() {
        let budget = ByteBudget::new(10);
        let mut a = budget.charge();
        assert!(a.set(10));
        assert!(!budget.charge().set(1));
        assert!(a.set(4));
        let mut b = budget.charge();
        assert!(b.set(6));
        assert!(!b.set(7));
        assert_eq!((a.charged(), b.charged(), budget.used()), (4, 6, 10));
        b.lower_to(8);
        assert_eq!(b.charged(), 6);
        b.lower_to(2);
        assert_eq!((b.charged(), budget.used(), b.limit()), (2, 6, 10));
        drop(b);
        drop(a);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn an_overflowing_charge_is_refused() {
        let budget = ByteBudget::new(usize::MAX);
        let mut a = budget.charge();
        assert!(a.set(usize::MAX - 1));
        assert!(!budget.charge().set(2));
        assert_eq!(budget.used(), usize::MAX - 1);
    }
}
