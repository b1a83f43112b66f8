"""Sample workflows recorded on a live server: the test and demo histories of the toolkit.

Examples
--------
>>> from toolkit.lab.server import DevServer
>>> from toolkit.lab.samples import record_samples
>>> with DevServer() as server:                                   # doctest: +SKIP
...     paths = record_samples(server.address, Path("build/samples"), quick=True)
"""

from toolkit.lab.samples.record import (
    QUICK_SCENARIOS,
    SCENARIOS,
    record_samples,
    record_samples_async,
    sandbox_runner,
)

__all__ = [
    "QUICK_SCENARIOS", "SCENARIOS", "record_samples", "record_samples_async", "sandbox_runner",
]
