"""iso_to_utc_ns: Arrow's ISO-8601 parse, answered only where it equals the pandas path.

The reference is what toolkit.read_logs does with a ``ts`` column of texts: one
``pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce")`` for UTC; for another zone,
texts with an offset the same way and naive texts localized with ``ambiguous="NaT",
nonexistent="shift_forward"``; then datetime64[ns] in UTC. The fast path must return that
exactly or None.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.logs.isotime import iso_to_utc_ns

ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"]


@functools.lru_cache(maxsize=4096)
def _has_offset(text: str | None) -> bool:
    if text is None:
        return False
    one = pd.to_datetime([text], format="ISO8601", errors="coerce")
    return one.tz is not None


def pandas_reference(texts: list[str | None], tz: str) -> np.ndarray | None:
    """The pandas path's datetime64[ns] UTC values, or None where that path raises."""
    try:
        if tz == "UTC":
            parsed = pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce")
        else:
            aware = np.array([_has_offset(t) for t in texts], dtype=bool)
            arr = np.array(texts, dtype=object)
            out = pd.Series(pd.NaT, index=range(len(texts)), dtype="datetime64[ns, UTC]")
            if aware.any():
                out[aware] = pd.to_datetime(arr[aware], format="ISO8601", utc=True,
                                            errors="coerce")
            if (~aware).any():
                naive = pd.to_datetime(arr[~aware], format="ISO8601", errors="coerce")
                local = naive.tz_localize(tz, ambiguous="NaT", nonexistent="shift_forward")
                out[~aware] = local.tz_convert("UTC")
            parsed = out
        index = pd.DatetimeIndex(parsed)
        return index.tz_convert("UTC").tz_localize(None).as_unit("ns").to_numpy()
    except (ValueError, TypeError, OverflowError):  # OutOfBoundsDatetime is a ValueError
        return None


def assert_none_or_equal(texts: list[str | None], tz: str = "UTC") -> np.ndarray | None:
    fast = iso_to_utc_ns(texts, tz)
    if fast is None:
        return None
    expected = pandas_reference(texts, tz)
    assert expected is not None, f"pandas path fails on {texts!r} but the fast path answered"
    assert fast.dtype == np.dtype("datetime64[ns]")
    assert fast.shape == (len(texts),)
    mismatch = np.flatnonzero(fast.view(np.int64) != expected.view(np.int64))
    assert mismatch.size == 0, [(texts[i], fast[i], expected[i]) for i in mismatch]
    return fast


# --- (1) edge cases ----------------------------------------------------------------------------

GOOD = "2026-09-27T10:00:01.123Z"
EDGE_TEXTS = [
    # separators and decimal marks
    "2026-09-27 10:00:01,123", "2026-09-27T10:00:01,123Z", "2026-09-27 10:00:01.123Z",
    "2026-09-27t10:00:01Z", "2026-09-27T10:00:01z", "2026-09-27_10:00:01Z", "2026-09-2710:00:01Z",
    "2026-09-27  10:00:01Z", "2026-09-27T10:00:01.Z", "2026-09-27T10:00:01.123 Z",
    # fraction lengths
    "2026-09-27T10:00:01.1Z", "2026-09-27T10:00:01.123456789Z", "2026-09-27T10:00:01.1234567891Z",
    "2026-09-27T10:00:01.123456789123Z", "2026-09-27T10:00.5Z", "2026-09-27T10.5Z",
    # offsets
    "2026-09-27T10:00:01+05:30", "2026-09-27T10:00:01+0530", "2026-09-27T10:00:01+05",
    "2026-09-27T10:00:01+00", "2026-09-27T10:00:01-00", "2026-09-27T10:00:01-00:00",
    "2026-09-27T10:00:01+23:59", "2026-09-27T10:00:01+24:00", "2026-09-27T10:00:01+05:60",
    "2026-09-27T10:00:01+5:30", "2026-09-27T10:00:01+05:30:15", "2026-09-27T10:00:01+053",
    "2026-09-27T10:00:01 +05:30", "2026-09-27T10:00:01 UTC", "2026-09-27T10:00:01Z[UTC]",
    "2026-09-27T10:00:01+05:30Z", "2026-09-27T10Z", "2026-09-27 10Z", "2026-09-27T10-05",
    "2026-09-27T10+0530", "2026-09-27T10:00-05:30", "2026-09-27T10:00:01.5-08:00",
    # naive
    "2026-09-27T10:00:01", "2026-09-27 10:00:01.123", "2026-09-27T10:00", "2026-09-27T10",
    "2026-09-27",
    # calendar and clock limits
    "2016-12-31T23:59:60Z", "2026-09-27T24:00:00Z", "2026-09-27T24:00Z", "2026-09-27T23:60:00Z",
    "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2000-02-29T12:00Z",
    "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-09-31T00:00:00Z", "2026-09-00T00:00Z",
    # shortened and other ISO forms
    "2026", "2026-09", "2026-W39", "2026-W39-7", "2026W397", "2026-270", "2026270",
    "20260927T100001Z", "2026-09-27T100001Z", "2026-9-27T10:00:01Z", "2026-09-27T1:00:01Z",
    "26-09-27T10:00:01Z", "T10:00:01Z", "10:00:01",
    # the nanosecond range and far years
    "1677-09-21T00:12:43Z", "1677-09-21T00:12:44Z", "1677-09-21T00:12:43.145224192Z",
    "1677-09-21T00:12:43.145224193Z", "2262-04-11T23:47:16.854775807Z",
    "2262-04-11T23:47:16.854775808Z", "2262-04-11T23:47:16.9Z", "2262-04-12T00:47:16-01:00",
    "1678-01-01T00:00:00+05:00", "2261-12-31T23:00:00-05:00", "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z", "+2026-09-27T10:00:01Z",
    "-2026-09-27T10:00:01Z", "1970-01-01T00:00:00Z",
    # blanks, empties and odd characters
    " 2026-09-27T10:00:01Z", "2026-09-27T10:00:01Z ", "\t2026-09-27T10:00:01Z",
    "2026-09-27T10:00:01Z\n", "", " ", "nan", "NaT", "None", "now", "today",
    "２０２６-09-27T10:00:01Z", "2026-09-27T10:00:01\x00Z", "2026‐09‐27T10:00:01Z",
    "2026-09-27T10:00:01.١٢٣Z",
]


@pytest.mark.parametrize("text", EDGE_TEXTS)
@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_edge_text_is_refused_or_equal(text: str, tz: str) -> None:
    for texts in ([text], [GOOD, text], [text, None, text], [None, text]):
        assert_none_or_equal(texts, tz)


@pytest.mark.parametrize("text", [
    "2026-09-27 10:00:01,123", "2026-09-27T10:00:01.1234567891Z", "2016-12-31T23:59:60Z",
    "2026-09-27T24:00:00Z", "2026-09-27t10:00:01Z", "2026-09-27T10:00:01z", "2026-W39-7",
    "2026-270", "2026", "2026-09", " 2026-09-27T10:00:01Z", "", "0001-01-01T00:00:00Z",
    "2262-04-11T23:47:16.9Z",
])
def test_texts_pandas_reads_differently_are_refused(text: str) -> None:
    """Shapes where Arrow and pandas could part ways never reach the fast path."""
    assert iso_to_utc_ns([GOOD] * 100 + [text] + [GOOD] * 100) is None


def test_mixed_zoned_and_naive_is_refused() -> None:
    zoned = "2026-09-27T10:00:01Z"
    naive = "2026-09-27T10:00:01"
    assert iso_to_utc_ns([zoned, naive] * 200) is None
    assert iso_to_utc_ns([zoned] * 500 + [naive]) is None


@pytest.mark.parametrize("texts", [
    [GOOD, b"2026-09-27T10:00:01Z"],  # Arrow would read bytes as text; pandas gives NaT
    [GOOD, bytearray(b"2026-09-27T10:00:01Z")],
    [GOOD, 1_790_000_000],
    [GOOD, float("nan")],
    [GOOD, pd.Timestamp("2026-09-27", tz="UTC")],
    [GOOD, "\ud800"],
])
def test_non_text_elements_are_refused(texts: list) -> None:
    assert iso_to_utc_ns(texts) is None
    assert iso_to_utc_ns([GOOD] * 200 + texts[1:]) is None


def test_non_text_arrow_arrays_are_refused() -> None:
    assert iso_to_utc_ns(pa.array([b"2026-09-27T10:00:01Z"])) is None
    assert iso_to_utc_ns(pa.array([1, 2])) is None


def test_empty_and_all_none() -> None:
    assert iso_to_utc_ns([]).shape == (0,)
    assert np.isnat(iso_to_utc_ns([None, None])).all()
    assert np.isnat(iso_to_utc_ns(pa.array([None, None], pa.string()))).all()


def test_result_is_writable() -> None:
    """The caller writes retried texts into the result; Arrow's own buffer is read-only."""
    for texts in ([GOOD] * 10, pa.array([GOOD] * 10), [GOOD, None]):
        result = iso_to_utc_ns(texts)
        result[0] = np.datetime64("NaT")


@pytest.mark.parametrize("tz", ["America/New_York", "Europe/London", "Australia/Lord_Howe"])
def test_naive_texts_across_dst_transitions(tz: str) -> None:
    """Gaps shift forward and repeated hours become NaT, as tz_localize does on pandas' parse."""
    days = pd.date_range("2026-01-01", "2026-12-31", freq="D")
    index = pd.DatetimeIndex(days).tz_localize(tz)
    offsets = index.map(lambda t: t.utcoffset())
    changes = [days[i] for i in range(1, len(days)) if offsets[i] != offsets[i - 1]]
    assert len(changes) == 2
    texts = [f"{(day - pd.Timedelta(days=1)).date()}T{h:02}:{m:02}:{s:02}.{f:03}"
             for day in changes for h in range(0, 4) for m in range(0, 60, 7)
             for s in (0, 59) for f in (0, 999)]
    fast = assert_none_or_equal([*texts, None], tz)
    assert fast is not None
    assert np.isnat(fast).sum() > 1  # ambiguous local times exist in the sample


def test_unknown_zone_is_left_to_pandas() -> None:
    assert iso_to_utc_ns(["2026-09-27T10:00:01"], "Mars/Olympus_Mons") is None


# --- (2) properties ----------------------------------------------------------------------------

def _two(n: int) -> str:
    return f"{n:02}"


def _mostly(draw: st.DrawFn, usual: st.SearchStrategy[str], odd: st.SearchStrategy[str]) -> str:
    """One part of a timestamp: the usual spelling nine times in ten, else an odd one.

    Every part being odd half the time would leave almost no text inside the grammar, and the
    property would only ever see refusals.
    """
    return draw(odd) if draw(st.integers(0, 9)) == 0 else draw(usual)


@st.composite
def iso_ish(draw: st.DrawFn) -> str:
    """Timestamp-like texts: random fields and spellings, a good share outside the grammar."""
    year = _mostly(draw, st.integers(1679, 2260).map(lambda y: f"{y:04}"), st.one_of(
        st.sampled_from(["0001", "0999", "1677", "1678", "2261", "2262", "9999", "10000", "26",
                         "+2026", "-2026", "0000"]),
        st.integers(0, 10_000).map(str)))
    month = _mostly(draw, st.integers(1, 12).map(_two),
                    st.sampled_from(["00", "13", "1", "9", "99"]))
    day = _mostly(draw, st.integers(1, 28).map(_two),
                  st.sampled_from(["00", "29", "30", "31", "32", "1", "7"]))
    date = _mostly(draw, st.just(f"{year}-{month}-{day}"), st.sampled_from([
        f"{year}{month}{day}", f"{year}-{month}", year, f"{year}-W{day}-{month[-1]}",
        f"{year}-{day}{month[-1]}", f"{year}/{month}/{day}",
    ]))
    hour = _mostly(draw, st.integers(0, 23).map(_two), st.sampled_from(["24", "25", "1", "99"]))
    minute = _mostly(draw, st.integers(0, 59).map(_two), st.sampled_from(["60", "61", "5"]))
    second = _mostly(draw, st.integers(0, 59).map(_two), st.sampled_from(["60", "61", "5"]))
    digits = draw(st.text("0123456789", min_size=0, max_size=12))
    fraction = _mostly(draw, st.sampled_from(["", f".{digits}"]),
                       st.sampled_from([f",{digits}", ".", ",", f"{digits}"]))
    clock = _mostly(draw, st.sampled_from([
        f"{hour}:{minute}:{second}{fraction}", f"{hour}:{minute}:{second}{fraction}",
        f"{hour}:{minute}", hour,
    ]), st.sampled_from([
        f"{hour}{minute}{second}{fraction}", f"{hour}:{minute}{fraction}", f"{hour}{fraction}",
        f"{int(hour)}:{minute}:{second}", "",
    ]))
    sep = _mostly(draw, st.sampled_from(["T", " "]), st.sampled_from(["t", "", "_", "  ", "\t"]))
    oh = _mostly(draw, st.integers(0, 23).map(_two), st.sampled_from(["24", "99", "5"]))
    om = _mostly(draw, st.integers(0, 59).map(_two), st.sampled_from(["60", "99", "3"]))
    sign = draw(st.sampled_from(["+", "-"]))
    zone = _mostly(draw, st.sampled_from([
        "", "Z", f"{sign}{oh}:{om}", f"{sign}{oh}{om}", f"{sign}{oh}", "+00:00", "-00:00",
    ]), st.sampled_from([
        "z", " UTC", " Z", f" {sign}{oh}:{om}", f"{sign}{oh}:{om}:00", "[UTC]", "Z[UTC]",
        f"{sign}{oh}:{om}Z", " GMT", "UTC",
    ]))
    text = f"{date}{sep}{clock}{zone}" if clock else f"{date}{zone}"
    pad = _mostly(draw, st.just(""), st.sampled_from([" ", "\t", "\n", "\u00a0"]))
    return draw(st.sampled_from([pad + text, text + pad]))


@st.composite
def strict_shapes(draw: st.DrawFn, zoned: bool) -> str:
    """Texts inside Arrow's grammar, instants well inside the nanosecond range."""
    day = draw(st.dates(pd.Timestamp("1679-01-01").date(), pd.Timestamp("2260-12-31").date()))
    hour, minute, second = draw(st.integers(0, 23)), draw(st.integers(0, 59)), \
        draw(st.integers(0, 59))
    fraction = draw(st.text("0123456789", min_size=1, max_size=9))
    clock = draw(st.sampled_from([
        _two(hour), f"{_two(hour)}:{_two(minute)}", f"{_two(hour)}:{_two(minute)}:{_two(second)}",
        f"{_two(hour)}:{_two(minute)}:{_two(second)}.{fraction}",
    ]))
    oh, om, sign = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.sampled_from("+-"))
    zone = draw(st.sampled_from([
        "Z", f"{sign}{_two(oh)}", f"{sign}{_two(oh)}{_two(om)}", f"{sign}{_two(oh)}:{_two(om)}",
    ])) if zoned else ""
    date = day.isoformat()
    if not zoned and draw(st.booleans()):
        return date  # a zone needs a clock before it
    return f"{date}{draw(st.sampled_from('T '))}{clock}{zone}"


def _with_nones(texts: st.SearchStrategy[str]) -> st.SearchStrategy[list[str | None]]:
    return st.lists(st.one_of(texts, st.none()), min_size=1, max_size=8)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=iso_ish(), tz=st.sampled_from(ZONES))
def test_an_iso_ish_text_is_refused_or_equal(text: str, tz: str) -> None:
    assert_none_or_equal([text], tz)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=_with_nones(iso_ish()), tz=st.sampled_from(ZONES))
def test_iso_ish_columns_are_refused_or_equal(texts: list[str | None], tz: str) -> None:
    assert_none_or_equal(texts, tz)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zoned=st.booleans(), data=st.data(), tz=st.sampled_from(ZONES))
def test_one_odd_text_in_a_strict_column(zoned: bool, data: st.DataObject, tz: str) -> None:
    """A column of good texts with one odd text somewhere: refused, or equal if it is not odd."""
    # More texts than the probe samples, so a full cast does meet the odd one.
    few = data.draw(st.lists(strict_shapes(zoned), min_size=1, max_size=5))
    texts: list[str | None] = [few[i % len(few)] for i in range(80)]
    texts.insert(data.draw(st.integers(0, len(texts))), data.draw(iso_ish()))
    assert_none_or_equal(texts, tz)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zoned=st.booleans(), data=st.data(), tz=st.sampled_from(ZONES))
def test_every_text_of_the_strict_grammar_takes_the_fast_path(zoned: bool, data: st.DataObject,
                                                              tz: str) -> None:
    texts = data.draw(_with_nones(strict_shapes(zoned)))
    if not any(texts):
        texts.append(data.draw(strict_shapes(zoned)))
    assert assert_none_or_equal(texts, tz) is not None, texts


# --- (3) the common shapes take the fast path --------------------------------------------------

def _common(shape: str, n: int = 2000) -> list[str | None]:
    rng = np.random.default_rng(7)
    seconds = rng.integers(1_500_000_000, 2_000_000_000, n)
    nanos = rng.integers(0, 1_000_000_000, n)
    stamps = pd.to_datetime(seconds, unit="s") + pd.to_timedelta(nanos, unit="ns")
    texts: list[str | None] = []
    for stamp, ns in zip(stamps, nanos, strict=True):
        base = stamp.strftime("%Y-%m-%dT%H:%M:%S")
        texts.append(shape.format(base=base, space=base.replace("T", " "), ms=f"{ns // 10**6:03}",
                                  us=f"{ns // 1000:06}", ns=f"{ns:09}"))
    texts[::97] = [None] * len(texts[::97])
    return texts


COMMON_ZONED = [
    "{base}Z", "{base}.{ms}Z", "{base}.{us}Z", "{base}.{ns}Z", "{base}+05:30", "{base}.{ms}+05:30",
    "{base}.{us}-08:00", "{base}+00:00", "{space}.{ms}Z", "{space}.{us}+01:00",
]
COMMON_NAIVE = ["{base}", "{base}.{ms}", "{space}.{ms}", "{space}.{us}", "{space}"]


@pytest.mark.parametrize("shape", COMMON_ZONED + COMMON_NAIVE)
@pytest.mark.parametrize("as_arrow", [None, pa.string(), pa.large_string()])
def test_common_shapes_take_the_fast_path(shape: str, as_arrow: pa.DataType | None) -> None:
    texts = _common(shape)
    given_texts = texts if as_arrow is None else pa.array(texts, as_arrow)
    fast = iso_to_utc_ns(given_texts)
    assert fast is not None, f"{shape} fell back to pandas"
    expected = pandas_reference(texts, "UTC")
    np.testing.assert_array_equal(fast.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("shape", COMMON_ZONED + COMMON_NAIVE)
def test_common_shapes_take_the_fast_path_in_another_zone(shape: str) -> None:
    texts = _common(shape)
    fast = iso_to_utc_ns(texts, "America/New_York")
    assert fast is not None, f"{shape} fell back to pandas"
    expected = pandas_reference(texts, "America/New_York")
    np.testing.assert_array_equal(fast.view(np.int64), expected.view(np.int64))


def test_chunked_and_dictionary_arrays_take_the_fast_path() -> None:
    texts = _common("{base}.{ms}Z")
    expected = pandas_reference(texts, "UTC")
    chunked = pa.chunked_array([pa.array(texts[:700]), pa.array(texts[700:])])
    for given_texts in (chunked, pa.array(texts).dictionary_encode()):
        fast = iso_to_utc_ns(given_texts)
        assert fast is not None
        np.testing.assert_array_equal(fast.view(np.int64), expected.view(np.int64))
