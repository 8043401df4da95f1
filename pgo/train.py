"""Record the profile that the release build of the engine is optimised with.

    python pgo/train.py            # about 2 minutes on 2 cores, 3 from a fresh build

A maintainer's tool, run after every change to the engine or the bindings
(tests/test_pgo.py fails until then: a profile older than its source still
builds, but the changed functions lose their counts) and after changing the
Rust toolchain (the wrapper applies a profile only with the rustc that
recorded it). It builds the extension instrumented (pgo/rustc-wrapper with
AQMLAB_PGO=generate, in target/pgo-generate), runs the training scenarios
below through that build, merges the counts into pgo/aqmlab.profdata and
records the compiler (pgo/rustc-version.txt) and the digest of the source
it was recorded from (pgo/source.sha256). Commit the three, then reinstall
(`pip install -e .`). Needs `llvm-profdata` from the toolchain
(`rustup component add llvm-tools`).

The training set is every kind of work the engine does, not the benchmark
alone, each part running as long as a user's run would: the benchmark
scenarios as `aqmlab bench` runs them, the examples, and every AQM of the
registry under a mix of every congestion controller. docs/performance.md
("Profile-guided optimisation") has the measurements, including workloads
outside this set.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PGO = ROOT / "pgo"

# Runs in the instrumented build's process; the counts are written when it exits.
TRAINING = r"""
import glob, os, tomllib
import aqmlab, aqmlab._engine
from aqmlab import bench
assert aqmlab._engine.__file__.startswith(os.environ["AQMLAB_PGO_PKG"]), aqmlab._engine.__file__

def run(s):
    print("  ", s["name"], s["duration"], flush=True)
    aqmlab.run(s)

# The benchmark scenarios as `aqmlab bench` runs them (C-10 and C-1000 are
# scenario A's link with other flow counts: A-10 and C-10000 bound them).
# D-ack1, D-1024-ack1 (D and D-1024 with an ACK for every packet) and
# D-codel (D with CoDel), added after the profile was recorded, are held out:
# adding them would change the training set, so the committed profile would
# no longer be the one this script records; D, D-1024, the A-ack1 scenarios
# and the CoDel run below cover their code paths.
for name in bench.SCENARIOS:
    if name not in ("C-10", "C-1000", "D-ack1", "D-1024-ack1", "D-codel"):
        run(bench.scenario(name))
# The examples.
for path in sorted(glob.glob(os.path.join(os.environ["AQMLAB_ROOT"], "examples", "*.toml"))):
    if path.endswith("sweep.toml"):
        continue
    with open(path, "rb") as f:
        s = tomllib.load(f)
    s.setdefault("name", os.path.basename(path))
    run(s)
# Each AQM with its defaults under every controller that shares a queue.
for aqm in sorted(aqmlab.registry()["aqm"]):
    if aqm == "qcn":  # the QCN example above covers it (it needs QCN sources)
        continue
    run({"name": f"pgo-{aqm}", "duration": "10s",
         "bottleneck": {"rate": "1Gbps", "buffer": "200pkt", "aqm": aqm},
         "flows": [{"cc": cc, "count": 2, "rtt": rtt}
                   for cc, rtt in [("cubic", "20ms"), ("reno", "40ms"), ("dctcp", "10ms"),
                                   ("prague", "10ms"), ("bbr2", "20ms")]]})
"""


def source_digest(root: Path = ROOT) -> str:
    """What the profile depends on: the digest of the two crates' code and how
    they are built (python/aqmlab/_provenance.py, which the extension's own
    record, ``_engine.SOURCE_DIGEST``, matches)."""
    spec = importlib.util.spec_from_file_location("_aqmlab_provenance", root / "python" / "aqmlab" / "_provenance.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.source_digest(root)


def _llvm_profdata() -> str:
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    found = glob.glob(os.path.join(sysroot, "lib", "rustlib", "*", "bin", "llvm-profdata"))
    if not found:
        sys.exit("pgo/train.py: llvm-profdata not found in the toolchain: run `rustup component add llvm-tools`")
    return found[0]


def main() -> int:
    profdata_tool = _llvm_profdata()
    rustc_version = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    digest = source_digest()
    with tempfile.TemporaryDirectory(prefix="aqmlab-pgo-") as tmp:
        raw, wheels, pkg = Path(tmp, "raw"), Path(tmp, "wheels"), Path(tmp, "pkg")
        env = dict(os.environ, AQMLAB_PGO="generate", AQMLAB_PGO_DIR=str(raw),
                   CARGO_TARGET_DIR=str(ROOT / "target" / "pgo-generate"))
        env.pop("RUSTC_WRAPPER", None)  # the workspace's wrapper must run
        print("building the instrumented extension (target/pgo-generate)", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
                       env=env, check=True)
        (wheel,) = wheels.glob("aqmlab-*.whl")
        shutil.copytree(ROOT / "python" / "aqmlab", pkg / "aqmlab")
        with zipfile.ZipFile(wheel) as z:
            (so,) = [n for n in z.namelist() if n.startswith("aqmlab/_engine") and n.endswith(".so")]
            (pkg / so).write_bytes(z.read(so))
        print("running the training scenarios", flush=True)
        run_env = dict(os.environ, PYTHONPATH=str(pkg), AQMLAB_PGO_PKG=str(pkg), AQMLAB_ROOT=str(ROOT),
                       LLVM_PROFILE_FILE=str(raw / "aqmlab-%p-%m.profraw"))
        if subprocess.run([sys.executable, "-c", TRAINING], env=run_env, cwd=tmp).returncode != 0:
            sys.exit("pgo/train.py: a training scenario failed (above); the profile is unchanged")
        profiles = sorted(raw.glob("*.profraw"))
        if not profiles:
            sys.exit("pgo/train.py: the instrumented run wrote no profile")
        subprocess.run([profdata_tool, "merge", "-o", str(PGO / "aqmlab.profdata"), *map(str, profiles)], check=True)
    (PGO / "rustc-version.txt").write_text(rustc_version)
    (PGO / "source.sha256").write_text(digest + "\n")
    size_kb = (PGO / "aqmlab.profdata").stat().st_size / 1024
    print(f"wrote pgo/aqmlab.profdata ({size_kb:.0f} KB), pgo/rustc-version.txt and pgo/source.sha256; "
          "reinstall (pip install -e .) to build with it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
