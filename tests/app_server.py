"""The workbench as a person opens it: `streamlit run app.py` on 127.0.0.1, in a child
process with the environment a test gives it (data roots, review workspace, Label Studio)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from devkit.labelstudio_local import free_port

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def running_app(**env: str) -> Iterator[str]:
    """The app's URL once its health check answers; these variables set on top of the
    test's environment (less any STREAMLIT_ setting)."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=environ | env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("streamlit did not start: " + proc.stdout.read().decode()[-2000:])
            time.sleep(0.3)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
