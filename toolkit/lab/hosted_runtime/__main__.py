"""``python -m toolkit.lab.hosted_runtime [DATA_DIR]``: record ``DATA_DIR/duplicate_tool``.

Starts its own dev server (for the Python side) and MCP servers; prints the files written.
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolkit.lab.hosted_runtime.record import record_lab
from toolkit.lab.server import DevServer


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    data_dir = Path(args[0]) if args else Path(__file__).resolve().parents[3] / "data"
    with DevServer() as server:
        for path in record_lab(data_dir, server.address):
            print(path)


if __name__ == "__main__":
    main()
