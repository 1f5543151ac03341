"""The rollout contract every backend implements, and token sampling with replayable uniforms."""
