"""Which code ran a workflow run, read from the history itself: its version label.

Every workflow task a worker completes records who completed it. The label of a run is taken
from the first source that tells versions apart, in this order:

1. **worker deployment version** (``deploymentVersion``, ``workerDeploymentVersion`` or the
   older ``deployment`` of ``WorkflowTaskCompleted``): the name the team gave the release;
2. **build id** (``workerVersion.buildId``): set by the team, or derived by the SDK from the
   worker's code (temporalio's Python SDK hashes the loaded modules), so two releases of the
   application or of a library it loads (google-adk 1.28.1 and 1.29.0 under the same temporalio)
   get different build ids; shown with the SDK (``temporal-python 1.30.0 · build 3a02e624``);
3. **SDK name and version** (``sdkMetadata``): tells SDK upgrades apart but not application
   releases on the same SDK version;
4. **binary checksum** (``binaryChecksum``, older Go/Java/TypeScript workers).

``label_source`` says which one was used: a label from the SDK alone cannot separate releases of
the application, and reports say so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import msgspec
import pandas as pd

from toolkit.histories.columns.lazy import LazyAttributes, LazyCell

__all__ = ["LABEL_SOURCES", "apply_versions", "label_parts", "run_label", "task_versions",
           "version_labels"]

#: ``label_source`` values, most specific first.
LABEL_SOURCES = ("deployment", "build_id", "sdk", "binary_checksum", "none")

_TASK_EVENTS = ("WorkflowTaskStarted", "WorkflowTaskCompleted", "WorkflowTaskFailed")


def _get(value: Any, *path: str) -> Any:
    for key in path:
        if type(value) is not dict and not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if value not in ("", None) else None


def _deployment(attributes: Any) -> str | None:
    """The named deployment version, or None (a bare build id there is no deployment)."""
    name = _get(attributes, "deploymentVersion", "deploymentName")
    if name:
        return f"{name}:{_get(attributes, 'deploymentVersion', 'buildId') or '?'}"
    text = _get(attributes, "workerDeploymentVersion")
    if isinstance(text, str):
        return text
    series = _get(attributes, "deployment", "seriesName")
    if series:
        return f"{series}:{_get(attributes, 'deployment', 'buildId') or '?'}"
    return None


def _build_id(attributes: Any) -> Any:
    return (
        _get(attributes, "workerVersion", "buildId")
        or _get(attributes, "deploymentVersion", "buildId")
        or _get(attributes, "deployment", "buildId")
    )


def task_versions(events: pd.DataFrame) -> pd.DataFrame:
    """One row per workflow-task event that names its worker's version.

    Columns: ``source``, ``history``, ``event_id``, ``event_type``, ``identity``,
    ``deployment``, ``build_id``, ``sdk_name``, ``sdk_version``, ``binary_checksum``.
    """
    tasks = events[events["event_type"].isin(_TASK_EVENTS)]
    rows = []
    has_source = "source" in tasks.columns
    for record in tasks[["history", "event_id", "event_type", "identity", "attributes"]].itertuples(
        index=False
    ):
        # A cell decoded on first use: its value once, not a lookup through it per field.
        attributes = record.attributes
        attributes = attributes.value if isinstance(attributes, LazyCell) else attributes
        rows.append(
            {
                "history": record.history,
                "event_id": record.event_id,
                "event_type": record.event_type,
                "identity": record.identity,
                "deployment": _deployment(attributes),
                "build_id": _build_id(attributes),
                "sdk_name": _get(attributes, "sdkMetadata", "sdkName"),
                "sdk_version": _get(attributes, "sdkMetadata", "sdkVersion"),
                "binary_checksum": _get(attributes, "binaryChecksum"),
            }
        )
    out = pd.DataFrame(
        rows,
        columns=[
            "history",
            "event_id",
            "event_type",
            "identity",
            "deployment",
            "build_id",
            "sdk_name",
            "sdk_version",
            "binary_checksum",
        ],
    )
    out.insert(0, "source", tasks["source"].to_numpy() if has_source else None)
    return out


@functools.lru_cache(maxsize=4096)
def _short(text: str) -> str:
    # Hex digests are long; eight characters tell releases apart in a report
    # (TypeScript's build ids are ``@temporalio/worker@1.13.1+<sha256>``).
    def cut(part: str) -> str:
        is_hex = len(part) >= 16 and all(c in "0123456789abcdef" for c in part.lower())
        return part[:8] if is_hex else part

    return "+".join(cut(part) for part in text.split("+"))


def _compose(parts: Mapping[str, Any], sdk_of_build: Mapping[str, str]) -> tuple[str, str]:
    """(label, label_source) for one worker's version parts."""
    # A version without a name is the SDK announcing a change mid-run; it names no worker.
    own_sdk = (
        " ".join(str(p) for p in (parts.get("sdk_name"), parts.get("sdk_version")) if p)
        if parts.get("sdk_name")
        else ""
    )
    if parts.get("deployment"):
        return f"deployment {parts['deployment']}", "deployment"
    build = parts.get("build_id")
    if build:
        # The SDK states its name and version once per worker, on its first completed task; the
        # build's other tasks (and a task that failed before completing) borrow them.
        sdk = sdk_of_build.get(build) or own_sdk
        short = _short(str(build))
        return (f"{sdk} · build {short}" if sdk else f"build {short}"), "build_id"
    if own_sdk:
        return own_sdk, "sdk"
    if parts.get("binary_checksum"):
        return f"binary {_short(str(parts['binary_checksum']))}", "binary_checksum"
    return "unknown", "none"


def version_labels(events: pd.DataFrame) -> pd.DataFrame:
    """One row per run (``source``, ``history``) with its version label and where it came from.

    Parameters
    ----------
    events
        An events frame of one or many histories.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``history``, ``label`` (the version of the worker that completed the run's
        first workflow task), ``label_source`` (one of :data:`LABEL_SOURCES`), ``deployment``,
        ``build_id``, ``sdk_name``, ``sdk_version``, ``binary_checksum`` (the parts it was made
        from), ``labels`` (every label of a worker that started or completed a workflow task of
        the run, in order: two for a run that lived through a rolling upgrade) and
        ``failed_labels`` (labels of the workers whose workflow tasks failed).
    """
    tasks = task_versions(events)
    parts_columns = ["deployment", "build_id", "sdk_name", "sdk_version", "binary_checksum"]
    # Plain Python over the task records: a pandas operation per run costs more than the run.
    records = tasks.astype(object).where(tasks.notna(), None).to_dict("records")
    sdk_of_build: dict[str, str] = {}
    for record in records:
        if record["build_id"] and record["sdk_name"] and record["build_id"] not in sdk_of_build:
            sdk_of_build[record["build_id"]] = " ".join(
                str(p) for p in (record["sdk_name"], record["sdk_version"]) if p
            )
    by_run: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for record in records:
        by_run.setdefault((record["source"], record["history"]), []).append(record)
    rows = []
    for (source, history), one in by_run.items():
        completed = [r for r in one if r["event_type"] == "WorkflowTaskCompleted"] or one
        parts = {c: next((r[c] for r in completed if r[c]), None) for c in parts_columns}
        label, label_source = _compose(parts, sdk_of_build)
        seen: list[str] = []
        failed: list[str] = []
        worker_label: str | None = None
        for record in one:
            if record["build_id"] or record["deployment"] or record["binary_checksum"]:
                worker_label = _compose(record, sdk_of_build)[0]
            if worker_label and worker_label not in seen:
                seen.append(worker_label)
            failing = record["event_type"] == "WorkflowTaskFailed"
            if failing and worker_label and worker_label not in failed:
                failed.append(worker_label)
        rows.append(
            {
                "source": source,
                "history": history,
                "label": label,
                "label_source": label_source,
                **parts,
                "labels": seen or [label],
                "failed_labels": failed,
            }
        )
    keys = ["source", "history"]
    runs = events[keys].drop_duplicates() if "source" in events else events[["history"]]
    if "source" not in runs:
        runs = runs.assign(source=None)[keys]
    table = pd.DataFrame(
        rows, columns=[*keys, "label", "label_source", *parts_columns, "labels", "failed_labels"]
    )
    out = runs.merge(table, on=keys, how="left")
    missing = out["label"].isna()
    out.loc[missing, "label"] = "unknown"
    out.loc[missing, "label_source"] = "none"
    for column in ("labels", "failed_labels"):
        out[column] = [v if isinstance(v, list) else [] for v in out[column]]
    return out.reset_index(drop=True)


_PART_NAMES = ("deployment", "build_id", "sdk_name", "sdk_version", "binary_checksum")


def run_label(completed: list[Any], sdk_of_build: dict[str, str]) -> tuple[str, str]:
    """``(label, label_source)`` of one run from the attributes of its completed workflow
    tasks, in order, as :func:`version_labels` composes it; reads only as many tasks as it
    takes to find every part (usually the first). ``sdk_of_build`` maps build ids to the SDK
    a task of that build stated, across runs; it is filled in as tasks are read."""
    parts: list[Any] = [None] * 5
    texts = event_texts(completed) or [None] * len(completed)
    for k, (attributes, text) in enumerate(zip(completed, texts, strict=True)):
        if k and text is not None and not _may_add(text, parts):
            continue  # a later task with nothing a label could still take from it
        found = label_parts(attributes, text)
        build, sdk_name = found[1], found[2]
        if build and sdk_name and build not in sdk_of_build:
            sdk_of_build[build] = f"{sdk_name} {found[3]}" if found[3] else str(sdk_name)
        for k, value in enumerate(found):
            if parts[k] is None and value:
                parts[k] = value
        if None not in parts[1:]:  # every part but a deployment found
            break
    if not completed:
        return "unknown", "none"
    return _compose(dict(zip(_PART_NAMES, parts, strict=True)), sdk_of_build)


#: The text of each label part's fields in a task's JSON (any of them, where several), in
#: :data:`_PART_NAMES`' order: a field absent from a text that escapes no character by its code
#: is absent from the task.
PART_MARKS = (b"eployment", b"buildId", b"sdkName", b"sdkVersion", b"binaryChecksum")


def escapes(raw: bytes) -> bool:
    """Whether JSON text escapes a character by its code (``\\u``), and so could spell a key
    without its letters; a backslash looked for first (one byte, memchr), the pair only then."""
    return b"\\" in raw and b"\\u" in raw


def _may_add(text: bytes, parts: list[Any]) -> bool:
    """Whether a completed task's raw JSON may give a label something the tasks before it did
    not: a part still missing, or a build's SDK (a task stating its SDK: ``sdkName``)."""
    if escapes(text) or PART_MARKS[2] in text:
        return True
    for key, value in zip(PART_MARKS, parts, strict=True):  # noqa: SIM110 (a loop: faster)
        if value is None and key in text:
            return True
    return False


def event_texts(cells: list[Any]) -> list[bytes] | None:
    """The raw JSON of each of ``cells`` (attributes cells of one raw JSON history), split off
    their document together (:meth:`~toolkit.histories.reading.dialects.RawHistory.
    json_event_texts`: one scan of its first events, not a lookup per event); None where they
    are not all of that kind."""
    history = getattr(cells[0], "_history", None) if cells else None
    read = getattr(history, "json_event_texts", None)
    if read is None or not all(type(c) is LazyAttributes and c._history is history
                               for c in cells):  # fmt: skip
        return None
    return read([c._index for c in cells])


def label_parts(attributes: Any, text: Any = None) -> tuple[Any, Any, Any, Any, Any]:
    """``(deployment, build_id, sdk_name, sdk_version, binary_checksum)`` of a workflow
    task's attributes (None where it has none). A raw JSON completed task's are decoded off
    its text (``text``, where the caller has it), only the fields a label reads; anything else
    is read as a mapping."""
    if type(attributes) is LazyAttributes and attributes._key == _LABEL_KEY:
        try:
            raw = attributes.raw if text is None else text
            found = _completed_task.decode(raw).workflowTaskCompletedEventAttributes
        except msgspec.MsgspecError:
            found = False  # a shape only the generic decoding reads (or reports)
        if found is None:
            return None, None, None, None, None
        if found is not False:
            return _typed_parts(found)
    return (_deployment(attributes), _build_id(attributes),
            _get(attributes, "sdkMetadata", "sdkName"),
            _get(attributes, "sdkMetadata", "sdkVersion"),
            _get(attributes, "binaryChecksum"))  # fmt: skip


class _Build(msgspec.Struct, gc=False):
    buildId: str | None = None


class _DeploymentVersion(msgspec.Struct, gc=False):
    deploymentName: str | None = None
    buildId: str | None = None


class _Deployment(msgspec.Struct, gc=False):
    seriesName: str | None = None
    buildId: str | None = None


class _Sdk(msgspec.Struct, gc=False):
    sdkName: str | None = None
    sdkVersion: str | None = None


class _LabelFields(msgspec.Struct, gc=False):
    """The fields of a completed workflow task's attributes a label reads, typed as the API
    has them (a value of another type fails the decode, and the attributes are read as a
    mapping instead)."""

    binaryChecksum: str | None = None
    workerVersion: _Build | None = None
    sdkMetadata: _Sdk | None = None
    deploymentVersion: _DeploymentVersion | None = None
    workerDeploymentVersion: str | None = None
    deployment: _Deployment | None = None


class _CompletedTask(msgspec.Struct, gc=False):
    workflowTaskCompletedEventAttributes: _LabelFields | None = None


_completed_task = msgspec.json.Decoder(_CompletedTask)
_LABEL_KEY = "workflowTaskCompletedEventAttributes"


def _typed_parts(found: _LabelFields) -> tuple[Any, Any, Any, Any, Any]:
    """:func:`label_parts` of the decoded fields: what :func:`_deployment`, :func:`_build_id`
    and :func:`_get` read of the same attributes ("" is none, as there)."""
    version, worker, old = found.deploymentVersion, found.workerVersion, found.deployment
    if version is not None and version.deploymentName:
        deployment: str | None = f"{version.deploymentName}:{version.buildId or '?'}"
    elif found.workerDeploymentVersion:
        deployment = found.workerDeploymentVersion
    elif old is not None and old.seriesName:
        deployment = f"{old.seriesName}:{old.buildId or '?'}"
    else:
        deployment = None
    build = ((worker.buildId if worker is not None else None)
             or (version.buildId if version is not None else None)
             or (old.buildId if old is not None else None)) or None  # fmt: skip
    sdk = found.sdkMetadata
    return (deployment, build, (sdk.sdkName or None) if sdk is not None else None,
            (sdk.sdkVersion or None) if sdk is not None else None,
            found.binaryChecksum or None)  # fmt: skip


def apply_versions(runs: pd.DataFrame, versions: Any) -> pd.DataFrame:
    """Override the default labels of ``runs`` (a :func:`version_labels`-like table).

    Parameters
    ----------
    runs
        One row per run with at least ``label``; ``source``, ``run_id``, ``workflow_id`` are
        used when present.
    versions
        None (keep the defaults); a mapping whose keys are run ids, workflow ids, source paths
        or default labels (e.g. ``{"temporal-python 1.30.0 · build 3a02e624": "adk 1.28.1"}``);
        or a callable taking the run's row as a dict and returning a label (None keeps the
        default).

    Returns
    -------
    pandas.DataFrame
        A copy with ``label`` replaced where ``versions`` says so and ``label_source`` set to
        ``"versions"`` there.
    """
    if versions is None or runs.empty:
        return runs
    out = runs.copy()
    if "label_source" not in out.columns:
        out["label_source"] = None
    labels = out["label"].tolist()
    sources = out["label_source"].tolist()
    for index, row in enumerate(out.to_dict("records")):
        if callable(versions):
            new = versions(row)
        elif isinstance(versions, Mapping):
            keys = (row.get("run_id"), row.get("workflow_id"), row.get("source"), row["label"])
            new = next((versions[k] for k in keys if isinstance(k, str) and k in versions), None)
        else:
            raise TypeError("versions must be None, a mapping or a callable")
        if new is not None:
            labels[index], sources[index] = str(new), "versions"
    out["label"], out["label_source"] = labels, sources
    return out
