"""What the page asks for a ten-sentence paragraph: the text without attention, then one
sentence's attention (what it does now), against ``attention_all`` for the whole text (what it
did). Prints each answer's size and time from a real ``attenzione serve`` (2 threads).

    python -m bench.page_request
"""

import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serve_helpers import running_server  # noqa: E402

PARA = (
    "The cat is sleeping on the sofa. I am hungry. We will leave tomorrow morning. "
    "She reads a book every week. My brother lives in Rome. Where is the train station? "
    "The meeting starts at nine. Tom didn't come back. I love this city. It is raining again."
)


def post(url, body):
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as r:
        data = r.read()
    return len(data), time.perf_counter() - t


with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp), threads=2) as s:
    base = {"source": "en", "target": "it", "alternatives": 3, "scores": True}
    post(s.url + "/translate", {**base, "q": "Warm up."})
    for name, body in [
        ("before: the text with attention_all", {**base, "q": PARA, "attention_all": True}),
        ("now: the text", {**base, "q": PARA}),
        (
            "now: one sentence's attention_all",
            {**base, "q": "The cat is sleeping on the sofa.", "attention_all": True},
        ),
    ]:
        size, sec = post(s.url + "/translate", body)
        print(f"{name}: {size / 1024:.1f} KiB, {sec:.2f} s")
