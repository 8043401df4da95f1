//! The engine's layers point one way (docs/architecture.md, "Layers"): a
//! module may import only from modules in a lower layer (and from itself).
//! This test reads every source file under src/, collects the crate modules
//! it names (`crate::x`, `crate::{x, y}`, `super::x` that leaves the module),
//! and fails on any that points sideways or up. Test code (`#[cfg(test)]`
//! modules and `*_tests.rs` files) is exempt: a test may assemble what it
//! needs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom to top. Modules on one line are one layer and must not import
/// each other. Every top-level module of the crate must be listed.
const LAYERS: &[&[&str]] = &[
    &["sim"],
    &["packet"],
    &["params"],
    &["ppv"],
    &["cc", "aqm"],
    &["transport"],
    &["metrics"],
    &["net"],
    &["registry"],
    &["scenario"],
    &["world"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The module path of a source file relative to src/ (`aqm/codel.rs` →
/// `["aqm", "codel"]`, `aqm/mod.rs` → `["aqm"]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// Source text without comments and without `#[cfg(test)]` items.
fn production_code(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut pending_cfg_test = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let trimmed = code.trim();
        if skip_depth.is_none() && trimmed.starts_with("#[cfg(test)]") {
            pending_cfg_test = true;
            continue;
        }
        let opens = code.matches('{').count() as i32;
        let closes = code.matches('}').count() as i32;
        if pending_cfg_test && !trimmed.is_empty() {
            pending_cfg_test = false;
            if opens > closes {
                skip_depth = Some(depth);
            } else if trimmed.ends_with(';') {
                // `#[cfg(test)] mod x;` or a one-line item: skip it.
                depth += opens - closes;
                continue;
            }
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// Top-level crate modules a file refers to.
fn referenced_modules(own: &[String], code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // crate::x and crate::{x, y::z, ...}
    for (i, _) in code.match_indices("crate::") {
        if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `aqmlab_crate::`
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find('}').unwrap_or(group.len())];
            for item in body.split(',') {
                let m = ident_at(item.trim());
                if !m.is_empty() && m != "self" {
                    out.insert(m.to_string());
                }
            }
        } else {
            let m = ident_at(rest);
            if !m.is_empty() {
                out.insert(m.to_string());
            }
        }
    }
    // super::... that climbs out of the top-level module.
    for (i, _) in code.match_indices("super::") {
        if i > 0 && code[..i].ends_with("super::") {
            continue; // counted from the first `super::` of the chain
        }
        let mut rest = &code[i..];
        let mut up = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            up += 1;
            rest = r;
        }
        if up >= own.len() {
            let m = ident_at(rest);
            if !m.is_empty() {
                out.insert(m.to_string());
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every import in `files` ((path, text)) that breaks the layer order.
fn violations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut bad = vec![];
    for (rel, text) in files {
        if rel == Path::new("lib.rs") {
            continue; // the crate root: the top, may import anything
        }
        let own = module_path(rel);
        let Some(top) = own.first() else { continue };
        if top.ends_with("_tests") || rel.to_string_lossy().ends_with("_tests.rs") {
            continue;
        }
        let Some(my_layer) = layer_of(top) else {
            bad.push(format!("{}: module '{top}' is in no layer (add it to LAYERS and docs/architecture.md)", rel.display()));
            continue;
        };
        for m in referenced_modules(&own, &production_code(text)) {
            if &m == top {
                continue;
            }
            match layer_of(&m) {
                Some(l) if l < my_layer => {}
                Some(l) => bad.push(format!(
                    "{}: '{top}' (layer {my_layer}) imports '{m}' (layer {l}): {}",
                    rel.display(),
                    if l == my_layer { "same layer" } else { "points up" }
                )),
                None => {} // a crate-root item or an external path
            }
        }
    }
    bad
}

#[test]
fn engine_imports_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = vec![];
    rust_files(&src, &mut paths);
    paths.sort();
    let files: Vec<(PathBuf, String)> =
        paths.iter().map(|p| (p.strip_prefix(&src).unwrap().to_path_buf(), std::fs::read_to_string(p).unwrap())).collect();
    assert!(files.len() > 40, "found only {} source files under {}", files.len(), src.display());
    let bad = violations(&files);
    assert!(bad.is_empty(), "imports against the layer order (docs/architecture.md):\n{}", bad.join("\n"));
}

#[test]
fn the_checker_catches_an_upward_import() {
    let f = |p: &str, t: &str| (PathBuf::from(p), t.to_string());
    let files = vec![
        f("aqm/red.rs", "use crate::packet::Packet;\nuse crate::world::World;\n"),
        f("transport/x.rs", "use crate::{aqm, scenario::Scenario};\n"),
        f("cc/y.rs", "fn f() { crate::aqm::build(); }\n"),
        f("net/z.rs", "use super::super::world::World;\n"),
        f("ppv/ok.rs", "// use crate::world::World;\n#[cfg(test)]\nmod tests {\n    use crate::world::World;\n}\nuse crate::params::parse_params;\n"),
        f("newthing.rs", "use crate::sim::rng::SimRng;\n"),
        f("lib.rs", "pub use world::World;\nuse crate::world::run_json;\n"),
    ];
    let bad = violations(&files);
    let has = |s: &str| bad.iter().any(|b| b.contains(s));
    assert!(has("aqm/red.rs: 'aqm' (layer 4) imports 'world'"), "{bad:?}");
    assert!(!has("imports 'packet'"), "{bad:?}");
    assert!(has("transport/x.rs: 'transport' (layer 5) imports 'scenario'"), "{bad:?}");
    assert!(!has("transport/x.rs: 'transport' (layer 5) imports 'aqm'"), "{bad:?}");
    assert!(has("cc/y.rs: 'cc' (layer 4) imports 'aqm' (layer 4): same layer"), "{bad:?}");
    assert!(has("net/z.rs: 'net' (layer 7) imports 'world'"), "{bad:?}");
    assert!(!has("ppv/ok.rs"), "comments and test modules are exempt: {bad:?}");
    assert!(has("newthing.rs: module 'newthing' is in no layer"), "{bad:?}");
    assert_eq!(bad.len(), 5, "{bad:?}");
}
