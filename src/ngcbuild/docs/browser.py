"""A real browser for the site: headless Chromium on pages served from 127.0.0.1.

Used by `invoke docs` (the screenshot kept for review) and by the site tests (what the browser shows).
Each run gets a fresh profile directory; nothing reaches the network but the local server.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ngcbuild.core.errors import OperationError

NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio")
PHONE = (390, 844)
DESKTOP = (1280, 900)
TIMEOUT_S = 90


def find_chromium() -> str | None:
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve `directory` on 127.0.0.1 (a free port) for the duration; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _run(chromium: str, args: list[str], url: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="ngcbuild-chromium-") as profile:
        command = [chromium, *FLAGS, f"--user-data-dir={profile}", *args, url]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise OperationError(f"chromium did not finish with {url} within {TIMEOUT_S}s") from None
    if result.returncode != 0:
        tail = "\n".join(result.stderr.splitlines()[-5:])
        raise OperationError(f"chromium failed on {url} (exit {result.returncode}): {tail}")
    return result


def dump_dom(chromium: str, url: str, window=DESKTOP, budget_ms: int = 3000) -> str:
    """The DOM as the browser has it after loading `url` and running its scripts."""
    size = f"--window-size={window[0]},{window[1]}"
    return _run(chromium, [size, f"--virtual-time-budget={budget_ms}", "--dump-dom"], url).stdout


def screenshot(chromium: str, url: str, path: Path, window=PHONE) -> Path:
    size = f"--window-size={window[0]},{window[1]}"
    _run(chromium, [size, f"--screenshot={path}"], url)
    if not path.is_file():
        raise OperationError(f"chromium wrote no screenshot to {path}")
    return path
