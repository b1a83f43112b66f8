"""Every engine reads the dataset the same: DuckDB, pyarrow datasets, polars and Spark.

A dataset is written from real lab histories renamed to awkward workflow types (a number, a
date, non-ASCII, slashes and spaces) with every namespace null; each engine then reads every
table with its defaults and must find the same rows, the declared types and the same answers
to three reference queries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import toolkit as tk
from toolkit.datasets import TABLES, write_dataset
from toolkit.datasets.layout import file_schema

ROOT = Path(__file__).resolve().parents[1]
AWKWARD = ["123", "2026-11-01", "Agent/ü 漢字", "billing/Checkout v2=x%", "LabAgent"]

QUERIES = {
    "runs_per_type": "select workflow_type, count(*) as n from runs group by workflow_type",
    "events_per_date": (
        "select cast(date as string) as day, count(*) as n from events "
        "where workflow_type = '123' or workflow_type = '2026-11-01' group by date"
    ),
    "activities_per_type": (
        "select workflow_type, count(*) as n, max(attempt) as attempts from activities "
        "group by workflow_type"
    ),
}


def fleet(folder: Path) -> list[Path]:
    """Copies of one recorded history under awkward workflow types (distinct run ids, one
    start date per copy so ``date`` varies)."""
    template = next((ROOT / "data" / "go_twin").rglob("one_call_then_plain.json"), None)
    if template is None:
        pytest.skip("data/go_twin not recorded (make record)")
    text = template.read_text()
    first = tk.read_history(template)
    run_id, workflow_type = first["run_id"].iloc[0], first["workflow_type"].iloc[0]
    day = str(first["event_time"].iloc[0].date())
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for index, name in enumerate(AWKWARD):
        body = text.replace(run_id, f"00000000-0000-4000-8000-{index:012d}")
        body = body.replace(f'"{workflow_type}"', orjson.dumps(name).decode())
        body = body.replace(f"{day}T", f"2026-11-{10 + index % 2:02d}T")
        path = folder / f"run-{index}.json"
        path.write_text(body)
        files.append(path)
    return files


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("engines")
    files = fleet(root / "in")
    report = write_dataset(files, root / "ds", workers=1)
    assert report.runs_written == len(AWKWARD)
    return root / "ds"


def _canonical(kind: str) -> str:
    """One spelling per type across engines."""
    kind = kind.lower()
    for word, name in (("timestamp", "timestamp"), ("datetime", "timestamp"), ("date", "date"),
                       ("bool", "bool"), ("int64", "int64"), ("bigint", "int64"),
                       ("long", "int64"), ("double", "double"), ("float64", "double"),
                       ("string", "string"), ("varchar", "string"), ("utf8", "string"),
                       ("str", "string")):  # fmt: skip
        if word in kind:
            return name
    return kind


def _declared(dataset: Path, table: str) -> dict[str, str]:
    described = orjson.loads((dataset / "_toolkit" / "dataset.json").read_bytes())
    return {name: _canonical(kind) for name, kind in described["tables"][table]["columns"].items()}


def _answers(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in rows)


def _duckdb(dataset: Path) -> dict[str, Any]:
    connection = duckdb.connect()
    types, counts = {}, {}
    for table in TABLES:
        pattern = str(dataset / table / "*.parquet")
        connection.execute(f"create view {table} as select * from read_parquet('{pattern}')")
        described = connection.execute(f"describe {table}").fetchall()
        types[table] = {row[0]: _canonical(row[1]) for row in described}
        counts[table] = connection.execute(f"select count(*) from {table}").fetchone()[0]
    answers = {q: _answers(connection.execute(sql).fetchall()) for q, sql in QUERIES.items()}
    return {"types": types, "counts": counts, "answers": answers}


def _pyarrow(dataset: Path) -> dict[str, Any]:
    tables = {t: ds.dataset(dataset / t, format="parquet").to_table() for t in TABLES}
    types = {t: {f.name: _canonical(str(f.type)) for f in tables[t].schema} for t in TABLES}
    counts = {t: tables[t].num_rows for t in TABLES}
    runs = tables["runs"].group_by("workflow_type").aggregate([("run_key", "count")])
    events = tables["events"].filter(
        pa.compute.is_in(tables["events"]["workflow_type"], pa.array(["123", "2026-11-01"]))
    )
    per_day = events.group_by("date").aggregate([("event_id", "count")])
    acts = tables["activities"].group_by("workflow_type").aggregate(
        [([], "count_all"), ("attempt", "max")]
    )
    answers = {
        "runs_per_type": _answers(
            zip(runs["workflow_type"].to_pylist(), runs["run_key_count"].to_pylist(), strict=True)
        ),
        "events_per_date": _answers(
            (str(day), n)
            for day, n in zip(
                per_day["date"].to_pylist(), per_day["event_id_count"].to_pylist(), strict=True
            )
        ),
        "activities_per_type": _answers(
            zip(
                acts["workflow_type"].to_pylist(),
                acts["count_all"].to_pylist(),
                acts["attempt_max"].to_pylist(),
                strict=True,
            )
        ),
    }
    return {"types": types, "counts": counts, "answers": answers}


def _polars(dataset: Path) -> dict[str, Any]:
    pl = pytest.importorskip("polars", reason="polars not installed (the spark extra)")
    frames = {t: pl.scan_parquet(str(dataset / t / "*.parquet")) for t in TABLES}
    types = {t: {n: _canonical(str(k)) for n, k in frames[t].collect_schema().items()}
             for t in TABLES}  # fmt: skip
    counts = {t: frames[t].select(pl.len()).collect().item() for t in TABLES}
    context = pl.SQLContext(frames)
    answers = {q: _answers(context.execute(sql).collect().rows()) for q, sql in QUERIES.items()}
    return {"types": types, "counts": counts, "answers": answers}


def _spark(dataset: Path, spark: Any) -> dict[str, Any]:
    types, counts = {}, {}
    for table in TABLES:
        frame = spark.read.parquet(str(dataset / table))
        frame.createOrReplaceTempView(table)
        types[table] = {f.name: _canonical(f.dataType.simpleString()) for f in frame.schema}
        counts[table] = frame.count()
    answers = {q: _answers(tuple(r) for r in spark.sql(s).collect()) for q, s in QUERIES.items()}
    return {"types": types, "counts": counts, "answers": answers}


def test_duckdb_pyarrow_polars_and_spark_agree(dataset: Path, spark: Any) -> None:
    found = {
        "duckdb": _duckdb(dataset),
        "pyarrow": _pyarrow(dataset),
        "polars": _polars(dataset),
        "spark": _spark(dataset, spark),
    }
    expected_counts = found["duckdb"]["counts"]
    assert expected_counts["runs"] == len(AWKWARD) and expected_counts["events"] > 0
    for engine, result in found.items():
        assert result["counts"] == expected_counts, engine
        for table in TABLES:
            assert result["types"][table] == _declared(dataset, table), (engine, table)
        assert result["answers"] == found["duckdb"]["answers"], engine
    answers = found["duckdb"]["answers"]
    assert sorted(t for t, _ in answers["runs_per_type"]) == sorted(AWKWARD)
    assert {day for day, _ in answers["events_per_date"]} == {"2026-11-10", "2026-11-11"}


def test_every_file_carries_the_declared_schema(dataset: Path) -> None:
    described = orjson.loads((dataset / "_toolkit" / "dataset.json").read_bytes())
    for table in TABLES:
        files = sorted((dataset / table).glob("*.parquet"))
        assert len(files) == 1  # one file per table per batch
        schema = pa.parquet.read_schema(files[0])
        assert schema.remove_metadata() == file_schema(table).remove_metadata()
        assert not any(pa.types.is_null(f.type) for f in schema)  # namespace is all null here
        assert {f.name: str(f.type) for f in schema} == described["tables"][table]["columns"]
