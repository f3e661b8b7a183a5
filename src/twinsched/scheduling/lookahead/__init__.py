"""Look-ahead scheduling: a base policy improved by rollouts on sampled continuations."""
