//! World → metrics: the finished world handed over as plain run records, the
//! only way `metrics` learns what happened (it never sees the World).

use super::{Flow, Sink, Source, World};
use crate::aqm::FlowQueueCounters;
use crate::aqm::Qdisc;
use crate::cc::CongestionControl;
use crate::metrics::pcap::{PcapFlow, PcapRecords};
use crate::metrics::records::{FlowRecord, PerfRecord, QueueRecord, RunRecords, TcpRecord};
use crate::transport::Feedback;

impl World {
    /// Consume the world into the records the summary is built from.
    pub(crate) fn into_records(mut self) -> RunRecords {
        let perf = PerfRecord {
            events: self.events_executed(),
            events_by_kind: self.events_by_kind().to_vec(),
            bottleneck_packets: self.bottleneck_packets(),
            packet_hops: self.packet_hops(),
            wall_s: self.wall_s,
        };
        let flows = self.live_flow_records();
        let pcap = self.take_capture();
        // The run ends by applying it (`start_due_transmissions`).
        debug_assert!(self.sojourn_log.is_empty(), "sojourn buckets not yet counted");
        let queues = self
            .links
            .iter_mut()
            .filter(|l| l.report)
            .filter_map(|l| {
                let q = l.queue.as_mut()?;
                let names = q.qdisc.subqueue_names();
                Some(QueueRecord {
                    name: l.name.clone(),
                    aqm: q.aqm_name.clone(),
                    rate_bps: q.tx_rate_bps(),
                    subqueue_names: names,
                    counters: q.counters[..names.len()].to_vec(),
                    counters_at_warmup: q.counters_at_warmup[..names.len()].to_vec(),
                    hist: q.take_histograms(),
                    busy_ns: q.busy_ns,
                    busy_ns_at_warmup: q.busy_ns_at_warmup,
                    samples: std::mem::take(&mut q.samples),
                })
            })
            .collect();
        RunRecords {
            warmup_ns: self.warmup_ns,
            end_ns: self.end_ns,
            seed: self.seed,
            perf,
            flows,
            retired_rows: std::mem::take(&mut self.retired_rows),
            queues,
            flow_series: std::mem::take(&mut self.flow_ts),
            queue_series: std::mem::take(&mut self.queue_ts),
            probes: std::mem::take(&mut self.probes),
            goodput_interval_ns: self.scenario.metrics.goodput_interval_ns,
            rtt_hist: self.rtt_hist.take(),
            pcap,
        }
    }

    /// The packet capture (`[metrics] pcap`) with the per-flow facts its
    /// headers need, if one was asked for.
    fn take_capture(&mut self) -> Option<PcapRecords> {
        let (name, rec) = self.links.iter_mut().find_map(|l| Some((l.name.clone(), l.queue.as_mut()?.capture.take()?)))?;
        let flows = (0..self.slot_of.len())
            .map(|id| &self.flows[self.slot(id)])
            .map(|f| PcapFlow {
                accurate: matches!(&f.source, Source::Tcp(s) if s.feedback() == Feedback::Accurate),
                probe: matches!(f.source, Source::Probe(_)),
                size_bytes: f.info.size_bytes,
            })
            .collect();
        Some(PcapRecords { queue: name, recorder: *rec, flows, mss_bytes: self.tcp.mss_bytes(), end_ns: self.end_ns })
    }
}

/// Flow `f`'s end-of-run record, with its counters in the queues `fc`.
pub(super) fn flow_record(f: &Flow, fc: &FlowQueueCounters) -> FlowRecord {
    let info = &f.info;
    let tcp = match (&f.source, &f.sink) {
        (Source::Tcp(s), Sink::Tcp(_)) => Some(TcpRecord {
            retransmits: s.stats.retransmits,
            rtos: s.stats.rtos,
            ecn_reductions: s.stats.ecn_reductions,
            syn_retries: s.stats.syn_retries as u64,
            srtt_ns: s.srtt_ns(),
            negotiated: match s.feedback() {
                Feedback::None => "off",
                Feedback::Classic => "classic",
                Feedback::Accurate => "accurate",
            },
            // Reported for long-lived flows only (`metrics::summary`): a
            // workload's flow keeps its record without an allocation for it.
            cc_state: if info.from_workload {
                vec![]
            } else {
                let names = s.cc.probe_names();
                let mut vals = vec![0.0; names.len()];
                s.cc.probe(&mut vals);
                names.iter().copied().zip(vals).collect()
            },
        }),
        _ => None,
    };
    let sent = match (&f.source, &f.sink) {
        (Source::Tcp(s), Sink::Tcp(_)) => s.stats.segs_sent,
        (Source::Tcp(_), _) => 0,
        (Source::Cbr(c), _) => c.pkts_sent(),
        (Source::Qcn(q), _) => q.pkts_sent,
        (Source::Probe(p), _) => p.pkts_sent(),
    };
    FlowRecord {
        id: f.id,
        info: (**info).clone(),
        delivered_at_warmup: f.delivered_at_warmup,
        delivered_at_end: f.delivered_at_end,
        drops: fc.drops,
        marks: fc.marks,
        ack_drops: fc.ack_drops,
        acks_received: match &f.source {
            Source::Tcp(s) => s.stats.acks_received,
            _ => 0,
        },
        tcp_source: matches!(f.source, Source::Tcp(_)),
        sent,
        tcp,
        completed_ns: match &f.sink {
            Sink::Tcp(r) => r.completed_ns(),
            Sink::Datagram(_) => None,
        },
        is_probe: matches!(f.source, Source::Probe(_)),
        probe_rtt: match &f.source {
            Source::Probe(p) => p.samples.clone(),
            _ => vec![],
        },
    }
}
