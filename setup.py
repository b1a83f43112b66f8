"""Build of the optional C parts (everything else is in pyproject.toml): the reader of the protobuf
wire format, the payload-cell scanner of the history budget, the proto-JSON scanner, the
writers of OTLP JSON spans and of OTLP protobuf requests, the hasher of the spans' ids, the
builder of the spans' attribute dicts, the JSON text of lazy cells the dataset writer stores, and
the token ledger's partial decode of model calls' payloads.

``optional=True``: where no C compiler is present the install goes on without them;
``toolkit.histories.reading.wire`` then reads the wire format with numpy,
``toolkit.histories.payload_cells`` and ``toolkit.agents.budget`` measure cells and compare
inputs in Python, proto-JSON documents are decoded with msgspec, and OTLP JSON documents are
built as dicts and serialized with orjson, OTLP protobuf requests are written field by field in
Python, span ids are hashed by ``hashlib``, spans' attribute dicts are made key by key in Python,
and ``toolkit.datasets.json_cells`` and ``toolkit.histories.tables.attribute_views`` make cells'
JSON text in Python, and the ledger decodes each model call's payloads whole with orjson (same
results).
"""

from pathlib import Path

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "toolkit.histories.reading._wirescan",
            ["toolkit/histories/reading/_wirescan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.histories._cellscan",
            ["toolkit/histories/_cellscan.c"],
            # its parts, included by it (in the sdist, and a change rebuilds it)
            depends=sorted(str(p) for p in Path("toolkit/histories/cellscan").glob("*.h")),
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.traces._otlpjson",
            ["toolkit/traces/_otlpjson.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.traces._otlpwire",
            ["toolkit/traces/_otlpwire.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.traces._spanids",
            ["toolkit/traces/_spanids.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.traces._spanattrs",
            ["toolkit/traces/_spanattrs.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.histories.reading._jsonscan",
            ["toolkit/histories/reading/_jsonscan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.agents._ledgerjson",
            ["toolkit/agents/_ledgerjson.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "toolkit.histories.columns._jsoncells",
            ["toolkit/histories/columns/_jsoncells.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
