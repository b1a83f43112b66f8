"""The streamed merge behind compact_dataset: the rows of sorted (and unsorted) parts in the
writer's order, equal to sorting everything in memory, across batch and row-group boundaries."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dataset_writers import make_runs

import toolkit as tk
from toolkit.datasets import TABLES, table_files
from toolkit.datasets import merge as merging
from toolkit.datasets.layout import file_schema


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Real lab runs written in batches of three: several sorted parts per table."""
    root = tmp_path_factory.mktemp("merge")
    paths = make_runs(root / "in", 12)
    tk.write_dataset(paths, root / "ds", batch_files=3, workers=1, progress=False)
    found = {table: [Path(p) for p in table_files(root / "ds", table)] for table in TABLES}
    assert all(len(files) == 4 for files in found.values())
    return found


def _expected(paths: list[Path], table: str) -> pa.Table:
    schema = file_schema(table)
    rows = pa.concat_tables(pq.read_table(p, schema=schema) for p in paths)
    return merging.sort_rows(rows, schema)


@pytest.mark.parametrize("table", TABLES)
def test_merged_rows_equal_sorting_everything_at_once(
    parts: dict[str, list[Path]], table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small batches and row groups, so that runs straddle both (real ones are 4,096 and 64 Ki).
    monkeypatch.setattr(merging, "BATCH_ROWS", 3)
    monkeypatch.setattr(merging, "ROW_GROUP_ROWS", 8)
    paths = list(reversed(parts[table]))  # not in commit order: the keys decide
    out = tmp_path / "merged.parquet"
    written = merging.merge_sorted(paths, file_schema(table), out)
    merged = pq.read_table(out)
    expected = _expected(paths, table)
    assert written == merged.num_rows == expected.num_rows > 8
    assert merged.equals(expected.replace_schema_metadata(merged.schema.metadata))
    groups = [pq.ParquetFile(out).metadata.row_group(i).num_rows
              for i in range(pq.ParquetFile(out).metadata.num_row_groups)]  # fmt: skip
    assert groups[:-1] == [8] * (len(groups) - 1) and 0 < groups[-1] <= 8
    assert merged.schema.metadata == file_schema(table).metadata


def test_an_unsorted_part_is_sorted_before_the_merge(
    parts: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a Spark task writes it: two batches' sorted rows one after the other, here reversed.
    monkeypatch.setattr(merging, "BATCH_ROWS", 5)
    schema = file_schema("events")
    first, second, *rest = parts["events"]
    both = pa.concat_tables([pq.read_table(second, schema=schema),
                             pq.read_table(first, schema=schema)])  # fmt: skip
    unsorted = tmp_path / "unsorted.parquet"
    pq.write_table(both.take(list(range(both.num_rows - 1, -1, -1))), unsorted)
    out = tmp_path / "merged.parquet"
    merging.merge_sorted([unsorted, *rest], schema, out)
    expected = _expected([first, second, *rest], "events")
    merged = pq.read_table(out)
    # Rows of one run keep the order they had in their part (reversed here): compare as sets
    # of rows per run, and the order of the runs exactly.
    keys = ["source", "history"]
    assert merged.select(keys).to_pylist() != [] and sorted(
        map(str, merged.to_pylist())
    ) == sorted(map(str, expected.to_pylist()))
    runs = [tuple(r.values()) for r in merged.select(keys).to_pylist()]
    expected_runs = [tuple(r.values()) for r in expected.select(keys).to_pylist()]
    assert list(dict.fromkeys(runs)) == list(dict.fromkeys(expected_runs))


def test_no_parts_give_an_empty_file(tmp_path: Path) -> None:
    out = tmp_path / "empty.parquet"
    assert merging.merge_sorted([], file_schema("runs"), out) == 0
    assert pq.read_table(out).num_rows == 0
