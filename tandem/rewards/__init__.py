"""Rewards beside the verifier: the partner score (RLT), the transfer reward (RLTR), the writer who sees the solution, the leak rule."""
