"""Broker URLs, subjects, message ids and the ordering rule: pure, no server."""

from __future__ import annotations

import pytest

from twinsched.store.history import MessageId
from twinsched.twin.broker.messages import (
    MAX_SEQ,
    MAX_SOURCE_LENGTH,
    SEQ_WINDOW,
    MessageError,
    headers_of,
    message_id,
    order,
    samples_subject,
    split_by_node,
    subject_token,
)
from twinsched.twin.broker.url import BrokerConfigError, parse_broker_url


def test_urls_default_port_and_stream_and_hide_the_password() -> None:
    url = parse_broker_url("nats://127.0.0.1")
    assert (url.host, url.port, url.stream, url.prefix) == (
        "127.0.0.1",
        4222,
        "TWINSCHED",
        "twinsched",
    )
    secret = parse_broker_url("nats://me:pa%40ss@broker:4333/EDGE_1")
    assert secret.server == "nats://me:pa@ss@broker:4333"
    assert str(secret) == "nats://me@broker:4333/EDGE_1"


def test_amqp_urls_pick_rabbitmq_with_its_port() -> None:
    url = parse_broker_url("amqp://guest:guest@127.0.0.1:5672/")
    assert (url.scheme, url.host, url.port, url.stream, url.prefix) == (
        "amqp",
        "127.0.0.1",
        5672,
        "TWINSCHED",
        "twinsched",
    )
    assert parse_broker_url("amqp://rabbit").port == 5672
    secret = parse_broker_url("amqp://me:s%2Fecret@rabbit:5673/EDGE")
    assert (secret.user, secret.password) == ("me", "s/ecret")
    assert str(secret) == "amqp://me@rabbit:5673/EDGE"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("http://127.0.0.1:4222", "scheme 'http'"),
        ("127.0.0.1:4222", "expected nats://host[:port][/STREAM]"),
        ("nats://:4222", "no host"),
        ("nats://h:99999", "port"),
        ("nats://h:0", "port 0 is not in 1-65535"),
        ("nats://h/a.b", "stream 'a.b' must be"),
        ("nats://h/s?x=1", "no query"),
        ("mqtt://h", "expected nats://host[:port][/STREAM] or amqp://"),
        ("amqp://h:70000", "port"),
    ],
)
def test_bad_urls_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(BrokerConfigError, match=says.replace("[", r"\[").replace("?", r"\?")):
        parse_broker_url(text)


def test_subject_tokens_keep_distinct_names_distinct() -> None:
    names = ["n1", "n.1", "n 1", "n*1", "n>1", "n%2E1", "", "ü"]
    tokens = [subject_token(n) for n in names]
    assert len(set(tokens)) == len(names)
    assert all(t and not set(t) & set(". *>") for t in tokens)
    assert samples_subject("twinsched", "edge.n1") == "twinsched.samples.edge%2En1"


def test_ids_round_trip_through_headers() -> None:
    message = MessageId("pub/n1", 7)
    headers = headers_of(message)
    assert headers["Nats-Msg-Id"] == "pub/n1#7"
    assert message_id(headers) == message
    for bad in (
        None,
        {},
        {"Twinsched-Source": "s"},
        {"Twinsched-Source": "s", "Twinsched-Seq": "0"},
    ):
        with pytest.raises(MessageError):
            message_id(bad)


@pytest.mark.parametrize(
    ("source", "seq", "says"),
    [
        ("s", str(2**63), r"\[1, 9223372036854775807\]"),
        ("s", str(10**30), "must be an integer"),
        ("s", "-1", "must be an integer"),
        ("s", "1e3", "must be an integer"),
        ("s", "1_000", "must be an integer"),
        ("s", "0x10", "must be an integer"),
        ("s", "", "must be an integer"),
        ("n\x00ul", "1", "no control"),
        ("bidi\u202e", "1", "no control"),
        ("zero\u200bwidth", "1", "no control"),
        ("nel\x85", "1", "no control"),
        ("x" * (MAX_SOURCE_LENGTH + 1), "1", f"1 to {MAX_SOURCE_LENGTH} characters"),
    ],
)
def test_ids_out_of_range_are_refused_with_a_bounded_excerpt(
    source: str, seq: str, says: str
) -> None:
    with pytest.raises(MessageError, match=says) as caught:
        message_id({"Twinsched-Source": source, "Twinsched-Seq": seq})
    assert len(str(caught.value)) < 300  # a 513-character source is not echoed


def test_the_highest_sequence_and_longest_source_are_ids() -> None:
    longest = "é" * MAX_SOURCE_LENGTH
    assert message_id(headers_of(MessageId(longest, MAX_SEQ))) == MessageId(longest, MAX_SEQ)


def test_order_refuses_numbers_out_of_the_window() -> None:
    assert order(3, 3 + SEQ_WINDOW, 1, 5) == "wait"  # a gap a publisher can have
    assert order(3, 4 + SEQ_WINDOW, 99, 5) == "ahead"  # forged: never applied, even later
    assert order(3, 10**9, 1, 5, window=8) == "ahead"
    assert order(100, 50, 1, 5, window=8) == "stale"  # numbering restarted under that name
    assert order(100, 92, 1, 5, window=8) == "duplicate"
    assert order(None, 10**9, 5, 5) == "apply"  # a new stream starts where it starts


def test_order_applies_the_next_drops_the_old_and_waits_for_the_missing() -> None:
    assert order(None, 1, 1, 5) == "apply"
    assert order(3, 4, 1, 5) == "apply"
    assert order(3, 3, 1, 5) == "duplicate"
    assert order(3, 1, 9, 5) == "duplicate"
    assert order(3, 5, 1, 5) == "wait"
    assert order(None, 2, 4, 5) == "wait"
    assert order(3, 5, 5, 5) == "apply"  # patience spent: the gap is given up on


def test_split_by_node_keeps_sample_times_and_refuses_other_deltas() -> None:
    body = {
        "time": 9.0,
        "deltas": [
            {"op": "metrics", "node": "a", "values": {"x": 1.0}},
            {"op": "metrics", "node": "b", "time": 8.0, "values": {"x": 2.0}},
            {"op": "metrics", "node": "a", "time": 8.5, "values": {"y": 3.0}},
        ],
    }
    split = dict(split_by_node(body))
    assert [d["time"] for d in split["a"]["deltas"]] == [9.0, 8.5]
    assert split["b"] == {"time": 9.0, "deltas": [body["deltas"][1]]}
    with pytest.raises(MessageError, match=r"deltas\[0\]"):
        split_by_node({"time": 1.0, "deltas": [{"op": "node", "node": "a", "status": "Ready"}]})
