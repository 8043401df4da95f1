//! A growable ring buffer of `Copy` values with a power-of-two capacity: the
//! FIFOs on the per-packet path (delay lines, the departure-lookahead
//! records of a queue, a TCP sender's scoreboard, a discipline's packets).
//!
//! Why not `std::collections::VecDeque`: a callgrind profile of bench
//! scenario A-10-ack1 put about 120 instructions per packet in VecDeque's
//! code (of 1 515). Its physical index is `head + i` followed by a
//! compare-and-subtract against an arbitrary capacity, on every access. Here
//! the capacity is a power of two, so the index is `(head + i) & mask`; the
//! head needs no arithmetic at all (`front`, `pop_front`); `pop_front_if`
//! tests and removes the head with one address; `push_back_mut` returns the
//! slot, so a delay line stamps a packet in place; and a slot is read
//! without a bounds check (see `Ring::slot`). Instructions per packet
//! (callgrind, deterministic; 9affe44 → with this ring in delay lines,
//! departure-lookahead records, scoreboard segments and discipline queues;
//! summaries byte-identical):
//!
//! | scenario | before | after |
//! |---|---|---|
//! | A-10-ack1 (2 s) | 1 515.5 | 1 459.9 (−3.7 %) |
//! | A-10 (2 s) | 1 079.5 | 1 042.7 (−3.4 %) |
//! | B (DualPI2, 30 s) | 1 702.6 | 1 670.7 (−1.9 %) |
//! | D (fat tree, per packet-hop) | 1 011.1 | 960.7 (−5.0 %) |
//!
//! The step each replacement took is in docs/performance.md ("Ring
//! buffers"). A safe version of this ring was tried before and not kept, as
//! it changed no wall time; this one is kept for its instruction count.
//!
//! The elements are `Copy`, and every slot of the buffer always holds some
//! initialised value (a stale copy outside the live range): growth fills the
//! new buffer with a copy of the element being added. So there is no
//! `MaybeUninit` and nothing to drop. The one `unsafe` operation is an
//! unchecked read or write of a slot whose index is masked by
//! `capacity − 1` (see `Ring::slot` for why it is in bounds, and why it is
//! unchecked); tests run with debug assertions, which check it.
//!
//! The capacity doubles when full (elements are moved in order to the start
//! of the new buffer) and never shrinks: each ring's peak is small (a queue's
//! buffer, a window of segments) and a steady state reallocates nothing.

use std::fmt;

/// Smallest capacity allocated (as `RawVec` does for small elements).
const MIN_CAPACITY: usize = 4;

#[derive(Clone)]
pub struct Ring<T: Copy> {
    /// `capacity` slots: 0 or a power of two. The live elements are at
    /// logical positions 0..len, physically `(head + i) & (capacity - 1)`.
    buf: Box<[T]>,
    /// Physical slot of the front (always < capacity, or 0 when none; see
    /// also `rewind`).
    head: usize,
    len: usize,
}

impl<T: Copy> Default for Ring<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy> Ring<T> {
    /// An empty ring; allocates nothing until the first push.
    pub fn new() -> Self {
        Ring { buf: Box::new([]), head: 0, len: 0 }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Physical slot of logical position `i`: below the capacity whenever
    /// the capacity is not 0 (`x & (cap − 1) ≤ cap − 1`).
    #[inline(always)]
    fn phys(&self, i: usize) -> usize {
        (self.head + i) & self.buf.len().wrapping_sub(1)
    }

    /// The element in physical slot `p`, without a bounds check. Callers
    /// pass `phys(i)` or the head while the buffer is not empty. Unchecked
    /// because the checked index, though the compiler reduces it to a test
    /// of `capacity != 0`, cost A-10-ack1 12 instructions per packet, and
    /// with it the scoreboard's ring cost 6 more than `VecDeque` instead of
    /// 5 fewer (callgrind; see the module docs).
    #[inline(always)]
    fn slot(&self, p: usize) -> &T {
        debug_assert!(p < self.buf.len());
        // SAFETY: p is the head (kept below the capacity, see `head`) or
        // x & (capacity − 1) ≤ capacity − 1: in bounds when capacity > 0.
        // Every caller holds a live element (len > 0 and len ≤ capacity) or
        // has just grown the buffer, so capacity > 0.
        unsafe { self.buf.get_unchecked(p) }
    }

    #[inline(always)]
    fn slot_mut(&mut self, p: usize) -> &mut T {
        debug_assert!(p < self.buf.len());
        // SAFETY: as in `slot`.
        unsafe { self.buf.get_unchecked_mut(p) }
    }

    /// Append `x` and return its slot (to finish writing it in place).
    #[inline(always)]
    pub fn push_back_mut(&mut self, x: T) -> &mut T {
        if self.len == self.buf.len() {
            self.grow(self.len + 1, x);
        }
        let i = self.phys(self.len);
        self.len += 1;
        let slot = self.slot_mut(i);
        *slot = x;
        slot
    }

    #[inline(always)]
    pub fn push_back(&mut self, x: T) {
        self.push_back_mut(x);
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let x = *self.slot(self.head);
        self.head = self.phys(1);
        self.len -= 1;
        Some(x)
    }

    #[inline(always)]
    pub fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(*self.slot(self.phys(self.len)))
    }

    /// Remove the front if `pred` holds for it: one length test and one
    /// slot address where `front` then `pop_front` would compute both twice.
    #[inline(always)]
    pub fn pop_front_if(&mut self, pred: impl FnOnce(&T) -> bool) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let x = *self.slot(self.head);
        if !pred(&x) {
            return None;
        }
        self.head = self.phys(1);
        self.len -= 1;
        Some(x)
    }

    /// Start an empty ring again at slot 0. A FIFO that is usually empty or
    /// nearly (a fat tree's 1 µs delay line holds about one packet, its
    /// ports' queues are mostly empty) then writes the same few slots again
    /// instead of walking its whole buffer, a new cache line per packet.
    /// Its owners call this where they already branch on finding the ring
    /// empty, so that a ring that seldom empties pays nothing; in every
    /// pop it cost A-10-ack1 seven instructions per packet (profile-guided
    /// build, docs/performance.md).
    #[inline(always)]
    pub fn rewind(&mut self) {
        debug_assert!(self.is_empty(), "rewind of a ring holding {}", self.len);
        self.head = 0;
    }

    /// Where the next `push_back` writes, if there is room (a prefetch hint).
    #[inline(always)]
    pub fn back_slot_hint(&self) -> Option<&T> {
        (self.len < self.buf.len()).then(|| self.slot(self.phys(self.len)))
    }

    /// The head is kept below the capacity, so unlike `get(0)` this needs
    /// no mask.
    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        Some(self.slot(self.head))
    }

    #[inline(always)]
    pub fn back(&self) -> Option<&T> {
        self.get(self.len.wrapping_sub(1))
    }

    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i < self.len {
            Some(self.slot(self.phys(i)))
        } else {
            None
        }
    }

    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i < self.len {
            let p = self.phys(i);
            Some(self.slot_mut(p))
        } else {
            None
        }
    }

    /// Make room for `additional` more elements without a reallocation
    /// later; `fill` initialises the new slots (any value of the type).
    pub fn reserve(&mut self, additional: usize, fill: T) {
        let need = self.len + additional;
        if need > self.buf.len() {
            self.grow(need, fill);
        }
    }

    /// Move to a buffer of at least `min_cap` slots (and at least twice the
    /// current), elements in order from slot 0. Out of line: a steady state
    /// never comes here, and inlining it would bloat every push.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, min_cap: usize, fill: T) {
        let cap = min_cap.max(self.buf.len() * 2).max(MIN_CAPACITY).next_power_of_two();
        let mut buf = vec![fill; cap].into_boxed_slice();
        for (i, slot) in buf.iter_mut().take(self.len).enumerate() {
            *slot = self.buf[self.phys(i)];
        }
        self.buf = buf;
        self.head = 0;
    }

    /// Insert `x` at logical position `i` (0..=len), moving the shorter side
    /// by one place: the elements before `i` one place toward the front
    /// (the head moves back), or those from `i` on one place back. A
    /// time-ordered line receives a slightly early packet somewhere in its
    /// middle (a delayed-ACK timer's reply among replies that ran ahead);
    /// moving only the back made that a twentieth of C-10000's instructions.
    pub fn insert(&mut self, i: usize, x: T) {
        assert!(i <= self.len, "insert at {i} beyond length {}", self.len);
        if self.len == self.buf.len() {
            self.grow(self.len + 1, x);
        }
        let mask = self.buf.len() - 1;
        if i < self.len - i {
            // Logical positions 0..i move to −1..i−1.
            self.head = (self.head + mask) & mask;
            for k in 0..i {
                let (to, from) = (self.phys(k), self.phys(k + 1));
                self.buf[to] = self.buf[from];
            }
        } else {
            for k in (i..self.len).rev() {
                let (to, from) = (self.phys(k + 1), self.phys(k));
                self.buf[to] = self.buf[from];
            }
        }
        let p = self.phys(i);
        self.buf[p] = x;
        self.len += 1;
    }

    /// The first position whose element fails `pred`, for a ring
    /// partitioned by it (all true, then all false), as
    /// `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.buf[self.phys(mid)]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Remove the first `n` elements and yield them, oldest first. They are
    /// removed at once, whether or not the iterator is consumed.
    #[inline(always)]
    pub fn drain_front(&mut self, n: usize) -> DrainFront<'_, T> {
        assert!(n <= self.len, "drain of {n} beyond length {}", self.len);
        let (pos, mask) = (self.head, self.buf.len().wrapping_sub(1));
        self.head = self.phys(n);
        self.len -= n;
        DrainFront { buf: &self.buf, pos, end: pos + n, mask }
    }

    /// The live elements as two slices, front part first (as
    /// `VecDeque::as_slices`).
    pub fn as_slices(&self) -> (&[T], &[T]) {
        let first = (self.buf.len() - self.head).min(self.len);
        let (back, front) = self.buf.split_at(self.head);
        (&front[..first], &back[..self.len - first])
    }

    pub fn as_mut_slices(&mut self) -> (&mut [T], &mut [T]) {
        let first = (self.buf.len() - self.head).min(self.len);
        let (back, front) = self.buf.split_at_mut(self.head);
        (&mut front[..first], &mut back[..self.len - first])
    }

    /// Oldest first. Off the per-packet path (checks, reports).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        let (a, b) = self.as_slices();
        a.iter().chain(b)
    }

    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> {
        let (a, b) = self.as_mut_slices();
        a.iter_mut().chain(b)
    }
}

impl<T: Copy> std::ops::Index<usize> for Ring<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(x) => x,
            None => out_of_range(i, self.len),
        }
    }
}

impl<T: Copy> std::ops::IndexMut<usize> for Ring<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        let len = self.len;
        match self.get_mut(i) {
            Some(x) => x,
            None => out_of_range(i, len),
        }
    }
}

#[cold]
#[inline(never)]
fn out_of_range(i: usize, len: usize) -> ! {
    panic!("ring index {i} out of range for length {len}")
}

impl<'a, T: Copy> IntoIterator for &'a Ring<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Chain<std::slice::Iter<'a, T>, std::slice::Iter<'a, T>>;
    fn into_iter(self) -> Self::IntoIter {
        let (a, b) = self.as_slices();
        a.iter().chain(b)
    }
}

/// The elements [`Ring::drain_front`] removed: a masked index walk, with
/// no setup beyond copying the mask (a cumulative ACK usually removes one
/// or two elements).
pub struct DrainFront<'a, T> {
    buf: &'a [T],
    pos: usize,
    end: usize,
    mask: usize,
}

impl<T: Copy> Iterator for DrainFront<'_, T> {
    type Item = T;
    #[inline(always)]
    fn next(&mut self) -> Option<T> {
        if self.pos == self.end {
            return None;
        }
        debug_assert!(self.pos & self.mask < self.buf.len());
        // SAFETY: as `Ring::slot`: the index is masked by capacity − 1, and
        // the capacity is not 0 since there was an element to drain.
        let x = unsafe { *self.buf.get_unchecked(self.pos & self.mask) };
        self.pos += 1;
        Some(x)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.pos;
        (n, Some(n))
    }
}

impl<T: Copy> ExactSizeIterator for DrainFront<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::{Domain, SimRng};
    use std::collections::VecDeque;

    fn assert_same(r: &Ring<u64>, v: &VecDeque<u64>, step: usize) {
        assert_eq!(r.len(), v.len(), "step {step}");
        assert!(r.iter().eq(v.iter()), "step {step}: {r:?} != {v:?}");
        assert!(r.iter().rev().eq(v.iter().rev()), "step {step}");
        assert_eq!(r.front(), v.front(), "step {step}");
        assert_eq!(r.back(), v.back(), "step {step}");
        assert!(r.capacity() == 0 || r.capacity().is_power_of_two());
    }

    /// The deep prefetch's hint is the slot the next `push_back` writes,
    /// wherever the live range lies, and there is none when the ring is
    /// full (a push then moves everything).
    #[test]
    fn the_back_slot_hint_is_where_the_next_push_writes() {
        let mut r: Ring<u64> = Ring::new();
        assert!(r.back_slot_hint().is_none(), "nothing allocated yet");
        let (mut hinted, mut full) = (0, 0);
        for i in 0..200u64 {
            match r.back_slot_hint().map(|s| s as *const u64) {
                Some(hint) => {
                    assert_eq!(hint, r.push_back_mut(i) as *const u64, "push {i}");
                    hinted += 1;
                }
                None => {
                    assert_eq!(r.len(), r.capacity());
                    r.push_back(i);
                    full += 1;
                }
            }
            if i % 3 != 0 {
                r.pop_front();
            }
        }
        assert!(hinted > 150 && full >= 3, "hinted {hinted}, full {full}");
    }

    /// Every operation against `VecDeque` as the oracle, over a random
    /// sequence that grows the ring from empty through several doublings
    /// while the front keeps moving, so the live range wraps around the
    /// buffer's end many times (checked: it does).
    #[test]
    fn matches_vecdeque_over_random_operations_across_growth_and_wraparound() {
        let mut rng = SimRng::derive(7, Domain::Flow, 0);
        let mut r: Ring<u64> = Ring::new();
        let mut v: VecDeque<u64> = VecDeque::new();
        let (mut grown, mut wrapped, mut next) = (0, 0, 0u64);
        let mut cap = 0;
        for step in 0..40_000 {
            // Phases that fill (the length drifts up past a thousand) and
            // empty the ring, so it grows, then wraps while refilling.
            let filling = (step / 4000) % 3 != 2;
            let op = rng.below(16);
            match op {
                0..=7 if filling => {
                    r.push_back(next);
                    v.push_back(next);
                    next += 1;
                }
                6 | 7 => assert_eq!(r.pop_front(), v.pop_front(), "step {step}"),
                8 => {
                    // Pops only an even front.
                    let want = v.front().filter(|&&x| x % 2 == 0).copied();
                    if want.is_some() {
                        v.pop_front();
                    }
                    assert_eq!(r.pop_front_if(|&x| x % 2 == 0), want, "step {step}");
                }
                9 => {
                    let i = rng.below(v.len() as u64 + 1) as usize;
                    r.insert(i, next);
                    v.insert(i, next);
                    next += 1;
                }
                10 => {
                    let n = rng.below(v.len().min(5) as u64 + 1) as usize;
                    let got: Vec<u64> = r.drain_front(n).collect();
                    let want: Vec<u64> = v.drain(..n).collect();
                    assert_eq!(got, want, "step {step}");
                }
                11 if !v.is_empty() => {
                    let i = rng.below(v.len() as u64) as usize;
                    r[i] += 1000;
                    v[i] += 1000;
                    let last = v.len() - 1;
                    r[last] += 1;
                    v[last] += 1;
                    r.iter_mut().for_each(|x| *x += 1);
                    v.iter_mut().for_each(|x| *x += 1);
                }
                12 => {
                    let i = rng.below(v.len() as u64 + 2) as usize;
                    assert_eq!(r.get(i), v.get(i), "step {step}");
                }
                13 if filling => assert_eq!(r.pop_back(), v.pop_back(), "step {step}"),
                _ if !filling => {
                    for _ in 0..rng.below(8) {
                        assert_eq!(r.pop_front(), v.pop_front(), "step {step}");
                    }
                }
                _ => {}
            }
            if step % 7_000 == 6_999 {
                // Empty it in one drain, wherever the seam lies.
                let n = v.len();
                assert!(r.drain_front(n).eq(v.drain(..)), "step {step}");
            }
            if r.capacity() > cap {
                grown += 1;
                cap = r.capacity();
            }
            if r.head + r.len > r.capacity() {
                wrapped += 1;
            }
            assert_same(&r, &v, step);
        }
        assert!(grown >= 8, "only {grown} growths (capacity {cap})");
        assert!(wrapped > 1000, "the live range wrapped only {wrapped} times");
    }

    /// An insert into a ring whose live range wraps around the buffer's end
    /// shifts the elements across the seam, then a growth unwraps them.
    #[test]
    fn insert_in_the_middle_after_wraparound_keeps_order() {
        let mut r: Ring<u64> = Ring::new();
        for x in 0..8 {
            r.push_back(x);
        }
        for _ in 0..6 {
            r.pop_front();
        }
        for x in 8..14 {
            r.push_back(x); // 6, 7 at the buffer's end, 8..14 from slot 0
        }
        assert_eq!((r.capacity(), r.head), (8, 6));
        let (a, b) = r.as_slices();
        assert_eq!((a, b), (&[6, 7][..], &[8, 9, 10, 11, 12, 13][..]));
        r.insert(1, 100); // before the seam: the seam element moves across it
        let want = [6, 100, 7, 8, 9, 10, 11, 12, 13];
        assert!(r.iter().copied().eq(want), "{r:?}");
        assert_eq!(r.capacity(), 16, "the ninth element grew the ring");
        r.insert(4, 200);
        let want = [6, 100, 7, 8, 200, 9, 10, 11, 12, 13];
        assert!(r.iter().copied().eq(want), "{r:?}");
        // A partition point that lands past the seam of a wrapped ring.
        let mut w: Ring<u64> = Ring::new();
        for x in 0..8 {
            w.push_back(x * 10);
        }
        for _ in 0..5 {
            w.pop_front();
        }
        for x in 8..12 {
            w.push_back(x * 10);
        }
        let i = w.partition_point(|&t| t <= 95);
        assert_eq!(i, 5, "{w:?}");
        w.insert(i, 95);
        assert!(w.iter().copied().eq([50, 60, 70, 80, 90, 95, 100, 110]), "{w:?}");
        assert_eq!(w.capacity(), 8);
    }

    /// A time-ordered ring kept sorted by `partition_point` + `insert`
    /// (what `DelayLine::sort_in_newest` does), against VecDeque, while the
    /// front is consumed so the seam moves through the inserts.
    #[test]
    fn sorted_inserts_match_vecdeque_across_wraparound() {
        let mut rng = SimRng::derive(11, Domain::Flow, 1);
        let mut r: Ring<(u64, u64)> = Ring::new();
        let mut v: VecDeque<(u64, u64)> = VecDeque::new();
        let (mut now, mut wrapped) = (0, 0);
        for id in 0..20_000u64 {
            now += rng.below(3);
            // Mostly at the tail, sometimes a little earlier (ties too).
            let t = now + 50 - rng.below(4) * rng.below(20);
            let i = r.partition_point(|&(x, _)| x <= t);
            assert_eq!(i, v.partition_point(|&(x, _)| x <= t), "id {id}");
            r.insert(i, (t, id));
            v.insert(i, (t, id));
            while v.front().is_some_and(|&(x, _)| x <= now) {
                assert_eq!(r.pop_front(), v.pop_front());
            }
            assert!(r.iter().eq(v.iter()), "id {id}");
            wrapped += usize::from(r.head + r.len > r.capacity());
        }
        assert!(r.capacity() >= 32, "grew: {}", r.capacity());
        assert!(wrapped > 1000, "the live range wrapped only {wrapped} times");
    }

    #[test]
    fn reserve_allocates_once_and_never_shrinks() {
        let mut r: Ring<u64> = Ring::new();
        assert_eq!(r.capacity(), 0);
        r.reserve(250, 0);
        assert_eq!(r.capacity(), 256);
        for x in 0..256 {
            r.push_back(x);
        }
        assert_eq!(r.capacity(), 256);
        while r.pop_front().is_some() {}
        assert_eq!((r.capacity(), r.len()), (256, 0));
    }

    #[test]
    fn a_rewound_ring_starts_again_at_slot_zero() {
        let mut r: Ring<u64> = Ring::new();
        r.reserve(8, 0);
        r.push_back(1);
        r.push_back(2);
        assert_eq!((r.pop_front(), r.pop_front()), (Some(1), Some(2)));
        r.push_back(3);
        assert!(std::ptr::eq(r.front().unwrap(), &r.buf[2]), "without a rewind the ring walks on");
        assert_eq!(r.pop_front(), Some(3));
        r.rewind();
        r.push_back(4);
        r.push_back(5);
        assert!(std::ptr::eq(r.front().unwrap(), &r.buf[0]));
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), [4, 5]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn indexing_past_the_length_panics_even_with_spare_capacity() {
        let mut r: Ring<u64> = Ring::new();
        r.push_back(1);
        let _ = r[1];
    }
}
