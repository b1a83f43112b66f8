"""``python -m toolkit.lab.flag_pairs``: see :mod:`toolkit.lab.flag_pairs.record`."""

import sys

from toolkit.lab.flag_pairs.record import main

sys.exit(main())
