//! Latency histogram: counts by bucket, 32 buckets per power of two (each bucket at most about
//! 3% wide), so that millions of samples take a fixed few kilobytes.

use std::time::Duration;

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

/// Latencies recorded in nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

fn bucket(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let power = 63 - ns.leading_zeros(); // at least SUB_BITS
    let shift = power - SUB_BITS;
    ((u64::from(shift) + 1) * SUB + ((ns >> shift) - SUB)) as usize
}

/// The smallest value of bucket `index`.
fn lower_bound(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB {
        return index;
    }
    let shift = index / SUB - 1;
    (SUB + index % SUB) << shift
}

impl Histogram {
    /// Records one latency.
    pub fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        let index = bucket(ns);
        if index >= self.counts.len() {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += 1;
        self.total += 1;
        self.max = self.max.max(ns);
    }

    /// The value below which a fraction `q` of the samples lie (the lower bound of its
    /// bucket), in microseconds; 0 without samples.
    pub fn quantile_us(&self, q: f64) -> f64 {
        let rank = ((self.total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return lower_bound(index) as f64 / 1000.0;
            }
        }
        0.0
    }

    /// The largest sample, in microseconds.
    pub fn max_us(&self) -> f64 {
        self.max as f64 / 1000.0
    }

    /// `{"p50": .., "p99": .., "max": ..}` in microseconds.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "samples": self.total,
            "p50": self.quantile_us(0.50),
            "p99": self.quantile_us(0.99),
            "max": self.max_us(),
        })
    }
}
