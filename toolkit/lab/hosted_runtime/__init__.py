"""The duplicate-tool incident, reconstructed: a hosted-agent runtime and the Python reality.

The Go side (the service of the postmortem note, rebuilt in Python on real parts):

* :mod:`.registry` - the MCP registry; the bundled server under its id and, with session memory
  on, again as a session-scoped binding (same endpoint plus ``?token=<token>``);
* :mod:`.toolsets` - one toolset per registry entry over the lab's real MCP server, and the
  endpoint fix (dedupe by URL without query; keep the scoped entry, decided by
  :func:`toolkit.mcp_endpoints`);
* :mod:`.agent` - one agent run with the scripted model; declarations packed by ADK's
  ``PackTool`` rule (``duplicate tool: "<name>"``);
* :mod:`.bus` - the command bus (5 deliveries, then dead-letter); :mod:`.slog` - Go slog output;
* :mod:`.runtime` - all of it together (:func:`.runtime.run_session`).

The Python side: :mod:`.adk_capture` runs real google-adk with two toolsets on one endpoint on the
dev server, with a timestamped worker log (:mod:`.adk_worker`). :mod:`.record` writes both into
``data/duplicate_tool/``.

What the recordings say, as frames (public here, used by ``notebooks/duplicate-tool.ipynb``):
:func:`command_outcomes` (how each bus command ended, from the runtime's log),
:func:`pattern_comparison` / :func:`naive_false_positives` (the strict detector against a naive
``grep``), :func:`toolset_activities` (which toolset served the calls, from the history) and
:func:`read_mcp_requests` (the MCP server's request log). The delivery timeline is the toolkit's
own: ``toolkit.delivery_timeline`` and ``toolkit.plots.plot_delivery_timeline``.

Examples
--------
>>> import io
>>> from toolkit.lab.mcp_server import McpServer
>>> with McpServer() as mcp:                                          # doctest: +SKIP
...     outcomes = run_session(mcp.url, ["What is the weather in Paris?"], io.StringIO())
>>> outcomes[0].status                                                # doctest: +SKIP
'deadlettered'
"""

from toolkit.lab.hosted_runtime.evidence import (
    command_outcomes,
    naive_false_positives,
    pattern_comparison,
    read_mcp_requests,
    toolset_activities,
)
from toolkit.lab.hosted_runtime.runtime import HostedRuntime, RuntimeOptions, run_session

__all__ = ["HostedRuntime", "RuntimeOptions", "command_outcomes", "naive_false_positives",
           "pattern_comparison", "read_mcp_requests", "run_session", "toolset_activities"]
