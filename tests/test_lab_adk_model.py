"""The scripted model: the pure reply function and its ADK BaseLlm in ADK's registry."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.lab.model import SCRIPTED_MODEL_NAME, script_reply, tool_request

ROOT = Path(__file__).resolve().parents[1]


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "parts": [{"text": text}]}


@pytest.mark.parametrize(
    ("text", "call"),
    [
        ("What is the weather in Paris?", {"name": "get_weather", "args": {"city": "Paris"}}),
        ("weather in New York", {"name": "get_weather", "args": {"city": "New York"}}),
        ("Please add 2 and 40", {"name": "add", "args": {"a": 2, "b": 40}}),
        ("Where is order #A-17?", {"name": "lookup_order", "args": {"order_id": "A-17"}}),
        ("Thanks, that is all.", None),
    ],
)
def test_tool_requests_are_recognised(text: str, call: dict[str, object] | None) -> None:
    assert tool_request(text) == call
    expected = {"function_call": call} if call else {"text": f"Noted: {text}"}
    assert script_reply([_user(text)]) == expected


def test_function_response_becomes_a_text_answer() -> None:
    mcp_result = {"content": [{"type": "text", "text": "The weather in Paris is sunny."}],
                  "isError": False}
    contents = [
        _user("What is the weather in Paris?"),
        {"role": "model", "parts": [{"function_call": {"name": "get_weather"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
                                                          "response": mcp_result}}]},
    ]
    assert script_reply(contents) == {"text": "get_weather says: The weather in Paris is sunny."}


def test_only_declared_tools_are_called_and_replies_are_deterministic() -> None:
    contents = [_user("add 1 and 2")]
    assert script_reply(contents, tools=["get_weather"]) == {
        "text": "I cannot call add: it is not available."}
    assert script_reply(contents, tools=["add"]) == script_reply(contents)
    assert script_reply([]) == {"text": "Hello."}


def test_script_reply_imports_without_google_adk() -> None:
    # google.adk set to None in sys.modules makes any import of it fail.
    code = ("import sys; sys.modules['google.adk'] = None; "
            "from toolkit.lab.model import script_reply; "
            "print(script_reply([{'role': 'user', 'parts': [{'text': 'hi'}]}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip() == "{'text': 'Noted: hi'}"


def test_registered_model_resolves_by_name_and_calls_the_tool() -> None:
    pytest.importorskip("google.adk")
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.registry import LLMRegistry
    from google.genai import types

    from toolkit.lab.model import register_scripted_model

    assert register_scripted_model() == SCRIPTED_MODEL_NAME
    llm = LLMRegistry.new_llm(SCRIPTED_MODEL_NAME)
    declaration = types.FunctionDeclaration(name="get_weather", description="weather")
    request = LlmRequest(
        model=SCRIPTED_MODEL_NAME,
        contents=[types.Content(role="user", parts=[types.Part(text="weather in Oslo?")])],
        config=types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=[declaration])]),
    )

    async def replies() -> list[object]:
        return [r async for r in llm.generate_content_async(request)]

    (response,) = asyncio.run(replies())
    call = response.content.parts[0].function_call
    assert (call.name, call.args) == ("get_weather", {"city": "Oslo"})


def _loop(contents: list[dict[str, object]]) -> list[dict[str, object]]:
    """Run the script on ``contents`` until it answers with text; returns every reply."""
    replies = []
    while True:
        reply = script_reply(contents, tools=["read_page"])
        replies.append(reply)
        if "text" in reply:
            return replies
        call = reply["function_call"]
        contents += [{"role": "model", "parts": [{"function_call": call}]},
                     {"role": "user", "parts": [{"function_response": {
                         "name": "read_page", "response": {"result": "a page"}}}]}]


def test_reading_pages_is_a_loop_of_one_call_per_page_in_each_turn() -> None:
    contents = [_user("Read pages 1 to 3 of the report, 64 bytes each. Context: lorem ipsum")]
    first = _loop(contents)
    assert [r.get("function_call", r) for r in first] == [
        {"name": "read_page", "args": {"page": page, "size": 64}} for page in (1, 2, 3)
    ] + [{"text": "Read pages 1 to 3."}]
    contents += [{"role": "model", "parts": [{"text": "Read pages 1 to 3."}]},
                 _user("Read pages 4 to 5 of the report, 8 bytes each.")]
    second = _loop(contents)
    assert [r["function_call"]["args"] for r in second[:-1]] == [
        {"page": 4, "size": 8}, {"page": 5, "size": 8}]
    assert second[-1] == {"text": "Read pages 4 to 5."}
