"""``attenzione serve``: LibreTranslate's HTTP API, our extensions, and the live page.

Layout: :mod:`.fields` reads any request shape, :mod:`.service` checks and answers,
:mod:`.routing` picks each text's model (or none: already in the target language),
:mod:`.batcher` is the one inference worker, :mod:`.text` cuts text (and HTML) into
sentences and puts translations back, :mod:`.answer` builds each text's answer,
:mod:`.alignment` shapes attention, :mod:`.language` detects languages, :mod:`.files` keeps
translated documents on disk, :mod:`.limits` holds keys and rate limits, :mod:`.spec` the
OpenAPI document, :mod:`.page` the page and docs, :mod:`.app` the routes. Only :mod:`.batcher`
calls the :class:`~attenzione.translator.translator.Translator`; nothing here touches the model.
"""

from attenzione.serve.app import create_app
from attenzione.serve.batcher import Batcher, Decoding, QueueFull
from attenzione.serve.language import Languages
from attenzione.serve.service import Service, Settings

__all__ = ["Batcher", "Decoding", "Languages", "QueueFull", "Service", "Settings", "create_app"]
