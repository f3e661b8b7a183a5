"""The AI scheduler: node features, a permutation-equivariant policy, training, model registry."""
