"""The ledger's Usage made fast (model_records._made_usage, usage_of_counts; the pydantic-ai and
ADK readers written with them) against the dataclass and the steps written before."""

from __future__ import annotations

import copy
import itertools
import pickle
from typing import Any

import pytest

from toolkit.agents import model_records, model_shapes
from toolkit.agents.model_records import Usage, _made_usage, checked_usage, usage_of_counts


class _IntSubclass(int):
    pass


_VALUES = [None, 0, 7, 2**70, -1, True, False, 1.0, "3", [1], _IntSubclass(4), _IntSubclass(-4)]


@pytest.mark.parametrize("note", [None, "a note"])
def test_made_usage_is_the_dataclasss(note: Any) -> None:
    made, built = _made_usage(1, None, 3, 0, 5, note), Usage(1, None, 3, 0, 5, note)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert vars(made) == vars(built) and list(vars(made)) == list(vars(built))
    assert pickle.dumps(made) == pickle.dumps(built) and copy.copy(made) == built
    with pytest.raises(AttributeError):  # frozen all the same
        made.note = "x"  # type: ignore[misc]


@pytest.mark.parametrize("first", _VALUES, ids=repr)
def test_usage_of_counts_is_checked_usage(first: Any) -> None:
    for others in itertools.product([None, 2, -3, "x"], repeat=2):
        counts = (first, others[0], None, others[1], 9)
        values = dict(zip(model_records._TOKEN_FIELDS, counts, strict=True))
        for note in (None, "n"):
            found, expected = usage_of_counts(*counts, note=note), checked_usage(values, note)
            assert found == expected and repr(found) == repr(expected)
            assert [type(v) for v in vars(found).values()] == [
                type(v) for v in vars(expected).values()]  # fmt: skip


def _pydantic_usage_before(usage: Any) -> Usage:
    """_pydantic_usage as written before (a dict of the counts, checked_usage of it)."""
    if not model_shapes._mapping(usage):
        return Usage(note="the result carries no usage")
    details = usage.get("details") if model_shapes._mapping(usage.get("details")) else {}
    get = model_shapes.get_field
    tokens = {
        "input_tokens": get(usage, "input_tokens", "request_tokens"),
        "output_tokens": get(usage, "output_tokens", "response_tokens"),
        "cached_input_tokens": usage.get("cache_read_tokens"),
        "reasoning_tokens": usage.get("output_reasoning_tokens", details.get("reasoning_tokens")),
    }
    pair = (tokens["input_tokens"], tokens["output_tokens"])
    if all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
        tokens["total_tokens"] = pair[0] + pair[1]
    return checked_usage(tokens)


@pytest.mark.parametrize("usage", [
    None, [], {}, {"input_tokens": 3, "output_tokens": 4},
    {"request_tokens": 3, "response_tokens": 4, "cache_read_tokens": 1,
     "details": {"reasoning_tokens": 2}},
    {"input_tokens": 3, "output_tokens": True, "output_reasoning_tokens": 5, "details": []},
    {"input_tokens": -3, "output_tokens": 4, "cache_read_tokens": "1"},
    {"inputTokens": 3, "outputTokens": 4.0}, {"input_tokens": 2**70, "output_tokens": 1},
    {"input_tokens": _IntSubclass(3), "output_tokens": 4, "details": {"reasoning_tokens": -1}},
])  # fmt: skip
def test_pydantic_usage_as_before(usage: Any) -> None:
    found, expected = model_shapes._pydantic_usage(usage), _pydantic_usage_before(usage)
    assert found == expected and repr(found) == repr(expected)


@pytest.mark.parametrize("labels", [None, {}, {"adk_agent_name": "lab"}, {"adk_agent_name": ""},
                                    {"adkAgentName": "camel"}, {"adk_agent_name": 3}])  # fmt: skip
@pytest.mark.parametrize("instruction", [None, 'You are an agent. Your internal name is "inner".',
                                         "plain", 5])  # fmt: skip
def test_adk_agent_from_label_else_instruction(labels: Any, instruction: Any) -> None:
    """The instruction searched only where no label names the agent: the same agent."""
    config: dict[str, Any] = {"system_instruction": instruction}
    if labels is not None:
        config["labels"] = labels
    request = {"model": "m", "contents": [], "config": config}
    agent = model_shapes._ledger_python_adk(request, None, None, "summary")[0]
    label = model_shapes._str(model_shapes.get_field(labels, "adk_agent_name"))
    identity = (model_shapes._ADK_IDENTITY.search(instruction)
                if isinstance(instruction, str) else None)  # fmt: skip
    assert agent == (label or (identity.group(1) if identity else "summary"))
    full = model_shapes._read_python_adk(request, None, model_shapes.Context(None, "summary"))
    assert full.get("agent") == agent


def _input_shape_before(inp: Any) -> str | None:
    """input_shape as written before (the ADK request recognised by get_field alone)."""
    get = model_shapes.get_field
    if not model_shapes._mapping(inp):
        return None
    if "model_settings" in inp and "input" in inp:
        return "openai_agents"
    if "model_request_parameters" in inp and "messages" in inp:
        return "pydantic_ai"
    if get(inp, "contents") is not None and isinstance(inp.get("tools"), list) and (
        all(isinstance(t, str) for t in inp["tools"])
    ):
        return "go_twin"
    if get(inp, "llm_request") is not None or (
        get(inp, "contents") is not None and get(inp, "config") is not None
    ):
        return "python_adk"
    return None


def test_input_shape_as_before() -> None:
    from collections import OrderedDict

    parts = {"contents": [[], None, "x"], "config": [{}, None, 0], "tools": [["a"], [{}], None],
             "llm_request": [{}, None], "Contents": [[]], "model_settings": [{}],
             "input": [[]]}  # fmt: skip
    keys = list(parts)
    count = 0
    for mask in range(1 << len(keys)):
        chosen = [k for j, k in enumerate(keys) if mask >> j & 1]
        for values in itertools.product(*(parts[k] for k in chosen)):
            inp = dict(zip(chosen, values, strict=True))
            for made in (inp, OrderedDict(inp)):
                assert model_shapes.input_shape(made) == _input_shape_before(made), made
                count += 1
    assert count > 1000
