"""The AI scheduler (inference only): node features, a permutation-equivariant policy, tie
rules, the scheduler, serving and the model store. Training lives in :mod:`twinsched.training`.
"""
