"""The duplicate-tool messages of every agent framework and MCP client, one table of exact shapes.

Each :class:`DuplicateShape` names the framework that prints the message, what that framework
does about the duplicate (``behaviour``) and where the message's wording comes from (``source``:
the upstream file that formats it, or the public thread that shows it). The detector
:func:`toolkit.logs.detectors.duplicate_tools` runs the shapes in this order; a record matches
each shape at most once per occurrence.

Behaviours
----------
``failed``
    the run, request or registration stops with the error (nothing is called).
``retried``
    the error is raised where Temporal retries it: an activity (retried per its retry policy)
    or workflow code (the workflow task fails and the server retries it until the code changes).
``shadowed``
    no error: one tool silently wins the name and the other can no longer be called.

Frameworks that print nothing of their own are absent on purpose: adk-js (its ``appendTools``
overwrites ``toolsDict`` and sends both declarations, so Gemini's 400 is what shows), LangGraph's
``ToolNode`` (keeps the last tool of a name, langchain-ai/langgraph#7988) and mcp-go's
``AddTool`` between two regular tools (replaces the first, mark3labs/mcp-go#390).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BEHAVIOURS", "DUPLICATE_SHAPES", "DuplicateShape", "shape_needles"]

BEHAVIOURS = ("failed", "retried", "shadowed")


@dataclass(frozen=True)
class DuplicateShape:
    """One framework's duplicate-tool message.

    Attributes
    ----------
    kind
        Short id of the shape (a column value of the detector's table).
    framework
        Who prints it (``adk_go``, ``openai_agents``, ``cline``, ...).
    behaviour
        What the framework does: ``failed``, ``retried`` or ``shadowed``.
    pattern
        The exact shape; named groups ``tool`` (one name, or several separated by ``, ``),
        optionally ``toolset`` and ``existing``.
    needle
        A literal substring every match contains (the vectorised prefilter looks for it).
    source
        Where the wording comes from (repository and path, or a public thread).
    """

    kind: str
    framework: str
    behaviour: str
    pattern: re.Pattern[str]
    needle: str
    source: str


def _shape(kind: str, framework: str, behaviour: str, pattern: str, needle: str,
           source: str) -> DuplicateShape:
    return DuplicateShape(kind, framework, behaviour, re.compile(pattern), needle, source)


DUPLICATE_SHAPES: tuple[DuplicateShape, ...] = (
    # fmt.Errorf("duplicate tool: %q", name); the colon matters: "skipping duplicate toolset"
    # (the fix's own log line) never matches.
    _shape("go_adk", "adk_go", "failed",
           r'(?<![\w-])duplicate tool: \\?"(?P<tool>(?:[^"\\]|\\[^"])+)\\?"',
           "duplicate tool: ", "google/adk-go internal/toolinternal/toolutils (PackTool)"),
    _shape("python_adk", "adk_python", "shadowed",
           r"Duplicate tool name (?P<q>['\"])(?P<tool>.+?)(?P=q): the previously registered tool "
           r"is shadowed and can no longer be called",
           "the previously registered tool is shadowed",
           "google/adk-python src/google/adk/models/llm_request.py (append_tools, >= 2.7)"),
    # UserError raised by MCPUtil.get_all_function_tools (Python) and getAllMcpTools (JS); the
    # names were a Python set before openai/openai-agents-python#3136, a sorted list after it.
    _shape("openai_agents", "openai_agents", "failed",
           r"Duplicate tool names found across MCP servers: (?P<tool>\{[^}\n]*\}|[^\s.,]+"
           r"(?:, [^\s.,]+)*)",
           "Duplicate tool names found across MCP servers",
           "openai/openai-agents-python src/agents/mcp/util.py; openai/openai-agents-js"),
    _shape("openai_agents_server", "openai_agents", "failed",
           r"Duplicate tool names found on MCP server `(?P<toolset>[^`\n]+)`: (?P<tool>[^\s.,]+"
           r"(?:, [^\s.,]+)*)",
           "Duplicate tool names found on MCP server",
           "openai/openai-agents-python src/agents/mcp/util.py (_validate_unique_tool_names)"),
    _shape("pydantic_ai", "pydantic_ai", "failed",
           # The toolset is named by its repr: ``MCPServerStreamableHTTP(url=...)`` in 1.x,
           # ``MCPToolset 'weather_token'`` (its id) in the 2.x releases the lab records.
           r"(?P<toolset>\w+(?:\([^()\n]*\)| '[^'\n]*')?) defines a tool whose name conflicts "
           r"with existing "
           r"tool from (?P<existing>[^\n]*?): '(?P<tool>[^']+)'",
           "conflicts with existing tool",
           "pydantic/pydantic-ai pydantic_ai_slim/pydantic_ai/toolsets/combined.py"),
    # Raised in the plugin's call-tool activity: retried per the activity's retry policy.
    _shape("mcp_plugin", "temporal_adk_plugin", "retried",
           r"Found multiple MCP tools with the same name: (?P<tool>\S+)",
           "Found multiple MCP tools",
           "temporalio sdk-python temporalio/contrib/google_adk_agents (call-tool, 1.33+)"),
    _shape("mcp_plugin_legacy", "temporal_adk_plugin", "retried",
           r"Unable too many matching mcp tools by name: (?P<tool>\S+)",
           "too many matching mcp tools",
           "temporalio sdk-python temporalio/contrib/google_adk_agents (call-tool, 1.30)"),
    _shape("gemini", "gemini_api", "failed",
           r"Duplicate function declaration found: (?P<tool>[^\s,;'\"\]]+)",
           "Duplicate function declaration found",
           "Gemini API 400 INVALID_ARGUMENT (what adk-js and ADK clients without a check show)"),
    _shape("gemini_cli", "gemini_cli", "shadowed",
           r'Tool with name "(?P<tool>[^"\n]+)" is already registered\. Overwriting\.',
           "is already registered. Overwriting",
           "google-gemini/gemini-cli packages/core/src/tools/tool-registry.ts (registerTool)"),
    # Goose surfaces the provider's rejection as an execution error (aaif-goose/goose#5755).
    _shape("goose", "goose", "failed",
           r"Execution error: Duplicate tool name: (?P<tool>[^\s]+?)\.?(?=\s|$)",
           "Execution error: Duplicate tool name: ",
           "https://github.com/aaif-goose/goose/issues/5755"),
    # The Cline SDK's flat tool list throws Error(`Duplicate tool name: ${name}`).
    _shape("cline", "cline", "failed",
           r"(?<!Execution error: )Duplicate tool name: (?P<tool>[^\s]+?)\.?(?=\s|$|\")",
           "Duplicate tool name: ", "https://github.com/cline/kanban/issues/320"),
    # Anthropic's Messages API rejects the request; Claude Code prints it as an API error.
    _shape("anthropic_api", "claude_code", "failed", r"tools: Tool names must be unique\.?",
           "Tool names must be unique",
           "https://github.com/baguskto/threads-mcp/issues/2 (Claude Code: API Error: 400)"),
    _shape("langchain4j", "langchain4j", "failed",
           r"Duplicated definition for tool: (?P<tool>\S+)", "Duplicated definition for tool",
           "langchain4j/langchain4j dev.langchain4j.service.tool (IllegalConfigurationException)"),
    # mcp-go panics when a regular tool and a task tool share a name (two regular tools: the
    # second silently replaces the first, nothing is printed).
    _shape("mcp_go", "mcp_go", "failed",
           r"(?:task )?tool name '(?P<tool>[^'\n]+)' already registered as (?:task|regular) tool",
           "already registered as", "mark3labs/mcp-go server/server.go (AddTools, AddTaskTools)"),
)


def shape_needles() -> tuple[str, ...]:
    """The literal substrings the prefilter looks for (one per shape, duplicates removed)."""
    return tuple(dict.fromkeys(shape.needle for shape in DUPLICATE_SHAPES))
