"""Build of the optional C reader of the protobuf wire format (everything else is in pyproject.toml).

``optional=True``: where no C compiler is present the install goes on without it and
``toolkit.histories.reading.wire`` reads the wire format with numpy instead (same results).
"""

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
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
