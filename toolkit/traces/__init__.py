"""Agent runs as OpenTelemetry traces, built from their workflow histories.

:mod:`.spans` turns an events frame into spans (one table row each): the workflow run, one
``invoke_agent`` span per turn, one ``RunActivity`` span per activity with the GenAI span of a
model call (``chat``) or a tool call (``execute_tool``) inside it, and workflow-task failures as
span events. :mod:`.otlp` writes them as OTLP JSON or sends them over OTLP/HTTP;
:func:`toolkit.to_otel` (:mod:`.export`) does both from histories. Nothing below this package
knows about OpenTelemetry.
"""
