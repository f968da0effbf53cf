"""A screenshot of TensorBoard (issue 52): a real TensorBoard server on LOGDIR, read by a headless Chromium
that Playwright drives (the system's Chromium: Debian's `apt-get install chromium`), written to OUT (PNG).

LOGDIR holds the runs to overlay (e.g. symlinks to runs/<keep>/tb and runs/<baseline>/tb); TAGS is
TensorBoard's tag filter (a regex; default: the reward and the eval score against training time). The
time-series charts are WebGL: a software GL (SwiftShader) draws them without a GPU, and the page is given time
to fetch and draw.

    uv run --with playwright python scripts/tb_screenshot.py LOGDIR OUT.png [TAGS] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

DEFAULT_TAGS = "^time/(reward_mean|eval/score)$"
DRAW_S = 15.0  # after the page loads: the cards fetch their series and draw them


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_runs(port: int, limit_s: float = 60.0) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs", timeout=2) as r:
                if r.read().strip() not in (b"", b"[]"):
                    return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit(f"TensorBoard on port {port} listed no runs in {limit_s:.0f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logdir", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("tags", nargs="?", default=DEFAULT_TAGS)
    p.add_argument("--chromium", default=None, help="the browser (default: chromium on PATH)")
    a = p.parse_args()
    browser = a.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        raise SystemExit("no chromium on PATH (Debian: apt-get install chromium), or give --chromium PATH")
    if not a.logdir.is_dir():
        raise SystemExit(f"{a.logdir}: not a directory")
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(a.logdir), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_runs(port)
        url = f"http://127.0.0.1:{port}/?tagFilter={urllib.parse.quote(a.tags)}#timeseries"
        gl = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=browser, args=["--no-sandbox", *gl])
            page = chromium.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(url)
            time.sleep(DRAW_S)
            page.screenshot(path=str(a.out))
            chromium.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    size = a.out.stat().st_size // 1024
    print(f"wrote {a.out} ({size} KiB) from TensorBoard on {a.logdir}, tags /{a.tags}/")


if __name__ == "__main__":
    main()
