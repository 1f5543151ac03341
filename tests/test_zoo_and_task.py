"""The tiny model zoo and the synthetic task."""

import re

import pytest

from tandem.errors import TandemError
from tandem.grading.grader import last_boxed
from tandem_app.task import TaskConfig, generate_problems
from tandem_app.zoo import build_tiny


def test_zoo_models_of_different_seeds_share_one_vocabulary(tiny_dir, tiny_dir_seed1):
    from transformers import AutoTokenizer

    a, b = AutoTokenizer.from_pretrained(str(tiny_dir)), AutoTokenizer.from_pretrained(str(tiny_dir_seed1))
    assert a.get_vocab() == b.get_vocab()


def test_zoo_model_is_a_qwen3_of_one_to_five_million_parameters(tiny_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir))
    n = sum(p.numel() for p in model.parameters())
    assert model.config.model_type == "qwen3" and 0.5e6 < n < 5e6


def test_zoo_tokenizer_has_a_chat_template_and_word_step_boundaries(tiny_dir):
    from transformers import AutoTokenizer

    from tandem.process.boundaries import boundary_ids

    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n")
    assert boundary_ids(tok, "word") and boundary_ids(tok, "step")


def test_zoo_weights_differ_by_seed(tiny_dir, tiny_dir_seed1):
    from transformers import AutoModelForCausalLM

    a = AutoModelForCausalLM.from_pretrained(str(tiny_dir)).lm_head.weight
    b = AutoModelForCausalLM.from_pretrained(str(tiny_dir_seed1)).lm_head.weight
    assert not (a == b).all()


def test_build_tiny_refuses_a_non_empty_directory(tiny_dir):
    with pytest.raises(TandemError, match="not empty"):
        build_tiny(tiny_dir)


def test_task_generation_is_deterministic_by_seed():
    assert generate_problems("train", 20, seed=3) == generate_problems("train", 20, seed=3)
    assert generate_problems("train", 20, seed=3) != generate_problems("train", 20, seed=4)


def test_task_splits_are_disjoint():
    train = {p.prompt for p in generate_problems("train", 2000)}
    test = {p.prompt for p in generate_problems("test", 200)}
    assert not train & test


def test_worked_solutions_are_blank_line_steps_ending_in_the_boxed_answer():
    for p in generate_problems("validation", 50, cfg=TaskConfig(min_steps=3, max_steps=3)):
        steps = p.solution.split("\n\n")
        assert len(steps) == 5 and last_boxed(steps[-1]) == p.answer


def test_worked_solutions_are_arithmetically_correct():
    for p in generate_problems("train", 200):
        for a, op, b, c in re.findall(r"(\d+) ([-+*]) (\d+) = (\d+)", p.solution):
            assert eval(f"{a}{op}{b}") == int(c)


def test_invalid_difficulty_knobs_are_refused():
    with pytest.raises(TandemError):
        TaskConfig(min_steps=3, max_steps=2)
