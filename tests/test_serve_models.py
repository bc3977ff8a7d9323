"""One service, several models: routing by source and target, auto detection among the
sources it has, the worker's batches (one model each), and the CLI with two directories."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
import torch

from attenzione.config import search_config
from attenzione.data import WordTokenizer
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Pipeline
from attenzione.search.registry import Terms
from attenzione.serve import Batcher, Languages, Service, Settings
from attenzione.serve.batcher import Decoding, Route
from attenzione.serve.fields import ApiError
from attenzione.serve.files import FileStore
from attenzione.translator.translator import Translator
from serve_helpers import post, running_server, with_worker
from tiny_model import PAROLE, WORDS, tiny_config


def tiny(src_words: list[str], tgt_words: list[str], source: str, target: str) -> Translator:
    """An untrained tiny model reading ``src_words`` and writing ``tgt_words``."""
    torch.manual_seed(0)
    src = WordTokenizer.train([" ".join(src_words)])
    tgt = WordTokenizer.train([" ".join(tgt_words)])
    model = Transformer(tiny_config(src.vocab_size, tgt.vocab_size))
    info = {"max_src_tokens": 20, "source_language": source, "target_language": target}
    return Translator(model, src, tgt, info=info)


MODELS = {"en-it": (WORDS, PAROLE), "it-en": (PAROLE, WORDS)}
TEXTS = ["the cat is here .", "il gatto è qui .", "the old dog is there ."]


def direct(translator: Translator, texts: list[str]) -> list[str]:
    """What the model alone writes for ``texts``, greedy, called directly."""
    search = search_config(1)
    return [
        r.text for r in translator.translate(texts, search=search, steps=(), terms=Terms.none())
    ]


def service() -> Service:
    routes = {
        pair: Route(tiny(s, t, *pair.split("-")), steps=Pipeline.build(()), terms=Terms.none())
        for pair, (s, t) in MODELS.items()
    }
    return Service(
        Batcher(routes, max_queue=64), Languages(("en", "it"), ("it", "en")), Settings(beam=1)
    )


def test_languages_lists_each_source_with_its_targets() -> None:
    assert service().languages.listing() == [
        {"code": "en", "name": "English", "targets": ["it"]},
        {"code": "it", "name": "Italian", "targets": ["en"]},
    ]


def test_translate_routes_by_source_and_target() -> None:
    svc = service()
    expected = {p: direct(r.translator, TEXTS) for p, r in svc.batcher.routes.items()}
    assert expected["en-it"] != expected["it-en"]  # the two models tell themselves apart
    for pair in MODELS:
        source, target = pair.split("-")
        svc = service()
        fields = {"q": TEXTS, "source": source, "target": target}
        assert with_worker(svc, svc.translate(fields, "c"))["translatedText"] == expected[pair], (
            pair
        )


def test_auto_detects_among_the_sources_the_server_has() -> None:
    svc = service()
    text = "Il gatto è qui, e il cane vecchio dorme lì vicino alla porta della cucina."
    (expected,) = direct(svc.batcher.routes["it-en"].translator, [text])
    answer = with_worker(svc, svc.translate({"q": text, "source": "auto", "target": "en"}, "c"))
    assert answer["detectedLanguage"]["language"] == "it"
    assert answer["translatedText"] == expected


def test_a_pair_no_model_translates_is_a_400_naming_the_pairs() -> None:
    svc = service()
    with pytest.raises(ApiError) as err:
        with_worker(svc, svc.translate({"q": "il gatto", "source": "it", "target": "it"}, "c"))
    assert err.value.status == 400
    assert "English (en) → Italian (it), Italian (it) → English (en)" in err.value.message


def test_a_batch_holds_the_sentences_of_one_model() -> None:
    svc = service()
    batcher = svc.batcher
    futures = []
    for n in range(6):  # submitted before the worker starts: all wait together
        model = "en-it" if n % 2 else "it-en"
        futures += batcher.submit(["the cat ."], Decoding(beam=1), model=model)
    batcher.start()
    try:
        for f in futures:
            f.result(timeout=60)
    finally:
        batcher.stop()
    stats = batcher.snapshot()
    assert stats["sentences"] == 6 and stats["batches"] == 2  # one batch per model


def test_serve_loads_several_model_directories(tmp_path: Path) -> None:
    from libretranslatepy import LibreTranslateAPI

    dirs, expected = [], {}
    for pair, (src, tgt) in MODELS.items():
        path = tiny(src, tgt, *pair.split("-")).save_pretrained(tmp_path / pair)
        expected[pair] = direct(Translator.from_pretrained(path), ["il gatto è qui ."])[0]
        dirs += ["--model", str(path)]
    assert expected["en-it"] != expected["it-en"]
    with running_server(tmp_path, *dirs, "--raw", "--beam", "1") as server:
        lt = LibreTranslateAPI(server.url)
        assert {x["code"]: x["targets"] for x in lt.languages()} == {"en": ["it"], "it": ["en"]}
        assert lt.translate("il gatto è qui .", "en", "it") == expected["en-it"]
        assert lt.translate("il gatto è qui .", "it", "en") == expected["it-en"]
        with urllib.request.urlopen(server.url + "/", timeout=30) as r:
            page = r.read().decode("utf-8")
        assert '"directions":[' in page and 'id="swap"' in page


@pytest.mark.timeout(300)
def test_the_page_switches_direction_and_swaps_text_and_translation(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from serve_helpers import chrome

    dirs = []
    for pair, (src, tgt) in MODELS.items():
        dirs += ["--model", str(tiny(src, tgt, *pair.split("-")).save_pretrained(tmp_path / pair))]
    with running_server(tmp_path, *dirs, "--raw", "--frontend-timeout", "200") as server:
        driver = chrome()
        try:
            driver.get(server.url + "/")
            driver.execute_script(
                "window.__sent = []; const f = window.fetch; window.fetch = (u, i) => "
                "{ if (i && typeof i.body === 'string') window.__sent.push(JSON.parse(i.body));"
                " return f(u, i); };"
            )
            body = driver.find_element(By.TAG_NAME, "body")
            box = driver.find_element(By.ID, "input")
            swap = driver.find_element(By.ID, "swap")
            assert driver.find_element(By.ID, "lang-pair").text == "English → Italian"
            assert swap.is_displayed()
            box.send_keys("the cat is here .")
            wait = WebDriverWait(driver, 120)
            wait.until(lambda d: body.get_attribute("data-state") == "done")
            translated = driver.find_element(By.ID, "output").text
            assert translated
            swap.click()
            assert driver.find_element(By.ID, "lang-pair").text == "Italian → English"
            assert driver.find_element(By.ID, "source-name").text == "Italian"
            assert driver.find_element(By.ID, "target-name").text == "English"
            assert box.get_attribute("lang") == "it"
            assert box.get_attribute("value") == translated  # the translation is the new text
            wait.until(lambda d: body.get_attribute("data-state") == "done")
            sent = driver.execute_script("return window.__sent")
            last = [b for b in sent if "q" in b and not b.get("attention_all")][-1]
            assert (last["source"], last["target"], last["q"]) == ("it", "en", translated)
            _, direct = post(
                server.url + "/translate", {"q": translated, "source": "it", "target": "en"}
            )
            assert driver.find_element(By.ID, "output").text == direct["translatedText"]
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert errors == [], errors
        finally:
            driver.quit()


def test_a_document_goes_to_the_model_of_its_pair(tmp_path: Path) -> None:
    svc = service()
    svc.files = FileStore(tmp_path, ttl=600, max_bytes=10**6)
    text = "il gatto è qui .\n\nthe dog is there .\n"
    name = with_worker(
        svc,
        svc.translate_file({"source": "it", "target": "en"}, ("a.txt", text.encode()), "c"),
    )
    path = svc.files.get(name)
    assert path is not None
    paragraphs = [p for p in text.split("\n") if p.strip()]
    expected = direct(svc.batcher.routes["it-en"].translator, paragraphs)
    assert path.read_text(encoding="utf-8").split("\n\n")[0].strip() == expected[0]
    assert expected != direct(svc.batcher.routes["en-it"].translator, paragraphs)


def test_auto_on_text_too_short_to_tell_takes_a_source_that_reaches_the_target() -> None:
    langs = Languages(("en", "it"), ("it", "en"))
    for text in ("Ciao!", "Hello!", "OK"):
        ranked = langs.identify(text)
        assert ranked[0][1] < 0.5, (text, ranked[:3])  # the identifier cannot tell
        assert langs.detect_source(text, "en")["language"] == "it"
        assert langs.detect_source(text, "it")["language"] == "en"
