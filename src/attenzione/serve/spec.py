"""The OpenAPI 3.0 document of the service (``GET /spec``), written out rather than generated.

Why by hand: the endpoints accept JSON, urlencoded and multipart bodies and the query
string alike (:mod:`.fields`), which FastAPI's generator cannot describe; and LibreTranslate's
own document is invalid (LT#423, #483). This one is checked by the tests — schemathesis
generates requests from it and every answer must match the responses it declares. It stays
OpenAPI 3.0 so that the Swagger UI shipped by ``swagger-ui-bundle`` renders it.

Our extensions (``scores``, ``attention``, ``attention_layer``, ``attention_head``,
``attention_all``) are optional fields of the same ``/translate`` request; a client that does
not know them never sees them in an answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attenzione.documents import FORMATS

if TYPE_CHECKING:
    from attenzione.serve.service import Service

_ERROR = {
    "type": "object",
    "properties": {"error": {"type": "string", "description": "What went wrong."}},
    "required": ["error"],
}
_ERRORS = {
    "400": "Invalid request (missing or malformed field, unsupported language, over a limit)",
    "403": "Invalid API key",
    "408": "The body did not arrive within the server's read timeout (connection closed)",
    "413": "Request body too large",
    "429": "Slow down: over the per-minute request limit, or too many wrong API keys",
    "500": "Translation error",
    "503": "The translation queue is full (retry shortly) or the server is stopping",
}
_BINARY = {"type": "string", "format": "binary"}
_TEXTS = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
# As LibreTranslate (`if not q`: 400 "missing q"), an empty q or an empty list is refused;
# an empty text inside a list is fine (its translation is "").
_Q = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ]
}
_DETECTION = {
    "type": "object",
    "properties": {
        "confidence": {"type": "number", "minimum": 0, "maximum": 100},
        "language": {"type": "string"},
    },
    "required": ["confidence", "language"],
}
_TRANSLATE_FIELDS: dict[str, Any] = {
    "q": {
        **_Q,
        "description": "Text to translate, or a list of texts (not empty). In a form or the "
        "query string, line breaks become `\\n` (`\\r\\n`, `\\r`), as LibreTranslate.",
        "example": "Hello!",
    },
    "source": {
        "type": "string",
        "description": "Source language code, or `auto` to detect it (each text of a list "
        "on its own; a text already in the target language comes back as it is).",
        "example": "en",
    },
    "target": {"type": "string", "description": "Target language code.", "example": "it"},
    "format": {
        "type": "string",
        "enum": ["text", "html"],
        "default": "text",
        "description": "`html`: translate the text between tags and keep the markup.",
    },
    "alternatives": {
        "type": "integer",
        "minimum": 0,
        "default": 0,
        "description": "How many alternative translations to return (not for html). As "
        'LibreTranslate, any value Python\'s `int()` takes: `2.5` → 2, `true` → 1, `"2"` → 2.',
    },
    "api_key": {"type": "string", "description": "API key (when the server requires one)."},
    "scores": {
        "type": "boolean",
        "default": False,
        "description": "Extension: per-sentence confidence — the mean log-probability per "
        "token of the translation (0 = certain; exp() of it is the geometric-mean token "
        "probability) — and the alternatives' confidence.",
    },
    "attention": {
        "type": "boolean",
        "default": False,
        "description": "Extension: per sentence, the source and target tokens, the "
        "cross-attention matrix (target × source) and a word alignment derived from it.",
    },
    "attention_layer": {
        "type": "integer",
        "description": "Extension: the decoder layer whose cross-attention to return "
        "(default: the last).",
    },
    "attention_head": {
        "type": "integer",
        "description": "Extension: one head of that layer (default: the average of its heads).",
    },
    "prefix": {
        "type": "string",
        "description": "Extension: words the translation must begin with (one text only); "
        "decoding continues after them.",
    },
    "attention_all": {
        "type": "boolean",
        "default": False,
        "description": "Extension: also every attention map of every kind, layer and head "
        "(`maps`, what the page at / draws). Large.",
    },
}


_TRACE_FIELDS: dict[str, Any] = {
    "q": {"type": "string", "minLength": 1, "description": "One sentence.", "example": "Hi!"},
    "beam": {
        "type": "integer",
        "minimum": 1,
        "description": "Beam size (1: greedy decoding; default: the server's).",
    },
    "top_k": {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "default": 10,
        "description": "How many of the most likely next pieces each step lists.",
    },
    "prefix": {
        "type": "string",
        "description": "Words the translation must begin with; decoding continues after them.",
    },
    "ablate": {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        "description": "Parts switched off while translating: `KIND:LAYER.HEAD` (KIND encoder, "
        "decoder or cross; LAYER and HEAD a number or `*`: `cross:2.1`, `encoder:0.*`, "
        "`cross:*`) or `positions`; comma separated.",
    },
    "explain": {
        "type": "boolean",
        "default": False,
        "description": "Also one head's arithmetic for every query token (`explain`).",
    },
    "explain_kind": {"type": "string", "enum": ["encoder", "decoder", "cross"]},
    "explain_layer": {"type": "integer", "description": "Default: the last layer."},
    "explain_head": {"type": "integer", "default": 0},
}


_INSIDE_FIELDS: dict[str, Any] = {
    "q": _TRACE_FIELDS["q"],
    "beam": _TRACE_FIELDS["beam"],
    "reference": {
        "type": "string",
        "description": "A translation to teacher-force instead of the model's own.",
    },
}
_JOURNEY_FIELDS: dict[str, Any] = {
    **_INSIDE_FIELDS,
    "token": {
        "type": "integer",
        "minimum": 0,
        "default": 0,
        "description": "The decoder position followed: fed piece `token` of [start] + the "
        "translation, it predicts the next.",
    },
}
_TRAINING_FIELDS: dict[str, Any] = {
    "q": _TRACE_FIELDS["q"],
    "reference": {**_INSIDE_FIELDS["reference"], "minLength": 1},
    "other": {
        "type": "string",
        "description": "The second sentence of the padded batch whose masks are drawn "
        "(default: the first half of q's words).",
    },
}
_OCCLUSION_FIELDS: dict[str, Any] = {
    **_INSIDE_FIELDS,
    "words": {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        "description": "The source words to remove, one at a time (comma separated; default: "
        "each word of q).",
    },
}

_WORDS = (
    "a word (read by the side's tokenizer; several pieces: their rows' mean) or a piece (`▁king`)"
)
_EMBEDDINGS_FIELDS: dict[str, Any] = {
    "word": {
        "type": "string",
        "description": f"Its nearest pieces: {_WORDS}.",
        "example": "king",
    },
    "analogy": {
        "oneOf": [
            {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3},
            {"type": "string"},
        ],
        "description": f"[a, b, c] (or `a,b,c`): the pieces nearest to a − b + c, each {_WORDS}.",
        "example": ["king", "man", "woman"],
    },
    "similarity": {
        "oneOf": [
            {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
            {"type": "string"},
        ],
        "description": "[a, b] (or `a,b`): their cosine similarity.",
    },
    "k": {
        "type": "integer",
        "minimum": 1,
        "maximum": 200,
        "default": 10,
        "description": "How many pieces to list (word, analogy).",
    },
    "side": {
        "type": "string",
        "enum": ["source", "target"],
        "default": "source",
        "description": "The source or the target embedding table (one table when the model "
        "shares them: `table.shared`).",
    },
}


def _inside(
    summary: str,
    description: str,
    op: str,
    fields: dict[str, Any],
    required: list[str],
    answer: dict[str, Any],
    common: dict[str, Any],
) -> dict[str, Any]:
    """The path entry of one of the extensions that look inside the model for one sentence."""
    return {
        "post": {
            "summary": f"Extension: {summary}",
            "description": description,
            "operationId": op,
            "requestBody": _body({**fields, **common}, required),
            "responses": {
                "200": _json(answer, summary[0].upper() + summary[1:]),
                **_errors("400", "403", "408", "413", "429", "500", "503"),
            },
        }
    }


def _body(fields: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": fields, "required": required}
    return {
        "required": True,
        "description": "JSON, urlencoded or multipart form fields; the same fields may also "
        "come in the query string. A list `q` may be sent as repeated form fields.",
        "content": {
            "application/json": {"schema": schema},
            "application/x-www-form-urlencoded": {"schema": schema},
            "multipart/form-data": {"schema": schema},
        },
    }


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: str) -> dict[str, Any]:
    return {c: _json({"$ref": "#/components/schemas/Error"}, _ERRORS[c]) for c in codes}


def openapi_spec(service: Service) -> dict[str, Any]:
    """The document for this server: its languages, its limits."""
    langs = service.languages
    fields = dict(_TRANSLATE_FIELDS)
    targets = list(dict.fromkeys(t for _, t in langs.pairs))
    fields["source"] = {**fields["source"], "enum": [*langs.sources(), "auto"]}
    fields["target"] = {**fields["target"], "enum": targets}
    if service.settings.alternatives_limit != -1:
        fields["alternatives"] = {
            **fields["alternatives"],
            "maximum": service.settings.alternatives_limit,
        }
    scores = {
        "type": "object",
        "properties": {
            "confidence": {"type": "number"},
            "alternatives": {"type": "array", "items": {"type": "number"}},
            "sentences": {"type": "array", "items": {"type": "object"}},
        },
    }
    translation = {
        "type": "object",
        "properties": {
            "translatedText": _TEXTS,
            "alternatives": {"type": "array", "items": {}},
            "detectedLanguage": {"oneOf": [_DETECTION, {"type": "array", "items": _DETECTION}]},
            "scores": {"oneOf": [scores, {"type": "array", "items": scores}]},
            "attention": {
                "type": "array",
                "items": {},
                "description": "Per sentence (a list per text for a list q): source_tokens, "
                "target_tokens, layer, head, weights (target × source), alignment "
                "{source_words, target_words, pairs, pharaoh}, and with attention_all `maps`; "
                "null for a blank sentence or one too long to show whole.",
            },
        },
        "required": ["translatedText"],
    }
    trace = {
        "type": "object",
        "properties": {
            "translation": {"type": "string"},
            "source": {"type": "string"},
            "pieces": {"type": "array", "items": {"type": "string"}},
            "method": {"type": "string"},
            "beam": {"type": "integer"},
            "prefix": {"type": "string"},
            "ablate": {"type": "array", "items": {"type": "string"}},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "integer"},
                        "prefix": {"type": "array", "items": {"type": "string"}},
                        "chosen": {"type": "string"},
                        "chosen_id": {"type": "integer"},
                        "forced": {"type": "boolean"},
                        "top": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "piece": {"type": "string"},
                                    "id": {"type": "integer"},
                                    "logit": {"type": "number"},
                                    "logprob": {"type": "number"},
                                },
                                "required": ["piece", "id", "logit", "logprob"],
                            },
                        },
                        "cross_attention": {"type": "array", "items": {}},
                        "self_attention": {"type": "array", "items": {}},
                    },
                    "required": ["step", "chosen", "top"],
                },
            },
            "beams": {"type": "array", "items": {"type": "object"}},
            "path": {"type": "array", "items": {"type": "integer"}},
            "attention": {"type": "object"},
            "explain": {"type": "object"},
        },
        "required": ["translation", "steps"],
    }
    common = {
        "source": fields["source"],
        "target": fields["target"],
        "api_key": fields["api_key"],
    }
    journey = {
        "type": "object",
        "properties": {
            "token": {"type": "integer"},
            "input_piece": {"type": "string"},
            "predicted_piece": {"type": "string"},
            "largest_check": {"type": "number"},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "where": {"type": "string"},
                        "formula": {"type": "string"},
                        "shape": {"type": "string"},
                        "values": {},
                        "check": {"type": "number", "nullable": True},
                    },
                    "required": ["name", "where", "values", "check"],
                },
            },
        },
        "required": ["token", "steps", "largest_check"],
    }
    training = {
        "type": "object",
        "properties": {
            "positions": {"type": "array", "items": {"type": "object"}},
            "loss": {"type": "number"},
            "nll": {"type": "number"},
            "smoothing": {"type": "number"},
            "cached_check": {"type": "number"},
            "masks": {"type": "object"},
        },
        "required": ["positions", "loss", "masks"],
    }
    occlusion = {
        "type": "object",
        "properties": {
            "words": {"type": "array", "items": {"type": "string"}},
            "targets": {"type": "array", "items": {"type": "string"}},
            "importance": {"type": "array", "items": {}},
            "heads": {"type": "array", "items": {"type": "object"}},
        },
        "required": ["words", "targets", "importance"],
    }
    piece_fields: dict[str, Any] = {"piece": {"type": "string"}, "id": {"type": "integer"}}
    piece = {"type": "object", "properties": piece_fields, "required": ["piece", "id"]}
    embeddings = {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["nearest", "analogy", "similarity"]},
            "table": {
                "type": "object",
                "properties": {
                    "side": {"type": "string", "enum": ["source", "target"]},
                    "language": {"type": "string", "nullable": True},
                    "rows": {"type": "integer"},
                    "width": {"type": "integer"},
                    "dtype": {"type": "string"},
                    "shared": {"type": "boolean"},
                    "tied": {"type": "boolean"},
                    "about": {"type": "string"},
                },
                "required": ["side", "rows", "width", "shared", "tied"],
            },
            "queries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "pieces": {"type": "array", "items": piece},
                        "mean": {"type": "boolean"},
                    },
                    "required": ["text", "pieces", "mean"],
                },
            },
            "formula": {"type": "string"},
            "k": {"type": "integer"},
            "excluded": {"type": "array", "items": {"type": "string"}},
            "neighbours": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        **piece_fields,
                        "cosine": {"type": "number", "minimum": -1, "maximum": 1},
                    },
                    "required": ["piece", "id", "cosine"],
                },
            },
            "cosine": {"type": "number", "minimum": -1, "maximum": 1},
        },
        "required": ["kind", "table", "queries", "formula"],
    }
    language = {
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "name": {"type": "string"},
            "targets": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["code", "name", "targets"],
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "attenzione",
            "version": "0.1.0",
            "description": "LibreTranslate-compatible translation "
            f"({', '.join(f'{s}→{t}' for s, t in langs.pairs)}) with a Transformer written "
            "from first "
            "principles, plus confidence scores and attention maps on request. "
            'Errors are `{"error": "…"}`.',
        },
        "paths": {
            "/translate": {
                "post": {
                    "summary": "Translate text",
                    "operationId": "translate",
                    "requestBody": _body(fields, ["q", "source", "target"]),
                    "responses": {
                        "200": _json(translation, "Translated text(s)"),
                        **_errors("400", "403", "408", "413", "429", "500", "503"),
                    },
                }
            },
            "/trace": {
                "post": {
                    "summary": "Extension: one sentence's decoding, step by step",
                    "description": "What the model saw and chose at every decoding step: the "
                    "`top_k` next pieces with their logits and log-probabilities, the piece "
                    "chosen, the step's cross- and self-attention rows, and for beam search "
                    "the tree of hypotheses (kept, finished, pruned). Recorded while the "
                    "sentence is translated as `/translate` translates it (same search).",
                    "operationId": "trace",
                    "requestBody": _body(
                        {
                            **_TRACE_FIELDS,
                            "source": fields["source"],
                            "target": fields["target"],
                            "api_key": fields["api_key"],
                        },
                        ["q", "source", "target"],
                    ),
                    "responses": {
                        "200": _json(trace, "The decoding trace"),
                        **_errors("400", "403", "408", "413", "429", "500", "503"),
                    },
                }
            },
            "/journey": _inside(
                "one token's way through the whole model",
                "Each step of one decoder position's computation, from its piece's embedding "
                "to the softmax over the vocabulary, with the model's own numbers: `steps`, "
                "each with a `name` (embedding, positional encoding, query, key, value, "
                "scores, softmax, concatenated heads, W^O, residual, layer norm, "
                "feed-forward, logits…), its `values` and `check`, the largest difference "
                "from the value the model itself computed.",
                "journey",
                _JOURNEY_FIELDS,
                ["q", "source", "target"],
                journey,
                common,
            ),
            "/training": _inside(
                "the training view of a sentence and its reference",
                "The reference teacher-forced as training does: at each position the piece "
                "fed, the reference piece, its probability, `loss` (the trainer's label-"
                "smoothed loss), and whether greedy decoding would choose otherwise; "
                "`cached_check`, how far step-by-step decoding on the K/V cache is from the "
                "full pass; `masks`, the three masks of a padded batch of q and `other`.",
                "training",
                _TRAINING_FIELDS,
                ["q", "reference", "source", "target"],
                training,
                common,
            ),
            "/occlusion": _inside(
                "occlusion attribution beside every head's cross-attention",
                "For each source word, the change of each target piece's log-probability "
                "when the word is removed (`importance`), and per decoder layer and head its "
                "cross-attention summed over each word with its agreement with the "
                "importance (`top1`, `correlation`).",
                "occlusion",
                _OCCLUSION_FIELDS,
                ["q", "source", "target"],
                occlusion,
                common,
            ),
            "/embeddings": _inside(
                "the model's own embedding space",
                "Cosine similarity over the rows of the model's embedding table (the source "
                "or the target one; `table` says whether they are one shared table and tied "
                "to the output layer): a `word`'s nearest pieces, an `analogy`'s answers "
                "(the pieces nearest to ê(a) − ê(b) + ê(c), unit vectors) or the "
                "`similarity` of two words, in float64 from the model's fp32 rows. A word of "
                "several pieces is their rows' mean (`queries` lists them); the query's own "
                "pieces and the specials are never listed. A word the tokenizer reads with "
                "`<unk>` is a 400.",
                "embeddings",
                _EMBEDDINGS_FIELDS,
                ["source", "target"],
                embeddings,
                common,
            ),
            "/detect": {
                "post": {
                    "summary": "Detect the language of a text",
                    "operationId": "detect",
                    "requestBody": _body(
                        {"q": _TRANSLATE_FIELDS["q"], "api_key": _TRANSLATE_FIELDS["api_key"]},
                        ["q"],
                    ),
                    "responses": {
                        "200": _json(
                            {
                                "anyOf": [
                                    {"type": "array", "items": _DETECTION},
                                    {
                                        "type": "array",
                                        "items": {"type": "array", "items": _DETECTION},
                                    },
                                ]
                            },
                            "The languages of the text (the server's always among them), most "
                            "likely first (confidence 0–100); for a list q, one such list per "
                            "item",
                        ),
                        **_errors("400", "403", "408", "413", "429"),
                    },
                }
            },
            "/translate_file": {
                "post": {
                    "summary": "Translate a document, keeping its formatting",
                    "description": "Multipart upload of one `file` ("
                    + ", ".join(sorted(FORMATS))
                    + "); bold, italic and links are kept. The answer names where to download "
                    "the translation; it is removed after a while. 403 when the server has "
                    "files turned off (`/frontend/settings`: `filesTranslation`).",
                    "operationId": "translateFile",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "file": {"type": "string", "format": "binary"},
                                        "source": fields["source"],
                                        "target": fields["target"],
                                        "api_key": fields["api_key"],
                                    },
                                    "required": ["file", "source", "target"],
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {"translatedFileUrl": {"type": "string"}},
                                "required": ["translatedFileUrl"],
                            },
                            "Where to download the translated document",
                        ),
                        **_errors("400", "403", "408", "413", "429", "500", "503"),
                    },
                }
            },
            "/download_file/{name}": {
                "get": {
                    "summary": "A translated document, by the name /translate_file gave",
                    "operationId": "downloadFile",
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "The translated document",
                            "content": {
                                "application/octet-stream": {
                                    "schema": {"type": "string", "format": "binary"}
                                }
                            },
                        },
                        "404": _json(
                            {"$ref": "#/components/schemas/Error"}, "No such file (or removed)"
                        ),
                    },
                }
            },
            "/suggest": {
                "post": {
                    "summary": "Suggest a better translation (disabled on this server)",
                    "description": "As LibreTranslate with suggestions off "
                    "(`/frontend/settings` says `suggestions: false`): always 403.",
                    "operationId": "suggest",
                    "requestBody": _body(
                        {
                            "q": {"type": "string", "description": "Original text."},
                            "s": {"type": "string", "description": "Suggested translation."},
                            "source": {"type": "string"},
                            "target": {"type": "string"},
                        },
                        ["q", "s", "source", "target"],
                    ),
                    "responses": {
                        "403": _json(
                            {"$ref": "#/components/schemas/Error"},
                            "Suggestions are disabled on this server.",
                        ),
                        **_errors("408", "413"),
                    },
                }
            },
            "/languages": {
                "get": {
                    "summary": "The languages and pairs the loaded model translates",
                    "operationId": "languages",
                    "responses": {"200": _json({"type": "array", "items": language}, "Languages")},
                }
            },
            "/frontend/settings": {
                "get": {
                    "summary": "Settings for front ends (limits, keys, default languages)",
                    "operationId": "frontendSettings",
                    "responses": {"200": _json({"type": "object"}, "Settings")},
                }
            },
            "/health": {
                "get": {
                    "summary": "Liveness, requests in flight, the worker's batching counters and "
                    "the models loaded",
                    "operationId": "health",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "status": {"type": "string"},
                                    "in_flight_requests": {"type": "integer"},
                                    "worker": {"type": "object"},
                                    "models": {
                                        "type": "object",
                                        "properties": {
                                            "loaded": {
                                                "type": "array",
                                                "items": {"type": "string"},
                                            },
                                            "known": {"type": "array", "items": {"type": "string"}},
                                            "through": {"type": "object"},
                                        },
                                    },
                                },
                                "required": ["status"],
                            },
                            "OK",
                        )
                    },
                }
            },
        },
        "components": {"schemas": {"Error": _ERROR}},
    }
