//! A timing wheel: the event list's two halves (packet events and timers,
//! `scheduler.rs`) are each one, with buckets of different widths.
//!
//! Only the entries before `horizon_ns` are in a short sorted run (`near`);
//! later ones wait unsorted in fixed-width buckets (a push touches a
//! bucket's list head, two occupancy bits and a slot), those beyond the
//! ring's reach in `overflow` (a heap, or a wheel of coarser buckets), and
//! move into the ring as its reach passes them. When `near` runs dry, the
//! next occupied bucket (found through the occupancy bits, so empty buckets
//! cost a bit each, not a visit) is poured into it and sorted. Every entry
//! in `near` is earlier than every entry outside it, so its last is the
//! least entry, and the pop order is exactly that of a single heap: keys are
//! unique, so no structure can order them differently.
//!
//! Why: a heap of hundreds of pending packet events (one per busy port of a
//! fat tree) makes every event sift a new entry through four or five levels,
//! about a fifth of a fat tree's time (docs/performance.md); a bucket push,
//! and sorting the few entries of a bucket once, do not grow with the
//! number pending.

use super::heap::{Entry, Heap, EMPTY};

/// End of a bucket's list, and an empty free list.
const NIL: u32 = u32::MAX;

/// Buckets of `2^SHIFT` ns, `BUCKETS` of them (a power of two, `WORDS` × 64:
/// one occupancy bit each, at most 128 words), reaching `BUCKETS · 2^SHIFT`
/// ns past the horizon; entries beyond wait in `B`. Fixed-size tables, so
/// that a masked bucket index needs no bounds check.
#[derive(Debug)]
pub(super) struct Wheel<const SHIFT: u32, const BUCKETS: usize, const WORDS: usize, B: Beyond = Heap> {
    near: Run,
    /// Start of the bucket at `cursor`; `near` holds exactly the entries before it.
    horizon_ns: u64,
    cursor: usize,
    /// Bucket `(cursor + k) % BUCKETS` holds the entries in
    /// `[horizon + k·2^SHIFT, horizon + (k+1)·2^SHIFT)`, as a list of slots.
    heads: Box<[u32; BUCKETS]>,
    /// One bit per bucket: set iff its list is not empty.
    occupied: Box<[u64; WORDS]>,
    /// One bit per word of `occupied`: set iff the word is not zero, so the
    /// next occupied bucket is found in two steps however far it is.
    occupied_words: u128,
    /// The lists' storage: slot `s` holds an entry and the next slot of its
    /// bucket, side by side (one bounds check and one line per slot). Freed
    /// slots are chained from `free` and reused, so steady state allocates
    /// nothing. Whether the ring holds entries is `occupied_words != 0`; no
    /// count is kept on the way in and out.
    slots: Vec<Slot>,
    free: u32,
    overflow: B,
    /// How buckets are sorted when poured (`pour`), decided from the last
    /// `POURS_PER_CHOICE` pours: split by time first if they held more
    /// than `CROWDED` entries on average.
    crowded: bool,
    pours_left: u32,
    poured: u32,
}

impl<const SHIFT: u32, const BUCKETS: usize, const WORDS: usize, B: Beyond> Default for Wheel<SHIFT, BUCKETS, WORDS, B> {
    fn default() -> Self {
        assert!(BUCKETS.is_power_of_two() && BUCKETS == WORDS * 64 && WORDS <= 128, "a wheel's buckets are 64 per occupancy word");
        Wheel {
            near: Run::default(),
            horizon_ns: 0,
            cursor: 0,
            heads: vec![NIL; BUCKETS].into_boxed_slice().try_into().expect("BUCKETS heads"),
            occupied: vec![0; WORDS].into_boxed_slice().try_into().expect("WORDS words"),
            occupied_words: 0,
            slots: Vec::new(),
            free: NIL,
            overflow: B::default(),
            crowded: false,
            pours_left: POURS_PER_CHOICE,
            poured: 0,
        }
    }
}

impl<const SHIFT: u32, const BUCKETS: usize, const WORDS: usize, B: Beyond> Wheel<SHIFT, BUCKETS, WORDS, B> {
    const MASK: usize = BUCKETS - 1;

    /// Add an entry. `near` is never left empty while the wheel holds
    /// entries (here and in `take_top`), so `top` needs no settling.
    #[inline]
    pub(super) fn push(&mut self, e: Entry) {
        self.place(e);
        if self.near.is_empty() {
            self.refill();
        }
    }

    #[inline]
    fn place(&mut self, e: Entry) {
        let k = e.time_ns.wrapping_sub(self.horizon_ns) >> SHIFT;
        if e.time_ns < self.horizon_ns || k >= BUCKETS as u64 {
            return self.push_outside_ring(e);
        }
        let b = (self.cursor + k as usize) & Self::MASK;
        let next = self.heads[b];
        self.heads[b] = if self.free == NIL {
            self.grow(e, next)
        } else {
            let s = self.free;
            let slot = &mut self.slots[s as usize];
            self.free = slot.next;
            *slot = Slot { e, next };
            s
        };
        let w = (b >> 6) & (WORDS - 1);
        self.occupied[w] |= 1 << (b & 63);
        self.occupied_words |= 1 << w;
    }

    /// Before the horizon (into the current bucket's run) or beyond the
    /// ring's reach: both rare on the packet wheel, so out of its push.
    #[inline(never)]
    fn push_outside_ring(&mut self, e: Entry) {
        if e.time_ns < self.horizon_ns {
            self.near.push(e);
        } else {
            self.overflow.push(e);
        }
    }

    #[inline(never)]
    fn grow(&mut self, e: Entry, next: u32) -> u32 {
        self.slots.push(Slot { e, next });
        (self.slots.len() - 1) as u32
    }

    /// Pour the next occupied bucket into the empty `near`, pulling in what
    /// the overflow holds as the ring's reach passes it; nothing if the
    /// wheel is empty.
    #[inline(never)]
    fn refill(&mut self) {
        while self.near.is_empty() {
            if self.occupied_words == 0 {
                if self.overflow.is_empty() {
                    return;
                }
                // Nothing within reach: jump whole (empty) buckets to the
                // overflow's least entry. Until it pops, an entry scheduled
                // before it goes into `near` by insertion; moving the horizon
                // back instead (re-placing `near`'s later entries) was tried
                // and measured no gain on B, C-10000, 200 flows at 300 ms or
                // A-100 with a 1 s flow (docs/performance.md).
                let least = self.overflow.least();
                debug_assert!(!least.is_vacant(), "refill of an empty wheel");
                let skip = (least.time_ns - self.horizon_ns) >> SHIFT;
                self.horizon_ns += skip << SHIFT;
                self.cursor = (self.cursor + (skip & Self::MASK as u64) as usize) & Self::MASK;
                self.pull_overflow();
                continue;
            }
            let k = self.distance_to_occupied();
            self.horizon_ns += (k as u64) << SHIFT;
            self.cursor = (self.cursor + k) & Self::MASK;
            self.pour(self.cursor);
            self.horizon_ns = self.horizon_ns.saturating_add(1 << SHIFT);
            self.cursor = (self.cursor + 1) & Self::MASK;
            self.pull_overflow();
        }
    }

    /// Buckets from the cursor to the first occupied one (the ring holds entries).
    fn distance_to_occupied(&self) -> usize {
        let first = (self.cursor >> 6) & (WORDS - 1);
        let here = self.occupied[first] & (!0u64 << (self.cursor & 63));
        if here != 0 {
            return (first << 6 | here.trailing_zeros() as usize) - self.cursor;
        }
        // The first occupied word after the cursor's, else the first one
        // wrapping round (which may be the cursor's own, below the cursor).
        let after = self.occupied_words & ((!0u128 << first) << 1);
        let words = if after != 0 { after } else { self.occupied_words };
        debug_assert!(words != 0, "no bucket of the ring is occupied");
        let w = words.trailing_zeros() as usize & (WORDS - 1);
        let b = w << 6 | self.occupied[w].trailing_zeros() as usize;
        b.wrapping_sub(self.cursor) & Self::MASK
    }

    /// Move bucket `b` (it starts at the horizon) into `near` (empty),
    /// sorted, and free its slots.
    fn pour(&mut self, b: usize) {
        let head = std::mem::replace(&mut self.heads[b], NIL);
        let w = (b >> 6) & (WORDS - 1);
        self.occupied[w] &= !(1 << (b & 63));
        if self.occupied[w] == 0 {
            self.occupied_words &= !(1 << w);
        }
        if SHIFT > SUB_BINS.trailing_zeros() {
            // Wider buckets (timers, the packet wheel's overflow) are never
            // split: their sub-bins would not be single instants, and a
            // thousand timers in one would make the insertion sorts quadratic.
            self.pour_whole(head);
            return;
        }
        let n = if self.crowded { self.pour_split(head) } else { self.pour_whole(head) };
        self.poured += n as u32;
        self.pours_left -= 1;
        if self.pours_left == 0 {
            self.crowded = self.poured > CROWDED * POURS_PER_CHOICE;
            (self.pours_left, self.poured) = (POURS_PER_CHOICE, 0);
        }
    }

    /// A few entries per bucket (a dumbbell's one, D's 3.3 on average): copy
    /// the list and sort it. Returns the number of entries.
    #[inline(always)]
    fn pour_whole(&mut self, head: u32) -> usize {
        let mut s = head;
        while s != NIL {
            let slot = &mut self.slots[s as usize];
            self.near.v.push(slot.e);
            let freed = std::mem::replace(&mut self.free, s);
            s = std::mem::replace(&mut slot.next, freed);
        }
        self.near.sort();
        self.near.len()
    }

    /// Many entries per bucket (a fat tree of 1 024 hosts pours about 22
    /// per 8 ns bucket, where sorting them whole took 6 % of its
    /// instructions): split the list by time into `SUB_BINS` lists (one
    /// nanosecond each for 8 ns buckets), relinking the slots in place, and
    /// fill `near` from them, earliest last. The bucket's list is a stack
    /// (newest first), so each sub-list holds its entries oldest first,
    /// and filling from the end puts equal times in their order already:
    /// the insertion sort of each sub-bin rarely moves anything. Keys are
    /// unique, so the order is the one `pour_whole` gives. Returns the
    /// number of entries.
    fn pour_split(&mut self, head: u32) -> usize {
        let sub_shift = SHIFT.saturating_sub(SUB_BINS.trailing_zeros());
        let mut sub = [NIL; SUB_BINS];
        let mut n = 0;
        let mut s = head;
        while s != NIL {
            let slot = &mut self.slots[s as usize];
            let next = slot.next;
            let k = (slot.e.time_ns.wrapping_sub(self.horizon_ns) >> sub_shift) as usize & (SUB_BINS - 1);
            slot.next = sub[k];
            sub[k] = s;
            n += 1;
            s = next;
        }
        // Above the sentinel, which stays at index 0.
        let run = &mut self.near.v;
        run.resize(n + 1, EMPTY);
        let mut at = n + 1;
        for first in sub {
            let end = at;
            let mut s = first;
            while s != NIL {
                let slot = &mut self.slots[s as usize];
                at -= 1;
                run[at] = slot.e;
                let freed = std::mem::replace(&mut self.free, s);
                s = std::mem::replace(&mut slot.next, freed);
            }
            insertion_sort_latest_first(&mut run[at..end]);
        }
        n
    }

    /// Move overflow entries that the ring now reaches into it.
    fn pull_overflow(&mut self) {
        let reach_ns = self.horizon_ns.saturating_add((BUCKETS as u64) << SHIFT);
        loop {
            // `EMPTY`'s time is later than any reach.
            if self.overflow.least().time_ns >= reach_ns {
                return;
            }
            let e = self.overflow.take_least();
            self.place(e);
        }
    }

    /// The least entry, or `EMPTY`.
    #[inline]
    pub(super) fn top(&self) -> &Entry {
        self.near.last()
    }

    /// Hand out the least entry (the wheel is not empty). If that empties
    /// `near`, the next bucket is poured at once.
    #[inline]
    pub(super) fn take_top(&mut self) -> Entry {
        let e = self.near.pop();
        if self.near.is_empty() {
            self.refill();
        }
        e
    }

    /// The least entry after [`Self::top`]'s if it is already in the sorted
    /// run, else `EMPTY` (a prefetch hint).
    #[inline]
    pub(super) fn second(&self) -> &Entry {
        self.near.second()
    }

    /// The entry after [`Self::second`]'s if it is in the sorted run, else
    /// `EMPTY` (a prefetch hint).
    #[inline]
    pub(super) fn third(&self) -> &Entry {
        self.near.third()
    }

    /// Whether poured buckets are split by time (`pour`).
    #[cfg(test)]
    pub(super) fn splits_buckets(&self) -> bool {
        self.crowded
    }

    /// Counts the ring's lists: for tests and checks, not the hot path.
    pub(super) fn len(&self) -> usize {
        let mut in_ring = 0;
        for &head in self.heads.iter() {
            let mut s = head;
            while s != NIL {
                in_ring += 1;
                s = self.slots[s as usize].next;
            }
        }
        self.near.len() + in_ring + self.overflow.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.near.is_empty() && self.occupied_words == 0 && self.overflow.is_empty()
    }
}

/// A slot of a bucket's list.
#[derive(Debug, Clone, Copy)]
struct Slot {
    e: Entry,
    /// The next slot of the same bucket (or of the free list), `NIL` at the end.
    next: u32,
}

/// The entries before the horizon, sorted latest first, so that the least
/// is popped from the end. A bucket holds a few entries (D pours 3.3 per
/// 8 ns bucket on average, D-1024 about 22), so sorting them once costs
/// less than a heap's sift per pop; an entry scheduled into the current
/// bucket is inserted in place.
///
/// `v[0]` is always `EMPTY`, a sentinel later than every entry (so neither
/// sorting nor inserting moves it): the least entry is the last element
/// whether or not the run holds any, a single load where an empty run would
/// need a test on every look at the top (several per event).
#[derive(Debug)]
struct Run {
    v: Vec<Entry>,
}

impl Default for Run {
    fn default() -> Self {
        Run { v: vec![EMPTY] }
    }
}

impl Run {
    #[inline]
    fn len(&self) -> usize {
        self.v.len() - 1
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.v.len() == 1
    }

    /// The least entry, or the sentinel `EMPTY`.
    #[inline]
    fn last(&self) -> &Entry {
        debug_assert!(!self.v.is_empty() && self.v[0].is_vacant(), "the run's sentinel moved");
        // SAFETY: `v` starts with the sentinel (`default`), which `pop`
        // never removes and `sort` and `push` never move, so it is never
        // empty and `len − 1` is in bounds. A checked index here kept a
        // panic path in the event loop's pop, several times per event.
        unsafe { self.v.get_unchecked(self.v.len() - 1) }
    }

    /// The entry after the least, or `EMPTY` (the sentinel itself when the
    /// run holds one entry).
    #[inline]
    fn second(&self) -> &Entry {
        self.v.get(self.v.len().wrapping_sub(2)).unwrap_or(&EMPTY)
    }

    /// The entry after the second, or `EMPTY`.
    #[inline]
    fn third(&self) -> &Entry {
        self.v.get(self.v.len().wrapping_sub(3)).unwrap_or(&EMPTY)
    }

    /// Remove the least entry (the run is not empty).
    #[inline]
    fn pop(&mut self) -> Entry {
        let n = self.v.len();
        assert!(n > 1, "take_top of an empty wheel");
        let e = self.v[n - 1];
        self.v.truncate(n - 1);
        e
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        // Later entries first: `e` goes after every entry later than it
        // (the sentinel included).
        let at = self.v.partition_point(|x| e.before(x));
        self.v.insert(at, e);
    }

    fn sort(&mut self) {
        self.v[1..].sort_unstable_by(|a, b| b.key().cmp(&a.key()));
    }
}

/// Pours between two choices of how to sort them (`Wheel::pour`).
const POURS_PER_CHOICE: u32 = 1024;
/// More entries per pour than this, on average, and buckets are split by
/// time before sorting: with few, the split's fixed cost (eight sub-lists)
/// outweighs what it saves. Splitting every bucket of two or more entries
/// cost D (3.3 per pour) 6.8 % more instructions; splitting by this choice
/// saves D-1024 (22 per pour) 3.2 % of its instructions per packet-hop and
/// costs D 0.4 % (the count), docs/performance.md.
const CROWDED: u32 = 8;
/// The sub-bins a crowded bucket is split into by time (`Wheel::pour_split`).
const SUB_BINS: usize = 8;

/// Insertion sort, latest entry first: for the nearly sorted sub-bins.
fn insertion_sort_latest_first(v: &mut [Entry]) {
    for i in 1..v.len() {
        let e = v[i];
        let mut j = i;
        while j > 0 && v[j - 1].before(&e) {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}

/// Where a wheel keeps the entries beyond its ring's reach: a heap, or a
/// wheel of coarser buckets (which a fine wheel's long delay lines need: a
/// dumbbell with 5–100 ms paths keeps hundreds of packet events beyond
/// 65 µs, and a heap would sift each of them through its depth).
pub(super) trait Beyond: Default {
    fn push(&mut self, e: Entry);
    /// The least entry, or `EMPTY`.
    fn least(&mut self) -> &Entry;
    /// Remove the least entry (not empty).
    fn take_least(&mut self) -> Entry;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool;
}

impl Beyond for Heap {
    fn push(&mut self, e: Entry) {
        Heap::push(self, e);
    }

    fn least(&mut self) -> &Entry {
        self.settle();
        self.top()
    }

    fn take_least(&mut self) -> Entry {
        self.settle();
        self.take_top()
    }

    fn len(&self) -> usize {
        Heap::len(self)
    }

    fn is_empty(&self) -> bool {
        Heap::len(self) == 0
    }
}

impl<const SHIFT: u32, const BUCKETS: usize, const WORDS: usize, B: Beyond> Beyond for Wheel<SHIFT, BUCKETS, WORDS, B> {
    fn push(&mut self, e: Entry) {
        Wheel::push(self, e);
    }

    fn least(&mut self) -> &Entry {
        self.top()
    }

    fn take_least(&mut self) -> Entry {
        self.take_top()
    }

    fn len(&self) -> usize {
        Wheel::len(self)
    }

    fn is_empty(&self) -> bool {
        Wheel::is_empty(self)
    }
}
