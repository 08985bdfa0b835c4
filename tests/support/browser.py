"""Headless Chromium driven by Playwright (the system's /usr/bin/chromium, no download).

``page()`` skips the test when Chromium or Playwright is not installed; the
screenshots and DOMs tests keep go to ``test-artifacts/``.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from typing import Any, Iterator

import pytest

from support.paths import ROOT

ARTIFACTS = os.path.join(ROOT, "test-artifacts")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def page(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    exe = chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox",
                                                               "--disable-dev-shm-usage"])
        try:
            pg = browser.new_page(viewport={"width": width, "height": height})
            pg.errors = []                                 # script errors, for the asserts
            pg.on("pageerror", lambda e: pg.errors.append(str(e)))
            pg.set_default_timeout(30000)
            yield pg
        finally:
            browser.close()


def artifact(name: str) -> str:
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, name)
    if os.path.exists(path):
        os.unlink(path)
    return path


def is_png(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(8) == b"\x89PNG\r\n\x1a\n"
