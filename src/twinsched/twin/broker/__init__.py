"""Telemetry over a message broker (NATS JetStream or RabbitMQ): publishers, the twin's consumer.

Publishers (the collectors, ``run --twin ... --broker``, the VTE) send batches in the
``PATCH /state`` format, one message per batch, node samples on a subject per node; the
twin's durable consumer applies each message once, in order per publisher stream, and acks
it only after the write is committed (:mod:`twinsched.twin.broker.consumer`). URLs, subjects,
message ids and the ordering rule are pure (:mod:`~twinsched.twin.broker.url`,
:mod:`~twinsched.twin.broker.messages`); the URL's scheme picks the backend
(:func:`~twinsched.twin.broker.loop.connect`): nats-py and aio-pika come with
``twinsched[broker]`` and each is imported only by its backend's module.
"""

from twinsched.extras import install_hint

WHY = "the message broker transport needs nats-py"
WHY_AMQP = "the RabbitMQ (amqp://) transport needs aio-pika"
EXTRA_HINT = install_hint(WHY, "broker")
