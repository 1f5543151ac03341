"""Hugging Face models on torch: loading and pairing them, the device setting, CPU threads."""
