#!/usr/bin/env python3
"""Build htsim and the two drivers of scripts/htsim (htsim_a, htsim_d).

    HTSIM_SRC=/path/to/csg-htsim python scripts/htsim/build.py
    python scripts/htsim/build.py            # clones htsim at the pinned commit

htsim's source: ``--src`` or ``HTSIM_SRC`` (a checkout of Broadcom/csg-htsim;
only its ``sim/`` is used), else a clone of ``--url`` at the pinned commit,
made in the build directory. The build never writes into the source: ``sim/``
is copied to BUILD/sim and built there by htsim's own Makefile (``make
libhtsim.a``: its compiler and flags, -O3 -g, no link-time optimisation); the
drivers, and the four datacenter files htsim_d needs (the topology patched
by patch_fat_tree.py), are compiled with the flags that Makefile reports.
The binaries land in BUILD/bin; BUILD/build-info.json records the commit,
compiler and flags. BUILD defaults to target/htsim in the repository.

Any failure is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_BUILD = REPO / "target" / "htsim"

#: The htsim commit the drivers and the patcher were written against
#: (Broadcom/csg-htsim, "Revised connection_matrix.h/cpp", 2026-03-23).
PINNED_COMMIT = "841d9e7be46bb968eece766aa4b6c044c7799f67"
HTSIM_URL = "https://github.com/Broadcom/csg-htsim"

#: htsim_d's datacenter sources besides the patched topology (unchanged).
DATACENTER_SOURCES = ("fat_tree_switch.cpp", "connection_matrix.cpp", "firstfit.cpp")


class BuildError(Exception):
    """The one line printed before exiting with 2."""


def _run(cmd: list[str], what: str, cwd: Path | None = None, log: Path | None = None) -> str:
    """Run a command; its output goes to ``log`` (appended) if given, else is
    returned. A failure names the step and, with a log, where to read why."""
    try:
        if log is None:
            p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
            out = p.stdout
            err = p.stderr.strip().splitlines()
        else:
            with log.open("a") as f:
                f.write(f"$ {shlex.join(cmd)}\n")
                f.flush()
                p = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, text=True)
            out, err = "", []
    except FileNotFoundError:
        raise BuildError(f"{what}: '{cmd[0]}' not found (install it)") from None
    if p.returncode != 0:
        why = f"see {log}" if log else (err[-1] if err else "no message")
        raise BuildError(f"{what} failed (exit {p.returncode}): {why}")
    return out


def _given_source(args: argparse.Namespace, out: Path) -> Path | None:
    """The checkout given by --src or HTSIM_SRC, checked before anything is
    written; None if none is given (then build.py clones one)."""
    given = args.src or os.environ.get("HTSIM_SRC")
    if not given:
        return None
    root = Path(given).expanduser().resolve()
    if not (root / "sim" / "Makefile").is_file():
        raise BuildError(f"HTSIM_SRC: {root} is not a csg-htsim checkout (no sim/Makefile)")
    if out == root or root in out.parents:
        raise BuildError(f"--build-dir: {out} is inside htsim's checkout {root} (the build never writes into it)")
    return root


def _commit(root: Path) -> str | None:
    """The checkout's commit (None if it is not a git checkout)."""
    try:
        p = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return (p.stdout.strip() or None) if p.returncode == 0 else None


def _clone(url: str, root: Path, log: Path) -> None:
    """Fetch the pinned commit alone, without file contents (a partial clone:
    the repository's experiments hold large files the build does not need),
    then check out sim/ and the licence, whose contents git fetches then."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    git = ["git", "-C", str(root)]
    _run(git + ["init", "-q"], "git init", log=log)
    _run(git + ["remote", "add", "origin", url], "git remote add", log=log)
    _run(git + ["fetch", "-q", "--depth", "1", "--filter=blob:none", "origin", PINNED_COMMIT],
         f"fetching htsim {PINNED_COMMIT[:7]} from {url}", log=log)  # fmt: skip
    _run(git + ["sparse-checkout", "set", "--no-cone", "/sim/", "/LICENSE", "/README.md"], "git sparse-checkout",
         log=log)  # fmt: skip
    _run(git + ["-c", "advice.detachedHead=false", "checkout", "-q", "--detach", "FETCH_HEAD"],
         f"checking out htsim {PINNED_COMMIT[:7]}", log=log)  # fmt: skip


def _make_variable(sim: Path, name: str) -> str:
    """A variable as htsim's Makefile sets it (its compiler or flags)."""
    out = _run(["make", "-s", "--no-print-directory", "-C", str(sim), f"--eval=_print_var: ; @echo $({name})",
                "_print_var"], f"reading {name} from htsim's Makefile")  # fmt: skip
    return out.strip()


def build(args: argparse.Namespace) -> Path:
    out = Path(args.build_dir).expanduser().resolve()
    src = _given_source(args, out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    log.write_text("")
    if src is None:
        src = out / "csg-htsim"
        if not (src / "sim" / "Makefile").is_file():
            _clone(args.url, src, log)
    commit = _commit(src)
    if commit is None:
        print(f"build: {src} is not a git checkout; assuming htsim {PINNED_COMMIT[:7]}", file=sys.stderr)
    elif commit != PINNED_COMMIT:
        print(f"build: htsim at {commit[:7]}, not the pinned {PINNED_COMMIT[:7]}; the figures may differ",
              file=sys.stderr)  # fmt: skip

    # htsim's core, built by its own Makefile in a copy (objects of an
    # earlier build in the checkout are not copied: they may have other flags).
    sim = out / "sim"
    shutil.copytree(src / "sim", sim, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.o", "*.a", ".git"))  # fmt: skip
    _run(["make", "-C", str(sim), f"-j{args.jobs}", "libhtsim.a"], "make libhtsim.a (htsim's Makefile)", log=log)
    cc = _make_variable(sim, "CC")
    cflags = shlex.split(_make_variable(sim, "CFLAGS"))
    if not cc or not cflags:
        raise BuildError("htsim's Makefile sets no CC or CFLAGS (htsim differs from the pinned commit?)")

    # The drivers, with the same compiler and flags.
    obj = out / "obj"
    obj.mkdir(exist_ok=True)
    patched = obj / "fat_tree_topology_k.cpp"
    _run([sys.executable, str(HERE / "patch_fat_tree.py"), str(sim / "datacenter" / "fat_tree_topology.cpp"),
          str(patched)], "patching fat_tree_topology.cpp")  # fmt: skip
    inc = [f"-I{sim}", f"-I{sim / 'datacenter'}"]
    units = [HERE / "main_d.cpp", patched, *(sim / "datacenter" / f for f in DATACENTER_SOURCES)]
    objects = []
    for unit in units:
        o = obj / (unit.stem + ".o")
        _run([cc, *cflags, *inc, "-c", str(unit), "-o", str(o)], f"compiling {unit.name}", log=log)
        objects.append(str(o))
    bin_dir = out / "bin"
    bin_dir.mkdir(exist_ok=True)
    lib = str(sim / "libhtsim.a")
    _run([cc, *cflags, *objects, lib, "-o", str(bin_dir / "htsim_d")], "linking htsim_d", log=log)
    _run([cc, *cflags, *inc, str(HERE / "main_a.cpp"), lib, "-o", str(bin_dir / "htsim_a")], "building htsim_a",
         log=log)  # fmt: skip

    info = {"htsim_src": str(src), "htsim_commit": commit, "pinned_commit": PINNED_COMMIT, "cc": cc,
            "cc_version": _run([cc, "--version"], "compiler version").splitlines()[0], "cflags": cflags,
            "binaries": {n: str(bin_dir / n) for n in ("htsim_a", "htsim_d")}}  # fmt: skip
    (out / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    return bin_dir


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", help="htsim checkout (default: $HTSIM_SRC, else a clone in the build directory)")
    p.add_argument("--url", default=HTSIM_URL, help=f"where to clone htsim from (default {HTSIM_URL})")
    p.add_argument("--build-dir", default=str(DEFAULT_BUILD), help="default: target/htsim in the repository")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel jobs of make")
    args = p.parse_args(argv)
    if args.jobs < 1:
        print(f"build: --jobs: given {args.jobs}, allowed: 1 or more", file=sys.stderr)
        return 2
    try:
        bin_dir = build(args)
    except BuildError as e:
        print(f"build: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("build: interrupted", file=sys.stderr)
        return 130
    print(f"built {bin_dir / 'htsim_a'} and {bin_dir / 'htsim_d'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
