"""The trace, the prefix and the ablations on every interface (issue 66): ``POST /trace`` and
``/translate``'s ``prefix`` in the service, ``attenzione attention --trace --json``,
``--prefix`` and ``--ablate``, and ``attenzione translate --prefix``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.translator.translator import PRETRAINED_DIR
from serve_helpers import Server, post, running_server

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)

SENTENCE = "The transformer architecture was introduced in 2017."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("trace")) as s:
        yield s


def _trace(server: Server, **fields: object) -> tuple[int, dict]:
    body = {"q": SENTENCE, "source": "en", "target": "it", **fields}
    return post(server.url + "/trace", body)


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def test_the_service_trace_is_what_translate_writes(server: Server) -> None:
    for beam in (1, 4):
        code, trace = _trace(server, beam=beam)
        assert code == 200, trace
        if beam == 4:  # the server's default search (beam 4) is /translate's
            code, plain = post(
                server.url + "/translate", {"q": SENTENCE, "source": "en", "target": "it"}
            )
            assert code == 200 and trace["translation"] == plain["translatedText"]
            assert trace["beams"] and trace["path"]
        steps = trace["steps"]
        for step in steps:
            lps = [t["logprob"] for t in step["top"]]
            assert lps == sorted(lps, reverse=True) and len(lps) == 10
        if beam == 1:
            assert all(s["top"][0]["id"] == s["chosen_id"] for s in steps)
    cli = json.loads(_cli("attention", SENTENCE, "--trace", "--json", "--beam", "1"))
    code, served = _trace(server, beam=1)
    assert [s["chosen_id"] for s in cli["steps"]] == [s["chosen_id"] for s in served["steps"]]
    one = _cli("translate", SENTENCE, "--beam", "1").strip()
    assert cli["translation"] == one


def test_the_service_forces_a_prefix_and_switches_parts_off(server: Server) -> None:
    code, own = _trace(server)
    assert code == 200
    code, forced = _trace(server, prefix="Il")
    assert code == 200 and forced["translation"].startswith("Il")
    assert forced["steps"][0]["forced"] and not forced["steps"][-1]["forced"]
    code, translated = post(
        server.url + "/translate", {"q": SENTENCE, "source": "en", "target": "it", "prefix": "Il"}
    )
    assert code == 200 and translated["translatedText"] == forced["translation"]
    code, cut = _trace(server, ablate="cross:*")
    assert code == 200 and cut["translation"] != own["translation"]
    assert cut["ablate"][0] == "cross:0.0"
    code, again = _trace(server)
    assert again["translation"] == own["translation"]  # the model is whole again
    code, explained = _trace(server, explain=True, explain_layer=0, explain_head=1)
    assert code == 200 and explained["explain"]["layer"] == 0
    assert explained["explain"]["head"] == 1


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"ablate": "cross:99.0"}, "no cross layer 99"),
        ({"ablate": "nonsense"}, "cannot read the ablation"),
        ({"prefix": "la " * 200}, "pieces;"),
        ({"q": ["a", "b"]}, "one sentence"),
        ({"top_k": 0}, "top_k must be 1..50"),
        ({"beam": 0}, "beam must be >= 1"),
        ({"explain": True, "explain_head": 99}, "explain_head 99 is out of range"),
    ],
)
def test_the_service_refuses_what_the_model_lacks_with_a_400(
    server: Server, fields: dict, said: str
) -> None:
    code, answer = _trace(server, **fields)
    assert code == 400, answer
    assert said in answer["error"] and "\n" not in answer["error"]


def test_the_command_line_prefix_and_ablation(tmp_path: Path) -> None:
    forced = _cli("translate", SENTENCE, "--prefix", "Il").strip()
    assert forced.startswith("Il ")
    cli = json.loads(_cli("attention", SENTENCE, "--trace", "--json", "--prefix", "Il"))
    assert cli["translation"] == forced
    cut = json.loads(_cli("attention", SENTENCE, "--trace", "--json", "--ablate", "positions"))
    assert cut["ablate"] == ["positions"]
    res = CliRunner().invoke(app, ["attention", SENTENCE, "--trace", "--ablate", "cross:9.9"])
    assert res.exit_code != 0 and "no cross layer 9" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(app, ["attention", SENTENCE, "--json"])
    assert res.exit_code != 0 and "--json prints a view: add --trace" in res.output
    out = tmp_path / "att"
    _cli("attention", SENTENCE, "--trace", "--out", str(out), "--no-png")
    page = (out / "attention.html").read_text(encoding="utf-8")
    assert '"steps"' in page and '"top"' in page
