"""The training flow over services (``twinsched flow run``): the VTE feeds a twin, a
controller over the twin fans each pending pod out to its member schedulers and asks the
aggregator service which answer to bind; the aggregator's evaluator follows the twin's
changes, scores each bind the twin accepted against the single-pod optimum and hands the
reward to its learner (a Thompson-sampling bandit). ``docs/twin.md``, "The training flow
over services"."""
