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

    /// Order rows by (time, flow): lagging sources deliver their rows late.
    pub fn sort_by_time(&mut self) {
        let mut idx: Vec<usize> = (0..self.t_ns.len()).collect();
        if idx.windows(2).all(|w| (self.t_ns[w[0]], self.flow[w[0]]) <= (self.t_ns[w[1]], self.flow[w[1]])) {
            return;
        }
        idx.sort_by_key(|&i| (self.t_ns[i], self.flow[i]));
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
