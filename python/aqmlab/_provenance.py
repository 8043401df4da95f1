"""Which sources the installed engine was built from, and whether that is the
checkout this package is imported from.

An editable install (``pip install -e .``) does not rebuild the Rust
extension when the engine's sources change: tests, benchmarks and the
comparison with htsim would then run an older engine and credit its figures
to the checkout. The extension records the digest of the sources it was
built from (``_engine.SOURCE_DIGEST``, crates/aqmlab-py/build.rs, the same
files in the same layout as here); :func:`engine_mismatch` compares it with
the checkout's. The profile-guided build's record (pgo/train.py) uses the
same digest.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: What the extension's behaviour depends on, relative to the repository root:
#: the code of the two crates and how they are built.
SOURCES = ("Cargo.toml", "Cargo.lock", "crates/engine/Cargo.toml", "crates/engine/build.rs",
           "crates/engine/src/**/*.rs", "crates/aqmlab-py/Cargo.toml", "crates/aqmlab-py/src/**/*.rs")  # fmt: skip

#: The repository root when this package runs from a checkout (an editable
#: install), else a directory without the engine's sources.
CHECKOUT = Path(__file__).resolve().parents[2]


def source_digest(root: Path = CHECKOUT) -> str:
    """SHA-256 over the relative path, length and bytes of every file in
    SOURCES, in the byte order of their '/'-separated paths."""
    h = hashlib.sha256()
    files = {p.relative_to(root).as_posix(): p for pattern in SOURCES for p in root.glob(pattern) if p.is_file()}
    for rel in sorted(files):
        data = files[rel].read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def engine_mismatch(root: Path = CHECKOUT) -> str | None:
    """One line saying that the installed engine was built from other sources
    than the checkout at ``root``, or None when they match or ``root`` holds
    no engine sources (an installed wheel)."""
    if not (root / "crates" / "engine" / "src").is_dir():
        return None
    from aqmlab import _engine

    built, here = getattr(_engine, "SOURCE_DIGEST", None), source_digest(root)
    if built == here:
        return None
    return (f"the installed engine ({Path(_engine.__file__).name}, sources {str(built)[:12]}) was built from other "
            f"sources than the checkout at {root} (sources {here[:12]}): rebuild it with "
            "`pip install -e .` (or `maturin develop --release`)")  # fmt: skip
