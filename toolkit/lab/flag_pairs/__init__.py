"""Histories recorded by the same workflow code under temporalio releases on either side of an
SDK flag's introduction, and the real Replayer's verdict on each one replayed by each release.

Modules: :mod:`.envs` (one environment per release), :mod:`.plan` (what is recorded where),
:mod:`.workflows` (the scenarios' workflow code and its code changes, importable by every
release), :mod:`.drive` (one run on the dev server), :mod:`.worker` and :mod:`.replay` (entry
points run inside an environment), :mod:`.record` (the driver, ``python -m
toolkit.lab.flag_pairs``). Nothing is imported here because worker and replay processes import
this package inside old environments.
"""
