"""A model call's summary read off its event by the compiled top-level key finder
(``_cellscan.key_value``) equals the typed decoder's read: on every event of data/ and the
corpus, on random objects (the key nested, repeated, escaped, absent, among values of every
kind) and on texts the finder must leave to the decoder.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

import toolkit as tk
from toolkit.agents import model_cells, model_io
from toolkit.histories.columns.lazy import LazyExtra
from toolkit.histories.payloads import decode_payload

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
    read = sum(model_cells._summary_data(extra.raw) is not None for extra in extras)
    monkeypatch.setattr(model_cells, "_summary_data", None)
    assert [model_io.summary_of(extra) for extra in extras] == summaries
    monkeypatch.setattr(model_cells, "_key_value", None)
    assert [model_io.summary_of(extra) for extra in extras] == summaries
    assert len(extras) > 5_000 and with_metadata > 500
    assert sum(s is not None for s in summaries) > 500 and read > 500


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


def _extra(text: bytes) -> LazyExtra:
    """An extra cell of a raw JSON event (as the reader makes it) whose raw text is ``text``."""
    return LazyExtra(SimpleNamespace(json_events=[msgspec.Raw(text)]), 0, None)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PLAIN = _b64("json/plain")
SAME = _b64("json/plaiN")  # another encoding, as long


@compiled
def test_summary_data_equals_the_typed_route_on_random_summaries(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Summaries of the usual shape and of others near it (members reordered or added, spaces,
    another encoding, damaged base64, escapes, names twice): the compiled read gives what the
    typed route gives, and where it declines that route reads them."""
    rng = random.Random(31)

    def data() -> str:
        return rng.choice([_b64('"lab_agent"'), _b64('{"a": [1, "é"]}'), _b64("not json"), "",
                           _b64("x")[:-1], "ab\\/cd==", "!!!!", _b64('"' + "y" * 200 + '"'),
                           "QUJD\\u003d", "====", "QQ==QQ=="])  # fmt: skip

    def payload() -> str:
        encoding = rng.choice([PLAIN, PLAIN, PLAIN, _b64("x"), SAME])
        members = [f'"metadata": {{"encoding": "{encoding}"'
                   + rng.choice(["", "", ', "messageType": "eA=="']) + "}",
                   f'"data": "{data()}"']  # fmt: skip
        if rng.random() < 0.1:
            members.pop(rng.randrange(2))
        if rng.random() < 0.1:
            members.append(rng.choice(['"data": 1', '"extra": {}', '"metadata": {}']))
        rng.shuffle(members)
        return "{" + rng.choice([",", " , ", ",\n"]).join(members) + "}"

    def metadata() -> str:
        members = [f'"summary": {payload()}']
        if rng.random() < 0.3:
            members.append('"details": ' + rng.choice(["{}", "[1, {\"x\": \"}\"}]", "null"]))
        if rng.random() < 0.05:
            members.append(rng.choice(['"summary": {}', '"other": 1', '"sum\\u006dary": 1']))
        rng.shuffle(members)
        return "{" + ", ".join(members) + "}"

    found = 0
    for _ in range(3000):
        members = ['"eventId": "5"', '"activityTaskScheduledEventAttributes": {"input": '
                   f'{{"payloads": [{{"data": "{_b64("{}" * 50)}"}}]}}}}']  # fmt: skip
        if rng.random() < 0.97:
            members.append(f'"userMetadata": {metadata()}')
        if rng.random() < 0.03:
            members.append('"userMetadata": {"summary": null}')
        rng.shuffle(members)
        text = ("{" + rng.choice([",", ",\n  "]).join(members) + "}").encode()
        compiled_read = model_cells._summary_data(text)
        found += compiled_read is not None
        cell = _extra(text)
        with monkeypatch.context() as patch:
            patch.setattr(model_cells, "_summary_data", None)
            try:
                expected: Any = model_io.summary_of(cell)
            except Exception as error:
                expected = type(error)
        try:
            got: Any = model_io.summary_of(_extra(text))
        except Exception as error:
            got = type(error)
        assert got == expected, text
        if compiled_read is not None:  # and it is the payload's value as decode_payload reads it
            summary = json.loads(text)["userMetadata"]["summary"]
            assert got == decode_payload(summary), text
    assert found > 400  # the usual shape (most others declined)


ENCODING = b'"metadata":{"encoding":"' + PLAIN.encode() + b'"}'
USUAL = b'{"userMetadata":{"summary":{' + ENCODING + b',"data":"eA=="}}'  # (its "}" to come)


@compiled
@pytest.mark.parametrize("text", [
    USUAL + b',"userMetadata":{}}',  # twice
    USUAL[:-1] + b',"summary":{}}}',
    USUAL.replace(ENCODING, ENCODING[:-1] + b',"encoding":"' + PLAIN.encode() + b'"}') + b"}",
    USUAL + b"} x",  # no document after it
    USUAL.replace(b"eA==", b"eA=") + b"}", USUAL.replace(b'"eA=="', b"eA") + b"}",
    USUAL.replace(b',"data":"eA=="', b"") + b"}",  # no data
    b'{"userMetadata":{"details":{}}}', b'{"userMetadata":null}', b"{}", b"[]", b"",
    USUAL.replace(b"userMetadata", b"user_metadata") + b"}",
])  # fmt: skip
def test_summary_data_leaves_other_shapes_to_the_typed_route(text: bytes) -> None:
    assert model_cells._summary_data(text) is None
    assert model_cells._summary_data(USUAL + b"}") == b"x"  # (the usual one: read)
