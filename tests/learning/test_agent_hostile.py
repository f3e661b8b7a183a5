"""The probe's hostile agent files (issue 31, class 7): ``agent check`` refuses each one as
``agent run`` does, with the same bounded message, fast (the limits of actuations:
test_agent_limits.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.learning.agent_fuzzing import ENV, Outcome, error_text, invoke

TWIN = '[twin]\nurl = "http://127.0.0.1:9"\n'
AGENT = """
[[agents]]
name = "a"
service = {{ nodepool = "edge" }}
rule = {{ kind = "target-tracking", per_instance = 10{rule} }}
trigger = {{ {trigger} }}
"""


def agent_file(trigger: str = "every_s = 1", rule: str = "", twin: str = TWIN) -> str:
    return twin + AGENT.format(trigger=trigger, rule=rule)


HOSTILE = {
    "every_s 1e-9": (
        agent_file("every_s = 1e-9"),
        "every_s: Input should be greater than or equal to 0.1",
    ),
    "start inf": (
        agent_file("every_s = 10, start = inf"),
        "start: Input should be a finite number",
    ),
    "start 1e300": (
        agent_file("every_s = 10, start = 1e300"),
        "start: Input should be less than or equal to 4102444800",
    ),
    "31 February": (agent_file('cron = "0 0 31 2 *"'), "cron '0 0 31 2 *' never fires"),
    "30 February": (agent_file('cron = "0 12 30 feb *"'), "never fires"),
    "31 April": (agent_file('cron = "0 0 31 4 *"'), "never fires"),
    "URL with a newline": (
        agent_file(twin='[twin]\nurl = "http://127.0.0.1:9\\n"\n'),
        "twin.url: Value error, 'http://127.0.0.1:9\\n' has a space, a control",
    ),
    "URL port 99999": (
        agent_file(twin='[twin]\nurl = "http://127.0.0.1:99999"\n'),
        "a port is 1-65535",
    ),
    "rule above the actuator": (
        agent_file(rule=", max_replicas = 500"),
        "rule.max_replicas 500 > actuator.max_replicas 100",
    ),
    "placement: a label key with a space": (
        agent_file(rule=', placement = { node_selector = { "bad key" = "x" } }'),
        "node_selector.'bad key' (the key): Value error, 'bad key' is not a label key",
    ),
    "placement: a label value with a newline": (
        agent_file(rule=', placement = { node_selector = { zone = "a\\nb" } }'),
        "rule.placement.node_selector.zone: Value error, 'a\\nb' is not a label value",
    ),
    "placement: a 5,000-character tier": (
        agent_file(rule=f', placement = {{ tier = "{"x" * 5000}" }}'),
        "rule.placement.tier: String should have at most 63 characters",
    ),
    "placement: 40 labels": (
        agent_file(
            rule=", placement = { node_selector = { "
            + ", ".join(f'k{i} = "v"' for i in range(40))
            + " } }"
        ),
        "rule.placement.node_selector: Dictionary should have at most 32 items",
    ),
    "placement: empty": (
        agent_file(rule=", placement = {}"),
        "rule.placement: Value error, a placement needs node_selector, tier or nodepool",
    ),
    "placement: two tiers": (
        agent_file(rule=', placement = { tier = "edge", node_selector = { tier = "cloud" } }'),
        "tier 'edge' and node_selector's tier 'cloud' differ",
    ),
    "placement: another nodepool than the service's": (
        agent_file(rule=', placement = { nodepool = "cloud" }'),
        "rule.placement.nodepool 'cloud' is not the service's nodepool 'edge'",
    ),
    "placement rule above the actuator": (
        agent_file().replace(
            'kind = "target-tracking", per_instance = 10',
            'kind = "placement", replicas = 101, placement = { tier = "edge" }',
        ),
        "rule.replicas 101 > actuator.max_replicas 100",
    ),
    "deep nesting": (
        "x = " + "[" * 5000 + "]" * 5000 + "\n",
        "line 1: nested deeper than 8 levels, the limit",
    ),
    "deep inline tables": (
        "x = " + "{a = " * 900 + "1" + "}" * 900 + "\n",
        "nested deeper than 8 levels",
    ),
}


def both(path: Path) -> tuple[Outcome, Outcome]:
    check = invoke(["agent", "check", str(path)])
    run = invoke(["agent", "run", str(path), "--port", "0", "--duration", "0.3"])
    return check, run


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_check_and_run_refuse_the_same_file_with_the_same_message(
    name: str, tmp_path: Path
) -> None:
    text, expected = HOSTILE[name]
    path = tmp_path / "agent.toml"
    path.write_text(text)
    check, run = both(path)
    assert (check.code, check.crashed, run.code, run.crashed) == (2, False, 2, False), (check, run)
    assert expected in check.text, check.text
    assert error_text(check) == error_text(run)


def test_a_huge_value_is_refused_quickly_quoting_a_bounded_excerpt(tmp_path: Path) -> None:
    huge, over = tmp_path / "huge.toml", tmp_path / "over.toml"
    huge.write_text(agent_file(twin=f'[twin]\nurl = "http://{"h" * 1_000_000}"\n'))
    over.write_text(agent_file(twin=f'[twin]\nurl = "http://{"h" * 50_000_000}"\n'))
    for path, expected in ((huge, "twin.url: String should have at most 2048 characters"),
                           (over, "larger than 1,048,576 bytes, the limit")):  # fmt: skip
        start = time.monotonic()
        check, run = both(path)
        assert time.monotonic() - start < 5.0
        assert check.code == run.code == 2 and expected in check.text, check.text
        assert error_text(check) == error_text(run) and len(check.text) < 400


def test_brackets_in_strings_and_comments_are_not_nesting(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    text = agent_file().replace('nodepool = "edge"', 'selector = { app = "[[[[[[[[[{{{{{{{{{" }')
    path.write_text(text + "# [[[[[[[[[[[[[[[[[[[[\n")
    check, run = both(path)
    assert (check.code, run.code) == (0, 0), (check, run)


def test_an_accepted_file_runs_for_its_whole_duration(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(agent_file("every_s = 10, start = 4102444800"))  # first firing in 2100
    assert invoke(["agent", "check", str(path)]).code == 0
    start = time.monotonic()
    run = invoke(["agent", "run", str(path), "--port", "0", "--duration", "1.5"])
    assert run.code == 0 and time.monotonic() - start >= 1.5, run  # not at once: it serves


def test_the_token_is_checked_and_never_quoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(agent_file())
    monkeypatch.setitem(ENV, "TWINSCHED_TWIN_TOKEN", "secret\nvalue")
    check, run = both(path)
    assert check.code == run.code == 2 and "printable ASCII" in check.text
    assert "secret" not in check.text + run.text
