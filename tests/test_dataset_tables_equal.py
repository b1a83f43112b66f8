"""The dataset a write makes stays what it was: rows, columns, types and values, file by file.

``fixtures/datasets/digests.json`` holds, for every history file of the lab (``data/``) and of
the public corpus, a digest of each table's rows written from it (in the dataset's order, every
column but ``batch``; the source as its path under the repository or the corpus; JSON text as
the value it spells, keys sorted), and a digest of each table's Arrow schema. (The keys of a
binary history's marker ``details`` come in an order that depends on what the process imported:
under pytest they differ from a plain interpreter's.) It was made by the implementation named
in the file, before the derived tables were sped up; the test writes the same files again and
compares. A file whose bytes changed since (the lab re-recorded) is left out: most must still be
there.

Regenerate (only for a deliberate change of the tables):
``.venv/bin/python tests/test_dataset_tables_equal.py`` (writes the fixture).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

import toolkit as tk
from toolkit.datasets.layout import TABLES as TABLES_KINDS
from toolkit.datasets.layout import table_files
from toolkit.histories.reading.batch import find_history_files

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
DIGESTS = Path(__file__).parent / "fixtures" / "datasets" / "digests.json"
TABLES = ("events", "activities", "workflow_tasks", "runs")


def _name(source: str) -> str:
    """A source path as the fixture names it: under the repository or the corpus."""
    path = Path(source).resolve()
    for prefix, root in (("data", ROOT / "data"), ("corpus", CORPUS)):
        root = root.resolve()
        if path.is_relative_to(root):
            return f"{prefix}/{path.relative_to(root)}"
    raise AssertionError(f"a source outside data/ and the corpus: {source}")


def _files() -> list[Path]:
    return find_history_files([ROOT / "data", CORPUS / "histories"])


def _digests(files: list[Path], folder: Path) -> dict[str, Any]:
    """Write ``files`` into a dataset under ``folder``; digest it per table and source file."""
    dataset = folder / "dataset"
    report = tk.write_dataset(files, dataset, workers=1, batch_files=100, progress=False)
    assert report.runs_written > 300, report
    schemas: dict[str, str] = {}
    per_file: dict[str, dict[str, Any]] = {
        _name(str(p)): {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "tables": {}}
        for p in files
    }
    for table in TABLES:
        parts = [pq.read_table(p) for p in table_files(dataset, table)]
        whole = pa.concat_tables(parts).drop_columns(["batch"]) if "batch" in \
            parts[0].column_names else pa.concat_tables(parts)
        schemas[table] = hashlib.sha256(str(whole.schema).encode()).hexdigest()
        json_columns = [c for c, kind in TABLES_KINDS[table].items() if kind == "json"]
        rows: dict[str, list[bytes]] = {}
        for row in whole.to_pylist():
            source = _name(row.pop("source"))
            for column in json_columns:  # the JSON value: the order of its keys aside
                if row.get(column) is not None:
                    row[column] = orjson.loads(row[column])
            rows.setdefault(source, []).append(orjson.dumps(row, default=str,
                                                            option=orjson.OPT_SORT_KEYS))
        for source, lines in rows.items():
            digest = hashlib.sha256(b"\n".join(lines)).hexdigest()
            per_file[source]["tables"][table] = f"{len(lines)}:{digest}"
    return {"schemas": schemas, "files": per_file}


def test_dataset_tables_equal_the_recorded_digests(corpus: Path, tmp_path: Path) -> None:
    expected = json.loads(DIGESTS.read_text())
    files = _files()
    found = _digests(files, tmp_path)
    assert found["schemas"] == expected["schemas"]
    same = [name for name, entry in found["files"].items()
            if name in expected["files"] and expected["files"][name]["sha256"] == entry["sha256"]]
    assert len(same) >= 0.8 * len(expected["files"]), "most recorded files are still there"
    assert sum(name.startswith("corpus/") for name in same) >= 60  # the corpus does not change
    for name in same:
        assert found["files"][name]["tables"] == expected["files"][name]["tables"], name


if __name__ == "__main__":
    import subprocess

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        made = {"made_by": commit, **_digests(_files(), Path(tmp))}
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    DIGESTS.write_text(json.dumps(made, indent=0, sort_keys=True) + "\n")
    print(f"{DIGESTS}: {len(made['files'])} files", file=sys.stderr)
