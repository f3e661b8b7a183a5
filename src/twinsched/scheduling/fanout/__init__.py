"""Fan-out: several schedulers answer for one pod and one answer binds. The ensemble
(:mod:`.ensemble`, ``aggregate:A|B``) asks every member; the evaluator (:mod:`.evaluator`)
scores each answer; the aggregator (:mod:`.aggregator`) weighs the votes; the bandit
(:mod:`.bandit`, ``bandit:A|B``) learns which member to ask per pod kind from the
evaluator's rewards."""
