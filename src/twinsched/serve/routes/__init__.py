"""The scheduler service's routes, one router per resource: the extender verbs
(:mod:`.extender`), node and pod updates (:mod:`.cluster`), probes and metrics (:mod:`.ops`)."""
