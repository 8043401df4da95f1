//! Tests of the event list: pop order against a reference, ties, the timer
//! buckets and the encoding.

use super::*;

#[test]
fn pops_in_time_order_and_fifo_on_ties() {
    let mut q = EventQueue::new();
    q.schedule(30, Event::Sample);
    q.schedule(10, Event::LineArrival(1));
    q.schedule(10, Event::LineArrival(2));
    q.schedule(20, Event::LinkTxDone(0));
    q.schedule(10, Event::LineArrival(3));
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
    assert_eq!(
        order,
        vec![
            (10, Event::LineArrival(1)),
            (10, Event::LineArrival(2)),
            (10, Event::LineArrival(3)),
            (20, Event::LinkTxDone(0)),
            (30, Event::Sample)
        ]
    );
    assert_eq!(q.events_popped(), 5);
}

#[test]
fn transmissions_finish_before_other_events_of_the_same_instant() {
    let mut q = EventQueue::new();
    q.schedule(10, Event::LineArrival(1));
    q.schedule(10, Event::SenderTimer(2));
    q.schedule(10, Event::LinkTxDone(0));
    q.schedule(9, Event::LineArrival(3));
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
    assert_eq!(
        order,
        vec![(9, Event::LineArrival(3)), (10, Event::LinkTxDone(0)), (10, Event::LineArrival(1)), (10, Event::SenderTimer(2))]
    );
}

#[test]
fn random_schedules_pop_sorted_against_a_reference() {
    let mut rng = crate::sim::rng::SimRng::derive(9, crate::sim::rng::Domain::Queue, 0);
    let mut q = EventQueue::new();
    let mut reference: Vec<(u64, u64)> = vec![];
    let mut seq = 0u64;
    let mut now = 0;
    for round in 0..20_000 {
        if rng.below(3) > 0 || q.is_empty() {
            let t = now + rng.below(1000);
            // Mix both wheels.
            let ev = if seq % 3 == 0 { Event::SenderTimer(seq as u32) } else { Event::LineArrival(seq as u32) };
            q.schedule(t, ev);
            reference.push((t, seq));
            seq += 1;
        } else {
            reference.sort();
            let (t, s) = reference.remove(0);
            let ev = if s % 3 == 0 { Event::SenderTimer(s as u32) } else { Event::LineArrival(s as u32) };
            assert_eq!(q.pop(), Some((t, ev)), "round {round}");
            now = t;
        }
    }
}

/// Events from nanoseconds to seconds ahead, `kind` making each one; both
/// wheels' buckets (8 ns for packet events, about 1 ms for timers), their
/// reach (65.5 µs and 1.07 s), the overflow beyond it, gaps that make a
/// wheel jump, and equal times. Pops are checked against a sorted reference.
fn pops_sorted_from_near_to_far(seed: u64, kind: fn(u32) -> Event) {
    let mut rng = crate::sim::rng::SimRng::derive(seed, crate::sim::rng::Domain::Queue, 1);
    let mut q = EventQueue::new();
    let mut reference: Vec<(u64, u64)> = vec![];
    let (mut seq, mut now) = (0u64, 0u64);
    let mut popped = 0;
    for round in 0..40_000 {
        if rng.below(2) == 0 || q.is_empty() {
            let ahead = match rng.below(8) {
                0 => rng.below(8),
                1 => rng.below(2_000),
                2 => rng.below(70_000),
                3 => rng.below(5_000_000),
                4 => rng.below(1_500_000_000),
                5 => 3_000_000_000 + rng.below(3),
                _ => 0,
            };
            let t = now + ahead;
            q.schedule(t, kind(seq as u32));
            reference.push((t, seq));
            seq += 1;
        } else {
            reference.sort();
            let (t, s) = reference.remove(0);
            assert_eq!(q.pop(), Some((t, kind(s as u32))), "round {round}");
            now = t;
            popped += 1;
        }
        // The count walks every bucket: now and then, and past the reach's wraps.
        if round % 997 == 0 {
            assert_eq!((q.len(), q.is_empty()), (reference.len(), reference.is_empty()), "round {round}");
        }
    }
    while let Some((t, ev)) = q.pop() {
        reference.sort();
        let (rt, s) = reference.remove(0);
        assert_eq!((t, ev), (rt, kind(s as u32)));
    }
    assert!(reference.is_empty() && popped > 10_000);
    assert!(q.is_empty() && q.len() == 0);
}

#[test]
fn far_timers_pop_sorted_through_the_buckets_and_the_overflow() {
    pops_sorted_from_near_to_far(4, Event::SenderTimer);
}

#[test]
fn packet_events_pop_sorted_through_the_buckets_and_the_overflow() {
    pops_sorted_from_near_to_far(5, Event::LineArrival);
}

#[test]
fn every_event_kind_round_trips_through_the_encoding() {
    for e in [
        Event::LinkTxDone(7),
        Event::LineArrival((1 << 28) - 1),
        Event::SenderTimer(1),
        Event::ReceiverTimer(2),
        Event::QdiscTimer(3),
        Event::LinkRateChange(4),
        Event::WorkloadArrival(5),
        Event::Sample,
        Event::WarmupEnd,
    ] {
        assert_eq!(Event::decode(e.encode()), e);
    }
}

/// The prefetch hint reads a line straight from an entry's code: only a
/// line arrival names one, with its whole index; no other kind, and no
/// vacant entry, does.
#[test]
fn only_a_line_arrival_names_a_line() {
    let entry = |e: Event| Entry { time_ns: 5, rest: e.encode() as u64 };
    assert_eq!(line_of(&entry(Event::LineArrival((1 << 28) - 1))), Some((1 << 28) - 1));
    assert_eq!(line_of(&entry(Event::LineArrival(0))), Some(0));
    for e in [Event::LinkTxDone(1), Event::SenderTimer(1), Event::ReceiverTimer(1), Event::QdiscTimer(1), Event::LinkRateChange(1), Event::WorkloadArrival(1), Event::Sample, Event::WarmupEnd] {
        assert_eq!(line_of(&entry(e)), None, "{e:?}");
    }
    assert_eq!(line_of(&EMPTY), None);
}

/// Line events `i` at `times[i]`, and a timer after them all.
fn lines_then_a_timer(times: [u64; 9]) -> EventQueue {
    let mut q = EventQueue::new();
    for (i, t) in times.into_iter().enumerate() {
        q.schedule(t, Event::LineArrival(i as u32));
    }
    q.schedule(1_000, Event::SenderTimer(0));
    q
}

/// The prefetch hint names the packet event that runs next, also after an
/// event scheduled between pops (no timer earlier).
#[test]
fn the_peeked_packet_event_is_the_next_one_popped() {
    let mut q = lines_then_a_timer([50, 20, 90, 30, 70, 10, 60, 40, 80]);
    while let (Some(next), _) = q.peek_line_arrivals() {
        let popped = q.pop().expect("an event is pending").1;
        assert_eq!(popped, Event::LineArrival(next));
        if popped == Event::LineArrival(5) {
            q.schedule(35, Event::LineArrival(9));
        }
    }
    assert_eq!(q.pop(), Some((1_000, Event::SenderTimer(0))));
}

/// The two-deep hint, when it names an event, names the one popped after
/// the next, with the front slot in play (an event scheduled between pops
/// goes there). It is at hand when the next event's 8 ns bucket holds
/// another, as in a busy fat tree: here most pops.
#[test]
fn the_second_peeked_packet_event_is_popped_after_the_next() {
    let mut q = lines_then_a_timer([13, 9, 15, 10, 14, 8, 12, 11, 30]);
    let (mut pops, mut named) = (0, 0);
    while let (Some(_), second) = q.peek_line_arrivals() {
        let popped = q.pop().expect("an event is pending").1;
        pops += 1;
        if popped == Event::LineArrival(5) {
            // To the front slot, behind the wheel's 9 and the earlier-scheduled 10.
            q.schedule(10, Event::LineArrival(9));
            assert_eq!(q.peek_line_arrivals(), (Some(1), Some(3)));
            continue;
        }
        if let Some(s) = second {
            named += 1;
            assert_eq!(q.peek_line_arrivals().0, Some(s), "after {popped:?}");
        }
    }
    assert!(2 * named >= pops, "named {named} of {pops} pops");
    assert_eq!(q.pop(), Some((1_000, Event::SenderTimer(0))));
}

/// The three-deep hint (the deep prefetch of large trees; the two-deep one
/// is its first two) names the next event, and its second and third, when
/// they name one, the events popped one and two pops later, unless an
/// event was scheduled in between (here into the front slot, after the pop
/// of line 5).
#[test]
fn the_three_deep_hint_names_the_event_popped_two_later() {
    let mut q = lines_then_a_timer([13, 9, 15, 10, 14, 8, 12, 11, 30]);
    let (mut hints, mut popped, mut scheduled_before) = (Vec::new(), Vec::new(), usize::MAX);
    loop {
        let three = q.peek_three_line_arrivals();
        if three[0].is_none() {
            break;
        }
        hints.push(three);
        let Some((_, Event::LineArrival(d))) = q.pop() else { panic!("a line event is next") };
        popped.push(d);
        if d == 5 {
            q.schedule(10, Event::LineArrival(9));
            scheduled_before = popped.len(); // the pops from this one on
        }
    }
    assert_eq!(popped.len(), 10);
    let mut named = [0; 3];
    for (i, hint) in hints.iter().enumerate() {
        for (depth, d) in hint.iter().enumerate() {
            let Some(d) = d else { continue };
            if (i + 1..=i + depth).contains(&scheduled_before) {
                continue;
            }
            named[depth] += 1;
            assert_eq!(popped.get(i + depth), Some(d), "depth {depth} before pop {i}: {hint:?}, pops {popped:?}");
        }
    }
    assert_eq!(named[0], popped.len());
    assert!(named[2] >= 6, "named {named:?} of {} pops", popped.len());
    assert_eq!(q.pop(), Some((1_000, Event::SenderTimer(0))));
}

/// A fat tree of a thousand hosts pours dozens of packet events per 8 ns
/// bucket, and the wheel then splits each bucket by time before sorting
/// (`Wheel::pour_split`). Bursts of transmissions and arrivals, many at the
/// same nanosecond, pop in the order of (time, transmissions first,
/// scheduling order), both before the wheel switches and after, and the
/// wheel switches back when the buckets thin out.
#[test]
fn crowded_packet_buckets_pop_sorted_against_a_reference() {
    let mut rng = crate::sim::rng::SimRng::derive(11, crate::sim::rng::Domain::Queue, 2);
    let mut q = EventQueue::new();
    // (time, class: 0 for a transmission's end, scheduling order)
    let mut reference: std::collections::BTreeSet<(u64, u64, u32)> = Default::default();
    let (mut seq, mut now, mut popped) = (0u32, 0u64, 0u64);
    let mut was_split = false;
    let event = |seq: u32| if seq % 4 == 0 { Event::LinkTxDone(seq) } else { Event::LineArrival(seq) };
    for phase in 0..2 {
        // Phase 0: about 40 events per 8 ns; phase 1: about one per 40 ns.
        let (burst, spread_ns) = if phase == 0 { (40, 8) } else { (1, 40) };
        for _ in 0..4_000 {
            for _ in 0..burst {
                // A microsecond ahead (a hop), so that a backlog builds up;
                // many share a nanosecond: a few distinct instants per bucket.
                let t = now + 1_000 + rng.below(spread_ns) / 2 * 2;
                q.schedule(t, event(seq));
                reference.insert((t, u64::from(seq % 4 != 0), seq));
                seq += 1;
            }
            // Pop the next 8 ns, and check each pop.
            let until = now + 8;
            while let Some(&(t, class, s)) = reference.first() {
                if t >= until {
                    break;
                }
                reference.pop_first();
                assert_eq!(q.pop(), Some((t, event(s))), "phase {phase}, class {class}");
                popped += 1;
            }
            now = until;
            was_split |= q.packet_buckets_split();
        }
        if phase == 0 {
            assert!(q.packet_buckets_split(), "forty events per bucket: split");
        }
    }
    while let Some((t, _, s)) = reference.pop_first() {
        assert_eq!(q.pop(), Some((t, event(s))));
    }
    assert!(was_split && !q.packet_buckets_split(), "split while crowded, whole again after");
    assert!(q.pop().is_none() && popped > 100_000);
}
