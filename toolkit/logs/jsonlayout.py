"""JSON record layouts: which signature keys a record has, and a msgspec decoder for them.

A JSON record's family, header keys and envelope status depend only on which of
:data:`~toolkit.logs.formats.jsonlog.SIGNATURE_KEYS` it has (its *layout*) and, for slog vs
logrus, on its level's spelling. For each layout met, a msgspec struct type is built whose fields
are exactly those keys: present ones required, absent ones typed so that their presence fails
decoding. Decoding a line with it therefore *checks* that the line has the same layout, and reads
only the header values (every other key is skipped inside msgspec).

Three decoders per layout, tried in this order (:data:`DECODERS`): strict with a text time (the
usual case: no per-record type checks afterwards), strict with a numeric time (zap's epoch
seconds), and loose (any JSON values, normalised like ``classify_json`` does). A strict layout
then learns its level, logger and message texts (:func:`learned`) and decodes them as ``Literal``
types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, NamedTuple

import msgspec

from toolkit.logs.formats.jsonlog import (
    LEVEL_KEYS,
    LOGGER_KEYS,
    MSG_KEYS,
    TS_KEYS,
    family_of,
)

__all__ = ["DECODERS", "DECODE_ERRORS", "NO_LITERALS", "Layout", "Literals", "build_layout",
           "decode_batch", "learned"]

#: Decoders tried on a line of a new layout: (strict, numeric time) pairs.
DECODERS = ((True, False), (True, True), (False, False))
#: Errors of a msgspec decode that mean "not a JSON record of this layout" (RecursionError:
#: nested too deep for the header value; UnicodeError: lone surrogates in text given as str).
DECODE_ERRORS = (msgspec.DecodeError, RecursionError, UnicodeError)
_MAX_LITERAL_TEXTS = 32  # more levels / loggers / messages in one layout: decoded as any text
_UNSUPPORTED = frozenset({"log", "resourceLogs", "MESSAGE"})  # envelopes, OTLP: the assembler's
_NonEmptyText = Annotated[str, msgspec.Meta(min_length=1)]
Literals = tuple[frozenset[str] | None, frozenset[str] | None, frozenset[str] | None]
#: Levels, loggers, messages: any text.
NO_LITERALS: Literals = (None, None, None)


class Layout(NamedTuple):
    """How to decode and read the lines of one layout."""

    decode: Callable[[str], Any]
    decode_lines: Callable[[str], list[Any]]  # one C call for a whole sub-block of lines
    ts: bool  # whether the header key is present (decoded as the attribute of that name)
    level: bool
    message: bool
    logger: bool
    family: str | None  # None: slog_json / logrus_json / json by the level's spelling
    strict: bool
    message_key: str | None
    order: tuple[str, ...]  # the signature keys, in the records' order
    literals: Literals  # strict layouts: the level / logger / message texts allowed (None: any)
    numeric_ts: bool  # strict layouts: the time is a number (epoch s/ms/µs/ns), not text


_PROBE_VALUES = {"level": "INFO", "fields": {}}  # values that take the paths that look further


class _Probe(dict):  # type: ignore[type-arg]
    """A stand-in record with a layout's keys that notes every key the decisions look at.

    The family, header and envelope decisions are trees of presence tests; keys no test on the
    path to this layout's answer looks at cannot change it, so only the keys noted here (and
    absent) need to be ruled out when decoding. Fewer struct fields make decoding cheaper.
    """

    def __init__(self, keys: frozenset[str]) -> None:
        super().__init__((key, _PROBE_VALUES.get(key)) for key in keys)
        self.seen: set[Any] = set()

    def __contains__(self, key: object) -> bool:
        self.seen.add(key)
        return super().__contains__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self.seen.add(key)
        return super().get(key, default)


def _first(keys: tuple[str, ...], present: Any) -> str | None:
    return next((k for k in keys if k in present), None)


def build_layout(order: tuple[str, ...], strict: bool, literals: Literals = NO_LITERALS,
                  numeric_ts: bool = False) -> Layout | None:
    """The decoders of one layout: its signature keys in ``order`` (the first record's).

    ``literals``: decode the level, the logger and the message as one of these texts (a
    ``Literal``) instead of any text. msgspec then hands back the same few string objects instead
    of a new one per record, which makes those columns markedly cheaper to build (and to free):
    structured loggers print a few constant messages and put what varies in attributes.
    ``numeric_ts``: the time is a JSON number (zap's epoch seconds), converted a column at a time.
    """
    probe = _Probe(frozenset(order))
    if [key for key in _UNSUPPORTED if key in probe]:
        return None
    header = {
        "ts": _first(TS_KEYS, probe), "level": _first(LEVEL_KEYS, probe),
        "message": _first(MSG_KEYS, probe), "logger": _first(LOGGER_KEYS, probe),
    }
    family = family_of(probe)
    if family == "rust_tracing_json":
        return None  # its family depends on the type of ``fields``, record by record
    levels, loggers, messages = literals if strict else NO_LITERALS
    level_type: Any = Literal[tuple(sorted(levels))] if levels else str
    logger_type: Any = Literal[tuple(sorted(loggers))] if loggers else str
    message_type: Any = Literal[tuple(sorted(messages))] if messages else str
    strict_types: dict[str | None, Any] = {
        header["ts"]: (int | float) if numeric_ts else _NonEmptyText,
        header["level"]: level_type, header["message"]: message_type,
        header["logger"]: logger_type | None,
    }
    fields: list[tuple[str, Any, Any]] = []
    attrs: dict[str, str] = {}
    role = {key: name for name, key in header.items() if key}
    for key in order:  # required, in the records' order (msgspec tries the next field first)
        attrs[key] = role.get(key, f"k{len(attrs)}")
        kind = strict_types.get(key, Any) if strict else Any
        fields.append((attrs[key], kind, msgspec.field(name=key)))
    for key in sorted(probe.seen - set(order)):  # looked at but absent: presence fails decoding
        absent = msgspec.field(default=msgspec.UNSET, name=key)
        fields.append((f"k{len(fields)}", msgspec.UnsetType, absent))
    struct = msgspec.defstruct("JsonHeader", fields, gc=False)
    present = {name: key is not None for name, key in header.items()}
    decoder = msgspec.json.Decoder(struct)
    return Layout(
        decode=decoder.decode,
        decode_lines=decoder.decode_lines,
        family=None if family in ("slog_json", "logrus_json") else family,
        strict=strict, message_key=header["message"], order=tuple(order),
        literals=(levels if header["level"] else None, loggers if header["logger"] else None,
                  messages if header["message"] else None),
        numeric_ts=strict and numeric_ts and header["ts"] is not None, **present,
    )


def learned(values: list[Any] | None, known: frozenset[str] | None) -> frozenset[str] | None:
    """The texts of a column and ``known`` ones, when few enough to decode as a Literal."""
    if values is None:
        return None
    texts = set(values).union(known or ())
    texts.discard(None)  # a logger may be null (a Literal | None type keeps accepting that)
    return frozenset(texts) if 0 < len(texts) <= _MAX_LITERAL_TEXTS else None


def decode_batch(layout: Layout, joined: Any, count: int) -> list[Any] | None:
    """The headers of ``count`` lines decoded in one call, or None when they do not all fit."""
    try:
        heads = layout.decode_lines(joined)
    except DECODE_ERRORS:
        return None
    return heads if len(heads) == count else None
