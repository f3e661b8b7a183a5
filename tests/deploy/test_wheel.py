"""The wheel, not the source tree: `python -m build` makes it, a fresh virtualenv (no system
site packages) installs it with `pip install '<wheel>[serve]'` from the package index, and
`twinsched scheduler serve` from that virtualenv answers /healthz. About 25-40 s, most of it
pip installing numpy, pandas, matplotlib and FastAPI (measured in deploy/README.md)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

from tests.deploy.files import DEPLOY
from twinsched.traces.datadir import data_root

ROOT = DEPLOY.parent
UI_FILES = ("index.html", "app.js", "style.css")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def clean_env() -> dict[str, str]:
    """The environment less what would let the virtualenv see the source tree."""
    return {
        k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
    }


def run(args: list[str], cwd: Path, timeout: float) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args[:4]}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def healthz(url: str, server: subprocess.Popen[bytes], deadline: float) -> bytes:
    """The body of ``url`` once it answers; fails at once when the server exits."""
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                body: bytes = answer.read()
                return body
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_the_wheel_installs_with_the_serve_extra_and_serves(tmp_path: Path) -> None:
    data = data_root().resolve()
    if not (data / "alibaba_gpu_v2023").is_dir():
        data = (ROOT.parent / "shared" / "data").resolve()
    run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(ROOT)],
        tmp_path,
        300,
    )
    (wheel,) = (tmp_path / "dist").glob("twinsched-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:  # the dashboard ships as package data
        packaged = set(archive.namelist())
    assert {f"twinsched/twin/api/ui/{name}" for name in UI_FILES} <= packaged
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env)
    python = env / "bin" / "python"
    # --no-compile: no .pyc for all of numpy, pandas, matplotlib... up front (half of the
    # install's CPU, 49 -> 25 s measured); what the commands below import compiles as it loads
    run([str(python), "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[serve]"],
        tmp_path, 600)  # fmt: skip
    where = run(
        [str(python), "-c", "import twinsched, sys; print(twinsched.__file__)"], tmp_path, 60
    )
    assert Path(where.strip()).is_relative_to(env)  # the installed wheel, not src/
    # [serve] alone: the database libraries of [store] and [twin] are not there
    missing = run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('sqlalchemy'))"],
        tmp_path,
        60,
    )
    assert missing.strip() == "None"
    # the shipped models' folder is package data: in the wheel, read by the model catalog
    shipped = "from twinsched.scheduling.ai.shipped import SHIPPED_ROOT as r; "
    shipped += "print((r / 'README.md').is_file(), r.is_relative_to(r'" + str(env) + "'))"
    assert run([str(python), "-c", shipped], tmp_path, 60).split() == ["True", "True"]
    # the shipped model is in the wheel and listed right after install, with no user models
    for name in ("openb-gates", "openb-rerank"):
        folder = f"twinsched/scheduling/ai/shipped_models/{name}/"
        assert any(n.startswith(folder) for n in packaged), name
    models = tmp_path / "no-user-models"
    listed = run([str(env / "bin" / "twinsched"), "models", "list", "--models-dir", str(models)],
                 tmp_path, 60)  # fmt: skip
    assert "openb-gates" in listed and "openb-rerank" in listed and "shipped" in listed, listed
    port = free_port()
    log = tmp_path / "serve.log"
    command = [
        str(env / "bin" / "twinsched"),
        "scheduler",
        "serve",
        "--scheduler",
        "ai:openb-rerank",  # the shipped default model serves right after install
        "--port",
        str(port),
        "--data",
        str(data),
        "--insecure-local",  # (loopback: no token needed)
    ]
    with (
        log.open("w") as out,
        subprocess.Popen(command, cwd=tmp_path, env=clean_env(), stdout=out, stderr=out) as server,
    ):
        try:
            body = healthz(f"http://127.0.0.1:{port}/healthz", server, time.monotonic() + 60)
            # Swagger UI's script comes from the installed wheels, not from a CDN
            script = healthz(f"http://127.0.0.1:{port}/docs-assets/swagger-ui-bundle.js",
                             server, time.monotonic() + 10)  # fmt: skip
        except OSError:
            raise AssertionError(f"no /healthz: {log.read_text()[-2000:]}") from None
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert b'"ok"' in body
    assert len(script) > 100_000
