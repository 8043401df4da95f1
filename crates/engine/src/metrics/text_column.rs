//! A column of text, stored as codes into its distinct values.
//!
//! Text columns repeat a few names over many rows: the `sojourn_hist` table
//! of a k = 16 fat tree names one of 6 144 queues on each of its two million
//! rows, and every time-series sample names its queue or probe. A `String`
//! per row cost D-1024 about 100 bytes per row in the engine and as much
//! again as a Python `str` (issue 22); a code costs 4, and the front gets
//! the values once (`aqmlab-py`'s `column_to_py`).

use rustc_hash::FxHashMap;

#[derive(Clone, Default)]
pub struct TextColumn {
    /// Index into `values` of each row.
    codes: Vec<u32>,
    /// Distinct values, in order of first appearance among the rows as
    /// pushed (a [`Self::reordered`] column keeps its source's order).
    values: Vec<String>,
    /// Where each value sits in `values`.
    index: FxHashMap<String, u32>,
}

impl TextColumn {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        TextColumn { codes: Vec::with_capacity(rows), ..Self::default() }
    }

    /// Room for `more` rows beyond those held.
    pub fn reserve(&mut self, more: usize) {
        self.codes.reserve_exact(more);
    }

    /// Append a row holding `s`.
    pub fn push(&mut self, s: &str) {
        // Rows come in runs of one name (a queue's histogram buckets): the
        // previous row's value is checked before the map.
        if let Some(&last) = self.codes.last() {
            if self.values[last as usize] == s {
                self.codes.push(last);
                return;
            }
        }
        let code = match self.index.get(s) {
            Some(&c) => c,
            None => {
                let c = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values in a column");
                self.values.push(s.to_string());
                self.index.insert(s.to_string(), c);
                c
            }
        };
        self.codes.push(code);
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Row `i`'s value.
    pub fn get(&self, i: usize) -> Option<&str> {
        self.codes.get(i).map(|&c| self.values[c as usize].as_str())
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.codes.iter().map(|&c| self.values[c as usize].as_str())
    }

    /// Each row's index into [`Self::values`].
    pub fn codes(&self) -> &[u32] {
        &self.codes
    }
    /// The distinct values, in order of first appearance among the rows as
    /// pushed, or as [`Self::recoded_in_order`] put them; a
    /// [`Self::reordered`] column keeps its source's values and order.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// The rows in the order `order` gives (indices into this column), their
    /// codes and values as they were, so the values are no longer in order
    /// of first appearance. For the probes table's sort: the front turns
    /// codes into strings row by row (`aqmlab.columns`), so no output
    /// depends on the values' order.
    pub fn reordered(&self, order: &[usize]) -> TextColumn {
        TextColumn { codes: order.iter().map(|&i| self.codes[i]).collect(), values: self.values.clone(), index: self.index.clone() }
    }

    /// The rows in the order `order` gives, coded as if pushed in that
    /// order: the values in their order of first appearance there (which
    /// [`Self::reordered`] keeps as they were). Codes are mapped, not
    /// strings compared.
    pub fn recoded_in_order(&self, order: &[usize]) -> TextColumn {
        let mut new_code = vec![u32::MAX; self.values.len()];
        let mut out = TextColumn::with_capacity(order.len());
        for &i in order {
            let c = self.codes[i] as usize;
            if new_code[c] == u32::MAX {
                new_code[c] = out.values.len() as u32;
                out.values.push(self.values[c].clone());
                out.index.insert(self.values[c].clone(), new_code[c]);
            }
            out.codes.push(new_code[c]);
        }
        out
    }
}

/// The rows, as a `Vec<String>` prints them (not the map, whose order varies
/// from run to run).
impl std::fmt::Debug for TextColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Two columns are equal when their rows are, however they were coded.
impl PartialEq for TextColumn {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<S: AsRef<str>> FromIterator<S> for TextColumn {
    fn from_iter<I: IntoIterator<Item = S>>(rows: I) -> Self {
        let mut c = TextColumn::new();
        for s in rows {
            c.push(s.as_ref());
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_pushed_with_one_copy_per_value() {
        let rows = ["a", "a", "b", "a", "", "b", "b", "c", ""];
        let c: TextColumn = rows.iter().collect();
        assert_eq!(c.iter().collect::<Vec<_>>(), rows);
        assert_eq!(c.values(), ["a", "b", "", "c"]);
        assert_eq!(c.codes(), [0, 0, 1, 0, 2, 1, 1, 3, 2]);
        assert_eq!(c.get(7), Some("c"));
        assert_eq!(c.get(9), None);
        assert_eq!(format!("{c:?}"), format!("{rows:?}"));
    }

    #[test]
    fn equality_is_by_rows_not_by_coding() {
        let ab: TextColumn = ["b", "a", "b"].iter().collect();
        let mut ba: TextColumn = ["a", "b", "a"].iter().collect();
        assert_eq!(ab.values(), ["b", "a"]);
        assert_ne!(ab, ba);
        ba = ba.reordered(&[1, 0, 1]);
        assert_eq!(ba.values(), ["a", "b"]);
        assert_eq!(ab, ba);
        // Coded again: as if pushed in the new order.
        let again = ba.recoded_in_order(&[0, 1, 2]);
        assert_eq!((again.codes(), again.values()), (ab.codes(), ab.values()));
        let mut pushed = again.clone();
        pushed.push("a");
        assert_eq!(pushed.codes(), [0, 1, 0, 1], "its index knows the values");
    }
}
