"""Load a page in a real browser (Debian's chromium, headless) and report what
a reader would see: console errors, the layout width, images, links and a
screenshot. Test support for tests/test_browser.py.

Chromium is driven through the DevTools protocol on a pipe
(``--remote-debugging-pipe``: commands on fd 3, replies on fd 4, JSON
messages ended by a NUL byte), so no driver or client library is needed.
The device metrics are set through the protocol as well: a headless window
cannot be narrower than 500 px, and a phone's layout (the page's viewport
meta in effect) needs the ``mobile`` flag. Nothing waits a fixed time: each
step waits for the browser's reply or event, up to a deadline.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Upper bound for one page load and its checks (seconds); only reached when
#: the browser hangs.
DEADLINE_S = 90.0

#: What the page reports about itself once loaded (evaluated in the page,
#: with every <details> opened first).
PROBE_JS = r"""
(() => {
  document.querySelectorAll('details').forEach(e => { e.open = true; });  // every figure and table shown, as a reader may
  const d = document.documentElement;
  const imgs = [...document.images].map(i => {
    const r = i.getBoundingClientRect();
    return {alt: i.alt, complete: i.complete, natural_w: i.naturalWidth, natural_h: i.naturalHeight,
            x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height};
  });
  const wide = [...document.body.querySelectorAll('*')].filter(e => {
    const r = e.getBoundingClientRect();
    return r.right > Math.min(window.innerWidth, screen.width) + 0.5 && !e.closest('.scroll, pre');
  }).map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')).slice(0, 10);
  const tables = [...document.querySelectorAll('table')].map(t => ({
    in_scroll_box: !!t.closest('.scroll'), box_w: (t.closest('.scroll') || t).clientWidth, table_w: t.scrollWidth}));
  return JSON.stringify({
    inner_w: window.innerWidth, screen_w: screen.width, scroll_w: d.scrollWidth, scroll_h: d.scrollHeight,
    viewport_meta: !!document.querySelector('meta[name=viewport]'), title: document.title,
    h1: (document.querySelector('h1') || {}).textContent,
    images: imgs, tables: tables, too_wide: wide,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  });
})()
"""


def find_chromium() -> str | None:
    """Path of Debian's chromium (or a chromium-browser), None if absent."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageView:
    """What the browser saw at one window width."""

    width: int
    info: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    screenshot_png: bytes = field(default=b"", repr=False)


class Chromium:
    """One headless chromium process, driven over the DevTools pipe."""

    def __init__(self, binary: str):
        self._profile = tempfile.TemporaryDirectory(prefix="aqmlab-chromium-")
        cmd_r, self._cmd_w = os.pipe()  # we write commands; chromium reads fd 3
        self._out_r, out_w = os.pipe()  # chromium writes fd 4; we read

        def child_fds() -> None:  # in the child, before exec: fds 3 and 4 as chromium expects
            os.dup2(cmd_r, 3)  # out_w > cmd_r >= 3: neither overwrites the other
            os.dup2(out_w, 4)
            for fd in (3, 4):  # dup2 onto itself keeps close-on-exec
                os.set_inheritable(fd, True)

        args = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
                "--mute-audio", f"--user-data-dir={self._profile.name}", "about:blank"]  # fmt: skip
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, preexec_fn=child_fds, close_fds=False)  # fmt: skip
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    # -- protocol ---------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if ready:
                chunk = os.read(self._out_r, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit code {self._proc.poll()})")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             deadline: float | None = None) -> dict[str, Any]:  # fmt: skip
        """Send a command and return its result; events that arrive meanwhile are kept in ``events``."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = deadline or time.monotonic() + DEADLINE_S
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, deadline: float) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method and ev.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            ev = self._read_message(deadline)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev
            self.events.append(ev)

    # -- one page -----------------------------------------------------------

    def view(self, path: Path, width: int, height: int = 844) -> PageView:
        """Load ``path`` at ``width`` × ``height`` CSS pixels (a phone's
        layout below 600 px), wait for its load event, and collect the
        page's own report, the console errors and a full-page screenshot."""
        deadline = time.monotonic() + DEADLINE_S
        target = self.send("Target.createTarget", {"url": "about:blank"}, deadline=deadline)["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, deadline=deadline)["sessionId"]
        self.events.clear()
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session, deadline=deadline)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                        "screenWidth": width, "screenHeight": height,
                                                        "mobile": width < 600}, session=session, deadline=deadline)  # fmt: skip
        nav = self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session, deadline=deadline)
        errors = [f"navigation: {nav['errorText']}"] if nav.get("errorText") else []
        self.wait_event("Page.loadEventFired", session, deadline)
        res = self.send("Runtime.evaluate", {"expression": PROBE_JS, "returnByValue": True}, session=session,
                        deadline=deadline)  # fmt: skip
        if "exceptionDetails" in res:
            raise RuntimeError(f"probe script failed: {res['exceptionDetails']}")
        info = json.loads(res["result"]["value"])
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": 0, "y": 0, "width": width, "scale": 1,
                                                             "height": min(info["scroll_h"], 16000)}},
                         session=session, deadline=deadline)  # fmt: skip
        for ev in self.events:
            if ev.get("sessionId") != session:
                continue
            p = ev.get("params", {})
            if ev.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                errors.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                                     for a in p.get("args", [])))  # fmt: skip
            elif ev.get("method") == "Runtime.exceptionThrown":
                errors.append("exception: " + json.dumps(p.get("exceptionDetails", {}).get("text")))
            elif ev.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
        self.send("Target.closeTarget", {"targetId": target}, deadline=deadline)
        return PageView(width, info, errors, base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self.send("Browser.close", deadline=time.monotonic() + 10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)
        self._profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
