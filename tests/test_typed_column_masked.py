"""Nullable ``Int64`` / ``boolean`` columns built from a value array and a mask
(:func:`toolkit.histories.tables.common._masked`, its missing cells found by ``pd.isna``) equal
the per-value conversion: dtype, mask and values, or the conversion decides alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.histories.tables.common import _masked, _typed_column

CELLS = {
    "ints and nulls": [1, None, 3, pd.NA, 0, -5],
    "no nulls": [1, 2, 3],
    "all null": [None, pd.NA, None],
    "empty": [],
    "big": [2**63 - 1, None, -(2**63)],
    "beyond 64 bits": [2**64, None],
    "a NaN": [1, float("nan")],
    "a float": [1, 2.0],
    "a bool among ints": [1, True, None],
    "a numpy int": [1, np.int64(2)],
    "bools and nulls": [True, None, False, pd.NA],
    "an int among bools": [True, 1],
}


def _per_value(values: list[object], dtype: str) -> pd.Series:
    """The general conversion :func:`_typed_column` falls back to."""
    return pd.Series([None if v is None or v is pd.NA else v for v in values], dtype=dtype)


@pytest.mark.parametrize("dtype", ["Int64", "boolean"])
@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.parametrize("container", ["list", "array"])
def test_masked_columns_equal_the_per_value_conversion(
    name: str, dtype: str, container: str
) -> None:
    values = CELLS[name]
    given = values if container == "list" else np.array(values, dtype=object)
    try:
        expected = _per_value(values, dtype)
    except (TypeError, ValueError, OverflowError) as error:
        assert _masked(given, dtype) is None  # left to the conversion, which refuses it
        with pytest.raises(type(error)):
            _typed_column(given, dtype)
        return
    fast = _masked(given, dtype)
    if fast is not None:
        pd.testing.assert_series_equal(pd.Series(fast, copy=False), expected)
    pd.testing.assert_series_equal(_typed_column(given, dtype), expected)
