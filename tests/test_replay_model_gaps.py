"""Where the model's words and sureness now meet the Replayer's: the whole ``HistoryEvent { ... }``
sdk-core prints, and a history with sdk-core flag 3 replayed by a core without it."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest
from replay_check_workflows import ChargeActivity, ChargeChild, Shipment, any_activity
from temporalio.client import Client
from temporalio.worker import Worker

import toolkit as tk
from toolkit.replay.code_replay import rust_debug_field
from toolkit.replay.report import read_replay_matrix
from toolkit.replay.verdict import InexactVerdictWarning, replay_verdict

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_whole_recorded_event_is_written_as_sdk_core_prints_it() -> None:
    case = DATA / "gallery" / "child-added"
    printed = json.loads((case / "case.json").read_text())["replays"]["v1_on_v2"]["message"]
    assert "Child workflow machine does not handle this event: HistoryEvent { event_id: 11" in (
        printed)
    divergence = tk.first_divergence(case / "v1.json", case / "v2.json")
    assert divergence.core_message == printed
    assert divergence.core_message_exact and divergence.exact


async def _record(address: str, text: str) -> tuple[Any, Any]:
    client = await Client.connect(address)
    queue = f"debug-text-{uuid.uuid4().hex[:8]}"
    histories = []
    for code in (ChargeActivity, ChargeChild):
        async with Worker(client, task_queue=queue, workflows=[code, Shipment],
                          activities=[any_activity]):
            handle = await client.start_workflow(code.run, text, task_queue=queue,
                                                 id=f"debug-text-{uuid.uuid4().hex[:8]}")
            await handle.result()
            histories.append(await handle.fetch_history())
    return histories[0], histories[1]


@pytest.mark.server
@pytest.mark.parametrize("size", [10, 64, 65, 200])
def test_the_model_prints_what_the_replayer_prints_for_short_and_long_inputs(
    dev_server: Any, size: int
) -> None:
    activity, child = asyncio.run(_record(dev_server.address, "x" * (size - 2)))
    check = tk.replay_check(activity, [ChargeChild, Shipment])
    row = check.results.iloc[0]
    assert row.outcome == "nondeterminism"
    printed = rust_debug_field(row.message, "message")
    divergence = tk.first_divergence(tk.read_history(activity), tk.read_history(child))
    assert divergence.core_message == printed and divergence.exact
    # sdk-core cuts payloads over 64 bytes to their first and last 32 (the input is JSON: the
    # text and its two quotes, ``size`` bytes).
    cut = re.search(r"input: Some\(Payloads \{ payloads: \[\[[A-Za-z0-9+/=]+\.\.", printed)
    assert (cut is not None) == (size > 64), printed
    # The check explains the failure with the model's match of the code's own commands, which
    # reaches the Replayer's words.
    assert "did not reach" not in row.explanation and row.check == "kind"


def test_a_core_without_flag_3_fails_where_a_core_with_it_replays() -> None:
    pairs = DATA / "flag_pairs" / "MoveTerminalCommands"
    matrix = read_replay_matrix(DATA / "flag_pairs" / "replay_matrix.csv")
    rows = matrix[matrix["history"] == "MoveTerminalCommands/1.7.0/late_command.json"]
    real = dict(zip(rows["replayer"], rows["outcome"], strict=True))
    assert real == {"1.6.0": "nondeterminism", "1.7.0": "ok"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InexactVerdictWarning)
        verdict = replay_verdict(tk.read_history(pairs / "1.7.0" / "late_command.json"),
                                 tk.read_history(pairs / "1.6.0" / "late_command.json"))
    assert verdict.outcome == "nondeterminism" and verdict.confidence == "assumed"
    (note,) = [a for a in verdict.assumptions if "MoveTerminalCommands" in a]
    assert "whose sdk-core is older" in note and "replay succeeds" in note
