"""Distillation of the look-ahead into a reranker of FGD's shortlist (``twinsched distil``,
``docs/ai.md``): the teacher's rollout values recorded through an executor
(:mod:`.margins`), the reranker fitted to them (:mod:`.fit`), its gate on the workload mix
(:mod:`.gate`), and the whole recipe run and registered (:mod:`.run`)."""
