"""Run ``twinsched twin serve`` as a subprocess on a free loopback port (tests, benchmarks).

Start one with ``TwinProcess(db_url, token, log_path)``, then ``wait_ready()``; end it with
``stop()`` (or ``kill()`` to test crashes). Its address is ``url``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from twinsched.twin import EXTRA_HINT

try:
    import httpx
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(EXTRA_HINT) from exc

START = "from twinsched.cli.twin import app; app()"
STARTS = 3  # tries of running_twin, each on a new free port


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _holds(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the socket listening on ``port`` (Linux's /proc; true
    where it cannot be told): a port free a moment ago may have gone to another test's
    server, whose ``/healthz`` answers too."""
    table, fds = Path("/proc/net/tcp"), Path(f"/proc/{pid}/fd")
    if not table.is_file():
        return True
    listening = {
        f"socket:[{cols[9]}]"
        for cols in (line.split() for line in table.read_text().splitlines()[1:])
        if cols[1].endswith(f":{port:04X}") and cols[3] == "0A"  # 0A: LISTEN
    }
    try:
        return any(os.readlink(fd) in listening for fd in fds.iterdir())
    except OSError:  # the process ended, or a descriptor closed while read
        return False


def _listening(port: int) -> bool:
    """Whether something takes connections on 127.0.0.1:``port``."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class TwinProcess:
    """``twinsched twin serve`` in a subprocess; ``kill()`` is SIGKILL, ``stop()`` SIGTERM.

    ``extra`` are more ``serve`` options; the server's output goes to the file ``log``.
    """

    def __init__(self, db: str, token: str, log: Path, *extra: str, port: int = 0) -> None:
        self.port = port or free_port()  # a port given: a twin restarted where it was
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "TWINSCHED_TWIN_TOKEN": token}
        args = ["serve", "--port", str(self.port), "--db", db, "--log-level", "warning", *extra]
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-c", START, *args], env=env, stdout=self._log, stderr=self._log
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Poll ``/healthz`` until it answers 200: every 0.05 s, asking only once the port
        takes connections (a refused socket costs microseconds; a new HTTP client tens of
        milliseconds of CPU, taken from the starting process on a loaded machine)."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=1.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"twin exited with {self.process.returncode}")
                if _listening(self.port) and _holds(self.process.pid, self.port):
                    try:
                        if client.get(f"{self.url}/healthz").status_code == 200:
                            return
                    except httpx.HTTPError:
                        pass
                time.sleep(0.05)
        raise TimeoutError("twin did not become ready")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._log.close()

    def stop(self) -> None:
        """SIGTERM and wait (SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


@contextlib.contextmanager
def running_twin(folder: Path, token: str, *extra: str) -> Iterator[TwinProcess]:
    """A twin on a fresh SQLite history in ``folder``, ready, stopped on exit. A twin that
    exits before it is ready (its port taken by another process meanwhile) is started again
    on another port, at most ``STARTS`` times."""
    for attempt in range(1, STARTS + 1):
        db, log = f"sqlite:///{folder / 'twin.db'}", folder / "twin.log"
        process = TwinProcess(db, token, log, *extra)
        try:
            process.wait_ready()
            break
        except RuntimeError:  # exited: its port was taken (the log says why)
            process.stop()
            if attempt == STARTS:
                raise
    try:
        yield process
    finally:
        process.stop()
