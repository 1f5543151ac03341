"""A lent GPU machine's smoke and demo arms become one result record, stamped with that machine, and render.

`scripts/record_results.py gpu-smoke --runs DIR` reads DIR/gpu_smoke.json (a GPU run of
`scripts/gpu_smoke.sh`) and, where present, DIR/{cuda,cpu}/demo_arms.json of `scripts/gpu_demo_arms.py`.
Checked on made-up folders: the record names the GPU machine (not the one recording), keeps no
temporary path, refuses a dry run and a folder whose seeds failed; the findings are computed, so a tie
between the arms and a device gap are said only when the numbers show them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tandem.errors import TandemError

REPO = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"_gpu_record_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


render = _script("render_results")
recorder = _script("record_results")
arms_script = _script("gpu_demo_arms")


def _step(name: str, reason: str, details: dict | None = None) -> dict:
    return {"name": name, "status": "passed", "seconds": 1.5, "timeout_s": 30, "reason": reason, "needs_gpu": True,
            "details": details or {}, "log_tail": ""}


def _arm(seed: int, grpo: tuple[int, int], tandem: tuple[int, int], base: int = 50) -> dict:
    solved = {"base": {"solo": base, "handoff": base}, "grpo": dict(zip(("solo", "handoff"), grpo)),
              "tandem": dict(zip(("solo", "handoff"), tandem))}
    return {"seed": seed, "wall_seconds": 40.0, "samples": 128, "solved": solved,
            "weight_gap_grpo_tandem": 0.003, "weight_gap_grpo_sft": 0.002,
            "tandem_train_senior_share": {"mean": 0.49, "min": 0.46, "max": 0.52, "steps": 12}}


def _folder(tmp_path: Path, mode: str = "gpu", cuda_seeds=None, errors=None) -> Path:
    run = tmp_path / "gpu-run"
    run.mkdir(parents=True)
    acc = {"base": {"solo_acc": 50 / 128, "handoff_acc": 50 / 128}, "grpo": {"solo_acc": 60 / 128, "handoff_acc": 55 / 128},
           "tandem": {"solo_acc": 60 / 128, "handoff_acc": 55 / 128}}
    smoke = {"format": 1, "mode": mode, "started_utc": "2026-12-06T06:18:57+00:00", "wall_seconds": 100.0,
             "budget_seconds": 450.0,
             "machine": {"gpu": "NVIDIA H100 80GB HBM3", "capability": "9.0", "driver": "580.159.04",
                         "driver_cuda": "13.0", "torch": "2.11.0+cu130", "python": "3.12.3"},
             "steps": [_step("wheels", "installed into /tmp/gpu-smoke-abc123/site (no index)"),
                       _step("demo_quick", "quick demo on cuda", {"accuracy": acc, "phase_seconds": {"sft": 17.7}})]}
    (run / "gpu_smoke.json").write_text(json.dumps(smoke))
    seeds = cuda_seeds if cuda_seeds is not None else [_arm(0, (60, 55), (60, 55)), _arm(1, (70, 60), (66, 64))]
    (run / "cuda").mkdir()
    (run / "cuda" / "demo_arms.json").write_text(json.dumps({"machine": {}, "seeds": seeds, "errors": errors or []}))
    (run / "cpu_model.txt").write_text("Model name:                              Intel(R) Xeon(R) Processor\n")
    return run


def test_the_record_is_stamped_with_the_gpu_machine_and_keeps_no_temporary_path(tmp_path):
    out = tmp_path / "gpu.json"
    assert recorder.main(["gpu-smoke", "--runs", str(_folder(tmp_path)), "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    machine = record["machine"]
    assert machine["gpu"] == "NVIDIA H100 80GB HBM3" and machine["packages"] == {"torch": "2.11.0+cu130"}
    assert machine["cpu_model"] == "Intel(R) Xeon(R) Processor" and "driver 580.159.04" in machine["platform"]
    assert "/tmp/" not in json.dumps(record["numbers"]) and "WORK/site" in record["numbers"]["smoke"]["steps"]["wheels"]["reason"]
    assert record["runs"][1] == "python scripts/gpu_demo_arms.py --device cuda --seeds 0 1 --out RUN/cuda"


def test_a_dry_run_a_failed_seed_and_two_folders_are_refused(tmp_path):
    with pytest.raises(TandemError, match="record the smoke of a GPU machine"):
        recorder.record("gpu-smoke", [_folder(tmp_path / "a", mode="dry-run")], "cmd")
    with pytest.raises(TandemError, match="seeds failed"):
        recorder.record("gpu-smoke", [_folder(tmp_path / "b", errors=[{"seed": 2, "error": "OOM"}])], "cmd")
    with pytest.raises(TandemError, match="one machine's folder"):
        recorder.record("gpu-smoke", [_folder(tmp_path / "c"), _folder(tmp_path / "d")], "cmd")


def test_the_findings_say_a_tie_only_where_the_counts_tie_and_a_repeat_only_where_the_counts_repeat(tmp_path):
    record = recorder.record("gpu-smoke", [_folder(tmp_path / "tie")], "cmd")
    said = render.gpu_arms_findings(record, "x.json")
    assert "two runs on one machine, solved the same counts" in said
    assert "On CUDA seed 0 the GRPO and TRL seniors solved equal counts" in said and "other 1 seed their counts differ" in said
    assert "0.51 of TRL's training tokens" in said
    apart = recorder.record("gpu-smoke", [_folder(tmp_path / "apart", cuda_seeds=[_arm(0, (61, 55), (60, 55))])], "cmd")
    said = render.gpu_arms_findings(apart, "x.json")
    assert "equal counts" not in said and "solved different counts" in said
    table = render.gpu_arms_table(apart, "x.json")
    assert "| cuda | 0 | 50/128, 50/128 | 61/128, 55/128 | 60/128, 55/128 | 0.0030 | 0.490 over 12 steps |" in table


def test_the_arms_script_compares_two_saved_models_weight_by_weight(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    for name, shift in (("a", 0.0), ("b", 0.25)):
        (tmp_path / name).mkdir()
        save_file({"w": torch.zeros(3, 2) + shift, "only_a" if name == "a" else "only_b": torch.ones(1)},
                  str(tmp_path / name / "model.safetensors"))
    assert arms_script.weight_gap(tmp_path / "a", tmp_path / "b") == pytest.approx(0.25)
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 0, "val_acc": 0.5}\n{"step": 1, "senior_token_fraction": 0.4}\n'
                       '{"step": 2, "senior_token_fraction": 0.6}\n')
    assert arms_script.senior_share(metrics) == [0.4, 0.6]
