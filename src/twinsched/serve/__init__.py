"""The scheduler service: any registered scheduler behind the Kubernetes extender protocol.

``kube`` and ``protocol`` are the wire types, ``convert`` reads ``v1.Node``/``v1.Pod``,
``table`` encodes them as the cluster model, ``cluster`` keeps the state and drives the
scheduler controller, ``journal`` persists it, ``app`` is the FastAPI service, ``driver`` a
client that behaves like kube-scheduler, ``objects`` writes a scenario as Kubernetes objects.
"""
