"""The journey, the training view, the masks and the occlusion on every interface (issue 67):
``attenzione attention --journey/--reference/--masks/--occlusion [--json]`` and the service's
``POST /journey``, ``/training`` and ``/occlusion`` give what the Python calls give."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.translator.translator import PRETRAINED_DIR
from journey_checks import NAMES
from serve_helpers import Server, post, running_server

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)

SENTENCE = "The transformer architecture was introduced in 2017."
REFERENCE = "L'architettura del Transformer è stata introdotta nel 2017."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("inside")) as s:
        yield s


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def _refused(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    return res.output


def _ask(server: Server, path: str, **fields: object) -> tuple[int, dict]:
    return post(server.url + path, {"q": SENTENCE, "source": "en", "target": "it", **fields})


def test_the_journey_on_the_command_line_and_in_the_service(server: Server) -> None:
    """The issue's own command lists every step with its check; the service's answer for the
    same token is the same journey."""
    cli = json.loads(_cli("attention", SENTENCE, "--journey", "--token", "5", "--json"))
    names = {s["name"] for s in cli["steps"]}
    assert set(NAMES) <= names
    assert all("check" in s for s in cli["steps"])
    code, served = _ask(server, "/journey", token=5)
    assert code == 200, served
    assert [s["name"] for s in served["steps"]] == [s["name"] for s in cli["steps"]]
    assert served["predicted_piece"] == cli["predicted_piece"]
    for a, b in zip(served["steps"], cli["steps"], strict=True):
        assert (a["check"] is None) == (b["check"] is None)
    text = _cli("attention", SENTENCE, "--journey", "--token", "5")
    assert "largest difference from the model" in text and "layer norm" in text
    said = _refused("attention", SENTENCE, "--journey", "--token", "40")
    assert "token 40 is out of range" in said and "0.." in said
    code, answer = _ask(server, "/journey", token=40)
    assert code == 400 and "token 40 is out of range" in answer["error"]


def test_the_training_view_and_the_masks_everywhere(server: Server, tmp_path: Path) -> None:
    cli = json.loads(_cli("attention", SENTENCE, "--reference", REFERENCE, "--json"))
    assert cli["positions"] and all("loss" in p for p in cli["positions"])
    code, served = _ask(server, "/training", reference=REFERENCE, other="The cat sleeps.")
    assert code == 200, served
    assert [p["reference_id"] for p in served["positions"]] == [
        p["reference_id"] for p in cli["positions"]
    ]
    assert served["loss"] == pytest.approx(cli["loss"], abs=1e-5)
    masks = json.loads(_cli("attention", SENTENCE, "--masks", "The cat sleeps.", "--json"))
    assert masks["encoder"] == served["masks"]["encoder"]
    assert masks["cross"] == served["masks"]["cross"]
    text = _cli("attention", SENTENCE, "--reference", REFERENCE, "--no-png", "--out",
                str(tmp_path / "ref"))  # fmt: skip
    assert "loss" in text and "greedy" in text
    code, answer = _ask(server, "/training")
    assert code == 400 and "reference" in answer["error"]


def test_the_occlusion_everywhere(server: Server) -> None:
    cli = json.loads(_cli("attention", SENTENCE, "--occlusion", "--json"))
    code, served = _ask(server, "/occlusion")
    assert code == 200, served
    assert served["words"] == cli["words"] and served["targets"] == cli["targets"]
    code, some = _ask(server, "/occlusion", words="cat,architecture")
    assert code == 200 and some["words"] == ["cat", "architecture"]
    assert all(row[0] == 0.0 for row in some["importance"])
    text = _cli("attention", SENTENCE, "--occlusion")
    assert "top1" in text and "architecture" in text


def test_views_that_cannot_go_together_are_one_line() -> None:
    said = _refused("attention", SENTENCE, "--journey", "--occlusion", "--json")
    assert "--json prints one view" in said
    assert "choose one" in _refused("attention", SENTENCE, "--journey", "--explain")
    assert "second sentence" in _refused("attention", SENTENCE, "--masks", " ")
