"""``twinsched explain RUN POD``: why a stored run's pod went where it went (issue 42).

Mount with ``app.command("explain")(explain.explain_command)``. The first explanation of a
run makes it again once from its spec, with its event log recorded into the cache folder;
later ones rebuild the state of any decision from that log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import DbOpt, int_in, int_opt

if TYPE_CHECKING:
    from twinsched.scheduling.explain import Explanation

RunArg = Annotated[
    int, typer.Argument(help=f"Run id [1..{2**63 - 1}]", parser=int_in(1, 2**63 - 1))
]


def explain_command(
    run: RunArg,
    pod: Annotated[str, typer.Argument(help="Pod name (its first arrival) or #INDEX in the run.")],
    top: Annotated[int, int_opt("Candidates shown.", 1, 100, "--top")] = 5,
    to: Annotated[
        str | None, typer.Option("--to", help="What if the pod had gone to this node instead?")
    ] = None,
    node: Annotated[
        list[str] | None, typer.Option("--node", help="Say why this node passed or not.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the explanation as JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """Explain one decision of a stored run: filters, ranked candidates and their score
    terms, the runner-up and the margin, the tie-break, the fallback, a composite's part."""
    from twinsched.experiments.explain import stored_run_explainer

    with expected_errors():
        explained = stored_run_explainer(run, db).explain(pod, top=top, to=to, named=node or ())
    if as_json:
        import json

        typer.echo(json.dumps(explained.to_dict(), indent=2))
        return
    _print(explained)


def _print(e: Explanation) -> None:
    console = make_console()
    where = f"to {e.chosen_name} (GPUs {list(e.gpus)})" if e.chosen_name else f"nowhere: {e.reason}"
    console.print(
        f"[bold]pod {e.pod_name} (#{e.pod})[/bold] went {where}, by {e.decided_by or '-'}"
    )
    f = e.filters
    removed = ", ".join(f"{n} {r}" for r, n in f.removed.items()) or "none"
    console.print(f"filters: {f.eligible} of {f.nodes} nodes eligible; removed: {removed}")
    for name, verdict in f.named.items():
        console.print(f"  {name}: {verdict}")
    if e.ranking:
        _ranking(console, e)
    for label, text in (("runner-up", _runner(e)), ("tie-break", e.tie_break),
                        ("fallback", e.fallback), ("moved by", e.moved_by)):  # fmt: skip
        if text:
            console.print(f"{label}: {text}")
    for key, value in e.parts.items():
        console.print(f"{key}: {value}")
    if e.counterfactual is not None:
        _what_if(console, e)
    console.print(f"[dim]{e.source}[/dim]")


def _runner(e: Explanation) -> str:
    if e.runner_up is None:
        return ""
    return f"{e.runner_up.name} (total {e.runner_up.total}, margin {e.margin})"


def _ranking(console: Any, e: Explanation) -> None:
    terms = list(dict.fromkeys(t for c in e.ranking for t in c.terms))
    table = Table("", "node", *terms, "total", "tie rank", title=f"ranked by {e.ranking_by}")
    for k, c in enumerate(e.ranking):
        mark = "chosen" if c.node == e.chosen else str(k + 1)
        table.add_row(mark, c.name, *(str(c.terms.get(t, "")) for t in terms), str(c.total),
                      str(c.rank))  # fmt: skip
    console.print(table)


def _what_if(console: Any, e: Explanation) -> None:
    cf = e.counterfactual
    assert cf is not None
    if cf.valid:
        console.print(f"what if {cf.node}: not possible: {cf.valid}")
        return
    table = Table("figure", str(e.chosen_name), cf.node, "change", title=f"what if {cf.node}")
    for key, value in cf.to.items():
        table.add_row(key, str(cf.chosen.get(key, "-")), str(value), str(cf.delta.get(key, "")))
    console.print(table)
