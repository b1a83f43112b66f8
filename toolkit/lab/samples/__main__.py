"""``python -m toolkit.lab.samples OUT_DIR [--quick] [--address HOST:PORT]``.

Records the sample histories into OUT_DIR, on the given server or on an embedded dev server started
for the purpose, and prints one line per file written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolkit.lab.samples.record import SCENARIOS, record_samples
from toolkit.lab.server import DevServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.lab.samples", description=__doc__)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--quick", action="store_true", help="only the demo's small subset")
    parser.add_argument("--address", help="a running server (default: start a dev server)")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                        help="record only these scenarios (repeatable)")
    args = parser.parse_args(argv)
    if args.address:
        written = record_samples(args.address, args.out_dir, quick=args.quick,
                                 scenarios=args.scenario)
    else:
        with DevServer() as server:
            written = record_samples(server.address, args.out_dir, quick=args.quick,
                                     scenarios=args.scenario)
    for name, path in written.items():
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
