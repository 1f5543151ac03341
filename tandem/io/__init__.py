"""Settings and records: strict dataclass configs, config files and overrides, the legacy names, JSONL, metric rows, the run lock."""
