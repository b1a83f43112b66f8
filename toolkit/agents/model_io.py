"""What one model call was offered and what it answered, read from its activity's payloads.

One reader for every analysis that looks inside model calls (:func:`toolkit.agent_steps`, the
token ledger, traces). :func:`read_model_call` turns a model activity's decoded input and result
into a :class:`ModelCall`; :func:`model_call_of_events` does the same from the scheduled and
closing events (adding the activity summary and the payload sizes). Nothing is executed, and a
payload that cannot be read gives ``None`` fields and a note, never an exception.

The record
----------
``ModelCall`` (frozen dataclass):

=================  ===============================  =============================================
field              type                             meaning
=================  ===============================  =============================================
``framework``      str or None                      the shape read (table below); None: unknown
``agent``          str or None                      the agent making the call, where recorded
``agent_source``   str or None                      where ``agent`` came from: ``labels``,
                                                    ``instructions``, ``summary``,
                                                    ``activity_type``, ``handoff_output`` (the
                                                    last handoff answered in the input), ``input``
``model``          str or None                      model name asked for (input), else answered
``declared_tools`` tuple[str, ...] or None          names offered to the model, in the order the
                                                    framework sends them, handoffs and hosted
                                                    tools included; None: the input shows none
                                                    (unread, encrypted, no input recorded)
``handoff_tools``  dict[str, str or None]           declared names that are handoffs -> the agent
                                                    they hand to (None: named in the call's
                                                    arguments, ADK ``transfer_to_agent``)
``requested``      tuple[ToolRequest, ...] or None  what the output asks for, in order; None: no
                                                    readable result (open, failed, encrypted)
``tool_results``   tuple[ToolResult, ...] or None   tool outputs given back in this input
``usage``          Usage                            the provider's token counts as recorded
``input_items``    int or None                      messages / contents / items in the request
``output_items``   int or None                      output items / parts in the response
``output_texts``   int or None                      text parts among them
``input_bytes``    int or None                      size of the input payloads' data
``output_bytes``   int or None                      size of the result payloads' data
``notes``          tuple[str, ...]                  what could not be read, and why
=================  ===============================  =============================================

Properties: ``requested_tools`` (names), ``handoff`` (the first agent handed to, or None).

``ToolRequest(name, call_id=None, kind="function", target=None)``: ``kind`` is ``function``,
``handoff`` (``target``: the agent) or ``hosted`` (run by the provider: web search, code
interpreter, ...). ``ToolResult(name, call_id)``: one tool output in the request (either may be
None where the framework leaves it out).

``Usage(input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, total_tokens, note)``:
ints as the framework recorded them, None where the result has no such count; ``note`` says why
counts are None or doubtful (no usage in the result, a malformed field, the OpenAI Agents SDK's
empty default). Nothing is summed or derived except ``total_tokens`` where the framework defines
it as input + output and does not store it (pydantic-ai).

Shapes read (``framework``), each written from the framework's source
----------------------------------------------------------------------
``openai_agents``
    temporalio's OpenAI Agents plugin: input ``ActivityModelInput`` (``model_name``, ``input``
    items, ``tools``, ``handoffs`` with ``tool_name``/``agent_name``), result ``ModelResponse``
    (``output`` items, ``usage``) or, streaming, the list of Responses stream events (the
    ``response.completed`` event's ``response``). Agent: the activity summary (temporalio >=
    1.16 sets it to the agent's name; older releases put the last message there, which is
    recognised and not taken), else the last handoff answered in the input.
``python_adk``
    Google ADK ``LlmRequest`` / ``list[LlmResponse]`` (temporalio's ADK plugin; snake_case or
    camelCase keys, and Go's PascalCase): ``contents``, ``config.tools[].function_declarations``,
    ``config.labels.adk_agent_name``; responses' ``content.parts[].function_call`` and
    ``usage_metadata``. ``transfer_to_agent`` is ADK's handoff (target in its arguments).
``pydantic_ai``
    pydantic-ai's Temporal model activity: input ``{messages, model_request_parameters}``
    (``function_tools``, ``output_tools``, ``native_tools``/``builtin_tools``), result
    ``ModelResponse`` (``parts`` of kind ``tool-call``, ``usage``, ``model_name``); agent from
    the activity name ``agent__<name>__model_request``.
``go_twin``
    The lab's twin of the Go plugin: ``InvokeModel`` input ``{agent, contents, tools: [names]}``,
    result ``{function_call}`` or ``{text}``.
``gemini``
    Gemini's own ``GenerateContentResponse`` (``candidates``, ``usage_metadata``) returned by a
    custom activity, with a ``GenerateContentRequest``-shaped input where it is one.

Checked on the public histories of temporalio's OpenAI Agents and ADK tests
(``tests/fixtures/agent_histories``) and every lab recording (``tests/test_model_io.py``); the
ADK streaming input and Gemini responses on payloads built by the frameworks' own types. The
OpenAI Agents streaming result is read as the source writes it; no recording holds one yet.

Extending: a new field goes on :class:`ModelCall` (``toolkit/agents/model_records.py``, with a
default) and is set by the readers that can fill it (``toolkit/agents/model_shapes.py``, one
function per shape); a new shape is one reader there plus its recognition in ``input_shape`` /
``response_shape``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolkit.agents.model_cells import (
    NeedFull,
    learn_read_key,
    ledger_values_of_data,
    payload_bytes,
    payload_value,
    raw_data_and_bytes_of,
    raw_summary,
    raw_summary_field,
    raw_values_and_bytes,
    values_of_data,
)
from toolkit.agents.model_records import ModelCall, ToolRequest, ToolResult, Usage
from toolkit.agents.model_shapes import (
    FRAMEWORKS,
    LEDGER_READERS,
    READERS,
    Context,
    _mapping,
    get_field,
    input_shape,
    response_shape,
)
from toolkit.histories.columns.lazy import LazyCell
from toolkit.histories.payloads import OpaquePayload

__all__ = [
    "FRAMEWORKS",
    "ModelCall",
    "ToolRequest",
    "ToolResult",
    "Usage",
    "ledger_fields_of_cells",
    "ledger_fields_of_columns",
    "model_call_of_events",
    "payload_bytes",
    "read_model_call",
    "response_shape",
    "summary_of",
]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _first_mapping(value: Any) -> Any:
    """The first payload value that is a mapping (activity inputs are lists of arguments)."""
    if _mapping(value):
        return value
    for item in _list(value):
        if _mapping(item):
            return item
    return None


def _opaque_note(value: Any, what: str) -> str | None:
    for item in [value, *_list(value)]:
        if isinstance(item, OpaquePayload):
            return f"{what} payload is {item.encoding} ({item.size} bytes): pass codec= to read it"
    return None


def read_model_call(
    input: Any,
    result: Any = None,
    *,
    activity_type: str | None = None,
    summary: Any = None,
    framework: str | None = None,
    input_bytes: int | None = None,
    output_bytes: int | None = None,
) -> ModelCall:
    """Read one model call from its activity's decoded input and result.

    Parameters
    ----------
    input, result
        The ``input`` of the ``ActivityTaskScheduled`` event and the ``result`` of its
        ``ActivityTaskCompleted`` (lists of payload values, as in the events frame; a single
        value is accepted). ``result`` None: the call has no result (still open, failed).
    activity_type
        The activity's type name (pydantic-ai names the agent in it).
    summary
        The activity's summary (``userMetadata.summary``, decoded; see :func:`summary_of`).
    framework
        One of :data:`FRAMEWORKS`; by default recognised from the input's shape, else the
        result's (:func:`response_shape`).
    input_bytes, output_bytes
        Payload sizes to carry in the record (:func:`payload_bytes`).

    Returns
    -------
    ModelCall
        With ``framework`` None and a note when neither payload has a known shape.
    """
    # The events frame's cells decode on first use: read their values.
    input = input.value if isinstance(input, LazyCell) else input
    result = result.value if isinstance(result, LazyCell) else result
    notes = [n for n in (_opaque_note(input, "the input"), _opaque_note(result, "the result")) if n]
    inp = _first_mapping(input)
    res = result[0] if isinstance(result, list) and len(result) == 1 else result
    chosen = framework or input_shape(inp) or response_shape(res)
    if chosen is None:
        notes.append("no known model request or response shape (looked for: "
                     + ", ".join(FRAMEWORKS) + ")")  # fmt: skip
        return ModelCall(input_bytes=input_bytes, output_bytes=output_bytes, notes=tuple(notes))
    if chosen not in READERS:
        raise ValueError(f"unknown framework {chosen!r}; expected one of {FRAMEWORKS}")
    context = Context(activity_type, summary)
    try:
        fields = READERS[chosen](inp, res, context)
    except (TypeError, AttributeError, ValueError) as error:  # a shape half like the expected one
        fields = {}
        notes.append(f"{chosen} payloads not read: {type(error).__name__}: {error}")
    if result is None:
        fields.setdefault("usage", Usage(note="no result (the call did not complete)"))
    elif "requested" not in fields:
        notes.append(f"the result is no {chosen} model response")
    if inp is not None and fields.get("declared_tools") is None and not notes:
        notes.append(f"the input is no {chosen} model request")
    return ModelCall(framework=chosen, input_bytes=input_bytes, output_bytes=output_bytes,
                     notes=tuple(notes), **fields)  # fmt: skip


# -- from events ------------------------------------------------------------------------------


def summary_of(extra: Any) -> Any:
    """The decoded ``userMetadata.summary`` of an event's ``extra`` (None when absent)."""
    read, summary = raw_summary(extra)  # a raw JSON event's usual summary, by typed decoders
    if read:
        return summary
    # A raw JSON event's: that field decoded alone, on from what raw_summary read of it.
    read, metadata = raw_summary_field(extra, summary)
    if not read:
        metadata = get_field(extra, "userMetadata", "user_metadata")
    summary = get_field(metadata, "summary")
    if summary is None:
        return None
    return payload_value(summary) if isinstance(summary, Mapping) else summary


def model_call_of_events(
    scheduled: Mapping[str, Any],
    closed: Mapping[str, Any] | None = None,
    framework: str | None = None,
) -> ModelCall:
    """:func:`read_model_call` of a model activity given as event records (rows of the events
    frame: ``input``, ``result``, ``extra``, ``attributes``, ``activity_type``, ``event_type``).

    ``closed`` is the activity's closing event; only an ``ActivityTaskCompleted`` has a result.
    """
    return model_call_of_cells(
        scheduled.get("input"), scheduled.get("extra"), scheduled.get("attributes"),
        scheduled.get("activity_type"),
        None if closed is None else closed.get("event_type"),
        None if closed is None else closed.get("result"),
        None if closed is None else closed.get("attributes"),
        framework,
    )  # fmt: skip


def model_call_of_cells(
    input: Any,
    extra: Any,
    attributes: Any,
    activity_type: Any,
    closed_type: Any = None,
    result: Any = None,
    closed_attributes: Any = None,
    framework: str | None = None,
) -> ModelCall:
    """:func:`model_call_of_events` from the events frame's cells themselves: the scheduled
    event's ``input``, ``extra``, ``attributes`` and ``activity_type``, and the closing event's
    type, ``result`` and ``attributes`` (None: no closing event)."""
    input, input_bytes, result, output_bytes = _call_payloads(
        input, attributes, closed_type, result, closed_attributes)  # fmt: skip
    return read_model_call(
        input,
        result,
        activity_type=activity_type,
        summary=summary_of(extra),
        framework=framework,
        input_bytes=input_bytes,
        output_bytes=output_bytes,
    )


def _call_payloads(input: Any, attributes: Any, closed_type: Any, result: Any,
                   closed_attributes: Any) -> tuple[Any, int | None, Any, int | None]:  # fmt: skip
    """A model call's input and its bytes, and its result and its bytes (None unless the call
    completed), off the scheduled and closing events' cells."""
    output_bytes = None
    if closed_type == "ActivityTaskCompleted":
        result, output_bytes = _values_and_bytes(result, closed_attributes, "result")
    else:
        result = None
    input, input_bytes = _values_and_bytes(input, attributes, "input")
    return input, input_bytes, result, output_bytes


def _values_and_bytes(cell: Any, attributes: Any, name: str) -> tuple[Any, int | None]:
    """A payload cell's values and :func:`payload_bytes` of its event's ``attributes[name]``
    (one decode of a raw JSON event's payloads: :mod:`toolkit.agents.model_cells`)."""
    read = raw_values_and_bytes(cell, attributes)
    if read is not None:
        return read
    return cell, payload_bytes(get_field(attributes, name))


# -- the ledger's fields ----------------------------------------------------------------------

#: What the token ledger takes of a model call: ``(framework, agent, model, usage, notes,
#: requested_tools, input_bytes, output_bytes)``, as the :class:`ModelCall` of the same cells
#: holds them.
LedgerCall = tuple[Any, Any, Any, Usage, tuple[str, ...], Any, Any, Any]


def ledger_fields_of_cells(
    input: Any,
    extra: Any,
    attributes: Any,
    activity_type: Any,
    closed_type: Any = None,
    result: Any = None,
    closed_attributes: Any = None,
) -> LedgerCall:
    """The ledger's fields of :func:`model_call_of_cells` of the same cells (no framework
    forced), read by the ledger's readers (:data:`~toolkit.agents.model_shapes.LEDGER_READERS`:
    no tool declarations or results walked, no record built) where the shape has one."""
    input, input_bytes, result, output_bytes = _call_payloads(
        input, attributes, closed_type, result, closed_attributes)  # fmt: skip
    return ledger_fields(input, result, activity_type, summary_of(extra), input_bytes,
                         output_bytes)  # fmt: skip


def ledger_fields_of_columns(
    inputs: list[Any],
    extras: list[Any],
    attributes: list[Any],
    activity_types: list[Any],
    closed_types: list[Any],
    results: list[Any],
    closed_attributes: list[Any],
) -> list[LedgerCall]:
    """:func:`ledger_fields_of_cells` of many calls, one per place of the lists (the cells as
    it takes them): the payloads of raw JSON events read for all calls at once
    (:func:`~toolkit.agents.model_cells.raw_data_and_bytes_of`: their data, made values call
    by call), any other cell as :func:`ledger_fields_of_cells` reads it."""
    read_inputs = raw_data_and_bytes_of(inputs, attributes)
    completed = [result if kind == "ActivityTaskCompleted" else None
                 for kind, result in zip(closed_types, results, strict=True)]  # fmt: skip
    read_results = raw_data_and_bytes_of(completed, closed_attributes)
    out = []
    for (input, extra, attribute, activity_type, closed_type, result, closed_attribute,
         read_input, read_result) in zip(inputs, extras, attributes, activity_types,
                                         closed_types, results, closed_attributes, read_inputs,
                                         read_results, strict=True):  # fmt: skip
        plain = read_input is not None
        if closed_type == "ActivityTaskCompleted":
            plain = plain and read_result is not None
        summary = summary_of(extra)
        if plain:
            fields = _partial_ledger_fields(read_input, read_result if closed_type
                                            == "ActivityTaskCompleted" else None,
                                            activity_type, summary)  # fmt: skip
            if fields is not None:
                out.append(fields)
                continue
        if closed_type == "ActivityTaskCompleted":
            result, output_bytes = (
                (values_of_data(read_result[0]), read_result[1]) if read_result is not None
                else _values_and_bytes(result, closed_attribute, "result"))  # fmt: skip
        else:
            result = output_bytes = None
        input, input_bytes = (
            (values_of_data(read_input[0]), read_input[1]) if read_input is not None
            else _values_and_bytes(input, attribute, "input"))  # fmt: skip
        out.append(ledger_fields(input, result, activity_type, summary, input_bytes,
                                 output_bytes, plain=plain))  # fmt: skip
    return out


def _partial_ledger_fields(read_input: Any, read_result: Any, activity_type: Any,
                           summary: Any) -> LedgerCall | None:
    """:func:`ledger_fields` of a call whose payloads the compiled reader read (their data and
    bytes; ``read_result`` None: no result), off the data decoded without the members the
    ledger does not read (:func:`~toolkit.agents.model_cells.ledger_values_of_data`); None where
    the whole values are needed (no compiled decoder, a shape without a ledger reader, a reader
    that raises, a member left unread used: its key is decoded from then on)."""
    input = ledger_values_of_data(read_input[0])
    if input is None:
        return None
    result = output_bytes = None
    if read_result is not None:
        result, output_bytes = ledger_values_of_data(read_result[0]), read_result[1]
    try:
        return ledger_fields(input, result, activity_type, summary, read_input[1], output_bytes,
                             plain=True, partial=True)  # fmt: skip
    except NeedFull as error:
        learn_read_key(error.args[0] if error.args else None)
    except Exception:  # raised off the stand-ins: the whole values say what is raised
        pass
    return None


def ledger_fields(
    input: Any,
    result: Any,
    activity_type: Any,
    summary: Any,
    input_bytes: int | None,
    output_bytes: int | None,
    *,
    plain: bool = False,
    partial: bool = False,
) -> LedgerCall:
    """The ledger's fields of ``read_model_call(input, result, activity_type=...,
    summary=..., input_bytes=..., output_bytes=...)`` (:data:`LedgerCall`), its steps taken
    in the same order with the ledger's reader of the shape; a shape without one, or a reader
    that raises (whose note the full reader writes), is read by :func:`read_model_call`.
    ``plain``: input and result are lists of decoded JSON values (or the result None), as
    orjson makes them: no cell to decode, no opaque payload to note. ``partial``: they are
    :func:`~toolkit.agents.model_cells.ledger_values_of_data`'s (members left unread):
    :data:`~toolkit.agents.model_cells.NeedFull` raised where :func:`read_model_call` would
    read them (it needs them whole)."""
    if plain:
        notes: list[str] = []
    else:
        input = input.value if isinstance(input, LazyCell) else input
        result = result.value if isinstance(result, LazyCell) else result
        notes = [n for n in (_opaque_note(input, "the input"), _opaque_note(result, "the result"))
                 if n]  # fmt: skip
    inp = _first_mapping(input)
    res = result[0] if isinstance(result, list) and len(result) == 1 else result
    chosen = input_shape(inp) or response_shape(res)
    reader = LEDGER_READERS.get(chosen)  # type: ignore[arg-type]
    fields = None
    if reader is not None:
        try:
            fields = reader(inp, res, activity_type, summary)
        except (TypeError, AttributeError, ValueError):
            fields = None  # the full reader below notes it as it reads it
    if fields is None:
        if partial:
            raise NeedFull(None)
        call = read_model_call(input, result, activity_type=activity_type, summary=summary,
                               input_bytes=input_bytes, output_bytes=output_bytes)  # fmt: skip
        return (call.framework, call.agent, call.model, call.usage, call.notes,
                call.requested_tools, input_bytes, output_bytes)  # fmt: skip
    agent, model, usage, requested, declares = fields
    if result is None:
        if usage is None:
            usage = Usage(note="no result (the call did not complete)")
    elif requested is None:
        notes.append(f"the result is no {chosen} model response")
    if inp is not None and not declares and not notes:
        notes.append(f"the input is no {chosen} model request")
    return (chosen, agent, model, Usage() if usage is None else usage, tuple(notes), requested,
            input_bytes, output_bytes)  # fmt: skip
