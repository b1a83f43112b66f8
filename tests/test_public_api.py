"""The flat public API: every advertised name resolves, and importing toolkit stays cheap."""

from __future__ import annotations

import subprocess
import sys

import toolkit as tk


def test_every_public_name_resolves() -> None:
    import pkgutil

    # Importing every submodule first: a subpackage bound onto ``toolkit`` must not shadow a
    # public function of the same name.
    for info in pkgutil.walk_packages(tk.__path__, "toolkit."):
        if ".lab." not in info.name and not info.name.endswith("__main__"):
            __import__(info.name)
    for name in tk.__all__:
        assert getattr(tk, name) is not None, name
    assert callable(tk.read_history) and callable(tk.first_divergence)
    assert callable(tk.replay_histories) and callable(tk.sql)


def test_importing_toolkit_does_not_import_pandas() -> None:
    code = "import sys, toolkit; print('pandas' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        tk.no_such_function  # noqa: B018
    except AttributeError as exc:
        assert "no_such_function" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
