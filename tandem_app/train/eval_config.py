"""`EvalConfig`: how the embedded pipeline evaluates seniors on the toy task's held-out problems.

Apart from the evaluation (`tandem_app/train/evaluate.py`) so that reading a config that holds
one (the demo's, distill's defaults, a command's `--help`) imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.rollout.sampling import SamplingConfig
from tandem_eval.core.sampling import eval_sampling, sampling_section


@dataclass
class EvalConfig:
    """How seniors are evaluated on held-out problems: the eval suite's sampling
    (`tandem_eval.core.sampling.eval_sampling`), with a budget and seed for the synthetic task."""

    n_problems: int = 200
    n_samples: int = 4  # sampled responses per problem; accuracy = their mean (pass@1)
    # The eval suite's temperature, top-p and top-k; room for either notation (the task's
    # solutions need < 100 tokens).
    sampling: SamplingConfig = sampling_section(lambda: eval_sampling(max_new_tokens=128, seed=12345))
    batch_size: int = 256  # rows per engine call
    n_examples: int = 3  # problems whose first responses are kept for the report
