"""``toolkit dataset check|repair|compact PATH``: is every claimed run there, mend what is not,
merge small files."""

from __future__ import annotations

import argparse
import sys

from toolkit.cli.render import print_json, print_table

__all__ = ["dataset_command"]

EXIT_OK = 0
EXIT_FINDINGS = 1


def dataset_command(args: argparse.Namespace) -> int:
    """Check (exit 1 on problems), repair (exit 1 when something could not be repaired) or
    compact (exit 0).

    Output goes to the ``sys.stdout`` of the moment (not the one the renderer saw at import).
    """
    from toolkit.datasets import check_dataset, repair_dataset

    if args.action == "compact":
        return _compact(args)
    if args.action == "check":
        found = check_dataset(args.path)
        if args.json:
            print_json({"dataset": str(found.dataset), "ok": found.ok, "batches": found.batches,
                        "runs": found.runs, "events": found.events,
                        "in_progress": found.in_progress, "unverified": found.unverified,
                        "problems": found.problems}, out=sys.stdout)  # fmt: skip
        else:
            print(found)
            if not found.ok:
                print_table(found.problems, width=args.width, out=sys.stdout)
        return EXIT_OK if found.ok else EXIT_FINDINGS
    repaired = repair_dataset(args.path)
    if args.json:
        print_json({"dataset": str(repaired.before.dataset), "ok": repaired.after.ok,
                    "removed": repaired.removed, "dropped_batches": repaired.dropped_batches,
                    "runs_rewritten": repaired.runs_rewritten,
                    "unrepairable": repaired.unrepairable,
                    "problems_left": repaired.after.problems}, out=sys.stdout)  # fmt: skip
    else:
        print(repaired)
        for row in repaired.unrepairable.itertuples():
            print(f"cannot repair: {row.source}: {row.reason}", file=sys.stderr)
    return EXIT_OK if repaired.after.ok and repaired.unrepairable.empty else EXIT_FINDINGS


def _compact(args: argparse.Namespace) -> int:
    from toolkit.datasets import compact_dataset

    done = compact_dataset(args.path, target_bytes=max(1, int(args.target_mb * 1024 * 1024)))
    if args.json:
        print_json({"dataset": str(done.dataset), "batches_before": done.batches_before,
                    "batches_after": done.batches_after, "files_before": done.files_before,
                    "files_after": done.files_after, "bytes_before": done.bytes_before,
                    "bytes_after": done.bytes_after, "replaced": done.replaced,
                    "written": done.written, "seconds": round(done.seconds, 3)},
                   out=sys.stdout)  # fmt: skip
    else:
        print(done)
    return EXIT_OK
