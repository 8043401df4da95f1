//! Per-packet cost of every queue discipline and congestion control, in
//! isolation: `cargo bench -p aqmlab-engine`. Prints ns per operation
//! (median of 7 repeats). Whole-simulation throughput is `aqmlab bench`.

use aqmlab_engine::aqm::{self, FlowQueueCounters, Qdisc, QdiscCtx, QdiscEnv, QueueLimit, SubqueueCounters, MAX_SUBQUEUES};
use aqmlab_engine::cc::{self, AckEvent, CongestionControl, CongestionEvent, CongestionKind};
use aqmlab_engine::packet::{Ecn, Packet, PacketKind};
use aqmlab_engine::sim::rng::{Domain, SimRng};
use std::hint::black_box;
use std::time::Instant;

const PACKETS: u64 = 400_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Enqueue + dequeue of one packet with about 100 packets standing, at 1 Gbit/s.
fn bench_aqm(name: &str) -> f64 {
    let env = QdiscEnv { link_rate_bps: 1_000_000_000, mtu_bytes: 1500, limit: QueueLimit { pkts: Some(1000), bytes: None } };
    let mut runs = vec![];
    for _ in 0..7 {
        let (mut q, _) = aqm::build(name, &serde_json::Value::Null, &env).unwrap();
        let mut rng = SimRng::derive(1, Domain::Queue, 0);
        let mut counters: [SubqueueCounters; MAX_SUBQUEUES] = Default::default();
        let mut flows = vec![FlowQueueCounters::default(); 16];
        let mut now = 0u64;
        let start = Instant::now();
        for i in 0..PACKETS {
            now += 12_000;
            let mut p = Packet::new(PacketKind::Data, (i % 16) as u32, 1500);
            p.ecn = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
            p.subq = q.classify(&p);
            p.enq_ns = now;
            let mut ctx = QdiscCtx::new(now, &mut rng, &mut counters, &mut flows);
            if q.next_timer_ns().is_some_and(|t| t <= now) {
                q.on_timer(&mut ctx);
            }
            q.enqueue(p, &mut ctx);
            // Keep about 100 packets standing: dequeue once per arrival after a fill-up.
            if i >= 100 {
                black_box(q.dequeue(&mut ctx));
            }
        }
        runs.push(start.elapsed().as_nanos() as f64 / PACKETS as f64);
    }
    median(runs)
}

/// One ACK (two segments) with a congestion signal every 200 ACKs.
fn bench_cc(name: &str) -> f64 {
    let mut runs = vec![];
    for _ in 0..7 {
        let (mut c, _) = (cc::lookup(name).unwrap().build)(&serde_json::Value::Null).unwrap();
        let start = Instant::now();
        let mut una = 0u64;
        for i in 0..PACKETS {
            una += 2;
            let ev = AckEvent {
                now_ns: i * 10_000,
                acked_segs: 2,
                delivered_segs: 2,
                ce_segs: u32::from(i % 50 == 0),
                rtt_ns: Some(10_000_000),
                srtt_ns: 10_000_000,
                min_rtt_ns: 10_000_000,
                snd_una: una,
                snd_nxt: una + c.cwnd() as u64,
                in_flight_segs: c.cwnd(),
                cwnd_limited: true,
                ..Default::default()
            };
            c.on_ack(black_box(&ev));
            if i % 200 == 199 {
                c.on_congestion(&CongestionEvent { now_ns: ev.now_ns, kind: CongestionKind::Ecn, in_flight_segs: c.cwnd(), srtt_ns: 10_000_000 });
            }
        }
        black_box(c.cwnd());
        runs.push(start.elapsed().as_nanos() as f64 / PACKETS as f64);
    }
    median(runs)
}

fn main() {
    println!("{:<12} {:>14}", "aqm", "ns/packet");
    for name in aqm::aqm_names() {
        println!("{:<12} {:>14.1}", name, bench_aqm(name));
    }
    println!("\n{:<12} {:>14}", "cc", "ns/ack");
    for name in cc::cc_names() {
        println!("{:<12} {:>14.1}", name, bench_cc(name));
    }
}
