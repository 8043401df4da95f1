//! The `workload_flows` object of `summary.json` (docs/results.md): finite
//! flows started by `[[workloads]]`, their completion times overall, per
//! label and per size decade, and how many lost their SYN.
//!
//! Size decades (1–10 kB, 10–100 kB, 100 kB–1 MB, above; decimal kB as the
//! seeds' "1KB to 1MB") are where flow-completion-time plots on a log size
//! axis are read; quantiles are nearest-rank on the completed flows.

use super::flow_rows::FlowRows;
use crate::sim::ns_to_secs;
use serde_json::{json, Map, Value};

/// Upper bounds of the size classes, bytes; the last class is unbounded.
const SIZE_BOUNDS_BYTES: [u64; 3] = [10_000, 100_000, 1_000_000];

/// Nearest-rank quantile of sorted values (None when empty).
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// Statistics of completion times given in ascending order.
fn fct_stats(fcts: &[f64]) -> Value {
    debug_assert!(fcts.is_sorted_by(|a, b| a.total_cmp(b).is_le()));
    let mean = (!fcts.is_empty()).then(|| fcts.iter().sum::<f64>() / fcts.len() as f64);
    json!({ "mean": mean, "p50": quantile(fcts, 0.5), "p99": quantile(fcts, 0.99), "max": fcts.last() })
}

#[derive(Default)]
struct Group {
    started: u64,
    syn_timeouts: u64,
    rtos: u64,
    /// Flows that waited at least one retransmission timeout, SYN included.
    timeout_flows: u64,
    /// (size in bytes, FCT in s) of the flows that completed in the run.
    completed: Vec<(u64, f64)>,
}

impl Group {
    /// Row `i` of the flows table (0 RTOs and SYN retries for a flow that is
    /// not TCP; a completion time only for a finite flow that completed by
    /// the end of the run: `FlowFigures`).
    fn add(&mut self, t: &FlowRows, i: usize) {
        self.started += 1;
        let (rtos, syn_retries) = (t.rtos[i], t.syn_retries[i]);
        self.rtos += rtos;
        self.syn_timeouts += (syn_retries > 0) as u64;
        self.timeout_flows += (syn_retries > 0 || rtos > 0) as u64;
        if let (Ok(fct_ns), Ok(size)) = (u64::try_from(t.fct_ns[i]), u64::try_from(t.size_bytes[i])) {
            self.completed.push((size, ns_to_secs(fct_ns)));
        }
    }

    fn to_json(&self) -> Value {
        // Sorted by completion time once: each size class takes its flows
        // in that order. Times equal in `total_cmp`'s order are the same
        // bits, so an unstable sort gives every class the list a stable
        // one would.
        let mut by_fct = self.completed.clone();
        by_fct.sort_unstable_by(|a, b| a.1.total_cmp(&b.1));
        let mut lo = 0;
        let by_size: Vec<Value> = SIZE_BOUNDS_BYTES
            .iter()
            .map(|&hi| Some(hi))
            .chain([None])
            .map(|hi| {
                let fcts: Vec<f64> =
                    by_fct.iter().filter(|(s, _)| *s >= lo && hi.is_none_or(|h| *s < h)).map(|c| c.1).collect();
                let v = json!({ "min_bytes": lo, "max_bytes": hi, "completed": fcts.len(), "fct_s": fct_stats(&fcts) });
                lo = hi.unwrap_or(lo);
                v
            })
            .collect();
        json!({
            "started": self.started,
            "completed": self.completed.len(),
            "syn_timeouts": self.syn_timeouts,
            "rtos": self.rtos,
            "timeout_flows": self.timeout_flows,
            "fct_s": fct_stats(&by_fct.iter().map(|c| c.1).collect::<Vec<f64>>()),
            "by_size": by_size,
        })
    }
}

/// `workload_flows`: totals (`started`, `completed`, `mean_fct_s`) and `by_label`.
/// From the flows table, in flow-id order: a label's flows in the order they
/// started.
pub fn summarize(t: &FlowRows) -> Value {
    let mut all = Group::default();
    let mut by_label: Vec<(String, Group)> = vec![];
    for i in (0..t.len()).filter(|&i| t.workload[i] == 1) {
        all.add(t, i);
        let label = t.label.get(i).expect("a row of the table");
        let j = match by_label.iter().position(|(l, _)| l == label) {
            Some(j) => j,
            None => {
                by_label.push((label.to_string(), Group::default()));
                by_label.len() - 1
            }
        };
        by_label[j].1.add(t, i);
    }
    let mean_fct = (!all.completed.is_empty()).then(|| all.completed.iter().map(|c| c.1).sum::<f64>() / all.completed.len() as f64);
    json!({
        "started": all.started,
        "completed": all.completed.len(),
        "mean_fct_s": mean_fct,
        "syn_timeouts": all.syn_timeouts,
        "by_label": by_label.iter().map(|(l, g)| (l.clone(), g.to_json())).collect::<Map<String, Value>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        assert_eq!(quantile(&[3.0], 0.99), Some(3.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
