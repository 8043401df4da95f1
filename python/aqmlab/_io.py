"""Files in and out, at the bottom of the package: bounded reading of
scenario and sweep files, and writes that are atomic (a temporary file
renamed over the target) and fail with one line (OutputError)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from aqmlab._engine import ScenarioError

__all__ = ["MAX_FILE_BYTES", "OutputError", "atomic_write_bytes", "atomic_write_text", "check_writable_dir",
           "read_text_file", "remove_orphaned_temporaries", "remove_temporary", "replace_with_temporary",
           "write_temporary"]  # fmt: skip


#: Largest scenario or sweep file read (real ones are a few kB). Reading is
#: bounded so /dev/zero or a stray multi-GB file is refused, not read until
#: the machine runs out of memory (it was: `aqmlab run /dev/zero` was killed
#: by the kernel's OOM killer after taking 23 GB).
MAX_FILE_BYTES = 16 * 2**20


def read_text_file(p: Path, what: str) -> str:
    """The UTF-8 text of a scenario or sweep file, at most MAX_FILE_BYTES;
    ScenarioError (one line) for anything else."""
    try:
        with p.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{p}: is a directory, not a {what} file") from None
    except OSError as e:
        raise ScenarioError(f"{p}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{p}: larger than {MAX_FILE_BYTES // 2**20} MiB: not a {what} file (they are a few kB of TOML)")
    try:
        # utf-8-sig: a leading byte order mark (Windows editors write one) is
        # not TOML; tomllib would call it an invalid statement at line 1.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ScenarioError(f"{p}: not a text file (a {what} is TOML in UTF-8)") from None


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


class OutputError(OSError):
    """A result could not be written (read-only or full disk, a file where a
    directory should be): one line naming the file; the CLI exits with 2.
    Nothing half-written is left behind."""

    def __str__(self) -> str:
        return str(self.strerror)


def check_writable_dir(path: str | os.PathLike[str]) -> None:
    """Raise OutputError now, before a long run, if results could not be
    written to directory ``path``: a file in the way, a read-only or full
    file system. Creates nothing."""
    p = Path(path).absolute()
    probe = p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(20, f"cannot write {p}: {probe} is a file, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(13, f"cannot write {p}: {probe} is not writable (read-only?)")
    try:
        free = os.statvfs(probe).f_bavail
    except OSError:
        return
    if free == 0:
        raise OutputError(28, f"cannot write {p}: no space left on the device holding {probe}")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write to a temporary file next to ``path``, then rename over it, so a
    reader (or a crash) never sees half a file and an old file survives a
    failed write. The temporary name holds the process and thread, so
    concurrent writers (two sweeps sharing a cache) never share one; the
    rename is atomic, and writers of one cache key write identical bytes.
    The name also holds the host, so that `remove_orphaned_temporaries` can
    tell a dead writer's file from a live one's on storage that several
    machines share."""
    return replace_with_temporary(write_temporary(path, lambda f: f.write(data)), path)


def write_temporary(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> Path:
    """The first half of an atomic write: ``write(file)`` fills a temporary
    file next to ``path`` (named as `atomic_write_bytes` names them), whose
    path is returned for `replace_with_temporary`. Several files can be
    written so and renamed only once all are complete. On any failure the
    temporary file is removed; an OSError becomes OutputError, naming
    ``path``."""
    p = Path(path)
    tmp = _temporary_path(p)
    with _removed_on_failure(tmp, p):
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            write(f)
    return tmp


def replace_with_temporary(tmp: Path, path: str | os.PathLike[str]) -> Path:
    """The second half: rename temporary file ``tmp`` over ``path``
    (atomic); OutputError, and ``tmp`` removed, if it cannot be."""
    p = Path(path)
    with _removed_on_failure(tmp, p):
        os.replace(tmp, p)
    return p


@contextmanager
def _removed_on_failure(tmp: Path, p: Path) -> Iterator[None]:
    """Whatever fails inside removes temporary file ``tmp``; an OSError
    becomes OutputError, naming ``p``, the file the user asked for."""
    try:
        yield
    except BaseException as e:
        remove_temporary(tmp)
        if isinstance(e, OSError):
            raise OutputError(e.errno, f"cannot write {p}: {e.strerror or e}") from e
        raise


def remove_temporary(tmp: Path) -> None:
    """Remove a temporary file of `write_temporary` that will not be renamed."""
    try:
        tmp.unlink()
    except OSError:  # never created, or unwritable
        pass


_HOST = socket.gethostname()


def _temporary_path(p: Path) -> Path:
    """`.NAME.PID-TID@HOST.tmp` beside `p`; `_of_a_dead_local_writer` reads it back."""
    return p.with_name(f".{p.name}.{os.getpid()}-{threading.get_ident()}@{_HOST}.tmp")


def _of_a_dead_local_writer(tmp: Path) -> bool:
    """Whether `tmp` is named as `_temporary_path` names files, by a process
    of this host that no longer exists."""
    writer, sep, host = tmp.name.removesuffix(".tmp").rpartition("@")
    pid = writer.rpartition(".")[2].partition("-")[0]
    if not sep or host != _HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return True
    except OSError:  # it exists, another user's
        pass
    return False


def remove_orphaned_temporaries(directory: Path, final_names: str) -> int:
    """Remove the temporary files that `atomic_write_bytes` made for files
    matching the glob `final_names` under `directory` (e.g. ``*/*.json``)
    and whose writer was killed before its rename (SIGKILL cannot be
    handled, so nobody else removes them). Only files of this host whose
    process no longer exists go: a live writer's file, or one of another
    machine sharing the directory, is never touched (a reused process id
    only keeps an orphan longer). Returns how many were removed."""
    folder, _, name = final_names.rpartition("/")
    removed = 0
    for f in directory.glob(f"{folder}/.{name}.*.tmp" if folder else f".{name}.*.tmp"):
        if not _of_a_dead_local_writer(f):
            continue
        try:
            f.unlink()
            removed += 1
        except OSError:  # already gone (another sweep's clean-up) or not ours to remove
            pass
    return removed
