"""Telemetry over a message broker (NATS JetStream): publishers, the twin's consumer.

Publishers (the collectors, ``run --twin ... --broker``, the VTE) send batches in the
``PATCH /state`` format, one message per batch, node samples on a subject per node; the
twin's durable consumer applies each message once, in order per publisher stream, and acks
it only after the write is committed (:mod:`twinsched.twin.broker.consumer`). URLs, subjects,
message ids and the ordering rule are pure (:mod:`~twinsched.twin.broker.url`,
:mod:`~twinsched.twin.broker.messages`); nats-py comes with ``twinsched[broker]`` and is
imported only by the modules that connect.
"""

from twinsched.extras import install_hint

WHY = "the message broker transport needs nats-py"
EXTRA_HINT = install_hint(WHY, "broker")
