"""Workflow histories: read any exported dialect, fetch from a server, write back, derive tables.

The events frame
----------------
:func:`toolkit.read_history` returns one row per event, sorted by ``history`` then ``event_id``.
String columns use pandas' ``str`` dtype (missing values are NaN); id links and attempts are
nullable ``Int64``.

======================  =====================  ================================================
column                  dtype                  meaning
======================  =====================  ================================================
source                  str                    file path, or a description of the source
history                 int64                  index of the history inside the source
namespace               str                    when the source says it (export path, server)
workflow_id             str                    when known (server, SDK object, file field)
run_id                  str                    ``originalExecutionRunId``, or the file name
workflow_type           str                    from the started event
event_id                int64                  event id
event_time              datetime64[ns, UTC]    event time (``timestamp`` epoch-ns in old files)
event_type              str                    ``ActivityTaskScheduled``; unknown types verbatim
category                str                    workflow, workflow_task, activity, timer,
                                               signal, update, child_workflow, external,
                                               marker, search_attributes, nexus, other
is_command              bool                   records a command issued by workflow code
workflow_task           Int64                  ordinal of the workflow task: the one that
                                               produced a command, a task event's own task,
                                               else the first task started after the event
activity_id             str                    activity events (copied to started/closed)
activity_type           str                    activity events (copied to started/closed)
task_queue              str                    where the event names one
scheduled_event_id      Int64                  link to the scheduled event
started_event_id        Int64                  link to the started event
initiated_event_id      Int64                  link to the initiated event (children, external)
attempt                 Int64                  activity / workflow task attempt
timer_id                str                    timer events
signal_name             str                    signal received / signal external initiated
update_name             str                    update events (copied to completed)
update_id               str                    update events
child_workflow_id       str                    child workflow events
child_workflow_type     str                    child workflow events
marker_name             str                    MarkerRecorded
identity                str                    worker or client identity
failure_message         str                    failure message (wrapper: ``outer: innermost``)
failure_type            str                    application failure type, or the failure kind
retry_state             str                    ``RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED``, ...
cause                   str                    cause enum (``WORKFLOW_TASK_FAILED_CAUSE_...``)
input                   object                 decoded input payloads (list), else None
result                  object                 decoded result payloads (list), else None
details                 object                 decoded details (list, or dict for markers)
attributes              object (Mapping)       the complete ``*EventAttributes`` as written in
                                               the source, unknown fields/enums included
extra                   object (Mapping)       every other event field (taskId, version,
                                               workerMayIgnore, links, userMetadata, ...)
======================  =====================  ================================================
"""

from toolkit.histories.batch import HistoryBatch, read_histories
from toolkit.histories.events import COLUMNS
from toolkit.histories.fetch import fetch_histories, fetch_history
from toolkit.histories.read import read_history
from toolkit.histories.write import to_history, to_workflow_history, write_history

__all__ = [
    "COLUMNS",
    "HistoryBatch",
    "fetch_histories",
    "fetch_history",
    "read_histories",
    "read_history",
    "to_history",
    "to_workflow_history",
    "write_history",
]
