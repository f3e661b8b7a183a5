"""The extender request reader: a repeated ``NodeNames`` list is recognised by its bytes and
handed out as the same list, and no body is read differently from a full decode."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from tests.serve.test_protocol import AUTH, NAMES, NODES, TOKEN, pod
from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names, ObjectError
from twinsched.serve.protocol import ExtenderArgs
from twinsched.serve.wire import Reader

POD = json.dumps(pod("w", cpu="1"), separators=(",", ":"))
LIST = b'["a","b"]'
JSON = {"content-type": "application/json"}
GO = (",", ":")  # encoding/json writes compact JSON


def test_a_repeated_list_is_the_same_object() -> None:
    reader = Reader()
    names = [f"node-{k}" for k in range(500)]
    first = reader.read(encode({"Pod": json.loads(POD), "Nodes": None, "NodeNames": names}, GO))
    again = reader.read(encode({"Pod": pod("other"), "Nodes": None, "NodeNames": names}, GO))
    assert first.node_names == names
    assert again.node_names is first.node_names  # not decoded again
    assert again.pod.metadata.name == "other"
    kept = orjson.dumps(names[:7])  # e.g. what a filter answered
    reader.keep(kept, names[:7])
    later = reader.read(b'{"Pod":' + POD.encode() + b',"NodeNames":' + kept + b"}")
    assert later.node_names is not None and later.node_names == names[:7]
    assert later.node_names is not first.node_names


@pytest.mark.parametrize(
    "body",
    [
        '{"Pod":POD,"NodeNames":["a","b"]}',
        '{"Pod":POD,"Nodes":null,"NodeNames":["a","b"]}',
        '{"Pod":POD,"NodeNames": ["a","b"] \n}\n',
        '{"Pod":POD,"NodeNames":["a","b"],"x":1}',  # more after the list
        '{"Pod":POD,"NodeNames":["a","b"],"NodeNames":["c"]}',  # the last one counts
        '{"NodeNames":["a","b"],"Pod":POD,"NodeNames":["c"]}',
        '{"Pod":POD,"nodenames":["c"],"NodeNames":["a","b"]}',  # case-folded duplicates
        '{"Pod":POD,"NodeNames":["c"],"node_names":["a","b"]}',
        '{"Pod":POD,"x\\"NodeNames":["a","b"]}',  # a key that ends like it
        '{"Node\\u004eames":null,"Pod":POD,"x\\"NodeNames":["a","b"]}',
        '{"Node\\u004eames":["c"],"Pod":POD,"nodenames":["d"],"NodeNames":["a","b"]}',
        '{"Pod":POD,"x":{"NodeNames":["a","b"]}}',  # nested
        '{"Pod":POD,"x":["NodeNames",["a","b"]]}',
        '{"Pod":{"metadata":{"name":"n","labels":{"NodeNames":"x"}}},"NodeNames":["a","b"]}',
        '{"Pod":{"spec":{"x":{"NodeNames":["a","b"]}},"metadata":{"name":"n"}},"NodeNames":["a","b"]}',
        '{"Pod":POD,"NodeNames":null}',
        '{"Pod":POD,"Nodes":{"items":[]},"NodeNames":null}',
    ],
)
def test_every_body_reads_as_a_full_decode(body: str) -> None:
    raw = body.replace("POD", POD).encode()
    reader = Reader()
    reader.keep(LIST, ["a", "b"])  # the locator's fast path is ready for ["a","b"]
    got = reader.read(raw)
    want = ExtenderArgs.model_validate_json(raw)  # pydantic's own decoding of the whole body
    assert got.model_dump() == want.model_dump()
    assert Reader().read(raw).model_dump() == want.model_dump()  # (and when nothing is kept)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"Pod":POD,"NodeNames":[1,"a"]}', "NodeNames[0]"),
        ('{"Pod":POD,"NodeNames":["a","b",null]}', "NodeNames[2]"),
        ('{"Pod":POD,"NodeNames":{"a":1}}', "NodeNames"),
        ('{"Pod":POD,"NodeNames":["a","b"]', "document"),
        ('{"Pod":POD,"NodeNames":["a","b"]}}', "document"),
        ('{"Pod":POD,"NodeNames":["a","b"],}', "document"),
        ('{"Pod":POD,"NodeNames":["a","b"] x}', "document"),
    ],
)
def test_bad_lists_name_the_field(body: str, field: str) -> None:
    reader = Reader()
    reader.keep(LIST, ["a", "b"])
    with pytest.raises(ObjectError) as caught:
        reader.read(body.replace("POD", POD).encode())
    assert caught.value.field == field


def test_go_encoded_calls_answer_as_spaced_ones() -> None:
    """The same pods through two services, one sent Go's compact bodies (the lists are
    recognised by their bytes), one spaced JSON (decoded in full): the same answers."""
    answers = []
    for separators in (GO, (", ", ": ")):
        service = SyncASGI(create_app(ServiceCluster("fgd", capacity=16), Names(), TOKEN))
        service.post("/nodes", json={"items": NODES}, headers=AUTH)
        out = []
        for k in range(6):
            p = pod(f"s{k}", cpu="2", **({"nvidia.com/gpu": "1"} if k % 2 else {}))
            args = {"Pod": p, "Nodes": None, "NodeNames": NAMES}
            result = service.post("/filter", content=encode(args, separators), headers=JSON).json()
            args["NodeNames"] = result["NodeNames"]
            scores = service.post("/prioritize", content=encode(args, separators), headers=JSON)
            best = max(scores.json(), key=lambda h: h["Score"], default={"Host": ""})["Host"]
            bind = {"PodName": f"s{k}", "PodNamespace": "ns", "PodUID": f"u-s{k}", "Node": best}
            bound = service.post("/bind", json=bind, headers=AUTH).json() if best else None
            out.append((result, scores.json(), bound))
        service.close()
        answers.append(out)
    assert answers[0] == answers[1]
    assert any(bound == {"Error": ""} for _, _, bound in answers[0])  # pods were placed


def encode(body: dict[str, Any], separators: tuple[str, str]) -> bytes:
    return json.dumps(body, separators=separators).encode()
