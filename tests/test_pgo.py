"""Profile-guided optimisation of the release build (pgo/, docs/performance.md):
the recorded profile belongs to the committed source, the wrapper applies it
exactly where it should, and the installed extension says whether it has it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

PGO = ROOT / "pgo"
RELEASE = ["--crate-name", "aqmlab_engine", "--edition=2021", "src/lib.rs", "-C", "opt-level=3", "-C", "codegen-units=1"]


def _train_module():
    spec = importlib.util.spec_from_file_location("pgo_train", PGO / "train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_profile_was_recorded_from_this_source():
    recorded = (PGO / "source.sha256").read_text().strip()
    assert recorded == _train_module().source_digest(), (
        "the engine or the bindings changed since pgo/aqmlab.profdata was recorded: "
        "run `python pgo/train.py` and commit pgo/ (docs/performance.md, Profile-guided optimisation)"
    )


@pytest.fixture
def wrapper(tmp_path: Path):
    """A copy of the wrapper beside a dummy profile recorded with 'rustc 9.9.9',
    and a fake rustc that prints its arguments (or a version for -vV)."""
    pgo = tmp_path / "pgo"
    pgo.mkdir()
    shutil.copy2(PGO / "rustc-wrapper", pgo / "rustc-wrapper")
    (pgo / "aqmlab.profdata").write_bytes(b"dummy")
    (pgo / "rustc-version.txt").write_text("rustc 9.9.9\nLLVM version: 99\n")
    fake = tmp_path / "rustc"
    fake.write_text('#!/bin/sh\nif [ "$1" = -vV ]; then printf "%s\\n" "$FAKE_RUSTC_VV"; exit 0; fi\n'
                    'for a in "$@"; do echo "$a"; done\n')  # fmt: skip
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)

    def call(*args: str, mode: str | None = None, version: str = "rustc 9.9.9\nLLVM version: 99") -> tuple[int, list[str], str]:
        env = dict(os.environ, FAKE_RUSTC_VV=version, AQMLAB_PGO_DIR=str(tmp_path / "raw"))
        env.pop("AQMLAB_PGO", None)
        if mode is not None:
            env["AQMLAB_PGO"] = mode
        p = subprocess.run([str(pgo / "rustc-wrapper"), str(fake), *args], capture_output=True, text=True, env=env)
        return p.returncode, p.stdout.splitlines(), p.stderr

    call.profile = str(pgo / "aqmlab.profdata")  # type: ignore[attr-defined]
    return call


def test_wrapper_uses_the_profile_for_the_release_build_of_the_engine(wrapper):
    rc, args, _ = wrapper(*RELEASE)
    assert rc == 0
    assert args == RELEASE + [f"-Cprofile-use={wrapper.profile}"]


def test_wrapper_marks_the_extension_built_with_the_profile(wrapper):
    py = ["--crate-name", "aqmlab_py"] + RELEASE[2:]
    assert wrapper(*py)[1] == py + [f"-Cprofile-use={wrapper.profile}", "--cfg", "aqmlab_pgo"]


@pytest.mark.parametrize("args", [
    ["--crate-name", "serde_json", "-C", "opt-level=3"],  # another crate
    ["--crate-name", "aqmlab_engine", "-C", "opt-level=1"],  # a debug build
    RELEASE + ["-C", "debug-assertions=on"],  # the test profile (opt-level 3, asserting)
])  # fmt: skip
def test_wrapper_leaves_other_builds_alone(wrapper, args):
    assert wrapper(*args)[1] == args


def test_wrapper_ignores_a_profile_of_another_compiler(wrapper):
    # LLVM cannot be relied on to read another version's profile: build as without PGO.
    assert wrapper(*RELEASE, version="rustc 9.9.10\nLLVM version: 100")[1] == RELEASE


def test_wrapper_modes(wrapper, tmp_path):
    assert wrapper(*RELEASE, mode="off")[1] == RELEASE
    assert wrapper(*RELEASE, mode="generate")[1] == RELEASE + [f"-Cprofile-generate={tmp_path / 'raw'}"]
    rc, out, err = wrapper(*RELEASE, mode="fast")
    assert (rc, out) == (2, [])
    assert err.strip() == "AQMLAB_PGO: 'fast' is not a mode (allowed: use, generate, off)"


def test_installed_extension_reports_its_build():
    """The package under test was built by pip through the wrapper: with the
    profile exactly when it was recorded with this machine's rustc."""
    if os.environ.get("RUSTC_WRAPPER") or os.environ.get("AQMLAB_PGO"):
        pytest.skip("the build's PGO was overridden by RUSTC_WRAPPER or AQMLAB_PGO")
    rustc = shutil.which("rustc")
    if rustc is None:
        pytest.skip("no rustc on PATH to compare with the profile's")
    from aqmlab import _engine

    same = subprocess.run([rustc, "-vV"], capture_output=True, text=True).stdout.strip() == (
        (PGO / "rustc-version.txt").read_text().strip()
    )
    expected = "pgo" if same else "plain"
    assert _engine.BUILD == expected, (
        f"the installed extension is a '{_engine.BUILD}' build, the wrapper makes '{expected}' with this rustc: "
        "was it built another way (a debug `maturin develop`, AQMLAB_PGO=off)? Reinstall with `pip install -e .`"
    )
