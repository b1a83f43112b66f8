"""``fields`` cells of JSON log lines, decoded on first use.

Decoding every attribute of a million JSON lines into dicts costs as much as reading the file, and
most investigations look at a few records' fields only. The JSON fast path therefore reads just
the header (time, level, message, logger) and leaves each record's ``fields`` as a
:class:`LazyFields` over its line: a read-only mapping that decodes the line the first time it is
read, with exactly the dict the line-by-line parser builds (:func:`classify_json`). It compares
equal to that dict, prints like it, pickles as it and exposes it as ``.value`` (like the history
loader's lazy cells).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import msgspec

from toolkit.logs.formats.jsonlog import classify_json, loads_json

__all__ = ["LazyFields"]


class LazyFields(msgspec.Struct, gc=False, eq=False):
    """The structured attributes of one JSON log line, decoded on first access.

    A msgspec struct without garbage-collector tracking: a million of them are cheap to create and
    add nothing to the collector's work (they hold a string and, once read, a decoded dict, so
    they can never be part of a reference cycle).

    Attributes
    ----------
    raw : str or pyarrow string array
        The JSON line, or an Arrow array of lines holding it at ``index`` (lines read from bytes
        stay in the block's array, shared with the frame's ``raw`` column).
    index : int
        Position in ``raw`` when it is an array; -1 when ``raw`` is the line.
    cache : dict or None
        The decoded attributes once read.
    """

    raw: Any
    index: int = -1
    cache: dict[str, Any] | None = None

    @property
    def value(self) -> dict[str, Any]:
        """The attributes as a plain dict (header keys removed, as for every JSON record)."""
        if self.cache is None:
            line = self.raw if self.index < 0 else self.raw[self.index].as_py()
            self.cache = classify_json(loads_json(line))[5]
        return self.cache

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __contains__(self, key: object) -> bool:
        return key in self.value

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get``."""
        return self.value.get(key, default)

    def keys(self) -> KeysView[str]:
        """``dict.keys``."""
        return self.value.keys()

    def items(self) -> ItemsView[str, Any]:
        """``dict.items``."""
        return self.value.items()

    def values(self) -> ValuesView[Any]:
        """``dict.values``."""
        return self.value.values()

    def copy(self) -> dict[str, Any]:
        """A plain (mutable) dict copy."""
        return dict(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyFields):
            return self.value == other.value
        return self.value == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.value,))

    def __copy__(self) -> dict[str, Any]:
        return dict(self.value)


Mapping.register(LazyFields)
