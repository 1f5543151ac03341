"""The reference tandem engine: batched co-generation by a senior and a junior in PyTorch."""
