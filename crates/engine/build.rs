//! Rebuild the engine when its profile-guided optimisation changes. The
//! profile is applied by `pgo/rustc-wrapper` (docs/performance.md,
//! "Profile-guided optimisation"), whose arguments cargo does not see.
fn main() {
    for file in ["aqmlab.profdata", "rustc-version.txt", "rustc-wrapper"] {
        println!("cargo:rerun-if-changed=../../pgo/{file}");
    }
    println!("cargo:rerun-if-env-changed=AQMLAB_PGO");
}
