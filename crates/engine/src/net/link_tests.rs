//! Queue slots: the hot-first layout, conservation of packets, and the
//! error that names a queue losing one.

use super::*;
use crate::aqm::fifo::{Fifo, FifoConfig};
use crate::aqm::testing::{data, env};
use crate::packet::Ecn;
use crate::sim::rng::Domain;

fn fifo_link(limit_pkts: u64) -> Link {
    let rng = || SimRng::derive(1, Domain::Queue, 0);
    let q = AnyQdisc::Fifo(Fifo::new(FifoConfig {}, &env(10_000_000, limit_pkts)).unwrap());
    Link::new("bottleneck".into(), 0, 0.0, 0.0, rng()).with_queue(10_000_000, q, "fifo".into(), rng(), true, 0)
}

/// The layout `QueueSlot` documents: what a packet touches lies in the
/// first four cache lines (and the discipline's first line).
#[test]
fn the_hot_fields_share_the_first_cache_lines() {
    use std::mem::{offset_of, size_of};
    assert_eq!(offset_of!(Link, queue), 0);
    assert_eq!(offset_of!(QueueSlot, timer_at), 0);
    // The transmitter (rate and carry) and its totals.
    for field in [offset_of!(QueueSlot, tx), offset_of!(QueueSlot, busy_ns), offset_of!(QueueSlot, data_departed)] {
        assert!(field + 8 <= 128, "{field}");
    }
    assert!(offset_of!(QueueSlot, tx) + size_of::<Serialiser>() <= 128);
    // The waiting ring's header, which the deep prefetch reads for its front.
    assert!(offset_of!(QueueSlot, waiting) + size_of::<Ring<Waiting>>() <= 128);
    // The third line: the first sub-queue's sojourn statistics and the capture.
    assert_eq!(offset_of!(QueueSlot, sojourn0), 128);
    assert_eq!(size_of::<SojournStats>(), 32);
    assert!((160..192).contains(&offset_of!(QueueSlot, capture)));
    assert!(offset_of!(QueueSlot, on_medium) < 64);
    assert!(offset_of!(QueueSlot, link_random) < 64 && offset_of!(QueueSlot, notifies_sources) < 64);
    // Early hand-off's state and the transmission's end, read on every hop.
    for flag in [offset_of!(QueueSlot, hands_on_early), offset_of!(QueueSlot, sending), offset_of!(QueueSlot, tx_done_armed)] {
        assert!(flag < 64, "{flag}");
    }
    assert!(offset_of!(QueueSlot, free_at_ns) + 8 <= 64);
    // Without departure lookahead a packet's pass also reads the packet on
    // the wire: one line, not two.
    assert_eq!(offset_of!(QueueSlot, in_tx) % 64, 0);
    assert_eq!(size_of::<OnWire>(), 64);
    // A packet's arrival, departure, sojourn sum and mark (other than a
    // link's random mark) land in the first sub-queue's counters, which
    // start in the third line and end in the fourth, the last hot one.
    let counters = offset_of!(QueueSlot, counters);
    assert!((128..192).contains(&counters), "{counters}");
    assert!(counters + offset_of!(SubqueueCounters, sojourn_sum_ns) + 8 <= HOT_BYTES);
    assert!(counters + offset_of!(SubqueueCounters, marked_pkts) + 8 * (MarkReason::Coupled as usize + 1) <= HOT_BYTES);
    // Waiting records two to a line (debug builds add the checked transmission time).
    assert_eq!(size_of::<Waiting>() - if cfg!(debug_assertions) { 8 } else { 0 }, 32);
    // Every link of a table starts on a line, so the four are four.
    assert_eq!(std::mem::align_of::<Link>(), 64);
}

#[test]
fn conservation_holds_through_arrivals_drops_and_departures() {
    let mut link = fifo_link(3);
    let q = link.queue.as_mut().unwrap();
    let mut flows = vec![FlowQueueCounters::default(); 2];
    for _ in 0..5 {
        q.arrive(0, data(1, Ecn::NotEct), &mut flows); // 3 queued, 2 tail-dropped
    }
    q.start_tx(0, &mut flows).unwrap();
    q.check_conservation("bottleneck").unwrap();
    assert_eq!(q.qdisc.len_pkts(), 2);
}

#[test]
fn a_lost_packet_is_an_error_naming_the_queue_and_the_counts() {
    let mut link = fifo_link(10);
    let q = link.queue.as_mut().unwrap();
    let mut flows = vec![FlowQueueCounters::default(); 2];
    q.arrive(0, data(1, Ecn::NotEct), &mut flows);
    // A discipline that forgot a packet: counted in, neither queued, sent nor dropped.
    q.counters[0].arrived_pkts += 1;
    let err = q.check_conservation("bottleneck").unwrap_err();
    assert_eq!(
        err,
        "queue 'bottleneck' lost track of packets: arrived 2 != departed 0 + dropped 0 + resident 1"
    );
}

/// A port that carries data one way and ACKs the other: each packet's
/// transmission takes its own size at the link's rate (1 500 bytes at
/// 10 Mbit/s: 1.2 ms; 52 bytes: 41.6 µs), back to back, and only the data
/// packets count as the benchmark's bottleneck packets.
#[test]
fn alternating_data_and_acks_leave_back_to_back_and_only_data_counts() {
    let mut link = fifo_link(10);
    link.enable_departure_lookahead(false);
    let q = link.queue.as_mut().unwrap();
    let mut flows = vec![FlowQueueCounters::default(); 2];
    let mut log = SojournLog::new(false);
    let ack = || crate::packet::Packet::new(crate::packet::PacketKind::Ack, 1, 52);
    let mut ends = vec![];
    for i in 0..4 {
        let mut p = if i % 2 == 0 { data(1, Ecn::NotEct) } else { ack() };
        ends.push(q.arrive_ahead(0, &mut p, &mut flows, &mut log, 0).expect("room in the queue"));
    }
    assert_eq!(ends, [1_200_000, 1_241_600, 2_441_600, 2_483_200]);
    q.start_due(10_000_000, &mut log, 0);
    assert_eq!(q.counters[0].departed_pkts, 4);
    assert_eq!(q.data_departed, 2);
}

/// Departure lookahead: a queue whose waiting ring holds one record at a
/// time keeps it in one slot (`start_due` rewinds the ring it empties, so
/// it does not walk its buffer a cache line per packet).
#[test]
fn a_waiting_ring_holding_one_record_at_a_time_keeps_it_in_one_slot() {
    let mut link = fifo_link(10);
    link.enable_departure_lookahead(false);
    let q = link.queue.as_mut().unwrap();
    assert!(q.departure_lookahead);
    let mut flows = vec![FlowQueueCounters::default(); 2];
    let mut log = SojournLog::new(false);
    let mut first_slot = None;
    for i in 0..20u64 {
        // Two arrivals at once, pairs 10 ms apart (a packet takes 1.2 ms
        // at 10 Mbit/s): the first starts at once, the second waits for
        // it; the next pair's first arrival settles the waiting one and
        // empties the ring.
        let now_ns = i * 10_000_000;
        assert!(q.arrive_ahead(now_ns, &mut data(1, Ecn::NotEct), &mut flows, &mut log, 0).is_some());
        assert!(q.arrive_ahead(now_ns, &mut data(1, Ecn::NotEct), &mut flows, &mut log, 0).is_some());
        assert_eq!(q.waiting.len(), 1);
        let slot: *const Waiting = q.waiting.front().unwrap();
        assert_eq!(*first_slot.get_or_insert(slot), slot, "pair {i}: the waiting record went to another slot");
    }
}

/// The largest sojourn: a time-series sample reports its whole interval,
/// warm-up's end inside it included, while the histogram's maximum counts
/// only what left after warm-up (`QueueSlot::take_sojourn_max`).
#[test]
fn a_sample_across_warm_up_reports_its_whole_interval_the_histogram_does_not() {
    let mut link = fifo_link(10);
    let q = link.queue.as_mut().unwrap();
    let mut flows = vec![FlowQueueCounters::default(); 2];
    let mut pass = |q: &mut QueueSlot, arrive_ns: u64, start_ns: u64| {
        assert!(q.arrive(arrive_ns, data(1, Ecn::NotEct), &mut flows));
        q.start_tx(start_ns, &mut flows).expect("the wire is free");
        q.finish_tx();
    };
    pass(q, 0, 5_000); // sojourn 5 µs, before warm-up ends
    q.end_warmup();
    pass(q, 6_000, 6_100); // 100 ns
    assert_eq!(q.take_sojourn_max(0), 5_000);
    pass(q, 7_000, 7_200); // 200 ns
    pass(q, 8_000, 8_050); // 50 ns
    assert_eq!(q.take_sojourn_max(0), 200);
    pass(q, 9_000, 9_030); // 30 ns, in an interval not yet sampled
    let h = q.take_histograms();
    assert_eq!((h[0].count(), h[0].max()), (4, 200));
    assert_eq!(h[0].mean(), (100 + 200 + 50 + 30) as f64 / 4.0);
}
