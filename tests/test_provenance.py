"""Which sources the installed engine was built from (python/aqmlab/_provenance.py,
crates/aqmlab-py/build.rs): the extension's record and the checkout's digest
agree, any change to the engine's sources is told in one line, every
command warns and the comparison with htsim refuses before a stale engine
runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aqmlab import _engine
from aqmlab._provenance import SOURCES, engine_mismatch, source_digest
from aqmlab.cli import main
from conftest import EXAMPLES, ROOT, load_script


def _copy_sources(to: Path) -> None:
    for pattern in SOURCES:
        for p in ROOT.glob(pattern):
            if p.is_file():
                (to / p.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, to / p.relative_to(ROOT))


def test_the_extension_records_the_digest_python_computes_over_this_checkout() -> None:
    # Two implementations (Rust at build time, Python here) of one digest.
    assert len(_engine.SOURCE_DIGEST) == 64
    assert _engine.SOURCE_DIGEST == source_digest(ROOT)
    assert engine_mismatch(ROOT) is None


def test_any_change_to_the_engines_sources_is_a_mismatch_told_in_one_line(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    assert engine_mismatch(tmp_path) is None  # the digest is of relative paths and bytes only
    (tmp_path / "crates" / "engine" / "src" / "notes.txt").write_text("not a source")
    assert engine_mismatch(tmp_path) is None
    new = tmp_path / "crates" / "engine" / "src" / "aqm" / "new_discipline.rs"
    new.write_text("// a new file\n")
    why = engine_mismatch(tmp_path)
    assert why is not None and "\n" not in why
    assert why.startswith("the installed engine (") and why.endswith("rebuild it with `pip install -e .` (or `maturin develop --release`)")
    assert str(tmp_path) in why and _engine.SOURCE_DIGEST[:12] in why
    new.unlink()
    assert engine_mismatch(tmp_path) is None
    lock = tmp_path / "Cargo.lock"
    lock.write_bytes(lock.read_bytes() + b"\n")
    assert engine_mismatch(tmp_path) is not None


def test_an_installed_wheel_without_the_sources_is_not_judged(tmp_path: Path) -> None:
    assert engine_mismatch(tmp_path) is None


def test_every_command_warns_when_the_engine_is_not_the_checkouts(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import aqmlab._provenance

    warning = "aqmlab: warning: the installed engine (x) was built from other sources"
    assert main(["validate", str(EXAMPLES / "dumbbell.toml")]) == 0
    said = capsys.readouterr().err
    assert "warning" not in said  # this checkout's engine: nothing more said
    monkeypatch.setattr(aqmlab._provenance, "engine_mismatch", lambda: warning.removeprefix("aqmlab: warning: "))
    assert main(["validate", str(EXAMPLES / "dumbbell.toml")]) == 0
    assert capsys.readouterr().err == f"{warning}\n{said}"  # one line first, then the command as before
    assert main(["bench", "--only", "A-10", "--duration", "1ms", "--json", "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [warning]
    (r,) = json.loads(captured.out)  # and the figures name the engine that made them
    assert r["source_digest"] == _engine.SOURCE_DIGEST


def test_compare_records_the_engine_and_refuses_a_stale_one(monkeypatch: pytest.MonkeyPatch) -> None:
    compare = load_script(ROOT / "scripts" / "htsim" / "compare.py", "htsim_compare")
    info = compare._aqmlab_engine()
    assert info == {"version": _engine.__version__, "build": _engine.BUILD, "source_digest": _engine.SOURCE_DIGEST}
    stale = "print(__import__('json').dumps({'mismatch': 'the installed engine (x) was built from other sources'}))"
    monkeypatch.setattr(compare, "_ENGINE_INFO", stale)
    with pytest.raises(compare.CompareError, match=r"^the installed engine \(x\) was built from other sources$"):
        compare._aqmlab_engine()
