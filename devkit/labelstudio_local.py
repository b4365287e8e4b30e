"""The local Label Studio process manager for tests and benches: start, stop and SIGKILL a
server through scripts/labelstudio.sh on a data dir and port, and a free loopback port.
Recognising a server that runs stays in the library
(audit.review.labelstudio.client.runs_local), which lists the servers this script started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from audit.review.labelstudio.client import process_running, runs_local
from audit.review.labelstudio.errors import ServerError
from devkit import REPO

SCRIPT = REPO / "scripts" / "labelstudio.sh"


class LocalServer:
    """A server started by scripts/labelstudio.sh on a data dir and port (tests, benches).

    label_studio_bin defaults to the label-studio beside the running Python."""

    def __init__(self, data_dir: Path, port: int, *, postgres: bool = False,
                 label_studio_bin: Path | None = None, timeout: int = 300) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.postgres = postgres
        self.timeout = timeout
        self.bin = Path(label_studio_bin) if label_studio_bin else \
            Path(sys.executable).parent / "label-studio"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        try:
            return int((self.data_dir / "server.pid").read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _run(self, command: str, *extra: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "LABEL_STUDIO_BIN": str(self.bin)}
        args = ["bash", str(SCRIPT), command, "--data-dir", str(self.data_dir), *extra]
        return subprocess.run(args, env=env, capture_output=True, text=True,
                              timeout=self.timeout + 120)

    def start(self) -> "LocalServer":
        extra = ["--port", str(self.port), "--timeout", str(self.timeout)]
        done = self._run("start", *extra, *(["--postgres"] if self.postgres else []))
        if done.returncode != 0:
            raise ServerError(self.url, "scripts/labelstudio.sh start failed: "
                              + done.stderr.strip()[-2000:])
        return self

    def stop(self) -> None:
        self._run("stop")

    def kill(self) -> None:
        """SIGKILL the server process (a crash, for resumption tests): only while the pid
        in the pid file is still this server (a pid is reused once its process is gone)."""
        pid = self.pid
        if pid is None:
            raise RuntimeError(f"no pid file in {self.data_dir}")
        if not self.runs_as(pid):
            raise RuntimeError(f"pid {pid} of {self.data_dir}/server.pid is not this "
                               f"server (label-studio start --port {self.port}) any more: "
                               "not signalled")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process_running(pid):
            time.sleep(0.05)

    def runs_as(self, pid: int) -> bool:
        """Whether process `pid` is this server (audit's own test for a running local server)."""
        return runs_local(self.data_dir, self.port, pid)


def free_port() -> int:
    """A loopback port the kernel has just found free (scripts/test.sh, tests, benches)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
