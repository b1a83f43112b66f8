"""agent_steps on an agent of no known framework, recorded on the real dev server: the model is
an activity returning Gemini responses (built with google.genai's own types), one tool runs as a
local activity and one as a child workflow. No preset names these activities, so the roles are
inferred from what the activities return and what the model asked for."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from toolkit.agents.turns import agent_steps
from toolkit.errors import ToolkitError
from toolkit.histories.reading.read import read_history

pytestmark = pytest.mark.server

DECLARATIONS = [{"name": "lookup_order", "description": "order status"},
                {"name": "get_weather", "description": "weather"}]  # fmt: skip


@activity.defn(name="ask_gemini")
async def ask_gemini(request: dict[str, Any]) -> dict[str, Any]:
    """A scripted model: asks for lookup_order, then get_weather, then answers in text."""
    from google.genai import types

    done = sum("functionResponse" in part for c in request["contents"] for part in c["parts"])
    if done < 2:
        name = ("lookup_order", "get_weather")[done]
        part = types.Part(function_call=types.FunctionCall(name=name, args={}, id=f"fc-{done}"))
    else:
        part = types.Part(text="Order A-17 ships today; it is sunny.")
    response = types.GenerateContentResponse(
        candidates=[types.Candidate(content=types.Content(role="model", parts=[part]))],
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=40 + 10 * done, candidates_token_count=5),
        model_version="scripted-gemini",
    )  # fmt: skip
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)


@activity.defn(name="lookup_order")
async def lookup_order() -> str:
    return "A-17 ships today"


@workflow.defn(name="get_weather")
class GetWeather:
    @workflow.run
    async def run(self) -> str:
        return "sunny"


@workflow.defn(name="CustomAgent")
class CustomAgent:
    @workflow.run
    async def run(self, question: str) -> str:
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": question}]}]
        while True:
            request = {"contents": contents, "tools": [{"functionDeclarations": DECLARATIONS}]}
            answer = await workflow.execute_activity(
                ask_gemini, request, start_to_close_timeout=timedelta(seconds=10),
                summary="custom_agent",
            )  # fmt: skip
            parts = answer["candidates"][0]["content"]["parts"]
            calls = [p["functionCall"] for p in parts if "functionCall" in p]
            if not calls:
                return parts[0]["text"]
            contents.append({"role": "model", "parts": parts})
            for call in calls:
                if call["name"] == "lookup_order":
                    output = await workflow.execute_local_activity(
                        lookup_order, start_to_close_timeout=timedelta(seconds=10))
                else:
                    output = await workflow.execute_child_workflow(
                        GetWeather.run, id=f"{workflow.info().workflow_id}-weather")
                contents.append({"role": "user", "parts": [{"functionResponse": {
                    "name": call["name"], "id": call["id"], "response": {"result": output}}}]})


@pytest.fixture(scope="module")
def custom_history(dev_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("custom") / "custom_agent.json"

    async def record() -> None:
        client = await Client.connect(dev_server.address)
        queue = f"custom-{uuid.uuid4()}"
        async with Worker(client, task_queue=queue, workflows=[CustomAgent, GetWeather],
                          activities=[ask_gemini, lookup_order],
                          workflow_runner=UnsandboxedWorkflowRunner()):  # fmt: skip
            handle = await client.start_workflow(
                CustomAgent.run, "Where is order A-17, and the weather?",
                id=f"custom-{uuid.uuid4()}", task_queue=queue)
            await handle.result()
            out.write_text((await handle.fetch_history()).to_json())

    asyncio.run(record())
    return out


def test_inferred_roles_find_the_model_and_its_tools(custom_history: Path) -> None:
    steps = agent_steps(read_history(custom_history))
    assert steps["model_activity"].tolist() == ["ask_gemini"] * 3
    assert steps["sequence"].tolist() == ["M C", "M C", "M"]
    assert steps["requested_tools"].tolist() == [["lookup_order"], ["get_weather"], []]
    assert steps["tool_call_kinds"].tolist() == [["local_activity"], ["child_workflow"], []]
    assert steps["tool_call_activities"].tolist() == [["lookup_order"], ["get_weather"], []]
    assert steps["tool_calls"].tolist() == [1, 1, 0]
    assert all(d == ["lookup_order", "get_weather"] for d in steps["declared_tools"])
    assert steps["agent"].tolist() == ["custom_agent"] * 3  # the activity summary


def test_no_model_response_says_what_was_looked_for(custom_history: Path) -> None:
    events = read_history(custom_history)
    events = events[events["activity_type"].ne("ask_gemini") | events["activity_type"].isna()]
    with pytest.raises(ToolkitError, match="no agent framework recognised") as error:
        agent_steps(events)
    assert "looked for" in str(error.value) and "gemini" in str(error.value)
    assert "InvokeModel" in str(error.value)
