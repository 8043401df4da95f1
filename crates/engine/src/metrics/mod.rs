//! Collectors and the columnar results they produce.
//!
//! Every table is a list of named, typed columns of equal length: what the
//! Python layer turns into DataFrames without copying row by row.

pub mod flow_rows;
pub mod histogram;
pub mod latency;
pub mod pcap;
pub mod records;
pub mod series;
pub mod summary;
pub mod text_column;
pub mod workload;

pub use text_column::TextColumn;

/// One typed column.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    F64(Vec<f64>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    /// Text, dictionary-coded ([`TextColumn`]).
    Str(TextColumn),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn new(name: &str) -> Self {
        Table { name: name.into(), columns: vec![] }
    }
    pub fn col(mut self, name: &str, c: Column) -> Self {
        debug_assert!(self.columns.is_empty() || self.columns[0].1.len() == c.len(), "ragged table {}", self.name);
        self.columns.push((name.into(), c));
        self
    }
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.1.len())
    }
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.0 == name).map(|c| &c.1)
    }
    pub fn f64s(&self, name: &str) -> Vec<f64> {
        match self.get(name) {
            Some(Column::F64(v)) => v.clone(),
            Some(Column::U64(v)) => v.iter().map(|&x| x as f64).collect(),
            Some(Column::I64(v)) => v.iter().map(|&x| x as f64).collect(),
            _ => panic!("no numeric column {name} in {}", self.name),
        }
    }
    pub fn strs(&self, name: &str) -> Vec<String> {
        match self.get(name) {
            Some(Column::Str(v)) => v.iter().map(String::from).collect(),
            _ => panic!("no string column {name} in {}", self.name),
        }
    }
}

/// What a run returns: tables plus the summary document (JSON text).
#[derive(Debug, Clone)]
pub struct Results {
    pub tables: Vec<Table>,
    pub summary_json: String,
    /// Files besides the tables: (name, bytes), e.g. `capture.pcap`.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Results {
    /// The summary parsed into a JSON value.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::from_str(&self.summary_json).expect("the engine writes valid JSON")
    }

    pub fn table(&self, name: &str) -> &Table {
        self.tables.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no table {name}"))
    }
}
