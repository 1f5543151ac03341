"""The writer who sees the solution (RLT's teacher input): its prompt, and what it refuses."""

import pytest

from tandem.rewards import solution_prompt
from tandem.errors import TandemError
from tandem.models.loading import load_tokenizer
from tandem.rewards.partner_config import PartnerRewardConfig

SOLUTION = "Ann starts with 3 apples.\n\nShe buys 2 more: 3 + 2 = 5.\n\nThe answer is \\boxed{5}."


def test_the_writers_turn_starts_with_the_solution_and_an_opened_explanation(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    text = solution_prompt.writer_prompt_text(tok, "Ann has 3 apples and buys 2. How many?", SOLUTION)
    head, turn = text.split("<|im_start|>assistant\n")
    assert solution_prompt.SYSTEM in head and "Ann has 3 apples and buys 2" in head
    assert SOLUTION not in head  # the solution is in the writer's own turn, not the question
    assert turn == solution_prompt.writer_turn_start(SOLUTION)
    assert turn.startswith("<|begin_of_solution|>\n" + SOLUTION + "\n<|end_of_solution|>")
    assert turn.endswith("<|begin_of_explanation|>\n")
    ids = solution_prompt.writer_prompt_ids(tok, "Ann has 3 apples and buys 2. How many?", SOLUTION)
    assert tok.decode(ids) == text


@pytest.mark.parametrize("solution", [None, "", "   \n"])
def test_a_row_without_a_solution_is_refused_naming_it(solution):
    with pytest.raises(TandemError, match=r"^train.jsonl:7: no reference solution, .*writer_sees_solution=false$"):
        solution_prompt.require_solution(solution, "train.jsonl:7")


def test_the_switch_scores_the_solution_it_showed():
    assert PartnerRewardConfig(writer_sees_solution=True, target="solution", weight=0.1).writer_sees_solution
    with pytest.raises(TandemError, match="set partner_reward.target=solution"):
        PartnerRewardConfig(writer_sees_solution=True)


def test_showing_the_solution_needs_the_score_that_reads_it_on_every_trainer():
    # checked once, on the config every trainer (embedded, HF TRL, verl) builds its partner block from
    with pytest.raises(TandemError, match=r"writer_sees_solution=true .*set partner_reward.weight > 0"):
        PartnerRewardConfig(writer_sees_solution=True, target="solution", weight=0.0)
