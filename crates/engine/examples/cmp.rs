// Debug helper: run two scenario files and print the first differing rows of each table.
use aqmlab_engine::{run_json, Column};
fn main() {
    let a = run_json(&std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap(), |_| true).unwrap();
    let b = run_json(&std::fs::read_to_string(std::env::args().nth(2).unwrap()).unwrap(), |_| true).unwrap();
    for (ta, tb) in a.tables.iter().zip(b.tables.iter()) {
        for ((n, ca), (_, cb)) in ta.columns.iter().zip(tb.columns.iter()) {
            if ca != cb {
                let fmt = |c: &Column, i: usize| match c { Column::F64(v) => format!("{:?}", v.get(i)), Column::U64(v) => format!("{:?}", v.get(i)), Column::I64(v) => format!("{:?}", v.get(i)), Column::Str(v) => format!("{:?}", v.get(i)) };
                let n_rows = ca.len().max(cb.len());
                let diffs: Vec<usize> = (0..n_rows).filter(|&i| fmt(ca, i) != fmt(cb, i)).take(5).collect();
                for i in diffs { println!("{}.{} row {}: {} vs {}", ta.name, n, i, fmt(ca, i), fmt(cb, i)); }
            }
        }
    }
}
