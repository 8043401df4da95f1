//! `aqmlab._engine`: thin bindings. Strings in, typed columns out; no
//! simulation logic here. A Rust panic becomes a Python `RuntimeError`.

use aqmlab_engine::metrics::Column;
use aqmlab_engine::{scenario, World};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Every Rust allocation of the extension (the engine's state and results);
/// Python's objects keep Python's allocator. Why: crates/aqmlab-py/Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(_engine, ScenarioError, PyValueError, "The scenario is invalid (one line naming the field).");

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// Run engine code, turning a Rust panic into a Python `RuntimeError`
/// (the engine's own errors stay in the inner `Result`).
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> PyResult<Result<T, String>> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| PyRuntimeError::new_err(format!("engine panic: {}", panic_message(p))))
}

/// Validate a scenario (JSON text); returns the normalised scenario as JSON text.
/// Routes are checked too (a graph's only), as building the world would.
#[pyfunction]
fn validate(json: &str) -> PyResult<String> {
    let checked = || scenario::parse(json).and_then(|s| World::check_routes(&s).map(|()| s));
    match catch_unwind(checked) {
        Ok(Ok(s)) => Ok(s.to_json().to_string()),
        Ok(Err(e)) => Err(ScenarioError::new_err(e)),
        Err(p) => Err(PyRuntimeError::new_err(format!("engine panic: {}", panic_message(p)))),
    }
}

/// A column for the front, its buffers written once, straight into Python
/// bytes (a fat tree's tables run to millions of rows).
fn column_to_py<'py>(py: Python<'py>, c: &Column) -> PyResult<Bound<'py, PyAny>> {
    fn le_bytes<'py, T: Copy, const N: usize>(py: Python<'py>, v: &[T], f: impl Fn(T) -> [u8; N]) -> PyResult<Bound<'py, PyBytes>> {
        PyBytes::new_with(py, v.len() * N, |buf| {
            for (out, &x) in buf.chunks_exact_mut(N).zip(v) {
                out.copy_from_slice(&f(x));
            }
            Ok(())
        })
    }
    let (dtype, data) = match c {
        Column::F64(v) => ("<f8", le_bytes(py, v, f64::to_le_bytes)?),
        Column::I64(v) => ("<i8", le_bytes(py, v, i64::to_le_bytes)?),
        Column::U64(v) => ("<u8", le_bytes(py, v, u64::to_le_bytes)?),
        // Text: ("text", codes, distinct values); the front indexes the
        // values, so a row costs 4 bytes here, not a str.
        Column::Str(v) => {
            let codes = le_bytes(py, v.codes(), u32::to_le_bytes)?;
            return Ok(("text", codes, PyList::new(py, v.values())?).into_pyobject(py)?.into_any());
        }
    };
    Ok((dtype, data).into_pyobject(py)?.into_any())
}

/// Hand the memory freed since the last call back to the system now.
/// mimalloc keeps freed pages for a second before returning them (a run
/// that grows a buffer reuses them at once: purging them immediately cost
/// D-1024 13 %); the results' conversion frees the engine's copy as
/// Python's grows, and without this both count towards the peak
/// (`aqmlab run` of D-1024 for 20 ms: 525 MB without, 336 MB with).
fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers; any thread may call it.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Run a scenario (JSON text). `progress(sim_seconds_done)` is called now and
/// then; it may raise to abort. Returns {"summary": json, "tables": {...},
/// "files": {name: bytes}} where numeric columns are (dtype, little-endian
/// bytes) and text columns ("text", u32 codes as little-endian bytes, list
/// of distinct values); files are e.g. `capture.pcap`.
#[pyfunction]
#[pyo3(signature = (json, progress=None))]
fn run<'py>(py: Python<'py>, json: &str, progress: Option<Py<PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    // Guarded like validate: a panic in parsing is a RuntimeError, never a PanicException.
    let s = guarded(|| scenario::parse(json))?.map_err(ScenarioError::new_err)?;
    let mut cb_error: Option<PyErr> = None;
    // Building fails only on the input (e.g. more flows than memory can
    // hold): a ScenarioError, one line and exit 2 in the CLI, like validation.
    let mut build_error = false;
    let outcome = py.detach(|| {
        guarded(|| {
            let mut w = World::new(&s).inspect_err(|_| build_error = true)?;
            w.run(|now_ns| {
                Python::attach(|py| {
                    if let Err(e) = py.check_signals() {
                        cb_error = Some(e);
                        return false;
                    }
                    if let Some(cb) = &progress {
                        if let Err(e) = cb.call1(py, (now_ns as f64 * 1e-9,)) {
                            cb_error = Some(e);
                            return false;
                        }
                    }
                    true
                })
            })?;
            let results = w.into_results();
            release_freed_memory(); // the world, now dropped
            Ok::<_, String>(results)
        })
    });
    let results = match outcome {
        Err(panic) => return Err(panic),
        Ok(Err(e)) => {
            if let Some(err) = cb_error {
                return Err(err);
            }
            if build_error {
                return Err(ScenarioError::new_err(e));
            }
            if e == "interrupted" {
                return Err(PyKeyboardInterrupt::new_err("simulation interrupted"));
            }
            return Err(PyRuntimeError::new_err(e));
        }
        Ok(Ok(r)) => r,
    };
    let out = PyDict::new(py);
    out.set_item("summary", &results.summary_json)?;
    let tables = PyDict::new(py);
    // Each column is freed once converted: the engine's copy and the
    // front's are not both held whole.
    for t in results.tables {
        let cols = PyDict::new(py);
        for (name, c) in t.columns {
            cols.set_item(name, column_to_py(py, &c)?)?;
        }
        tables.set_item(t.name, cols)?;
        release_freed_memory(); // the table's columns
    }
    out.set_item("tables", tables)?;
    let files = PyDict::new(py);
    for (name, bytes) in &results.files {
        files.set_item(name, PyBytes::new(py, bytes))?;
    }
    out.set_item("files", files)?;
    Ok(out)
}

/// Names, summaries and default parameters of every AQM and congestion control (JSON text).
#[pyfunction]
fn registry() -> PyResult<String> {
    aqmlab_engine::registry::registry().map(|r| r.to_string()).map_err(PyRuntimeError::new_err)
}

/// Every table a scenario may hold (its path, `[]` for a list of tables) with
/// the keys it accepts, as serde derives them (JSON text: {path: [keys]}).
#[pyfunction]
fn scenario_keys() -> String {
    let tables: serde_json::Map<String, serde_json::Value> =
        aqmlab_engine::scenario::key_tables().into_iter().map(|(path, keys)| (path.to_string(), keys.into())).collect();
    serde_json::Value::Object(tables).to_string()
}

/// Deliberately panic inside the engine (tests check it surfaces as an exception).
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    // Through the same guard as `run`, so the test covers run's conversion.
    guarded(|| -> Result<(), String> { panic!("deliberate test panic") })?.map_err(PyRuntimeError::new_err)
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", aqmlab_engine::VERSION)?;
    // Whether this build was optimised with the recorded profile (pgo/rustc-wrapper
    // passes the cfg with it); speed figures depend on it, results never do.
    m.add("BUILD", if cfg!(aqmlab_pgo) { "pgo" } else { "plain" })?;
    // The sources it was built from (build.rs; python/aqmlab/_provenance.py).
    m.add("SOURCE_DIGEST", env!("AQMLAB_SOURCE_DIGEST"))?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_keys, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
