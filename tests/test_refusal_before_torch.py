"""Bad input is refused before torch is imported: a taken --out (the demo's included), --resume of a folder that
holds no run, a misspelt key, a missing model or file.

How fast that is on a quiet machine is measured, not asserted here (a test's wall clock depends on its
neighbours): `scripts/bench_refusal.py`, figures in `model_spec/PERFORMANCE.md`. What a test can keep is
the cause of the speed: at each refusal, torch is not in `sys.modules`.
"""

from __future__ import annotations

import json
import subprocess
import sys

# One fresh process runs every case in turn and reports, per case, its exit status and whether torch was loaded.
_PROBE = """
import json, sys
from tandem_app.commands.cli import main
seen = []
for argv in json.loads(sys.argv[1]):
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    seen.append([status, "torch" in sys.modules])
print(json.dumps(seen))
"""


def test_every_refusal_comes_before_torch_is_imported(tmp_path):
    taken, model = tmp_path / "taken", tmp_path / "model"
    taken.mkdir()
    (taken / "notes.txt").write_text("another run's\n")
    model.mkdir()
    (model / "config.json").write_text("{}\n")
    missing, new = str(tmp_path / "missing"), str(tmp_path / "new")
    cases = [
        ["train", "--model", str(model), "--out", str(taken)],
        ["sft", "--model", str(model), "--out", str(taken)],
        ["distill", "--teacher", str(model), "--student", str(model), "--out", str(taken)],
        ["train", "--model", str(model), "--out", new, "prob_senor=0.5"],
        ["sft", "--model", missing, "--out", new],
        ["eval-solo", "--model", missing, "--benchmarks", "x.jsonl", "--out-dir", str(tmp_path / "e")],
        ["eval-solo", "--model", str(model), "--benchmarks", str(tmp_path / "x.jsonl"), "--out-dir", str(tmp_path / "e")],
        ["eval-handoff", "--senior", str(model), "--junior", missing, "--benchmarks", "x.jsonl", "--out-dir",
         str(tmp_path / "e")],
        ["train", "--model", str(model), "--out", str(taken), "--resume"],  # someone else's files: nothing to resume
        ["demo", "--quick", "--out", str(taken)],  # another run's folder: the demo's own check, before its pipeline
        ["demo", "--quick", "--seeds", "0", "1", "--out", str(taken)],
        ["demo", "--quick", "--partner", "weaker", "--out", str(taken)],
        ["demo", "--quick", "--partner", "weakest", "--out", new],  # an unknown variant, before the pipeline
    ]
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(cases)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == [[2, False]] * len(cases), list(zip(cases, seen))
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == len(cases) and "not empty" in errors[0] and "no such benchmark file" in errors[6]
    assert "nothing to resume in" in errors[-5] and all("holds no demo run" in line for line in errors[-4:-1])
    assert "unknown partner variant 'weakest'; choose from weaker, sync" in errors[-1]
    assert not (tmp_path / "new").exists() and not (tmp_path / "e").exists()  # refused before any folder
