"""Fail closed: every refusal comes before any work, in one `error:` line, and leaves nothing behind.

The cases of issue 46, each run as a user meets it (`tandem-rlvr ...`, in process): numbers
that cannot train, a teacher the student cannot learn from, checksum records that are
damaged or gone, an output folder that cannot be written, input files that are not UTF-8
or repeat an id. Each ends in one `error:` line with exit status 2 (or resumes from the
newest checkpoint that verifies, saying which); a refused run leaves no folder it created.
"""

from __future__ import annotations

import errno
import json
import pathlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.io.jsonl import read_jsonl, read_text
from tandem_app.commands.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
TRAIN = ["prompts_per_step=2", "group_size=2", "sampling.max_new_tokens=8", "save_every=1", "val_every=0",
         "n_val_problems=2", "n_train_problems=10", "threads=1"]
SFT = ["steps=1", "batch_size=2", "warmup_steps=0", "n_train_problems=4", "n_val_problems=1", "max_new_tokens=4",
       "threads=1"]
DISTILL = ["n_train_problems=4", "max_new_tokens=8", "steps=1", "batch_size=2", "save_every=1", "n_eval_problems=2",
           "n_samples=1", "eval_sampling.max_new_tokens=8", "threads=1"]


def _train(model, out, *extra) -> list[str]:
    return ["train", *TRAIN, *extra, "--model", str(model), "--out", str(out), "--no-progress"]


def _distill(teacher, student, out, *extra) -> list[str]:
    return ["distill", *DISTILL, *extra, "--teacher", str(teacher), "--student", str(student), "--out", str(out),
            "--no-progress"]


def _lines(capsys) -> tuple[list[str], list[str]]:
    """(error lines, note lines) printed on stderr."""
    err = capsys.readouterr().err.splitlines()
    return [x for x in err if x.startswith("error:")], [x for x in err if x.startswith("note:")]


def _refused(argv: list[str], capsys) -> str:
    """Run `argv`; it must exit 2 with exactly one `error:` line on stderr and no traceback. Returns the line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


# --- numbers that cannot train: refused before the folder exists ------------------------------------


@pytest.mark.parametrize("override, line", [
    ("lr=1e300", "train: lr=1e+300 overflows float32 (largest 3.403e+38), the dtype it is used in; set a smaller value"),
    ("lr=1e30", "train: lr must be <= 1 (Adam moves each weight by about lr per step), got 1e+30; set a learning "
                "rate such as 1e-4"),
    ("adv_epsilon=1e39", "train: adv_epsilon=1e+39 overflows float32 (largest 3.403e+38), the dtype it is used in; "
                         "set a smaller value"),
    ("group_size=1", "train: group_size=1 gives every response a zero advantage (GRPO subtracts the mean reward of "
                     "each prompt's group, here the response itself); set group_size >= 2"),
    ("adv_estimator=gae", "unknown advantage estimator 'gae'; choose one of grpo"),
])
def test_train_refuses_numbers_that_cannot_train_before_any_folder(override, line, tiny_dir, tmp_path, capsys):
    out = tmp_path / "runs" / "train"
    assert _refused(_train(tiny_dir, out, "steps=1", override), capsys) == f"error: {line}"
    assert not (tmp_path / "runs").exists()


def test_sft_refuses_an_lr_above_the_ceiling(tiny_dir, tmp_path, capsys):
    out = tmp_path / "sft"
    line = _refused(["sft", *SFT, "lr=10", "--model", str(tiny_dir), "--out", str(out)], capsys)
    assert line == "error: sft: lr must be <= 1 (Adam moves each weight by about lr per step), got 10; set a " \
                   "learning rate such as 1e-4"
    assert not out.exists()


def test_sft_refuses_a_model_folder_without_a_tokenizer_before_any_folder(tiny_dir, tmp_path, capsys):
    bare, out = tmp_path / "bare", tmp_path / "sft"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_dir / name, bare / name)
    assert _refused(["sft", *SFT, "--model", str(bare), "--out", str(out)], capsys).startswith(f"error: {bare}")
    assert not out.exists()


@pytest.mark.parametrize("override, line", [
    ("lr=1e309", "distill: lr must be a finite number, got inf (a number beyond 1.8e308 reads as inf); set a finite "
                 "value"),
    ("lr=5", "distill: lr must be <= 1 (Adam moves each weight by about lr per step), got 5; set a learning rate "
             "such as 1e-4"),
])
def test_distill_refuses_its_lr_before_the_traces(override, line, tiny_dir, tmp_path, capsys):
    out = tmp_path / "distill"
    assert _refused(_distill(tiny_dir, tiny_dir, out, override), capsys) == f"error: {line}"
    assert not out.exists()


@pytest.fixture(scope="module")
def wide_teacher(tiny_dir, tmp_path_factory) -> Path:
    """The tiny model with the student's tokenizer but 600 embedding rows (the student has 512)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("wide") / "teacher"
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    model.resize_token_embeddings(600)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_dir).save_pretrained(out)
    return out


def test_distill_refuses_a_teacher_with_more_embedding_rows_before_the_traces(wide_teacher, tiny_dir, tmp_path,
                                                                              capsys):
    out = tmp_path / "distill"
    assert _refused(_distill(wide_teacher, tiny_dir, out), capsys) == (
        "error: the teacher has 600 embedding rows but the student 512: the teacher can write ids 512..599, which "
        "the student has no row for; use a student with at least as many rows, or retokenize=true to re-tokenise "
        "the traces' text")
    assert not out.exists()


def test_train_refuses_a_junior_with_another_embedding_size_before_any_folder(wide_teacher, tiny_dir, tmp_path,
                                                                              capsys):
    out = tmp_path / "train"
    assert _refused(_train(tiny_dir, out, "steps=1", f"tandem.junior_model={wide_teacher}"), capsys) == (
        f"error: tandem.junior_model {wide_teacher} has 600 embedding rows but the senior 512: each reads the tokens "
        "the other writes; use a junior with the senior's embedding size")
    assert not out.exists()


def test_eval_handoff_refuses_a_junior_with_more_embedding_rows_before_any_model_or_file(wide_teacher, tiny_dir,
                                                                                         tmp_path, capsys,
                                                                                         monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded before the pair was checked")

    monkeypatch.setattr("tandem.models.loading.load_model", no_model)
    data, out = _file(tmp_path, "ok.jsonl", NOT_UTF8.split(b"\n")[0] + b"\n"), tmp_path / "eval"
    line = _refused(["eval-handoff", "--senior", str(tiny_dir), "--junior", str(wide_teacher), "--benchmarks",
                     str(data), "--n", "1", "--max-new-tokens", "4", "--out-dir", str(out)], capsys)
    assert line == (f"error: --junior {wide_teacher} has 600 embedding rows but the senior 512: each reads the "
                    "tokens the other writes; use a junior with the senior's embedding size")
    assert not out.exists()


@pytest.mark.parametrize("command", ["train", "sft", "distill"])
@pytest.mark.parametrize("device, line", [
    ("gpu", "device='gpu' is not a torch device; use cpu or cuda (cuda:N)"),
    ("", "device='' is not a torch device; use cpu or cuda (cuda:N)"),
])
def test_a_device_torch_cannot_name_is_refused_before_any_folder(command, device, line, tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    argv = {"train": _train(tiny_dir, out, "steps=1"), "sft": ["sft", *SFT, "--model", str(tiny_dir), "--out", str(out)],
            "distill": _distill(tiny_dir, tiny_dir, out)}[command]
    assert _refused([*argv, f"device={device}"], capsys) == f"error: {command}: {line}"
    assert not out.exists()


def test_the_eval_refuses_a_device_torch_cannot_name_before_any_folder(tiny_dir, tmp_path, capsys):
    data, out = _file(tmp_path, "ok.jsonl", NOT_UTF8.split(b"\n")[0] + b"\n"), tmp_path / "eval"
    line = _refused(["eval-solo", "--model", str(tiny_dir), "--benchmarks", str(data), "--device", "gpu",
                     "--out-dir", str(out)], capsys)
    assert line == "error: --device='gpu' is not a torch device; use cpu or cuda (cuda:N)"
    assert not out.exists()


# --- checksums that damage cannot switch off ---------------------------------------------------------


@pytest.fixture(scope="module")
def two_checkpoints(tiny_dir, tmp_path_factory) -> Path:
    """A finished 2-step run with a checkpoint at each step (read-only for tests: each copies it)."""
    out = tmp_path_factory.mktemp("ckpt") / "run"
    assert main(_train(tiny_dir, out, "steps=2")) == 0
    return out


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _resume(out: Path, *flags: str) -> list[str]:
    return ["train", "steps=3", "--out", str(out), "--resume", "--no-progress", *flags]


def _resumed_from(out: Path) -> int:
    """The step the resumed run restarted after: its metrics rows restart there."""
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    return steps[-1] - 1 if steps[-2] == steps[-1] - 1 else steps[-2]


@pytest.mark.parametrize("damaged", [False, True])
def test_a_garbage_checkpoint_json_is_damage_and_the_second_record_decides(damaged, two_checkpoints, tmp_path,
                                                                           capsys):
    out = _copy(two_checkpoints, tmp_path)
    (out / "checkpoint.json").write_text("garbage")
    if damaged:
        _flip(out / "checkpoint.pt")
    capsys.readouterr()
    assert main(_resume(out)) == 0
    errors, notes = _lines(capsys)
    assert not errors
    assert f"note: {out / 'checkpoint.json'} cannot be read (damaged); checking the checkpoints against the other " \
           "record" in notes
    if damaged:
        assert f"note: {out / 'checkpoint.pt'} does not match the sha256 recorded in {out / 'checkpoint.sha256'} " \
               "(damaged); not used" in notes
        assert f"note: resuming from the previous checkpoint {out / 'checkpoint.prev.pt'} (step 1)" in notes
    else:
        assert not any("not used" in n or "unverified" in n for n in notes)
    assert json.loads((out / "summary.json").read_text())["steps"] == 3


def test_a_deleted_sidecar_and_a_truncated_checkpoint_resume_from_the_intact_previous(two_checkpoints, tmp_path,
                                                                                      capsys):
    out = _copy(two_checkpoints, tmp_path)
    (out / "checkpoint.json").unlink()
    with (out / "checkpoint.pt").open("r+b") as f:
        f.truncate(1000)
    capsys.readouterr()
    assert main(_resume(out)) == 0
    _, notes = _lines(capsys)
    assert f"note: {out / 'checkpoint.json'} is missing; checking the checkpoints against {out / 'checkpoint.sha256'}" \
           in notes
    assert f"note: resuming from the previous checkpoint {out / 'checkpoint.prev.pt'} (step 1)" in notes


@pytest.mark.parametrize("records", ["deleted", "garbage"])
def test_checkpoints_no_record_vouches_for_are_refused_unless_trusted(records, two_checkpoints, tmp_path, capsys):
    out = _copy(two_checkpoints, tmp_path)
    for name in ("checkpoint.json", "checkpoint.sha256"):
        if records == "deleted":
            (out / name).unlink()
        else:
            (out / name).write_text("garbage\n")
    before = sorted(p.name for p in out.iterdir())
    capsys.readouterr()
    line = _refused(_resume(out), capsys)
    why = "its checksum records cannot be read" if records == "garbage" else \
        "it has no checksum record (checkpoint.json, checkpoint.sha256; deleted, or written before checksums)"
    assert line == f"error: {out / 'checkpoint.pt'} cannot be verified: {why}; resume with --trust-unverified to " \
                   "load it anyway, or start over in a new --out"
    assert sorted(p.name for p in out.iterdir()) == before  # refused before any file was touched
    assert main(_resume(out, "--trust-unverified")) == 0
    _, notes = _lines(capsys)
    assert f"note: loading {out / 'checkpoint.pt'} (step 2) unverified: {why} (--trust-unverified)" in notes


def test_every_save_writes_both_records(two_checkpoints):
    import hashlib

    index = json.loads((two_checkpoints / "checkpoint.json").read_text())["verified"]
    digests = (two_checkpoints / "checkpoint.sha256").read_text().splitlines()
    assert digests == [f"{e['sha256']} {e['step']}" for e in index]
    assert index[0] == {"sha256": hashlib.sha256((two_checkpoints / "checkpoint.pt").read_bytes()).hexdigest(),
                        "step": 2}


# --- folders: an unwritable --out is one line; a refused run leaves no folder it made ---------------


def _read_only(monkeypatch, folder: Path) -> None:
    """Writes under `folder` fail as on a read-only mount (root ignores a folder's mode bits, so it is faked here;
    `test_a_read_only_mount_is_one_line` uses a real mount where the machine allows one)."""
    write_text = pathlib.Path.write_text

    def refuse(self, *args, **kwargs):
        if folder.resolve() in Path(self).resolve().parents:
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", refuse)


def _unwritable_line(out: Path) -> str:
    return f"error: --out {out} cannot be written (Read-only file system); choose a writable --out, or make it " \
           "writable (permissions, a read-write mount, free space)"


@pytest.mark.parametrize("command", ["train", "train --resume", "sft", "distill"])
def test_an_unwritable_out_is_one_line_naming_it(command, two_checkpoints, tiny_dir, tmp_path, capsys, monkeypatch):
    out = _copy(two_checkpoints, tmp_path) if "--resume" in command else tmp_path / "ro"
    out.mkdir(exist_ok=True)
    before = sorted(p.name for p in out.iterdir())
    argv = {"train": _train(tiny_dir, out, "steps=1"), "train --resume": _resume(out),
            "sft": ["sft", *SFT, "--model", str(tiny_dir), "--out", str(out)],
            "distill": _distill(tiny_dir, tiny_dir, out)}[command]
    _read_only(monkeypatch, out)
    assert _refused(argv, capsys) == _unwritable_line(out)
    assert sorted(p.name for p in out.iterdir()) == before


def _can_mount_read_only(folder: Path) -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount --bind {folder} {folder} && "
                            f"mount -o remount,bind,ro {folder} {folder}"], capture_output=True)
    return probe.returncode == 0


def test_a_read_only_mount_is_one_line(tiny_dir, tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    if not _can_mount_read_only(out):
        pytest.skip("no user namespace to mount a read-only folder in (the faked case above still runs)")
    argv = " ".join(_train(tiny_dir, out, "steps=1"))
    script = f"mount --bind {out} {out} && mount -o remount,bind,ro {out} && {sys.executable} -m " \
             f"tandem_app.commands.cli {argv}"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [_unwritable_line(out)]


def test_a_run_refused_at_start_leaves_no_folder_it_created(tiny_dir, tmp_path, capsys):
    made = tmp_path / "new" / "deep" / "run"
    _refused(_distill(tiny_dir, tiny_dir, made, "data=missing.jsonl", "test_data=missing.jsonl"), capsys)
    assert not (tmp_path / "new").exists()


def test_a_refused_run_keeps_a_folder_it_did_not_create(two_checkpoints, tiny_dir, tmp_path, capsys):
    out = _copy(two_checkpoints, tmp_path)
    before = sorted(p.name for p in out.iterdir())
    assert "is not empty" in _refused(_train(tiny_dir, out, "steps=1"), capsys)
    assert sorted(p.name for p in out.iterdir()) == before


# --- any bytes in: not UTF-8 named by file, line, byte and column; duplicate ids by id and lines -------


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


NOT_UTF8 = b'{"id": "a", "problem": "1+1", "answer": "2"}\n{"id": "b", "problem": "caf\xe9", "answer": "3"}\n'
DUPLICATE = (b'{"id": "a", "problem": "1+1", "answer": "2"}\n\n{"id": "b", "problem": "2+2", "answer": "4"}\n'
             b'{"id": "a", "problem": "3+3", "answer": "6"}\n')


def _input_commands(tiny_dir, data: Path, out: Path) -> dict[str, list[str]]:
    return {
        "eval-solo": ["eval-solo", "--model", str(tiny_dir), "--benchmarks", str(data), "--n", "1",
                      "--out-dir", str(out)],
        "eval-handoff": ["eval-handoff", "--senior", str(tiny_dir), "--junior", str(tiny_dir), "--benchmarks",
                         str(data), "--n", "1", "--out-dir", str(out)],
        "distill": _distill(tiny_dir, tiny_dir, out, f"data={data}", f"test_data={data}"),
    }


@pytest.mark.parametrize("command", ["eval-solo", "eval-handoff", "distill"])
def test_an_input_file_that_is_not_utf8_is_named_by_line_byte_and_column(command, tiny_dir, tmp_path, capsys):
    data, out = _file(tmp_path, "bad.jsonl", NOT_UTF8), tmp_path / "out"
    line = _refused(_input_commands(tiny_dir, data, out)[command], capsys)
    assert line == f"error: {data}:2: not UTF-8 (byte 0xE9 at column 28); save the file as UTF-8"
    assert not out.exists()


@pytest.mark.parametrize("command", ["eval-solo", "eval-handoff", "distill"])
def test_a_duplicate_id_is_named_with_both_lines(command, tiny_dir, tmp_path, capsys):
    data, out = _file(tmp_path, "dup.jsonl", DUPLICATE), tmp_path / "out"
    line = _refused(_input_commands(tiny_dir, data, out)[command], capsys)
    assert line == f"error: {data}: duplicate id 'a' at line 1 and line 4; give every row a unique id"
    assert not out.exists()


def test_the_byte_and_column_are_those_of_the_first_bad_byte(tmp_path):
    path = _file(tmp_path, "x.jsonl", b'{"a": 1}\n{"\xc3\xa9": "ok", "b": "\xff"}\n')
    with pytest.raises(TandemError, match=re.escape(f"{path}:2: not UTF-8 (byte 0xFF at column 20)")):
        read_jsonl(path)
    with pytest.raises(TandemError, match=re.escape(f"{path}:2: not UTF-8 (byte 0xFF at column 20)")):
        read_text(path)


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = _file(tmp_path, "bom.jsonl", b'\xef\xbb\xbf{"a": 1}\n{"b": "\xc3\xa9"}\n')
    assert read_jsonl(path) == [{"a": 1}, {"b": "é"}]


# --- the command line: every command listed, flags that are config keys, lower-case errors -----------


def test_readme_lists_every_command_of_help():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The command line", 1)[1]
    listing = re.search(r"`tandem-rlvr ([^`]+)`", section).group(1)
    assert [c.strip() for c in listing.split("|")] == list(COMMANDS)


def test_the_command_list_is_what_help_prints(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    printed = capsys.readouterr().out
    assert all(re.search(rf"^\s+{re.escape(name)}\s", printed, re.MULTILINE) for name in COMMANDS)


@pytest.mark.parametrize("argv, hint", [
    (["train", "--steps", "2"], "steps is a config key, not a flag: use steps=2"),
    (["train", "--sampling.max-new-tokens=16"], "sampling.max_new_tokens is a config key, not a flag: use "
                                                "sampling.max_new_tokens=16"),
    (["sft", "--lr"], "lr is a config key, not a flag: use lr=VALUE"),
    (["distill", "--token-budget", "100"], "token_budget is a config key, not a flag: use token_budget=100"),
])
def test_a_flag_named_like_a_config_key_says_use_key_value(argv, hint, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith(f"error: unrecognized arguments: {argv[1]}; {hint}")


def test_an_unknown_flag_is_still_just_unrecognized(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--bogus"])
    assert capsys.readouterr().err.strip().splitlines()[-1] == "tandem-rlvr train: error: unrecognized arguments: " \
                                                                 "--bogus"


def test_a_bad_fields_mapping_is_a_lower_case_error_line(tiny_dir, tmp_path, capsys):
    data, out = _file(tmp_path, "ok.jsonl", NOT_UTF8.split(b"\n")[0] + b"\n"), tmp_path / "out"
    line = _refused(["eval-solo", "--model", str(tiny_dir), "--benchmarks", str(data), "--fields", "bogus",
                     "--out-dir", str(out)], capsys)
    assert line == "error: bad --fields entry 'bogus'; write e.g. problem=question,answer=answer,id=idx"
    assert not out.exists()


# --- found by the fuzz tests of the commands without a config (test_fail_closed_fuzz.py) ------------------


def _results(root: Path) -> Path:
    """A checkpoint's results as the eval tools write them: solo/ (one benchmark, one sample)."""
    solo = root / "checkpoint" / "solo"
    solo.mkdir(parents=True)
    (solo / "summary.json").write_text(json.dumps({"preset": "ours", "ks": [1], "config": {"preset": "ours"},
                                                   "benchmarks": {"toy": {"pass@1": 1.0}}}), encoding="utf-8")
    (solo / "toy.summary.json").write_text(json.dumps({"per_problem": [{"id": "a", "n": 1, "c": 1}]}),
                                           encoding="utf-8")
    (solo / "toy.samples.jsonl").write_text(json.dumps({"problem_id": "a", "benchmark": "toy", "sample": 0,
                                                        "prompt_ids": [1, 2], "response_ids": [3, 4]}) + "\n",
                                            encoding="utf-8")
    return solo.parent


def _unwritable_outs(tiny_dir, results: Path, folder: Path, file: Path) -> list[tuple[list[str], str]]:
    """(argv, the line) per command: --out an existing folder where a file is written, or a path under a file."""
    solo = results / "solo"
    return [
        (["build-tiny", "--out", str(file)], f"--out {file} is a file; choose a folder path for --out"),
        (["build-tiny", "--out", str(file / "tiny")],
         f"--out {file / 'tiny'} lies under {file}, which is a file; choose a folder path for --out"),
        (["boundaries", "--tokenizer", str(tiny_dir), "--strategy", "word", "--out", str(folder)],
         f"--out {folder} is a folder; name a file for --out"),
        (["boundaries", "--tokenizer", str(tiny_dir), "--strategy", "word", "--out", str(file / "ids.json")],
         f"--out {file / 'ids.json'} lies under {file}, which is a file; choose a path in a folder"),
        (["eval-legibility", "--senior-samples", str(solo), "--junior-samples", str(solo), "--out", str(folder)],
         f"--out {folder} is a folder; name a file for --out"),
        (["eval-plot", "--run", f"a={solo}", "--out", str(folder)],
         f"--out {folder} is a folder; name a file for --out"),
        (["eval-table", "--checkpoint", f"a={results}", "--out", str(file / "table")],
         f"--out {file / 'table'} lies under {file}, which is a file; choose a path in a folder"),
        (["eval-figures", "--checkpoint", f"a={results}", "--out", str(file / "figure")],
         f"--out {file / 'figure'} lies under {file}, which is a file; choose a path in a folder"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_an_out_that_cannot_take_the_result_is_one_line_before_any_work(case, tiny_dir, tmp_path, capsys):
    results, folder, file = _results(tmp_path), tmp_path / "folder", tmp_path / "a-file"
    folder.mkdir()
    file.write_text("kept\n", encoding="utf-8")
    argv, line = _unwritable_outs(tiny_dir, results, folder, file)[case]
    assert _refused(argv, capsys) == f"error: {line}"
    assert list(folder.iterdir()) == [] and file.read_text(encoding="utf-8") == "kept\n"


@pytest.mark.parametrize("flag, line", [
    ("--batch-size=0", "--batch-size must be >= 1, got 0"),
    ("--max-per-problem=0", "--max-per-problem must be >= 1 (leave it out to score every sample), got 0"),
    ("--top-k=-1", "--top-k must be >= 0, got -1"),
    ("--device=gpu", "--device='gpu' is not a torch device; use cpu or cuda (cuda:N)"),
])
def test_eval_legibility_refuses_its_flags_before_reading_anything(flag, line, tiny_dir, tmp_path, capsys):
    solo, out = _results(tmp_path) / "solo", tmp_path / "out" / "legibility.json"
    argv = ["eval-legibility", "--senior-samples", str(solo), "--junior", str(tiny_dir), "--junior-samples",
            str(solo), flag, "--out", str(out)]
    assert _refused(argv, capsys) == f"error: {line}"
    assert not out.parent.exists()


# (command, the file damaged, its bytes, the line); {path} is the damaged file.
DAMAGED_RESULTS = [
    ("eval-table", "solo/summary.json", b"[1]",
     "{path}: expected a JSON object, got list; re-run the evaluation that writes it"),
    ("eval-figures", "solo/summary.json", b'{"benchmarks": {"toy": {}}}',
     "{path}: no 'ks' in it, so not an eval summary; re-run the evaluation that writes it"),
    ("eval-table", "solo/toy.summary.json", b'{"per_problem": [{"n": 1}]}',
     "{path}: its per-problem rows are not {{n, c}} counts; re-run the evaluation that writes it"),
    ("eval-table", "legibility.json", b'{"drift": "\xff"}', "{path}:1: not UTF-8 (byte 0xFF at column 12); save the "
                                                             "file as UTF-8"),
    ("eval-table", "legibility.json", b'{"legibility": [1]}',
     "{path}: 'legibility' and 'drift' are not eval-legibility's results; re-run eval-legibility, which writes it"),
    ("eval-plot", "solo/summary.json", b'{"ks": [1],\n "benchmarks": {"caf\xe9": {}}}',
     "{path}:2: not UTF-8 (byte 0xE9 at column 21); save the file as UTF-8"),
    ("eval-legibility", "solo/summary.json", b'{"ks": [1',
     "{path}:1: not valid JSON (Expecting ',' delimiter); re-run eval_solo, which writes it"),
    ("eval-legibility", "solo/toy.samples.jsonl", b"", "{solo}: no samples in it; pass the output of an eval_solo run "
                                                       "that finished"),
]


@pytest.mark.parametrize("command, damaged, data, line", DAMAGED_RESULTS)
def test_damaged_eval_results_are_one_line_naming_the_file(command, damaged, data, line, tiny_dir, tmp_path, capsys):
    results, out = _results(tmp_path), tmp_path / "out" / "result"
    (results / damaged).write_bytes(data)
    solo = results / "solo"
    argv = {"eval-table": ["eval-table", "--checkpoint", f"a={results}", "--out", str(out)],
            "eval-figures": ["eval-figures", "--checkpoint", f"a={results}", "--out", str(out)],
            "eval-plot": ["eval-plot", "--run", f"a={solo}", "--out", str(out)],
            "eval-legibility": ["eval-legibility", "--senior-samples", str(solo), "--junior-samples", str(solo),
                                "--tokenizer", str(tiny_dir), "--out", str(out)]}[command]
    assert _refused(argv, capsys) == "error: " + line.format(path=results / damaged, solo=solo)
    assert not out.parent.exists()


@pytest.mark.parametrize("words, line", [
    (["--seeds", "1", "0", "1"], "--seeds names 1 more than once; give each once"),
    (["--partner", "weaker", "sync", "weaker"], "--partner names weaker more than once; give each once"),
])
def test_the_demo_refuses_a_repeated_seed_or_variant_before_any_folder(words, line, tmp_path, capsys, monkeypatch):
    def no_phase(*args, **kwargs):
        raise AssertionError("a phase began")

    monkeypatch.setattr("tandem_app.experiments.demo._run_demo", no_phase)
    out = tmp_path / "demo"
    assert _refused(["demo", *words, "--out", str(out)], capsys) == f"error: {line}"
    assert not out.exists()
