//! Deferred sojourn-histogram counts for topologies with many queues.
//!
//! Recording a sojourn increments one bucket of the queue's histogram, a
//! bucket that depends on the sojourn: in a fat tree, with thousands of
//! ports and consecutive hops at unrelated ones, that increment is a cache
//! miss the hop waits for (the bucket array of a busy port spans kilobytes).
//! With a log, a queue updates the sojourn's count, sum and maximum at
//! once (its counters and sojourn statistics, in its hot lines) and keeps
//! the current run of equal buckets there too (`Buckets::record_run`: in
//! D-1024 56 % of sojourns fall in the bucket of the queue's previous one,
//! 52 % are zero).
//! Only a run that ends is noted here, as (bucket, count); every few
//! hundred entries the log is applied in order, prefetching a few entries
//! ahead so that the misses overlap instead of queueing one behind the
//! other.
//!
//! Only queues with departure lookahead (`fifo`, `step`) log: they record
//! a sojourn at each arrival, inside the hop. A queue with a transmitter
//! records at the end of a transmission, an event of its own, and counts
//! at once.
//!
//! Bucket counts are sums, so applying them later gives exactly the same
//! histogram; the log is applied, and the open runs counted, before
//! anything reads or resets one (`World::start_due_transmissions`, which
//! the end of warm-up and the end of the run call first, and
//! `start_due_sampled_transmissions`, which a sample calls first). Bench
//! D: 11–14 % of its wall time was this increment before the log, D-1024
//! about a third with the log and before the runs (docs/performance.md).

use super::link::Link;
use crate::sim::prefetch::prefetch;

/// Entries after which the log is applied (`World::on_line_arrival`).
const APPLY_AT: usize = 512;
/// How far ahead of the entry being applied its queue (twice this) and its
/// bucket (this) are prefetched: the bucket's address needs the queue's
/// histogram, fetched one stage earlier.
const AHEAD: usize = 24;

#[derive(Debug, Clone, Copy)]
struct Deferred {
    link: u32,
    sub: u8,
    bucket: u16,
    count: u32,
}

/// The pending bucket increments of every queue (see the module docs).
#[derive(Debug, Default)]
pub struct SojournLog {
    on: bool,
    entries: Vec<Deferred>,
}

impl SojournLog {
    /// `on`: queues log their buckets here; off: they count them at once.
    pub fn new(on: bool) -> Self {
        SojournLog { on, entries: if on { Vec::with_capacity(2 * APPLY_AT) } else { Vec::new() } }
    }

    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.on
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, link: u32, sub: u8, (bucket, count): (usize, u32)) {
        debug_assert!(bucket <= u16::MAX as usize);
        self.entries.push(Deferred { link, sub, bucket: bucket as u16, count });
    }

    #[inline(always)]
    pub fn is_due(&self) -> bool {
        self.entries.len() >= APPLY_AT
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Count every pending bucket in its queue's histogram, in log order.
    pub fn apply(&mut self, links: &mut [Link]) {
        let e = &self.entries;
        for i in 0..e.len() {
            if let Some(f) = e.get(i + 2 * AHEAD) {
                links[f.link as usize].prefetch_histogram(f.sub as usize);
            }
            if let Some(f) = e.get(i + AHEAD) {
                if let Some(slot) = links[f.link as usize].histogram_slot(f.sub as usize, f.bucket as usize) {
                    prefetch(slot);
                }
            }
            let f = e[i];
            links[f.link as usize].count_sojourn_run(f.sub as usize, f.bucket as usize, f.count);
        }
        self.entries.clear();
    }
}
