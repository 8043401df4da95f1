//! Record which sources this extension is built from, as `_engine.SOURCE_DIGEST`.
//!
//! Why: an editable install (`pip install -e .`) does not rebuild the
//! extension when the Rust sources change, so tests, benchmarks and the
//! comparison with htsim could run an engine older than the checkout and
//! credit its figures to the newer one. `python/aqmlab/_provenance.py`
//! computes the same digest over the checkout and says when they differ.
//! The files and the digest's layout are defined there (`SOURCES`).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Single files, relative to the workspace root.
const FILES: [&str; 5] = ["Cargo.toml", "Cargo.lock", "crates/engine/Cargo.toml", "crates/engine/build.rs", "crates/aqmlab-py/Cargo.toml"];
/// Directories whose `.rs` files count, at any depth.
const RUST_TREES: [&str; 2] = ["crates/engine/src", "crates/aqmlab-py/src"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..").canonicalize().expect("the workspace root exists");
    let mut paths: Vec<PathBuf> = FILES.iter().map(|f| root.join(f)).filter(|p| p.is_file()).collect();
    for tree in RUST_TREES {
        rust_files(&root.join(tree), &mut paths);
    }
    // Relative, '/'-separated names in byte order: the order Python sorts them in.
    let mut files: Vec<(String, PathBuf)> = paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).expect("under the root").components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            (rel, p)
        })
        .collect();
    files.sort();
    files.dedup();
    let mut hash = Sha256::new();
    for (rel, path) in &files {
        let data = std::fs::read(path).expect("a listed source is readable");
        hash.update(format!("{rel}\0{}\0", data.len()).as_bytes());
        hash.update(&data);
    }
    let digest: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=AQMLAB_SOURCE_DIGEST={digest}");
    for f in FILES {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    for tree in RUST_TREES {
        println!("cargo:rerun-if-changed={}", root.join(tree).display());
    }
}
