//! The 4-ary min-heap under the event list (`scheduler.rs`) and its
//! bucketed wheels (`wheel.rs`): entries ordered by (time, class, sequence).

/// A 16-byte heap entry ordered by (time, class, sequence). The sequence
/// number (31 bits, wrapping) makes equal-time events of a class run in
/// scheduling order; a wrap can only reorder two events at the same
/// nanosecond scheduled two billion events apart, and even then deterministically.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) time_ns: u64,
    /// class << 63 | seq << 32 | encoded event; class 0 = transmission done.
    pub(super) rest: u64,
}

impl Entry {
    /// Ordered by (time, class, seq, event): the event code below the unique
    /// sequence number never decides an order (except across a sequence wrap,
    /// deterministically). Times differ far more often than they tie, so the
    /// time is compared first on its own.
    #[inline(always)]
    pub(super) fn before(&self, other: &Entry) -> bool {
        self.time_ns < other.time_ns || (self.time_ns == other.time_ns && self.rest < other.rest)
    }

    /// The order as one number: `a.key() < b.key()` iff `a.before(b)`. One
    /// 128-bit comparison sets a flag without a branch (see `sift_down_from_root`).
    #[inline(always)]
    pub(super) fn key(&self) -> u128 {
        (u128::from(self.time_ns) << 64) | u128::from(self.rest)
    }
}

/// Children per node: a 4-ary heap halves the depth of a binary heap and
/// keeps siblings in one cache line (4 × 16 bytes).
const ARITY: usize = 4;

/// A 4-ary min-heap of entries.
///
/// Popping hands out the root but leaves its slot open (`hole`): the next
/// push puts its entry there and sifts it down. Events re-arm their own
/// component right after they run (a delay line schedules its next head, a
/// timer its next deadline), so the entry that fills the hole is usually
/// close to the minimum and sinks a level or two, where removing the root
/// would have sunk the last leaf through the whole depth. A pop or a look at
/// the top with the hole still open first removes the root for real. The
/// multiset of entries, and so the pop order, is that of a plain heap.
#[derive(Debug, Default)]
pub(super) struct Heap {
    v: Vec<Entry>,
    hole: bool,
}

impl Heap {
    #[inline]
    pub(super) fn push(&mut self, e: Entry) {
        if self.hole {
            self.hole = false;
            self.sift_down_from_root(e);
            return;
        }
        let mut i = self.v.len();
        self.v.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !e.before(&self.v[parent]) {
                break;
            }
            self.v[i] = self.v[parent];
            i = parent;
        }
        self.v[i] = e;
    }

    /// Remove the handed-out root, if any, so that `top` is the least entry.
    #[inline]
    pub(super) fn settle(&mut self) {
        if self.hole {
            self.hole = false;
            let last = self.v.pop().expect("a hole lies in a non-empty heap");
            if !self.v.is_empty() {
                self.sift_down_from_root(last);
            }
        }
    }

    /// The least entry, or [`EMPTY`] (later than any event). Needs `settle`.
    #[inline]
    pub(super) fn top(&self) -> &Entry {
        debug_assert!(!self.hole);
        self.v.first().unwrap_or(&EMPTY)
    }

    /// Hand out the least entry (the heap is settled and non-empty); its slot
    /// stays open for the next push.
    #[inline]
    pub(super) fn take_top(&mut self) -> Entry {
        debug_assert!(!self.hole && !self.v.is_empty());
        self.hole = true;
        self.v[0]
    }

    pub(super) fn len(&self) -> usize {
        self.v.len() - usize::from(self.hole)
    }

    /// Put `e` at the root and sift it down.
    ///
    /// Which of four children is least is a coin flip, so a branch per
    /// comparison would mispredict about half the time (in a fat tree, with
    /// hundreds of pending line events, that was half of all mispredicted
    /// branches, docs/performance.md). A full set of children is therefore
    /// reduced without branches: two pairs, then their winners, each
    /// comparison turned into an index. Keys are unique, so the order of the
    /// comparisons cannot change which child wins.
    #[inline]
    fn sift_down_from_root(&mut self, e: Entry) {
        let v = &mut self.v[..];
        let n = v.len();
        let key = e.key();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            let best = if first + ARITY <= n {
                let a = first + usize::from(v[first + 1].key() < v[first].key());
                let b = first + 2 + usize::from(v[first + 3].key() < v[first + 2].key());
                let b_wins = v[b].key() < v[a].key();
                // Arithmetic select: a `cmov`, never a branch.
                a ^ ((a ^ b) & usize::from(b_wins).wrapping_neg())
            } else if first < n {
                // The last, partial set of children.
                (first + 1..n).fold(first, |best, j| if v[j].key() < v[best].key() { j } else { best })
            } else {
                break;
            };
            if v[best].key() >= key {
                break;
            }
            v[i] = v[best];
            i = best;
        }
        v[i] = e;
    }
}

/// No event: later than any event, and told apart from real entries by its
/// `rest`, which no event can have (an event code's kind is at most 8).
pub(super) const EMPTY: Entry = Entry {
    time_ns: u64::MAX,
    rest: u64::MAX,
};

impl Entry {
    #[inline(always)]
    pub(super) fn is_vacant(&self) -> bool {
        self.rest == u64::MAX
    }
}
