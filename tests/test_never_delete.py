"""Nothing a user gave us is lost (issue 64 items 4–7, and a full disk): ``import``,
``export`` and ``average`` as a user types them, next to and over the user's own files.

* A user's ``X.old`` beside ``--out X`` (a file or a folder) is theirs: never touched.
* ``average --out`` refuses a user's folder, the run itself and the folders the trainer writes.
* A command never deletes its own input because it lies inside ``--out``.
* Writing over an earlier model or export replaces the files we wrote and keeps the user's.
* A disk that fills up while writing is one line, and ``--out`` is as it was.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.output


def _ok(*args: str) -> str:
    code, said = _run(*args)
    assert code == 0, said
    return said


def _refused(*args: str, match: str) -> str:
    code, said = _run(*args)
    assert code == 2, said
    lines = said.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], said
    return lines[0]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (what a user would check is still there)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained OPUS-MT-style Marian directory (import needs no trained weights)."""
    from marian_helpers import marian_model, opus_mt_dir

    return opus_mt_dir(tmp_path_factory.mktemp("hf") / "opus-mt-en-it", marian_model())


@pytest.fixture(scope="module")
def model(hf_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """That directory imported: a model directory with SentencePiece tokenizers (exportable)."""
    out = tmp_path_factory.mktemp("model") / "en-it"
    _ok("import", str(hf_dir), "--out", str(out))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A training run with two snapshots to average (20 steps of the tiny preset)."""
    from attenzione.training.trainer import train
    from toy_corpus import toy_train_config, write_toy_corpus

    root = tmp_path_factory.mktemp("run")
    corpus = write_toy_corpus(root / "toy.tsv")
    cfg = toy_train_config(corpus, root / "run", max_steps=20, eval_every=10, keep_snapshots=2)
    train(cfg, log=lambda *a, **k: None)
    return root / "run"


def _commands(hf_dir: Path, model: Path, run: Path, out: Path) -> dict[str, list[str]]:
    return {
        "import": ["import", str(hf_dir), "--out", str(out)],
        "export": ["export", str(model), "--format", "huggingface", "--out", str(out)],
        "average": ["average", str(run), "--last", "2", "--out", str(out)],
    }


# ---------------------------------------------------------------- item 4: a user's X.old
@pytest.mark.parametrize("command", ["import", "export", "average"])
@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_users_x_old_beside_out_is_never_touched(
    hf_dir: Path, model: Path, run: Path, tmp_path: Path, command: str, kind: str
) -> None:
    out, theirs = tmp_path / "X", tmp_path / "X.old"
    if kind == "file":
        theirs.write_text("my backup")
    else:
        theirs.mkdir()
        (theirs / "config.json").write_text("{}")
        (theirs / "notes.txt").write_text("mine")
    before = _tree(tmp_path / "X.old") if kind == "folder" else theirs.read_bytes()
    args = _commands(hf_dir, model, run, out)[command]
    _ok(*args)  # X new
    _ok(*args, *([] if command == "export" else ["--force"]))  # X replaced
    after = _tree(theirs) if kind == "folder" else theirs.read_bytes()
    assert after == before


# ---------------------------------------------------------------- item 5: average --out
def test_average_refuses_a_users_folder_the_run_and_its_checkpoints(
    run: Path, tmp_path: Path
) -> None:
    before = _tree(run)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    _refused("average", str(run), "--out", str(mine), match="holds other files")
    _refused("average", str(run), "--out", str(mine), "--force", match="holds other files")
    assert _tree(mine) == {"thesis.tex": b"years of work"}
    for out in (run, run.parent):
        _refused("average", str(run), "--out", str(out), "--force", match="the run")
    for entry in ("last", "best", "snapshots", "data", "last/inner"):
        _refused("average", str(run), "--out", str(run / entry), "--force", match="inside the run")
    assert _tree(run) == before  # data/, last/, best/, snapshots/: all there
    _ok("train", "--out", str(run), "--resume", "--max-steps", "21", "--threads", "1")


def test_average_into_a_folder_of_its_own_inside_the_run_and_again_with_force(
    run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "avg"
    _ok("average", str(run), "--last", "2", "--out", str(out))
    _refused("average", str(run), "--last", "2", "--out", str(out), match="--force replaces it")
    _ok("average", str(run), "--last", "2", "--out", str(out), "--force")
    inside = run / "avg2"
    try:
        _ok("average", str(run), "--last", "2", "--out", str(inside))
    finally:
        shutil.rmtree(inside, ignore_errors=True)


# ---------------------------------------------------------------- item 6: the input inside --out
def test_export_refuses_an_out_that_holds_the_model(model: Path, tmp_path: Path) -> None:
    """``export hfexp/mymodel --out hfexp``, hfexp an earlier export: the model stays."""
    hfexp = tmp_path / "hfexp"
    _ok("export", str(model), "--format", "huggingface", "--out", str(hfexp))
    mine = hfexp / "mymodel"
    shutil.copytree(model, mine)
    before = _tree(mine)
    _refused("export", str(mine), "--format", "huggingface", "--out", str(hfexp), match="holds")
    assert _tree(mine) == before


def test_import_refuses_an_out_that_holds_the_directory_being_imported(
    hf_dir: Path, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    _ok("import", str(hf_dir), "--out", str(models))
    inner = models / "opus-mt-en-it"
    shutil.copytree(hf_dir, inner)
    before = _tree(inner)
    _refused("import", str(inner), "--out", str(models), "--force", match="holds")
    _refused("import", str(inner), "--out", str(inner), "--force", match="is the directory")
    assert _tree(inner) == before


# ---------------------------------------------------------------- item 7: replace only ours
def test_re_exporting_keeps_the_files_a_user_added(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    _ok("export", str(model), "--format", "huggingface", "--out", str(out))
    (out / "my-notes.md").write_text("how I deploy it")
    (out / "samples").mkdir()
    (out / "samples" / "a.txt").write_text("ciao")
    _ok("export", str(model), "--format", "huggingface", "--out", str(out))
    assert (out / "my-notes.md").read_text() == "how I deploy it"
    assert (out / "samples" / "a.txt").read_text() == "ciao"
    assert (out / "config.json").is_file() and (out / "README.md").is_file()


def test_import_force_replaces_only_a_model_and_keeps_the_users_files(
    hf_dir: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "config.json").write_text("")
    (fake / "data.csv").write_text("a,b\n")
    _refused("import", str(hf_dir), "--out", str(fake), "--force", match="holds other files")
    assert _tree(fake) == {"config.json": b"", "data.csv": b"a,b\n"}
    real = tmp_path / "real"
    _ok("import", str(hf_dir), "--out", str(real))
    (real / "README-mine.txt").write_text("notes")
    _ok("import", str(hf_dir), "--out", str(real), "--force")
    assert (real / "README-mine.txt").read_text() == "notes"
    _ok("translate", "--model", str(real), "the cat")


# ---------------------------------------------------------------- a full disk, --out .
def _limited(args: list[str], limit: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``attenzione ARGS`` in a child whose files may not grow past ``limit`` bytes: each write
    beyond fails as on a full disk (EFBIG; Python ignores SIGXFSZ)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "attenzione", *args],
        capture_output=True, text=True, preexec_fn=cap, cwd=cwd, env=env, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("command", ["import", "export"])
def test_a_disk_that_fills_up_is_one_line_and_out_stays_as_it_was(
    hf_dir: Path, model: Path, tmp_path: Path, command: str
) -> None:
    out = tmp_path / "out"
    args = _commands(hf_dir, model, Path("unused"), out)[command]
    _ok(*args)
    before = _tree(out)
    again = [*args, "--force"] if command == "import" else args
    done = _limited(again, 64 * 1024, tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "File too large" in lines[0], lines[0]
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no half-written temp dir


def test_export_out_dot_is_refused(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``export MODEL --out .`` from inside an earlier export, or an empty folder: refused in one
    line, and the folder is as it was."""
    out = tmp_path / "hf"
    _ok("export", str(model), "--format", "huggingface", "--out", str(out))
    before = _tree(out)
    monkeypatch.chdir(out)
    _refused("export", str(model), "--format", "huggingface", "--out", ".", match="current")
    assert _tree(out) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    _refused("export", str(model), "--format", "huggingface", "--out", ".", match="current")
    assert empty.is_dir()
