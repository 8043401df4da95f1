//! Time series sampled every `metrics.interval`: per flow and per queue.

use super::{Column, Table, TextColumn};

#[derive(Debug, Clone, Default)]
pub struct FlowSeries {
    pub t_ns: Vec<u64>,
    pub flow: Vec<u64>,
    /// Cumulative in-order payload bytes at the receiver.
    pub delivered_bytes: Vec<u64>,
    pub cwnd_segs: Vec<u64>,
    pub ssthresh_segs: Vec<u64>,
    pub srtt_ns: Vec<u64>,
    pub in_flight_segs: Vec<u64>,
    pub retransmits: Vec<u64>,
    /// Sending rate of a rate-based source (UDP rate, QCN current rate); 0 for TCP.
    pub rate_bps: Vec<u64>,
}

impl FlowSeries {
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, t: u64, flow: u32, delivered: u64, cwnd: u32, ssthresh: u32, srtt: u64, in_flight: u32, retx: u64, rate_bps: u64) {
        self.t_ns.push(t);
        self.flow.push(flow as u64);
        self.delivered_bytes.push(delivered);
        self.cwnd_segs.push(cwnd as u64);
        self.ssthresh_segs.push(ssthresh.min(u32::MAX - 1) as u64);
        self.srtt_ns.push(srtt);
        self.in_flight_segs.push(in_flight as u64);
        self.retransmits.push(retx);
        self.rate_bps.push(rate_bps);
    }

    /// Order rows by (time, flow), rows with equal keys in the order they
    /// were recorded: lagging sources deliver their rows late. (Placing a
    /// lagging source's row at its sample and filling it later needs no
    /// sort, but two rows in five placed for web flows are dropped, the one
    /// after a flow's end, and removing them cost more than this sort:
    /// 0.4 % more instructions over 32 s of the `W` benchmark.)
    pub fn sort_by_time(&mut self) {
        let key = |i: usize| (self.t_ns[i], self.flow[i]);
        if (1..self.t_ns.len()).all(|i| key(i - 1) <= key(i)) {
            return;
        }
        // The keys side by side with the row's index, which makes them
        // distinct, so an unstable sort gives the stable order without
        // looking rows up at each comparison (flow ids are u32).
        assert!(self.t_ns.len() <= 1 << 32, "fewer than 2^32 time-series rows");
        let mut keyed: Vec<(u64, u64)> = (0..self.t_ns.len()).map(|i| (self.t_ns[i], self.flow[i] << 32 | i as u64)).collect();
        keyed.sort_unstable();
        let idx: Vec<usize> = keyed.iter().map(|&(_, fi)| (fi & u32::MAX as u64) as usize).collect();
        fn permute<T: Copy>(v: &mut Vec<T>, idx: &[usize]) {
            *v = idx.iter().map(|&i| v[i]).collect();
        }
        permute(&mut self.t_ns, &idx);
        permute(&mut self.flow, &idx);
        permute(&mut self.delivered_bytes, &idx);
        permute(&mut self.cwnd_segs, &idx);
        permute(&mut self.ssthresh_segs, &idx);
        permute(&mut self.srtt_ns, &idx);
        permute(&mut self.in_flight_segs, &idx);
        permute(&mut self.retransmits, &idx);
        permute(&mut self.rate_bps, &idx);
    }

    pub fn into_table(self) -> Table {
        Table::new("flow_ts")
            .col("t_ns", Column::U64(self.t_ns))
            .col("flow", Column::U64(self.flow))
            .col("delivered_bytes", Column::U64(self.delivered_bytes))
            .col("cwnd_segs", Column::U64(self.cwnd_segs))
            .col("ssthresh_segs", Column::U64(self.ssthresh_segs))
            .col("srtt_ns", Column::U64(self.srtt_ns))
            .col("in_flight_segs", Column::U64(self.in_flight_segs))
            .col("retransmits", Column::U64(self.retransmits))
            .col("rate_bps", Column::U64(self.rate_bps))
    }
}

#[derive(Debug, Clone, Default)]
pub struct QueueSeries {
    pub t_ns: Vec<u64>,
    pub queue: TextColumn,
    pub subqueue: TextColumn,
    pub backlog_pkts: Vec<u64>,
    pub arrived_pkts: Vec<u64>,
    pub departed_pkts: Vec<u64>,
    pub dropped_pkts: Vec<u64>,
    pub marked_pkts: Vec<u64>,
    /// Cumulative sum of departed packets' sojourn times (ns).
    pub sojourn_sum_ns: Vec<u64>,
    /// Largest sojourn of a packet that departed in the interval (0 if none).
    pub sojourn_max_ns: Vec<u64>,
}

impl QueueSeries {
    pub fn into_table(self) -> Table {
        Table::new("queue_ts")
            .col("t_ns", Column::U64(self.t_ns))
            .col("queue", Column::Str(self.queue))
            .col("subqueue", Column::Str(self.subqueue))
            .col("backlog_pkts", Column::U64(self.backlog_pkts))
            .col("arrived_pkts", Column::U64(self.arrived_pkts))
            .col("departed_pkts", Column::U64(self.departed_pkts))
            .col("dropped_pkts", Column::U64(self.dropped_pkts))
            .col("marked_pkts", Column::U64(self.marked_pkts))
            .col("sojourn_sum_ns", Column::U64(self.sojourn_sum_ns))
            .col("sojourn_max_ns", Column::U64(self.sojourn_max_ns))
    }
}

/// Named internal values (AQM probabilities, DCTCP alpha) over time, long form.
#[derive(Debug, Clone, Default)]
pub struct ProbeSeries {
    pub t_ns: Vec<u64>,
    pub owner: TextColumn,
    pub probe: TextColumn,
    pub value: Vec<f64>,
}

impl ProbeSeries {
    pub fn push(&mut self, t: u64, owner: &str, probe: &str, value: f64) {
        self.t_ns.push(t);
        self.owner.push(owner);
        self.probe.push(probe);
        self.value.push(value);
    }
    /// Order rows by (time, owner, probe), whatever order they were recorded in.
    pub fn sort(&mut self) {
        let mut idx: Vec<usize> = (0..self.t_ns.len()).collect();
        let key = |i: usize| (self.t_ns[i], self.owner.get(i), self.probe.get(i));
        idx.sort_by(|&a, &b| key(a).cmp(&key(b)));
        self.t_ns = idx.iter().map(|&i| self.t_ns[i]).collect();
        self.owner = self.owner.reordered(&idx);
        self.probe = self.probe.reordered(&idx);
        self.value = idx.iter().map(|&i| self.value[i]).collect();
    }

    pub fn into_table(mut self, name: &str) -> Table {
        self.sort();
        Table::new(name)
            .col("t_ns", Column::U64(self.t_ns))
            .col("owner", Column::Str(self.owner))
            .col("probe", Column::Str(self.probe))
            .col("value", Column::F64(self.value))
    }
}

#[cfg(test)]
mod tests {
    use super::FlowSeries;

    /// Rows recorded out of time order (a lagging source's, late) come out
    /// ordered by (time, flow), and rows with equal keys keep the order they
    /// were recorded in (told apart here by their delivered bytes), every
    /// column moved with its row.
    #[test]
    fn rows_are_ordered_by_time_and_flow_and_equal_keys_keep_their_order() {
        let mut s = FlowSeries::default();
        let mut want = vec![];
        // Flows 0..6 at times 0..4, pushed time-major for even flows and late
        // (after all times) for odd ones; each (time, flow) twice.
        let push = |s: &mut FlowSeries, t: u64, f: u32, copy: u64| {
            let bytes = t * 1000 + f as u64 * 10 + copy;
            s.push(t, f, bytes, f, 2 * f, t, 0, copy, 0);
        };
        for t in 0..4 {
            for f in (0..6).step_by(2) {
                push(&mut s, t, f, 0);
                push(&mut s, t, f, 1);
            }
        }
        for f in (1..6).step_by(2) {
            for t in (0..4).rev() {
                push(&mut s, t, f, 0);
            }
            for t in 0..4 {
                push(&mut s, t, f, 1);
            }
        }
        for t in 0..4u64 {
            for f in 0..6u64 {
                want.extend([t * 1000 + f * 10, t * 1000 + f * 10 + 1]);
            }
        }
        s.sort_by_time();
        assert_eq!(s.delivered_bytes, want);
        for (i, &b) in s.delivered_bytes.iter().enumerate() {
            let (t, f, copy) = (b / 1000, b % 1000 / 10, b % 10);
            assert_eq!((s.t_ns[i], s.flow[i], s.cwnd_segs[i], s.ssthresh_segs[i], s.srtt_ns[i], s.retransmits[i]), (t, f, f, 2 * f, t, copy));
        }
    }
}
