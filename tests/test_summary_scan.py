"""A model call's summary read off its event by the compiled top-level key finder
(``_cellscan.key_value``) equals the typed decoder's read: on every event of data/ and the
corpus, on random objects (the key nested, repeated, escaped, absent, among values of every
kind) and on texts the finder must leave to the decoder.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest

import toolkit as tk
from toolkit.agents import model_cells, model_io
from toolkit.histories.columns.lazy import LazyExtra

ROOT = Path(__file__).resolve().parents[1]
compiled = pytest.mark.skipif(
    model_cells._key_value is None, reason="built without a C compiler: only the decoder exists"
)
KEY = b"userMetadata"


def _plain(spelt: Any) -> Any:
    """A ``userMetadata`` read, compared as bytes (UNSET as itself)."""
    return spelt if spelt is msgspec.UNSET else bytes(spelt)


def _decoded(text: bytes) -> Any:
    """What the typed decoder reads of ``text``: its userMetadata's bytes, UNSET, or the error."""
    try:
        return _plain(model_cells._USER_METADATA.decode(text).userMetadata)
    except msgspec.DecodeError as error:
        return type(error)


def _assert_found_as_decoded(text: bytes) -> bool:
    """key_value of ``text`` is the decoder's read where it gives one; True where it did."""
    found = model_cells._key_value(text, KEY)
    if found is None:
        return False
    assert (found or msgspec.UNSET) == _decoded(text), text
    return True


@compiled
def test_summaries_of_every_event_of_data_and_the_corpus(
        corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    extras = []
    for folder in (ROOT / "data", corpus / "histories"):
        events = tk.read_histories(folder, progress=False)[0]
        extras += [cell for cell in events["extra"].tolist() if type(cell) is LazyExtra]
    with_metadata = 0
    for extra in extras:
        spelt = model_cells._spelt_metadata(extra.raw)
        assert _plain(spelt) == _plain(model_cells._spelt_by_decoder(extra.raw))
        with_metadata += spelt is not msgspec.UNSET
    summaries = [model_io.summary_of(extra) for extra in extras]
    monkeypatch.setattr(model_cells, "_key_value", None)
    assert [model_io.summary_of(extra) for extra in extras] == summaries
    assert len(extras) > 5_000 and with_metadata > 500
    assert sum(s is not None for s in summaries) > 500


@compiled
def test_key_value_equals_the_decoder_on_random_objects() -> None:
    rng = random.Random(23)
    keys = ["userMetadata", "userMetadata", "usermetadata", "userMetadataX", "a", "", "é",
            'q"uote', "back\\slash"]  # fmt: skip

    def value(depth: int) -> Any:
        kind = rng.randrange(7 if depth < 3 else 4)
        if kind == 0:
            return "".join(rng.choice(["a", '"', "\\", "]", "}", "{", "é", " ", "\n", ",", ":"])
                           for _ in range(rng.randrange(0, 12)))  # fmt: skip
        if kind == 1:
            return rng.choice([0, -1.5, 12345678901234, 1e-7, True, False, None])
        if kind == 2:
            return "y" * rng.randrange(0, 130)
        if kind == 3:
            return rng.randrange(-1000, 1000)
        if kind in (4, 5):
            return {rng.choice(keys): value(depth + 1) for _ in range(rng.randrange(0, 4))}
        return [value(depth + 1) for _ in range(rng.randrange(0, 4))]

    found = 0
    for _ in range(3000):
        pairs = [(rng.choice(keys), value(0)) for _ in range(rng.randrange(0, 6))]
        for indent in (None, 1):
            body = ("," + ("\n" if indent else "")).join(
                json.dumps(k, ensure_ascii=rng.random() < 0.5) + rng.choice([":", " : ", ":\n"])
                + json.dumps(v, indent=indent, ensure_ascii=rng.random() < 0.5)
                for k, v in pairs)  # fmt: skip
            text = (rng.choice(["", " ", "\n"]) + "{" + body + "}" + rng.choice(["", "\n"]))
            found += _assert_found_as_decoded(text.encode())
    assert found > 2000  # most are found (escaped and repeated keys are left to the decoder)


@compiled
@pytest.mark.parametrize("text", [
    b'{"userMetadata":1,"userMetadata":2}',  # twice: the decoder says which counts
    b'{"user\\u004detadata":{"summary":1}}',  # an escaped key spelling it
    b'{"a\\"":1,"userMetadata":2}',  # any escaped key
    b'[{"userMetadata":1}]', b'"userMetadata"', b"", b"   ", b"null",  # no object
    b'{"userMetadata":1,}', b'{"userMetadata":1} x', b'{"userMetadata" 1}', b'{"a":1 "b":2}',
    b'{"userMetadata":}', b'{"a":1', b"{", b'{"userMetadata":1',
])  # fmt: skip
def test_key_value_leaves_what_it_cannot_say_to_the_decoder(text: bytes) -> None:
    assert model_cells._key_value(text, KEY) is None
    assert model_cells._spelt_metadata(text) == model_cells._spelt_by_decoder(text) or (
        _plain(model_cells._spelt_metadata(text))
        == _plain(model_cells._spelt_by_decoder(text)))  # fmt: skip


@compiled
@pytest.mark.parametrize("text", [
    b"{}", b" { } \n", b'{"a":{"userMetadata":1}}', b'{"a":"\\"userMetadata\\":1"}',
    b'{"userMetadata":null}', b'{"userMetadata" : {"summary":{"data":"eA=="}} }',
    b'{"eventId":"1","activityTaskScheduledEventAttributes":{"input":{"payloads":[{"data":"'
    + b"QUJD" * 100 + b'"}]}},"userMetadata":{"summary":{}}}',
    b'{"userMetadata":[1,{"x":"]}"}],"b":true}',
])  # fmt: skip
def test_key_value_finds_what_the_decoder_reads(text: bytes) -> None:
    assert _assert_found_as_decoded(text)


@compiled
def test_key_value_reads_buffers_and_refuses_the_rest() -> None:
    text = b'{"a":1,"userMetadata":{"summary":2}}'
    for buffer in (text, bytearray(text), memoryview(text), msgspec.Raw(text)):
        assert model_cells._key_value(buffer, KEY) == b'{"summary":2}'
    with pytest.raises(TypeError):
        model_cells._key_value("text", KEY)
    assert model_cells._spelt_metadata("{}") is msgspec.UNSET  # the decoder reads a str
