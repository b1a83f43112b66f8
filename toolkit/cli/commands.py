"""One function per subcommand: call the library, print, return the exit code."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.cli.dataset import dataset_command
from toolkit.cli.render import print_json, print_table
from toolkit.cli.replay_check import replay_check_command
from toolkit.errors import ToolkitError

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "HANDLERS"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

_LEVELS = ("debug", "info", "warning", "error", "critical")
_NAME_COLUMNS = ("activity_type", "timer_id", "signal_name", "update_name", "child_workflow_type",
                 "marker_name")  # fmt: skip
SHOW_COLUMNS = ("event_id", "event_time", "event_type", "workflow_task", "name", "attempt",
                "failure_message")  # fmt: skip
ACTIVITY_COLUMNS = ("activity_type", "activity_id", "attempt", "outcome", "retry_state",
                    "failure_message", "queue_duration", "run_duration")  # fmt: skip
TURN_COLUMNS = ("turn", "trigger", "step", "agent", "model_activity", "declared", "requested",
                "handoff", "listings_before", "tool_calls", "listings_after", "sequence",
                "status", "failure")  # fmt: skip
LOG_COLUMNS = ("line", "ts", "level", "logger", "message")
#: What ``toolkit logs --detect NAME`` prints by default (``--json`` prints every column).
DETECT_COLUMNS = {
    "duplicate_tools": (
        "line",
        "ts",
        "framework",
        "behaviour",
        "retried_by",
        "tool",
        "attempt",
        "retry_line",
        "dead_letter_line",
    ),
    "retries": ("line", "ts", "subject", "subject_kind", "attempt", "max_attempts", "pattern"),
    "dead_letters": ("line", "ts", "subject", "reason"),
    "mcp_client_failures": ("line", "ts", "kind", "server", "tool"),
    "nondeterminism": ("line", "ts", "sdk", "kind", "event_id", "expected", "actual", "run_id"),
}


def _emit(frame: pd.DataFrame, columns: tuple[str, ...], args: argparse.Namespace) -> None:
    chosen = tuple(args.columns.split(",")) if getattr(args, "columns", None) else columns
    unknown = [c for c in chosen if c not in frame.columns]
    if getattr(args, "columns", None) and unknown:
        raise ToolkitError(
            f"--columns: no column {unknown}; expected some of {', '.join(map(str, frame.columns))}"
        )
    if getattr(args, "limit", None) is not None:
        frame = frame.head(args.limit)
    if len(frame.get("history", pd.Series(dtype=int)).unique()) > 1 and "history" not in chosen:
        chosen = ("history", *chosen)
    if args.json:  # scripts get every column unless they chose some
        print_json(frame[list(chosen)] if getattr(args, "columns", None) else frame)
    else:
        print_table(frame, chosen, width=args.width)


def _history_for_show(args: argparse.Namespace) -> pd.DataFrame:
    """The events of ``FILE``, or of ``-w ID`` fetched from ``--address``."""
    import toolkit as tk

    if (args.file is None) == (args.workflow_id is None):
        raise ToolkitError("show: expected a history FILE or -w/--workflow-id (with --address), "
                           "not both")  # fmt: skip
    if args.file is not None:
        return tk.read_history(args.file)
    return tk.fetch_history(args.address, args.workflow_id, args.run_id, namespace=args.namespace)


def show(args: argparse.Namespace) -> int:
    """``toolkit show FILE`` or ``toolkit show -w ID``: a summary, then the events table."""
    from toolkit.cli.render import terminal_width
    from toolkit.cli.summary import print_summary

    events = _history_for_show(args)
    if not args.json and len(events):
        width = terminal_width(sys.stdout) if args.width is None else args.width
        runs = events.groupby("history", sort=True)  # a file may hold several runs
        for history, one in runs:
            print_summary(one, sys.stdout, width, history=history if runs.ngroups > 1 else None,
                          full=args.full)
    if args.type:
        events = events[events["event_type"].str.contains(args.type, regex=True, na=False)]
    names = events[list(_NAME_COLUMNS)].bfill(axis=1).iloc[:, 0] if len(events) else None
    events = events.assign(name=names)
    times = events["event_time"].dropna()
    if not args.json and len(times) and times.dt.date.nunique() == 1:
        # One day (the summary says which): the time of day leaves room for the message.
        events["event_time"] = events["event_time"].dt.strftime("%H:%M:%S.%f").str[:-3]
    _emit(events, SHOW_COLUMNS, args)
    return EXIT_OK


def activities(args: argparse.Namespace) -> int:
    """``toolkit activities FILE``: one row per activity execution."""
    import toolkit as tk

    _emit(tk.activities(tk.read_history(args.file)), ACTIVITY_COLUMNS, args)
    return EXIT_OK


def turns(args: argparse.Namespace) -> int:
    """``toolkit turns FILE``: an agent's turns and model steps."""
    import toolkit as tk

    steps = tk.agent_steps(tk.read_history(args.file), roles=args.roles)
    # What the model was offered (a count: the names are in declared_tools) and asked for.
    steps["declared"] = [None if d is None else len(d) for d in steps["declared_tools"]]
    steps["declared"] = steps["declared"].astype("Int64")
    steps["requested"] = [", ".join(r) if r else None for r in steps["requested_tools"]]
    _emit(steps, TURN_COLUMNS, args)
    return EXIT_OK


def _workflow_type(events: pd.DataFrame) -> str | None:
    types = events["workflow_type"].dropna().unique() if "workflow_type" in events else []
    return str(types[0]) if len(types) else None


def _sureness(verdict: Any) -> list[str]:
    """How sure a verdict is, in words (empty for an exact one)."""
    if verdict.exact:
        return []
    lines = [f"Not exact (confidence: {verdict.confidence}): the two histories cannot settle "
             "this verdict; replay the recorded history with the new code to be sure "
             "(tk.replay_verdict(recorded, [NewWorkflow]))."]  # fmt: skip
    lines += [f"  assumes: {text}" for text in verdict.assumptions]
    return lines


def diff(args: argparse.Namespace) -> int:
    """``toolkit diff A B``: where replaying A with the code that produced B fails."""
    import toolkit as tk

    recorded, replayed = tk.read_history(args.recorded), tk.read_history(args.replayed)
    types = _workflow_type(recorded), _workflow_type(replayed)
    if None not in types and types[0] != types[1]:
        reason = (f"Not comparable: {args.recorded} is a run of workflow type {types[0]!r} and "
                  f"{args.replayed} one of {types[1]!r}; diff compares a recorded run with a run "
                  "of the same workflow under new code.")  # fmt: skip
        if args.json:
            print_json({"comparable": False, "divergence": None, "reason": reason})
        else:
            print(reason)
        return EXIT_USAGE
    verdict = tk.replay_verdict(recorded, replayed)  # the verdict carries how sure it is
    found = verdict.divergence
    sureness = {} if verdict.exact else {"exact": False, "confidence": verdict.confidence,
                                         "assumptions": list(verdict.assumptions)}  # fmt: skip
    if found is None:
        if args.json:
            print_json({"divergence": None, **sureness})
        else:
            hedge = "" if verdict.exact else " under the assumptions below"
            print(f"No divergence: replaying {args.recorded} with the code that produced "
                  f"{args.replayed} succeeds{hedge}.")  # fmt: skip
            for line in _sureness(verdict):
                print(line)
        return EXIT_OK
    if args.json:
        summary = found.to_frame().iloc[0].to_dict()
        print_json({"divergence": summary, "aligned": found.aligned.to_dict("records")})
        return EXIT_FINDINGS
    print(f"First divergence at event {found.event_id} (workflow task {found.task}, "
          f"check {found.check}): expected {found.expected!r}, got {found.actual!r}")  # fmt: skip
    for line in _sureness(verdict):
        print(line)
    print()
    for sdk, message in (("core (Python, TypeScript, .NET, Ruby)", found.core_message),
                         ("Go", found.go_message), ("Java", found.java_message)):  # fmt: skip
        print(f"{sdk}:\n  {message or '(no failure in this SDK)'}")
    print("\nCommands side by side (recorded history vs new code):")
    aligned = found.aligned.assign(same=found.aligned["same"].map({True: "", False: "<>"}))
    print_table(aligned, ["position", "recorded_event_id", "recorded", "replayed", "same"],
                width=args.width)  # fmt: skip
    return EXIT_FINDINGS


def logs(args: argparse.Namespace) -> int:
    """``toolkit logs FILE``: log records filtered by level, format and a pattern, or (with
    ``--detect NAME``) a detector's findings over the records left by those filters."""
    import toolkit as tk
    from toolkit.logs.search import grep_records

    frame = tk.read_logs(args.file)
    total = len(frame)
    if args.level:
        wanted = set(_LEVELS[_LEVELS.index(args.level) :])
        frame = frame[frame["level"].isin(wanted)]
    if args.format:
        frame = frame[frame["format"] == args.format]
    columns = LOG_COLUMNS
    if args.grep:
        try:
            pattern = re.compile(args.grep, re.IGNORECASE if args.ignore_case else 0)
        except re.error as exc:
            raise ToolkitError(f"--grep {args.grep!r}: not a regular expression ({exc})") from None
        frame = grep_records(frame, pattern)
        columns = (*LOG_COLUMNS, "matched")
    if args.detect:
        return _detect(frame, total, args)
    _emit(frame, columns, args)
    if not args.json:
        print(f"{len(frame)} of {total} records", file=sys.stderr)
    return EXIT_OK


def _detect(frame: pd.DataFrame, total: int, args: argparse.Namespace) -> int:
    from toolkit.logs.detectors import LOG_DETECTORS

    found = LOG_DETECTORS[args.detect](frame)
    _emit(found, DETECT_COLUMNS[args.detect], args)
    if not args.json:
        print(
            f"{len(found)} {args.detect} findings in {len(frame)} of {total} records",
            file=sys.stderr,
        )
    return EXIT_FINDINGS if len(found) else EXIT_OK


def note_skipped(skipped: list[tuple[Path, str]]) -> None:
    """One stderr line for the files left out because they are not histories."""
    if skipped:
        kinds = pd.Series([kind for _, kind in skipped]).value_counts()
        what = ", ".join(f"{kind}: {count}" for kind, count in kinds.items())
        print(f"toolkit: skipped {len(skipped)} files that are not histories ({what})",
              file=sys.stderr)  # fmt: skip


def _tables_for(source: str | None, logs_file: str | None) -> tuple[dict[str, Any], int]:
    """The tables for ``toolkit sql``, and how many history files could not be read."""
    import toolkit as tk
    from toolkit.datasets import is_dataset
    from toolkit.histories.reading.batch import find_history_files

    tables: dict[str, Any] = {}
    unreadable = 0
    if source is not None:
        path = Path(source)
        if is_dataset(path):
            tables["dataset"] = path
        elif path.suffix == ".parquet":
            tables["data"] = path
        else:
            skipped: list[tuple[Path, str]] = []
            find_history_files(path, skipped)
            note_skipped(skipped)
            batch = tk.read_histories(path, progress=False)
            for row in batch.errors.itertuples():
                print(f"unreadable: {row.message}", file=sys.stderr)
            if batch.events.empty:
                raise ToolkitError(f"{source}: no history could be read; expected a dataset, "
                                   "a Parquet file or history files")  # fmt: skip
            tables["events"] = batch.events
            unreadable = len(batch.errors)
    if logs_file is not None:
        tables["logs"] = tk.read_logs(logs_file)
    return tables, unreadable


def sql(args: argparse.Namespace) -> int:
    """``toolkit sql QUERY [SOURCE]``: DuckDB over a dataset, Parquet, histories or logs.

    Exits 1, as ``toolkit export`` does, when some history files could not be read (the query
    ran over the others).
    """
    from toolkit.datasets.query import sql as run_sql

    tables, unreadable = _tables_for(args.source, args.logs)
    result = run_sql(args.query, **tables)
    _emit(result, tuple(map(str, result.columns)), args)
    return EXIT_FINDINGS if unreadable else EXIT_OK


def export(args: argparse.Namespace) -> int:
    """``toolkit export DIR --to DATASET [--compact]``: add histories to a Parquet dataset
    (then merge its small batches' files)."""
    from toolkit.datasets import compact_dataset, write_dataset

    report = write_dataset(args.histories, args.to, namespace=args.namespace,
                           batch_files=args.batch_files, progress=args.progress,
                           workflow_id_from=args.workflow_id_from)  # fmt: skip
    compacted = compact_dataset(args.to) if args.compact else None
    if args.json:
        frames = ("errors", "conflicts", "unrepairable")
        summary = {k: v for k, v in vars(report).items() if k not in frames}
        summary["dataset"] = str(report.dataset)
        if compacted is not None:
            summary["files_compacted"] = [compacted.files_before, compacted.files_after]
        # The stdout of the moment (a notebook or a test may have swapped it since import).
        print_json({**summary, **{name: getattr(report, name) for name in frames}}, out=sys.stdout)
    else:
        print(report)
        if compacted is not None:
            print(compacted)
        for row in report.errors.itertuples():
            print(f"unreadable: {row.message}", file=sys.stderr)
        for row in report.conflicts.itertuples():
            print(f"conflict: run {row.run_key} in {row.source} has {row.events} events; the "
                  f"dataset keeps the copy with {row.kept_events}", file=sys.stderr)  # fmt: skip
    return EXIT_FINDINGS if report.files_failed or report.runs_conflicting else EXIT_OK


def _print_cards(found: Any, width: int | None) -> None:
    """The report's head in the terminal: the headline, what was read, each card's title."""
    import textwrap

    from toolkit.cli.render import terminal_width

    limit = terminal_width(sys.stdout) if width is None else width

    def say(text: str, hang: str = "") -> None:
        if limit <= 0:
            print(text)
            return
        print("\n".join(textwrap.wrap(text, limit, subsequent_indent=hang,
                                       break_on_hyphens=False)))  # fmt: skip

    say(found.headline())
    print()
    say(found.summary())
    if found.label_note:
        say(f"Version labels: {found.label_note}.")
    if len(found.findings):
        print()
    for number, row in enumerate(found.findings.itertuples(), 1):
        where = "" if row.run_count else "; seen in logs"
        say(f"{number}. [{row.severity}] {row.title} ({row.kind}{where})", hang="   ")


def investigate(args: argparse.Namespace) -> int:
    """``toolkit investigate PATH...``: ranked findings; exit 1 when there are any."""
    import toolkit as tk

    if not args.paths and not args.address:
        raise ToolkitError("investigate: give history files/folders/globs, or --address and "
                           "--query to fetch runs from a server")  # fmt: skip
    found = tk.investigate(args.paths or None, logs=args.logs or None,
                           configs=args.configs or None, server=args.address, query=args.query,
                           namespace=args.namespace, limits=_limits(args))  # fmt: skip
    if args.html:
        found.to_html(args.html)
    if args.json:
        print_json({"headline": found.headline(), "summary": found.summary(),
                    "label_note": found.label_note,
                    "findings": found.findings, "runs": found.runs,
                    "errors": found.errors})  # fmt: skip
    else:
        _print_cards(found, args.width)
        failed = found.errors[found.errors["status"] == "failed"]
        for row in failed.itertuples():
            print(f"unreadable: {row.reason}", file=sys.stderr)
        if args.html:
            print(f"\nReport written to {args.html}")
    return EXIT_FINDINGS if len(found.findings) else EXIT_OK


def _limits(args: argparse.Namespace) -> Any:
    from toolkit.histories.server_limits import limits_from_text

    text = getattr(args, "limits", None)
    return None if text is None else limits_from_text(text)


BUDGET_COLUMNS = ("workflow_type", "run_id", "status", "size", "model_calls", "largest",
                  "resent", "limit_hit", "first_limit", "forecast", "confidence",
                  "can_at")  # fmt: skip


def budget(args: argparse.Namespace) -> int:
    """``toolkit budget PATH...``: one row per run; exit 1 when a run met a size limit or a file
    could not be read."""
    import toolkit as tk
    from toolkit.text import nbytes

    fit: Any = None
    if args.fit is not None:
        try:
            fit = float(args.fit) if "." in args.fit else int(args.fit)
        except ValueError:
            raise ToolkitError(f"budget: --fit {args.fit!r} is not a number of calls or a "
                               "fraction") from None  # fmt: skip
    if args.workers < 0:
        raise ToolkitError(f"budget: --workers {args.workers} is not a number of processes "
                           "(0 for one per core)")  # fmt: skip
    table = tk.history_budget(args.paths, limits=_limits(args), roles=args.roles, fit=fit,
                              workers=args.workers or None)  # fmt: skip
    errors = pd.DataFrame(table.attrs.get("errors", []), columns=["source", "message"])
    if args.json:
        print_json(table)
    else:
        shown = table.assign(
            size=[nbytes(v) for v in table["history_bytes"]],
            largest=[nbytes(v) if v is not pd.NA else "" for v in table["largest_payload_bytes"]],
            resent=[f"{v:.0%}" if v == v else "" for v in table["resent_share"]],
            forecast=[_forecast_text(r) for r in table.itertuples()],
            can_at=table["continue_as_new_at"],
        )
        _emit(shown, BUDGET_COLUMNS, args)
        notes = table[table["note"].notna()]
        for row in notes.itertuples():
            which = f"run {row.run_id}" if isinstance(row.run_id, str) else str(row.source)
            print(f"note: {which}: {row.note}", file=sys.stderr)
    for row in errors.itertuples():
        print(f"unreadable: {row.message}", file=sys.stderr)
    if table.empty and len(errors):
        return EXIT_USAGE
    stopped = table["limit_hit"].notna().any()
    return EXIT_FINDINGS if stopped or len(errors) else EXIT_OK


def _forecast_text(row: Any) -> str:
    """``41 calls (40-43)``, or nothing without a forecast."""
    if row.forecast_model_calls is pd.NA:
        return ""
    text = f"{row.forecast_model_calls} calls"
    if row.forecast_low != row.forecast_high:
        text += f" ({row.forecast_low}-{row.forecast_high})"
    return text


def traces(args: argparse.Namespace) -> int:
    """``toolkit traces PATH... --otlp URL | --out FILE``: spans of every run, sent or written;
    exit 1 when some files could not be read (they are left out, listed on stderr)."""
    import toolkit as tk

    if not args.otlp and not args.out:
        raise ToolkitError("traces: give --otlp URL (an OTLP/HTTP traces endpoint) and/or "
                           "--out FILE (an OTLP JSON document)")  # fmt: skip
    headers = {}
    for header in args.header:
        name, sep, value = header.partition("=")
        if not sep or not name:
            raise ToolkitError(f"traces: --header {header!r}: expected NAME=VALUE")
        headers[name.strip()] = value.strip()
    done = tk.to_otel(args.paths, path=args.out, endpoint=args.otlp, namespace=args.namespace,
                      content=args.content, project=args.project, headers=headers)  # fmt: skip
    failed = done.errors
    if args.json:
        print_json({"spans": len(done.spans), "traces": done.traces, "sent": done.sent,
                    "path": None if done.path is None else str(done.path),
                    "endpoint": done.endpoint, "errors": failed})  # fmt: skip
    else:
        counts = done.spans["role"].value_counts()
        print(f"{len(done.spans)} spans in {done.traces} traces ({counts.get('turn', 0)} turns, "
              f"{counts.get('model', 0)} model calls, {counts.get('tool_call', 0)} tool calls)")
        if done.path is not None:
            print(f"written to {done.path}")
        if done.endpoint is not None:
            print(f"sent to {done.endpoint}: {done.sent} accepted")
        for row in failed.itertuples():
            print(f"unreadable: {getattr(row, 'message', row)}", file=sys.stderr)
    return EXIT_FINDINGS if len(failed) else EXIT_OK


HANDLERS = {"show": show, "activities": activities, "turns": turns, "diff": diff, "logs": logs,
            "sql": sql, "export": export, "investigate": investigate,
            "budget": budget, "traces": traces}  # fmt: skip
HANDLERS["dataset"] = dataset_command
HANDLERS["replay-check"] = replay_check_command
