"""The gallery of workflow code changes and what replay makes of them.

Each *case* is one code change: two versions of a workflow (``v1`` before, ``v2`` after) under the
same workflow type name and task queue. The recorder runs both versions one after the other on a
real Temporal server with the same workflow id, input, signals and updates, exports both histories,
and replays each history with the *other* version's code through temporalio's ``Replayer``:

``v1_on_v2``
    the v1 history replayed with the v2 code: what happens to runs started before a deploy of v2.
    A case is **safe** when this outcome is ``ok``.
``v2_on_v1``
    the v2 history replayed with the v1 code: what happens on a rollback.

Outcomes are ``ok``, ``nondeterminism`` (the core's nondeterminism verdict) or ``error`` (any other
workflow task failure, e.g. workflow code raising on a recorded value).

Adding a case
-------------
Write the two classes with the same ``@workflow.defn(name=...)``, declare a :class:`Case` and
record it (``Signal``, ``Update``, ``Query`` and ``Settle`` steps wait until the run is idle before
acting)::

    from pathlib import Path
    from temporalio import workflow
    from toolkit.lab.gallery import Case, Expect, Signal, record_gallery, register
    from toolkit.lab.gallery.activities import audit, charge, reserve
    from toolkit.lab.gallery.builtin.common import WaitsForSignals, act

    @workflow.defn(name="Checkout")
    class CheckoutV1(WaitsForSignals):
        @workflow.run
        async def run(self, item: str) -> str:
            await act(reserve, item)
            await self.wait_go()
            return await act(charge, item)

    @workflow.defn(name="Checkout")
    class CheckoutV2(WaitsForSignals):
        @workflow.run
        async def run(self, item: str) -> str:
            await act(reserve, item)
            await self.wait_go()
            if workflow.patched("audit-first"):
                await act(audit, item)
            return await act(charge, item)

    case = Case("checkout-audit", "An audit step behind a patch.", "patch_introduced",
                "after_signal", CheckoutV1, CheckoutV2,
                Expect(v1_on_v2="ok", v2_on_v1="nondeterminism"), drive=(Signal("go"),))
    register(case)                                    # optional: makes it a named case
    table = record_gallery(Path("data"), server.address, [case])

Workers register :data:`~toolkit.lab.gallery.activities.ACTIVITIES`; pass ``support=`` for child
workflow classes and ``side_task_queue=True`` when an activity runs on ``<task queue>-side``.

Data format (``toolkit.gallery/1``, stable; ``first_divergence`` tests read it)
-------------------------------------------------------------------------------
``data/gallery/cases.csv``
    one row per case; columns ``case, kind, where, v1_on_v2_outcome, v1_on_v2_message,
    v2_on_v1_outcome, v2_on_v1_message, safe, expected_safe, matches_expectation,
    message_stable, description`` (empty message for ``ok``).
``data/gallery/<case>/v1.json``, ``v2.json``
    proto-JSON ``History`` (``WorkflowHistory.to_json()``) of the *first* run of each version
    (for continue-as-new cases, the run that continued). Open runs (waiting for a signal that
    never comes, or stuck on a failing workflow task) are exported while open. The workflow id of
    both is ``case.json["workflow_id"]`` (``gallery-<case>``).
``data/gallery/<case>/case.json``
    ``format``, ``name``, ``description``, ``kind``, ``where``, ``workflow_type``,
    ``workflow_id``, ``task_queue``, ``inputs``, ``drive`` (steps as dicts), ``support``,
    ``message_stable``; ``v1`` / ``v2``: ``class``, ``history`` (file name), ``run_id``,
    ``status`` (``completed``, ``continued_as_new``, ``running``, ``stuck``, ...), ``events``,
    ``steps`` (what each drive step returned: update results or rejections, query answers);
    ``expected`` (``v1_on_v2``, ``v2_on_v1``); ``replays``: for ``v1_on_v2``, ``v2_on_v1`` and the
    self-checks ``v1_on_v1``, ``v2_on_v2`` a dict with ``outcome``, ``message`` (the core failure
    message exactly, e.g. ``[TMPRL1100] Nondeterminism error: Activity type of scheduled event
    'reserve' does not match activity type of activity command 'reserve_stock'``),
    ``error_type`` and ``replayer_error`` (the replayer's exception text with stack traces
    replaced by ``<omitted>``); ``safe``, ``expected_safe``, ``matches_expectation``,
    ``sdk`` (temporalio version).

``message_stable`` is False where a message quotes run-specific values (UUIDs drawn from the run's
seed, event times): a new recording gives the same outcome with another message, while replaying
the committed histories always gives the committed message.
"""

from toolkit.lab.gallery.case import (
    KINDS,
    WHERE,
    Case,
    Expect,
    Query,
    Settle,
    Signal,
    Update,
    all_cases,
    get_case,
    register,
)
from toolkit.lab.gallery.record import (
    FORMAT,
    TABLE_COLUMNS,
    arecord_gallery,
    record_case,
    record_gallery,
)
from toolkit.lab.gallery.replay import ReplayOutcome, core_message, replay_outcome, replay_with

__all__ = [
    "FORMAT",
    "KINDS",
    "TABLE_COLUMNS",
    "WHERE",
    "Case",
    "Expect",
    "Query",
    "ReplayOutcome",
    "Settle",
    "Signal",
    "Update",
    "all_cases",
    "arecord_gallery",
    "core_message",
    "get_case",
    "record_case",
    "record_gallery",
    "register",
    "replay_outcome",
    "replay_with",
]
