"""activity_turns' codes off objects' addresses and sorted keys equal what they replace:
pd.factorize (use_na_sentinel=False) and np.unique, on texts shared or not as objects, missing
values, other objects, arrays that are no one run of memory, and keys in and out of order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.agents.activity_turns import _addresses, _source_codes, _text_codes, _unique_keys


def _copies(texts: list[object]) -> np.ndarray:
    """The values as an object array, each text a distinct object (no two cells share one)."""
    held = np.empty(len(texts), dtype=object)
    held[:] = [("".join(list(t)) if isinstance(t, str) else t) for t in texts]
    return held


CASES = [
    ["b", "a", "b", "c", "a"], ["x"], ["a", "a", "a"], ["a", None, "b"], [None, np.nan, "a"],
    ["a", 1, "a", 1.0], [np.nan], ["", "", "é", "é"], [b"a", "a"],
    ["Started", "Signaled", "Started", "Done"], ["Started", None, "Started"],
]  # fmt: skip


@pytest.mark.parametrize("values", CASES, ids=str)
@pytest.mark.parametrize("shared", [True, False])
def test_text_codes_are_factorizes(values: list[object], shared: bool) -> None:
    cells = np.array(values, dtype=object) if shared else _copies(values)
    codes, names = _text_codes(cells)
    expected, uniques = pd.factorize(cells, use_na_sentinel=False)
    np.testing.assert_array_equal(codes, expected)
    assert codes.dtype == expected.dtype
    assert names == uniques.tolist() or (
        len(names) == len(uniques) and all(
            a == b or (a != a and b != b) for a, b in zip(names, uniques.tolist(), strict=True)))


def test_text_codes_of_texts_shared_and_not_at_random() -> None:
    rng = np.random.default_rng(5)
    words = [f"Event{k}" for k in range(12)]
    for _ in range(200):
        picks = rng.integers(0, 12, size=int(rng.integers(1, 300))).tolist()
        cells = np.empty(len(picks), dtype=object)
        # some cells share one object per text, others hold copies of it
        cells[:] = [words[p] if rng.random() < 0.7 else "".join(list(words[p])) for p in picks]
        codes, names = _text_codes(cells)
        expected, uniques = pd.factorize(cells, use_na_sentinel=False)
        np.testing.assert_array_equal(codes, expected)
        assert names == uniques.tolist()


def test_addresses_only_of_one_run_of_memory() -> None:
    cells = np.array(["a", "b", "a", "c"], dtype=object)
    assert _addresses(cells[::2]) is None
    assert _addresses(cells[:0]) is None
    found = _addresses(cells)
    assert found is not None and found[0] == found[2] == id(cells[0]) and found[1] != found[0]
    codes, names = _text_codes(cells[::2])  # factorize's own route
    assert codes.tolist() == [0, 0] and names == ["a"]


@pytest.mark.parametrize("values", [
    ["a", "a", "b", "b", "c"], ["a", "b", "a"], [None, None, "a"], ["x"], ["a", "a", 1, 1],
    ["run1", "run1", "run2", "run2"], ["run1", "run2", "run1"],
], ids=str)  # fmt: skip
def test_source_codes_of_copied_texts(values: list[object]) -> None:
    # each row its own object: the change of object is no change of source
    sources = _copies(values)
    if len(values) == 4 and values[0] == "run1":
        assert sources[0] is not sources[1]
    expected = pd.factorize(sources, use_na_sentinel=False)[0]
    np.testing.assert_array_equal(_source_codes(sources), expected)


@pytest.mark.parametrize("keys", [
    [], [3], [0, 0, 1, 1, 1, 5], [5, 5, 1, 1], [0, 2, 1, 2], [7, 7, 7], [1, 2, 3, 4],
], ids=str)  # fmt: skip
def test_unique_keys_are_uniques(keys: list[int]) -> None:
    values = np.array(keys, dtype=np.int64)
    found = _unique_keys(values)
    distinct, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    for got, want in zip(found, (distinct, first, inverse.reshape(-1)), strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
