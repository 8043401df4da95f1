"""Shared helpers: run the CLI as a user would, small scenarios, paths."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCENARIO_EXAMPLES = sorted(p for p in EXAMPLES.glob("*.toml") if p.name != "sweep.toml")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test an engine built from other sources than this checkout:
    an editable install does not rebuild the extension when the Rust
    changes, and every test would then judge the old engine."""
    from aqmlab._provenance import engine_mismatch

    why = engine_mismatch(ROOT)
    if why:
        pytest.exit(f"aqmlab tests: {why}", returncode=2)


def cli(*args: str, cwd: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m aqmlab ARGS`` (what the console script does)."""
    e = dict(os.environ)
    e.pop("AQMLAB_DEBUG", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "aqmlab", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=e
    )


def load_script(path: Path, as_name: str) -> Any:
    """A maintainer script outside the package (scripts/...) as a module
    named ``as_name``, registered in sys.modules (its dataclasses need it),
    once: a second load returns the first."""
    import importlib.util

    if as_name in sys.modules:
        return sys.modules[as_name]
    spec = importlib.util.spec_from_file_location(as_name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[as_name] = mod
    spec.loader.exec_module(mod)
    return mod


def default_sigint() -> None:
    """``preexec_fn`` of a child a test interrupts: SIGINT back to its default
    action. A suite started in the background by a script (``cmd &``) has
    SIGINT ignored and would pass that on, and Python installs its
    KeyboardInterrupt handler only over the default, so the child would
    never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def tiny(**over: Any) -> dict[str, Any]:
    """A scenario that runs in milliseconds."""
    s: dict[str, Any] = {
        "name": "tiny",
        "duration": "2s",
        "warmup": "500ms",
        "bottleneck": {"rate": "10Mbps", "buffer": "30ms"},
        "flows": [{"cc": "cubic", "rtt": "20ms", "count": 2, "start_jitter": "50ms"}, {"cc": "dctcp", "rtt": "20ms"}],
    }
    s.update(over)
    return s


@pytest.fixture
def tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path
