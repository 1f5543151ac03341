#!/usr/bin/env bash
# Install the project into ./.venv, then run the embedded Tandem RL demo end to end on CPU:
# tiny model + tokenizer -> SFT base -> TRL and GRPO training -> solo/handoff eval -> report.
# Extra arguments go to `tandem-rlvr demo` (e.g. --quick, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/_install.sh "[eval]"
exec .venv/bin/tandem-rlvr demo "$@"
