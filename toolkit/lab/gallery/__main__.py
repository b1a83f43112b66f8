"""``python -m toolkit.lab.gallery [--data DIR] [--address HOST:PORT] [CASE ...]``.

Records the named cases (all when none are named) on the server at ``--address``, or on a fresh
embedded dev server when no address is given, and prints the table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from toolkit.lab.gallery.record import record_gallery
from toolkit.lab.server import DevServer


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, record, print one line per case."""
    parser = argparse.ArgumentParser(prog="python -m toolkit.lab.gallery")
    parser.add_argument("cases", nargs="*", help="case names (default: every registered case)")
    parser.add_argument("--data", type=Path, default=Path("data"), help="data root (default data)")
    parser.add_argument("--address", help="Temporal server host:port (default: a dev server)")
    args = parser.parse_args(argv)
    names = args.cases or None
    if args.address:
        table = record_gallery(args.data, args.address, names)
    else:
        with DevServer() as server:
            table = record_gallery(args.data, server.address, names)
    for row in table.itertuples():
        print(f"{row.case:36} {row.v1_on_v2_outcome:15} {row.v2_on_v1_outcome:15} "
              f"{'safe' if row.safe else 'breaks'}")


if __name__ == "__main__":
    main()
