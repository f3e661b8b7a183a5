"""``twinsched apps ...``: applications on a twin (``docs/apps.md``).

``register``, ``update`` (rolling), ``scale``, ``deploy``, ``terminate`` and ``rollback``
change an application through the twin's ``/api/v1/apps`` (its write token from
``--token`` or ``$TWINSCHED_TWIN_TOKEN``; ``--author`` names who, unless the token does);
``list``, ``show``, ``history``, ``pods`` and ``manifests`` read it. ``render`` writes the
Kubernetes manifests of a spec file without a twin. A refused change prints every problem
the twin named (a deploy that does not fit: each pod and why) and exits with status 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from twinsched.cli.console import error_exit, expected_errors, make_console
from twinsched.cli.options import int_opt

if TYPE_CHECKING:
    from twinsched.twin.apps.client import AppsClient

app = typer.Typer(help="Applications on the twin: register, deploy, update, scale, roll back.",
                  no_args_is_help=True, pretty_exceptions_enable=False)  # fmt: skip
URL_ENV, TOKEN_ENV = "TWINSCHED_TWIN_URL", "TWINSCHED_TWIN_TOKEN"
TwinOpt = Annotated[str, typer.Option("--twin", help=f"The twin's URL (default: ${URL_ENV}).",
                                      envvar=URL_ENV)]  # fmt: skip
TokenOpt = Annotated[str | None, typer.Option(help=f"Write token (default: ${TOKEN_ENV}).")]
AuthorOpt = Annotated[str | None, typer.Option(help="Who makes the change (kept in history).")]
NameArg = Annotated[str, typer.Argument(help="the application's name")]
NsOpt = Annotated[str, typer.Option("--namespace", "-n", help="Its namespace.")]
SpecArg = Annotated[Path, typer.Argument(help="the spec (JSON)")]
DEFAULT_URL = "http://127.0.0.1:8181"


def _client(twin: str, token: str | None) -> AppsClient:
    from twinsched.twin.apps.client import AppsClient

    return AppsClient(twin, token or os.environ.get(TOKEN_ENV) or None)


def _spec(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise error_exit(exc, f"{path}: ") from None
    except ValueError as exc:
        raise error_exit(exc, f"{path}: not JSON: ") from None


def _run(twin: str, token: str | None, call: Any) -> Any:
    """``call(client)``; a refusal prints each problem and exits with status 2."""
    from twinsched.twin.apps.client import AppsClientError

    with _client(twin, token) as client:
        try:
            return call(client)
        except AppsClientError as exc:
            err = make_console(stderr=True)
            for problem in exc.errors[1:]:
                err.print(f"  {problem['path']}: {problem['problem']}", markup=False)
            raise error_exit(exc) from None


def _changed(answer: dict[str, Any]) -> None:
    rev, summary = answer["revision"], answer["app"]
    make_console().print(
        f"{summary['namespace']}/{summary['name']} revision {rev['revision']} ({rev['action']} "
        f"by {rev['author']}): {rev['detail']}; {summary['status']}, {summary['running']}/"
        f"{summary['wanted']} running", markup=False, highlight=False,
    )  # fmt: skip


@app.command("register")
def register(spec: SpecArg, twin: TwinOpt = DEFAULT_URL, token: TokenOpt = None,
             author: AuthorOpt = None) -> None:  # fmt: skip
    """Register the application of SPEC (revision 1; nothing runs until deploy)."""
    _changed(_run(twin, token, lambda c: c.register(_spec(spec), author)))


@app.command("update")
def update(spec: SpecArg, twin: TwinOpt = DEFAULT_URL, token: TokenOpt = None,
           author: AuthorOpt = None) -> None:  # fmt: skip
    """Replace the application's spec with SPEC: a rolling update of the changed templates."""
    data = _spec(spec)
    ns, name = str(data.get("namespace", "default")), str(data.get("name", ""))
    _changed(_run(twin, token, lambda c: c.update(ns, name, data, author)))


def _verb(verb: str, doc: str) -> None:
    def command(name: NameArg, namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL,
                token: TokenOpt = None, author: AuthorOpt = None) -> None:  # fmt: skip
        _changed(_run(twin, token, lambda c: c.action(namespace, name, verb, author)))

    command.__doc__ = doc
    app.command(verb)(command)


_verb("deploy", "Deploy NAME: its pods enter the twin as Pending, the controller places them.")
_verb("terminate", "Terminate NAME: every pod of it leaves the twin.")


@app.command("scale")
def scale(name: NameArg, replicas: Annotated[list[str], typer.Argument(help="TEMPLATE=N ...")],
          namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL, token: TokenOpt = None,
          author: AuthorOpt = None) -> None:  # fmt: skip
    """Set the replicas of templates of NAME, e.g. ``api=5 db=1``."""
    wanted: dict[str, int] = {}
    for item in replicas:
        template, _, count = item.partition("=")
        if not template or not count.lstrip("-").isdigit():
            raise typer.BadParameter(f"expected TEMPLATE=N, got {item!r}")
        wanted[template] = int(count)
    body = {"replicas": wanted}
    _changed(_run(twin, token, lambda c: c.action(namespace, name, "scale", author, body)))


RevisionOpt = Annotated[int | None, int_opt("The revision to go back to.", 1, 2**31 - 1)]


@app.command("rollback")
def rollback(name: NameArg, to: RevisionOpt = None,
             namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL, token: TokenOpt = None,
             author: AuthorOpt = None) -> None:  # fmt: skip
    """Go back to revision --to (default: the newest earlier one with another spec)."""
    body = {"revision": to}
    _changed(_run(twin, token, lambda c: c.action(namespace, name, "rollback", author, body)))


@app.command("list")
def list_apps(twin: TwinOpt = DEFAULT_URL) -> None:
    """The applications with their status."""
    from rich.table import Table

    table = Table("namespace", "name", "revision", "status", "running", "wanted")
    for a in _run(twin, None, lambda c: c.apps()):
        table.add_row(a["namespace"], a["name"], str(a["revision"]), a["status"],
                      str(a["running"]), str(a["wanted"]))  # fmt: skip
    make_console().print(table)


@app.command("history")
def history(name: NameArg, namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL) -> None:
    """Every revision of NAME: number, action, author, time, what changed."""
    from datetime import UTC, datetime

    from rich.table import Table

    table = Table("revision", "action", "author", "at (UTC)", "what")
    for r in _run(twin, None, lambda c: c.read(namespace, name, "revisions")):
        at = datetime.fromtimestamp(r["at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(str(r["revision"]), r["action"], r["author"], at, r["detail"])
    make_console().print(table)


@app.command("pods")
def pods(name: NameArg, namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL) -> None:
    """The pods of NAME in the twin, with their last event."""
    from rich.table import Table

    table = Table("pod", "phase", "node", "current", "last event")
    for p in _run(twin, None, lambda c: c.read(namespace, name, "pods")):
        last = p["events"][-1] if p["events"] else None
        event = f"{last['kind']} (v{last['version']})" if last else ""
        table.add_row(p["pod"], p["phase"], p["node"] or "", "yes" if p["current"] else "no", event)
    make_console().print(table)


@app.command("show")
def show(name: NameArg, namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL) -> None:
    """NAME's status and spec, as JSON."""
    typer.echo(json.dumps(_run(twin, None, lambda c: c.read(namespace, name)), indent=2))


OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Write here (default: stdout).")]


def _write(items: list[dict[str, Any]], out: Path | None) -> None:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)
    if out is None:
        typer.echo(text)
    else:
        with expected_errors():
            out.write_text(text + "\n")
        make_console(stderr=True).print(f"{len(items)} manifests -> {out}", markup=False)


@app.command("manifests")
def manifests(name: NameArg, namespace: NsOpt = "default", twin: TwinOpt = DEFAULT_URL,
              out: OutOpt = None) -> None:  # fmt: skip
    """NAME's Kubernetes manifests (a v1 List), for the twinsched scheduler profile."""
    _write(_run(twin, None, lambda c: c.read(namespace, name, "manifests")), out)


EXAMPLE: dict[str, Any] = {
    "name": "shop",
    "namespace": "default",
    "templates": [
        {"name": "db", "replicas": 1, "tier": "cloud", "image": "postgres:17",
         "requests": {"cpu_milli": 500, "memory_mib": 4096}},
        {"name": "api", "replicas": 3, "requests": {"cpu_milli": 1000, "memory_mib": 512},
         "depends_on": ["db"]},
        {"name": "web", "replicas": 2, "tier": "edge", "depends_on": ["api"],
         "requests": {"cpu_milli": 500, "memory_mib": 512}},
    ],
    "strategy": {"max_unavailable": 1},
}  # fmt: skip


@app.command("example")
def example(out: OutOpt = None) -> None:
    """An application spec of three templates (db, api, web), as JSON."""
    text = json.dumps(EXAMPLE, indent=2)
    if out is None:
        typer.echo(text)
        return
    with expected_errors():
        out.write_text(text + "\n")


@app.command("render")
def render(spec: SpecArg, out: OutOpt = None) -> None:
    """The Kubernetes manifests of SPEC, without a twin (checked like a registered spec)."""
    from twinsched.twin.apps.kube import manifests as render_manifests
    from twinsched.twin.apps.spec import SpecError, parse_spec

    try:
        parsed = parse_spec(_spec(spec))
    except SpecError as exc:
        raise error_exit(exc, f"{spec}: ") from None
    _write(render_manifests(parsed, 1), out)
