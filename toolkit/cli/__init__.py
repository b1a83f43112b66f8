"""``toolkit``: the command line, a thin layer over the library.

::

    toolkit show run.json                       summary (type, status, result, duration), events
    toolkit show run.json --full                the same, the input, result and failure whole
    toolkit show -w agent-42 --address HOST:PORT   the same, fetched from a server
    toolkit activities run.json                 activity executions (attempts, outcomes)
    toolkit turns agent.json                    an agent's turns and model steps
    toolkit diff v1.json v2.json                where replay of v1 fails against v2's code
    toolkit logs worker.log --level warning --grep "duplicate tool"
    toolkit logs worker.log --detect duplicate_tools   one row per failure (exit 1 if any)
    toolkit sql "select ... from activities" exports/     (a dataset, Parquet or histories)
    toolkit sql "select * from duplicate_tools" --logs worker.log   (detector tables)
    toolkit export exports/ --to histories.parquet
    toolkit dataset check histories.parquet     (or repair: rewrite damaged batches from sources;
                                                 compact: merge small files into few large ones)
    toolkit investigate exports/ --logs worker.log --html report.html
    toolkit replay-check exports/ --workflows app.workflows:Order --junit replay.xml
    toolkit budget exports/ --limits history_bytes=50MiB   sizes, where the bytes go, forecasts
    toolkit traces exports/ --otlp http://127.0.0.1:6006/v1/traces   (or --out traces.json)

Every command takes ``--json`` (JSON Lines: one object per row, every column) and ``--width``
(text tables fit the terminal's width: headers whole, the message column wrapped, other long
cells cut; ``--width 0`` never cuts; piped output is never cut). Exit codes: 0 done, 1 findings
(a divergence, unreadable or conflicting files on export, findings of ``investigate``), 2 bad
usage or unreadable input (the message names the source and the position).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["DETECTORS", "EXIT_USAGE", "build_parser", "main"]

EXIT_USAGE = 2

#: ``toolkit logs --detect`` choices: the keys of ``toolkit.logs.detectors.LOG_DETECTORS`` (kept
#: here so that building the parser imports no analysis module).
DETECTORS = ("duplicate_tools", "retries", "dead_letters", "mcp_client_failures", "nondeterminism")


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json", action="store_true", help="print JSON Lines: one object per row, every column"
    )
    common.add_argument(
        "--width",
        type=int,
        default=None,
        help="table width in characters (default: the terminal's; 0: no limit)",
    )
    return common


def _table_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--columns", help="comma-separated columns to print")
    parser.add_argument("--limit", type=int, help="print at most this many rows")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``toolkit`` command."""
    common = _common()
    parser = argparse.ArgumentParser(
        prog="toolkit",
        description="Investigate Temporal workflow histories and worker logs.",
        epilog="Exit codes: 0 done, 1 findings (divergence, unreadable files), 2 bad input.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = sub.add_parser(
        "show", parents=[common], help="a history's summary and events (a file, or fetched with -w)"
    )
    show.add_argument("file", nargs="?", help="a history file (any exported dialect)")
    show.add_argument("-w", "--workflow-id", help="fetch this workflow's history from --address")
    show.add_argument("-r", "--run-id", help="with -w: this run (default: the latest)")
    show.add_argument(
        "--address",
        default="127.0.0.1:7233",
        help="with -w: the Temporal frontend (default 127.0.0.1:7233)",
    )
    show.add_argument("-n", "--namespace", default="default", help="with -w: the namespace")
    show.add_argument("--type", help="only event types matching this regular expression")
    show.add_argument("--full", action="store_true",
                      help="print the summary's input, result and failure whole (default: one "
                      "line each, with their length)")  # fmt: skip
    _table_options(show)

    activities = sub.add_parser("activities", parents=[common], help="activity executions")
    activities.add_argument("file")
    _table_options(activities)

    turns = sub.add_parser("turns", parents=[common], help="an agent's turns and model steps")
    turns.add_argument("file")
    turns.add_argument(
        "--roles",
        default="auto",
        help="agent framework preset (default: detect from activity names)",
    )
    _table_options(turns)

    diff = sub.add_parser(
        "diff", parents=[common], help="first divergence: replaying RECORDED with REPLAYED's code"
    )
    diff.add_argument("recorded", help="the recorded history (old code)")
    diff.add_argument("replayed", help="a history the new code produced from the same inputs")

    logs = sub.add_parser("logs", parents=[common], help="log records, filtered")
    logs.add_argument("file", help="a log file (any format; plain or gzip)")
    logs.add_argument(
        "--level",
        choices=("debug", "info", "warning", "error", "critical"),
        help="only records at this level or above",
    )
    logs.add_argument("--format", help="only records of this format (zap_json, slog_text, ...)")
    logs.add_argument(
        "--grep",
        help="only records whose message, a field value or the line "
        "matches this regex (column 'matched' says where)",
    )
    logs.add_argument("-i", "--ignore-case", action="store_true", help="--grep ignores case")
    logs.add_argument(
        "--detect",
        choices=DETECTORS,
        help="print a detector's findings instead of records (exit 1 if any)",
    )
    _table_options(logs)

    query = sub.add_parser("sql", parents=[common], help="DuckDB SQL over histories or a dataset")
    query.add_argument("query", help="the SQL (tables: events, activities, runs, logs, ...)")
    query.add_argument(
        "source", nargs="?", help="a dataset folder, a Parquet file (table 'data') or history files"
    )
    query.add_argument(
        "--logs",
        help="a log file, registered as table 'logs' (and its detector "
        "tables duplicate_tools, retries, dead_letters, ...)",
    )
    _table_options(query)

    export = sub.add_parser(
        "export",
        parents=[common],
        help="add histories (a folder, a Cloud export tree) to a dataset",
    )
    export.add_argument("histories", nargs="+", help="history files, folders or globs")
    export.add_argument("--to", required=True, help="the dataset folder (created if absent)")
    export.add_argument("--namespace", help="namespace for histories whose source names none")
    export.add_argument("--batch-files", type=int, default=1000, help="files per commit")
    export.add_argument("--progress", action="store_true", default=None, help="progress bar")
    export.add_argument(
        "--compact",
        action="store_true",
        help="then merge the small files of the dataset's batches (toolkit dataset compact)",
    )
    export.add_argument(
        "--workflow-id-from",
        metavar="REGEX",
        help="workflow id from the path where histories do not hold it (named "
        "groups workflow_id, run_id, namespace)",
    )

    dataset = sub.add_parser(
        "dataset",
        parents=[common],
        help="check a dataset (every claimed run has its rows), repair it, "
        "or compact its small files",
    )
    dataset.add_argument("action", choices=("check", "repair", "compact"))
    dataset.add_argument("path", help="the dataset folder")
    dataset.add_argument(
        "--target-mb",
        type=float,
        default=64,
        help="compact: size a compacted file aims at, in MiB (default 64)",
    )
    _investigate_parser(sub, common)
    from toolkit.cli.replay_check import add_parser as replay_check_parser

    replay_check_parser(sub, common)
    _budget_parser(sub, common)
    _traces_parser(sub, common)
    return parser


def _budget_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    budget = sub.add_parser(
        "budget", parents=[common],
        help="history size per run, where the bytes go, and when a run meets a server limit",
    )  # fmt: skip
    budget.add_argument("paths", nargs="+", help="history files, folders or globs")
    budget.add_argument(
        "--limits", default=None,
        help="the server's limits: 'cloud', name=value pairs (history_bytes=256KiB,"
        "payload_bytes=2MiB; dynamic-config keys work too), a JSON object, or the server's "
        "dynamic-config YAML file (default: self-hosted defaults)",
    )  # fmt: skip
    budget.add_argument("--fit", default=None,
                        help="fit each run's growth on its first N model calls, or a fraction "
                        "such as 0.25 (default: every call)")  # fmt: skip
    budget.add_argument("--roles", default="auto", help="agent framework preset (default: detect)")
    budget.add_argument("--workers", type=int, default=1,
                        help="processes measuring chunks of a large folder (0: one per core; "
                        "the same rows as one process; default: 1)")  # fmt: skip
    _table_options(budget)


def _traces_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    traces = sub.add_parser(
        "traces", parents=[common],
        help="agent runs as OpenTelemetry traces: OTLP/HTTP to a receiver or an OTLP JSON file",
    )  # fmt: skip
    traces.add_argument("paths", nargs="+", help="history files, folders or globs")
    traces.add_argument("--otlp", metavar="URL",
                        help="an OTLP/HTTP traces endpoint (http://127.0.0.1:6006/v1/traces)")
    traces.add_argument("--out", metavar="FILE", help="write one OTLP JSON document here")
    traces.add_argument("--content", action="store_true",
                        help="include payload contents (default: sizes only)")  # fmt: skip
    traces.add_argument("--namespace", help="namespace in the ids (keep it between exports)")
    traces.add_argument("--project", help="Phoenix project (resource openinference.project.name)")
    traces.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                        help="an HTTP header for --otlp (an API key); repeatable")  # fmt: skip


def _investigate_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    investigate = sub.add_parser(
        "investigate", parents=[common],
        help="findings across runs, versions and logs (exit 1 when there are findings)",
    )  # fmt: skip
    investigate.add_argument("paths", nargs="*", help="history files, folders or globs")
    investigate.add_argument("--logs", nargs="+", action="extend", default=[],
                             help="worker/agent log files or folders")  # fmt: skip
    investigate.add_argument("--configs", nargs="+", action="extend", default=[],
                             help="MCP/agent config files (JSON or YAML)")  # fmt: skip
    investigate.add_argument("--address", help="a Temporal server to fetch runs from")
    investigate.add_argument("--query", help="visibility query for --address")
    investigate.add_argument("--namespace", default="default", help="namespace for --address")
    investigate.add_argument("--html", help="also write the report to this HTML file")
    investigate.add_argument("--limits", default=None,
                             help="the server's limits for the history-size findings (as for "
                             "toolkit budget)")  # fmt: skip


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; options may come before, between or after a command's positionals.

    argparse hands a subcommand its arguments in one pass, so ``toolkit sql --json "select 1"
    data/`` would leave ``data/`` unparsed; the command's own parser reads them again, intermixed.
    """
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = commands.choices[args.command]
    rest = argv[argv.index(args.command) + 1 :]
    again = command.parse_intermixed_args(rest)
    again.command = args.command
    return again


def console() -> None:
    """The ``toolkit`` console script: :func:`main`, then exit with its code.

    Where a Temporal client ran (``show -w``, ``fetch``, ``investigate --server``), the process
    ends without finalizing the interpreter: the Rust runtime behind temporalio keeps threads
    that can abort the process while Python shuts down, turning exit code 2 or 0 into SIGABRT
    (seen once in CI under load). Output is flushed first; nothing else is pending by then.
    """
    code = main()
    runtime = sys.modules.get("temporalio.runtime")
    reference = getattr(runtime, "_runtime_ref", None)
    if getattr(reference, "_default_runtime", None) is not None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (also the console script's entry point)."""
    from toolkit.cli.commands import HANDLERS
    from toolkit.errors import ToolkitError

    args = _parse(build_parser(), list(sys.argv[1:] if argv is None else argv))
    try:
        return HANDLERS[args.command](args)
    except ToolkitError as exc:
        print(f"toolkit {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `toolkit show big.json | head`: the reader left, nothing to say
        sys.stderr.close()
        return 0
    except OSError as exc:  # a file the command opens itself (--out, a report): which, and why
        if exc.filename is None:
            raise
        print(f"toolkit {args.command}: error: {exc.filename}: {exc.strerror or exc}",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
