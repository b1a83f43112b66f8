"""``toolkit replay-check``: replay recorded histories with the new code before it ships.

::

    toolkit replay-check exports/ --workflows myapp.workflows:OrderWorkflow --junit replay.xml
    toolkit replay-check --address staging:7233 --namespace staging \\
        --query "WorkflowType = 'Order'" --sample 20 --workflows myapp.workflows:OrderWorkflow

Exit codes: 0 every checked history replays, 1 some would break (or could not be read), 2 bad
input (code that does not import, an unreachable server, nothing to check). The histories that
would break come first, open runs (which a deploy breaks at once) before closed ones.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from toolkit.cli.render import print_json, print_table
from toolkit.errors import ToolkitError
from toolkit.text import count, listing

__all__ = ["add_parser", "replay_check_command"]

#: What the text output shows of each history that would break.
BROKEN_COLUMNS = ("open", "workflow_id", "run_id", "label", "outcome", "event_id", "group")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``replay-check`` subcommand's arguments."""
    check = sub.add_parser(
        "replay-check", parents=[common],
        help="replay histories with new workflow code before deploying it (exit 1: some break)",
    )  # fmt: skip
    check.add_argument("paths", nargs="*",
                       help="history files, folders, globs or a dataset (or use --address)")
    check.add_argument("--workflows", nargs="+", action="extend", default=[], required=True,
                       metavar="MODULE:CLASS",
                       help="the new code's workflow classes (a name may be a list of them)")
    check.add_argument("--options", metavar="MODULE:FUNCTION",
                       help="a function returning Replayer options (data converter, codec, "
                       "interceptors, plugins, workflow runner)")  # fmt: skip
    check.add_argument("--python", help="replay with this interpreter (the new build's "
                       "environment); the code is imported there")  # fmt: skip
    check.add_argument("--workers", type=int, help="replay in this many processes")
    check.add_argument("--timeout", type=float, default=60.0,
                       help="seconds one history may take (default 60)")
    check.add_argument("--address", help="a Temporal server to fetch runs from")
    check.add_argument("--namespace", default="default", help="namespace for --address")
    check.add_argument("--query", help="visibility query for --address (a SQL where clause "
                       "over the runs of a dataset)")  # fmt: skip
    check.add_argument("--sample", type=int, help="closed runs checked per workflow type and "
                       "build id, the newest first (every open run is checked)")  # fmt: skip
    check.add_argument("--max-open", type=int, default=1000, help="open runs checked at most")
    check.add_argument("--no-trim", action="store_true",
                       help="replay open runs as exported (default: up to the last completed "
                       "workflow task)")  # fmt: skip
    check.add_argument("--junit", help="also write JUnit XML here (one test case per history)")
    check.add_argument("--html", help="also write the report here")


def _broken_first(results: pd.DataFrame) -> pd.DataFrame:
    rank = results["outcome"].map({"nondeterminism": 0, "failed": 0}).fillna(1)
    order = pd.DataFrame({"rank": rank, "closed": ~results["open"].fillna(False).astype(bool),
                          "position": results["history"]})  # fmt: skip
    return results.loc[order.sort_values(["rank", "closed", "position"]).index]


def replay_check_command(args: argparse.Namespace) -> int:
    """Run the check; print what would break; write the JUnit and HTML files asked for."""
    from toolkit.replay_check import replay_check

    if bool(args.paths) == bool(args.address):
        raise ToolkitError("replay-check: give history files/folders/globs/a dataset, or "
                           "--address with --query, not both")  # fmt: skip
    source = args.address or (args.paths[0] if len(args.paths) == 1 else args.paths)
    check = replay_check(
        source, args.workflows, query=args.query, sample=args.sample, max_open=args.max_open,
        namespace=args.namespace, workers=args.workers, timeout=args.timeout,
        python=args.python, options=args.options, trim=not args.no_trim,
    )  # fmt: skip
    if args.junit:
        check.to_junit(args.junit)
    if args.html:
        check.to_html(args.html)
    ordered = _broken_first(check.results)
    if args.json:
        print_json(ordered, out=sys.stdout)
        return check.exit_code
    out = sys.stdout
    print(check.summary(), file=out)
    broken = ordered[ordered["outcome"].isin(["nondeterminism", "failed"])]
    if len(broken):
        print(file=out)
        print_table(broken, BROKEN_COLUMNS, width=args.width, out=out)
        for row in check.groups.itertuples():
            runs = f"{count(row.histories, 'history', 'histories')} ({row.open} open, " \
                f"{row.closed} closed; recorded by {listing(row.labels)})"
            print(f"\ngroup {row.group}: {runs}\n   {row.explanation or row.outcome}\n"
                  f"   the Replayer: {row.message}", file=out)  # fmt: skip
    skipped = check.results[check.results["outcome"] == "skipped"]
    for reason, rows in skipped.groupby("reason", sort=False):
        print(f"not checked ({len(rows)}): {reason}", file=sys.stderr)
    for name, path in (("JUnit", args.junit), ("Report", args.html)):
        if path:
            print(f"{name} written to {path}", file=out)
    return check.exit_code
