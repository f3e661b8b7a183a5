"""The controller over the twin (``twinsched scheduler run --twin URL``): a replica of the
twin that follows its changes, the one ``SchedulerController`` deciding on it, binds written
back in batches, and ``/healthz`` + ``/metrics`` (``twin/controller/service.py``)."""
