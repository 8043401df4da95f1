//! The `flows` table (docs/results.md): a row per flow, built from its
//! end-of-run record.
//!
//! A workload's flow that retires before the end of the run
//! (`world::retire`) gets its row then, and its record is dropped: a row's
//! 160 bytes instead of a record's 272 held to the end (2 000 web flows a
//! second, 128 s: docs/performance.md, "Workload flows over long runs").
//! The rows of retired flows come in the order the flows retired, those of
//! the others at the end: [`FlowRows::into_id_order`] puts them in flow-id
//! order, as if every row had been built at the end.

use super::records::FlowRecord;
use super::{Column, Table, TextColumn};
use crate::sim::ns_to_secs;

/// What a flow's row and its entry in the summary's `flows` compute from
/// its record over the measurement window [warm-up, end].
pub(super) struct FlowFigures {
    /// Bytes delivered in the window.
    pub measured: u64,
    /// Size over completion time for a finite flow (NaN if it did not
    /// complete in the run); else bytes delivered over the time it was
    /// active in the window (NaN if none).
    pub goodput_bps: f64,
    pub retransmits: u64,
    pub rtos: u64,
    pub ecn_reductions: u64,
    pub srtt_ns: u64,
    /// Completion time of a finite flow that completed by the end.
    pub fct_ns: Option<u64>,
    /// The ECN feedback negotiated, "n/a" for a flow that is not TCP.
    pub negotiated: &'static str,
}

impl FlowFigures {
    pub(super) fn of(f: &FlowRecord, warmup_ns: u64, end_ns: u64) -> FlowFigures {
        let info = &f.info;
        let (from, to) = (info.start_ns.max(warmup_ns), info.stop_ns.unwrap_or(end_ns).min(end_ns));
        let active = to.saturating_sub(from);
        let measured = f.delivered_at_end - f.delivered_at_warmup;
        let mut x = FlowFigures { measured, goodput_bps: f64::NAN, retransmits: 0, rtos: 0, ecn_reductions: 0, srtt_ns: 0, fct_ns: None, negotiated: "n/a" };
        if let Some(tcp) = &f.tcp {
            x.retransmits = tcp.retransmits;
            x.rtos = tcp.rtos;
            x.ecn_reductions = tcp.ecn_reductions;
            x.srtt_ns = tcp.srtt_ns;
            // A receiver may run ahead of real time; a completion after the end did not happen.
            x.fct_ns = f.completed_ns.filter(|&c| c <= end_ns).map(|c| c - info.start_ns);
            x.negotiated = tcp.negotiated;
        }
        x.goodput_bps = match (info.size_bytes, x.fct_ns) {
            (Some(size), Some(fct)) => size as f64 * 8.0 / ns_to_secs(fct.max(1)),
            (Some(_), None) => f64::NAN,
            (None, _) if active == 0 => f64::NAN,
            (None, _) => measured as f64 * 8.0 / ns_to_secs(active),
        };
        x
    }
}

/// The `flows` table's columns.
#[derive(Default)]
pub struct FlowRows {
    id: Vec<u64>,
    group: Vec<u64>,
    pub(super) label: TextColumn,
    cc: TextColumn,
    ecn: TextColumn,
    ecn_negotiated: TextColumn,
    base_rtt_ns: Vec<u64>,
    start_ns: Vec<u64>,
    pub(super) size_bytes: Vec<i64>,
    bytes: Vec<u64>,
    bytes_measured: Vec<u64>,
    goodput_bps: Vec<f64>,
    retransmits: Vec<u64>,
    pub(super) rtos: Vec<u64>,
    pub(super) syn_retries: Vec<u64>,
    ecn_reductions: Vec<u64>,
    segs_sent: Vec<u64>,
    drops: Vec<u64>,
    marks: Vec<u64>,
    srtt_ns: Vec<u64>,
    pub(super) fct_ns: Vec<i64>,
    pub(super) workload: Vec<u64>,
}

impl FlowRows {
    /// Room for `more` rows beyond those held; a hint only (address space
    /// is backed as the rows fill it).
    pub fn reserve(&mut self, more: usize) {
        let u64s = [&mut self.id, &mut self.group, &mut self.base_rtt_ns, &mut self.start_ns, &mut self.bytes, &mut self.bytes_measured];
        let more_u64s = [&mut self.retransmits, &mut self.rtos, &mut self.syn_retries, &mut self.ecn_reductions, &mut self.segs_sent];
        for v in u64s.into_iter().chain(more_u64s).chain([&mut self.drops, &mut self.marks, &mut self.srtt_ns, &mut self.workload]) {
            v.reserve_exact(more);
        }
        self.size_bytes.reserve_exact(more);
        self.fct_ns.reserve_exact(more);
        self.goodput_bps.reserve_exact(more);
        for c in [&mut self.label, &mut self.cc, &mut self.ecn, &mut self.ecn_negotiated] {
            c.reserve(more);
        }
    }

    pub fn len(&self) -> usize {
        self.id.len()
    }
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// Append flow `f`'s row, its figures over [warm-up, end].
    pub fn push_record(&mut self, f: &FlowRecord, warmup_ns: u64, end_ns: u64) {
        self.push(f, &FlowFigures::of(f, warmup_ns, end_ns));
    }

    /// Append flow `f`'s row, with its figures `x` computed already.
    pub(super) fn push(&mut self, f: &FlowRecord, x: &FlowFigures) {
        let info = &f.info;
        self.id.push(u64::from(f.id));
        self.group.push(u64::from(info.group));
        self.label.push(&info.label);
        self.cc.push(&info.cc);
        self.ecn.push(info.ecn.name());
        self.ecn_negotiated.push(x.negotiated);
        self.base_rtt_ns.push(info.base_rtt_ns);
        self.start_ns.push(info.start_ns);
        self.size_bytes.push(info.size_bytes.map_or(-1, |s| s as i64));
        self.bytes.push(f.delivered_at_end);
        self.bytes_measured.push(x.measured);
        self.goodput_bps.push(x.goodput_bps);
        self.retransmits.push(x.retransmits);
        self.rtos.push(x.rtos);
        self.syn_retries.push(f.tcp.as_ref().map_or(0, |t| t.syn_retries));
        self.ecn_reductions.push(x.ecn_reductions);
        self.segs_sent.push(f.sent);
        self.drops.push(f.drops);
        self.marks.push(f.marks);
        self.srtt_ns.push(x.srtt_ns);
        self.fct_ns.push(x.fct_ns.map_or(-1, |ns| ns as i64));
        self.workload.push(info.from_workload as u64);
    }

    /// The rows in flow-id order. Each text column is coded again in that
    /// order, so that the table is the one built from every record at the
    /// end, its codes included.
    pub(super) fn into_id_order(self) -> FlowRows {
        if self.id.is_sorted() {
            return self;
        }
        let order = self.id_order();
        fn gather<T: Copy>(v: Vec<T>, order: &[usize]) -> Vec<T> {
            order.iter().map(|&i| v[i]).collect()
        }
        let take = |v| gather(v, &order);
        let text = |c: TextColumn| c.recoded_in_order(&order);
        FlowRows {
            id: take(self.id),
            group: take(self.group),
            label: text(self.label),
            cc: text(self.cc),
            ecn: text(self.ecn),
            ecn_negotiated: text(self.ecn_negotiated),
            base_rtt_ns: take(self.base_rtt_ns),
            start_ns: take(self.start_ns),
            size_bytes: gather(self.size_bytes, &order),
            bytes: take(self.bytes),
            bytes_measured: take(self.bytes_measured),
            goodput_bps: gather(self.goodput_bps, &order),
            retransmits: take(self.retransmits),
            rtos: take(self.rtos),
            syn_retries: take(self.syn_retries),
            ecn_reductions: take(self.ecn_reductions),
            segs_sent: take(self.segs_sent),
            drops: take(self.drops),
            marks: take(self.marks),
            srtt_ns: take(self.srtt_ns),
            fct_ns: gather(self.fct_ns, &order),
            workload: take(self.workload),
        }
    }

    /// The rows' indices in id order. A run's table holds every flow once,
    /// its ids 0 to n − 1: each row goes to the place its id names, without
    /// a sort. Other ids (distinct) are sorted.
    fn id_order(&self) -> Vec<usize> {
        let n = self.len();
        let mut order = vec![usize::MAX; n];
        for (i, &id) in self.id.iter().enumerate() {
            match order.get_mut(id as usize) {
                Some(place) if *place == usize::MAX => *place = i,
                _ => {
                    let mut sorted: Vec<usize> = (0..n).collect();
                    sorted.sort_unstable_by_key(|&i| self.id[i]);
                    return sorted;
                }
            }
        }
        order
    }

    pub(super) fn into_table(self) -> Table {
        Table::new("flows")
            .col("id", Column::U64(self.id))
            .col("group", Column::U64(self.group))
            .col("label", Column::Str(self.label))
            .col("cc", Column::Str(self.cc))
            .col("ecn", Column::Str(self.ecn))
            .col("ecn_negotiated", Column::Str(self.ecn_negotiated))
            .col("base_rtt_ns", Column::U64(self.base_rtt_ns))
            .col("start_ns", Column::U64(self.start_ns))
            .col("size_bytes", Column::I64(self.size_bytes))
            .col("bytes", Column::U64(self.bytes))
            .col("bytes_measured", Column::U64(self.bytes_measured))
            .col("goodput_bps", Column::F64(self.goodput_bps))
            .col("retransmits", Column::U64(self.retransmits))
            .col("rtos", Column::U64(self.rtos))
            .col("syn_retries", Column::U64(self.syn_retries))
            .col("ecn_reductions", Column::U64(self.ecn_reductions))
            .col("segs_sent", Column::U64(self.segs_sent))
            .col("drops", Column::U64(self.drops))
            .col("marks", Column::U64(self.marks))
            .col("srtt_ns", Column::U64(self.srtt_ns))
            .col("fct_ns", Column::I64(self.fct_ns))
            .col("from_workload", Column::U64(self.workload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::records::FlowInfo;
    use crate::transport::EcnSetting;

    fn record(id: u32, label: &str, size_bytes: Option<u64>) -> FlowRecord {
        let info = FlowInfo {
            group: 0,
            label: label.into(),
            cc: "cubic".into(),
            ecn: EcnSetting::Off,
            base_rtt_ns: 20_000_000,
            start_ns: u64::from(id) * 1_000,
            stop_ns: None,
            size_bytes,
            from_workload: true,
        };
        FlowRecord {
            id,
            info,
            delivered_at_warmup: 0,
            delivered_at_end: u64::from(id),
            drops: 0,
            marks: 0,
            ack_drops: 0,
            acks_received: 0,
            tcp_source: false,
            sent: 0,
            tcp: None,
            completed_ns: None,
            is_probe: false,
            probe_rtt: vec![],
        }
    }

    /// Rows pushed in the order flows retired come out as the rows built in
    /// id order would: every column, and each text column's codes.
    #[test]
    fn rows_in_retirement_order_are_put_in_id_order_and_coded_again() {
        let labels = ["b", "a", "b", "c", "a"];
        let in_id_order = |ids: &[u32]| {
            let mut t = FlowRows::default();
            for &id in ids {
                t.push_record(&record(id, labels[id as usize], Some(1_000 + u64::from(id))), 0, 1_000_000);
            }
            t
        };
        // Ids with a gap (no flow 2 among the rows) take the sort.
        let gap = in_id_order(&[4, 0, 3]).into_id_order();
        assert_eq!(gap.id, [0, 3, 4]);
        assert_eq!(gap.label.iter().collect::<Vec<_>>(), ["b", "c", "a"]);
        let retired = in_id_order(&[3, 1, 4, 0]);
        assert_eq!(retired.label.values(), ["c", "a", "b"]);
        let mut both = retired;
        both.push_record(&record(2, "b", Some(1_002)), 0, 1_000_000); // still running at the end
        let sorted = both.into_id_order().into_table();
        let built = in_id_order(&[0, 1, 2, 3, 4]).into_table();
        assert_eq!(format!("{sorted:?}"), format!("{built:?}"));
        for ((name, a), (_, b)) in sorted.columns.iter().zip(&built.columns) {
            if let (Column::Str(a), Column::Str(b)) = (a, b) {
                assert_eq!((a.codes(), a.values()), (b.codes(), b.values()), "column {name}");
            }
        }
    }
}
