"""Workflow histories: read any exported dialect, fetch from a server, write back, derive tables.

The package follows a history from bytes to tables, one folder per step:

- ``reading/``: bytes from anywhere (``sources``: paths, gzip, file objects, SDK objects; with
  the input limits), which container and dialect (``dialects``; ``wire`` for binary protobuf),
  ``read`` (one source), ``batch`` and ``pool`` (many files, a frame per batch, processes),
  ``sidecars`` (files next to histories that are not histories), ``fetch`` (a live server).
- ``columns/``: the per-event column decoders (``from_json``, ``from_proto``, ``from_wire`` on
  ``common``), the links between events (``links``) and the cells decoded on first use
  (``lazy``, ``lazy_proto``).
- the frame: ``events`` (columns -> the events DataFrame, schema below), ``views``, ``enums``,
  ``payloads``, ``versions`` (version labels read from the history).
- ``tables/``: derived tables (``activity``, ``workflow_task``, ``timer``, ``message``,
  ``child``, ``marker`` built on ``common`` and ``build``).
- ``write``: back to proto-JSON the Replayer accepts.

The events frame
----------------
:func:`toolkit.read_history` returns one row per event, sorted by ``history`` then ``event_id``.
Text columns are ``object`` columns of Python ``str`` (``None`` where absent: building pandas'
Arrow-backed ``str`` arrays would cost more than parsing the file); id links and attempts are
nullable ``Int64``. ``input``/``result``/``details``/``attributes``/``extra`` cells decode on
first use: they behave like the list or dict they hold (index them, iterate, compare with
``==``, print them) and ``cell.value`` gives the plain Python object.

======================  =====================  ================================================
column                  dtype                  meaning
======================  =====================  ================================================
source                  object                 file path, or a description of the source
history                 int64                  index of the history inside the source
namespace               object                 when the source says it (see "Ids" below)
workflow_id             object                 the history's own, else the source's (below)
run_id                  object                 the source's, else ``originalExecutionRunId``
workflow_type           object                 from the started event
event_id                int64                  event id
event_time              datetime64[ns, UTC]    event time (``timestamp`` epoch-ns in old files)
event_type              object                 ``ActivityTaskScheduled``; unknown types verbatim
category                object                 workflow, workflow_task, activity, timer,
                                               signal, update, child_workflow, external,
                                               marker, search_attributes, nexus, other
is_command              bool                   records a command issued by workflow code
workflow_task           Int64                  ordinal of the workflow task: the one that
                                               produced a command, a task event's own task,
                                               else the first task started after the event
activity_id             object                 activity events (copied to started/closed)
activity_type           object                 activity events (copied to started/closed)
task_queue              object                 where the event names one
scheduled_event_id      Int64                  link to the scheduled event
started_event_id        Int64                  link to the started event
initiated_event_id      Int64                  link to the initiated event (children, external)
attempt                 Int64                  activity / workflow task attempt
timer_id                object                 timer events
signal_name             object                 signal received / signal external initiated
update_name             object                 update events (copied to completed)
update_id               object                 update events
child_workflow_id       object                 child workflow events
child_workflow_type     object                 child workflow events
marker_name             object                 MarkerRecorded
identity                object                 worker or client identity
failure_message         object                 failure message (wrapper: ``outer: innermost``)
failure_type            object                 application failure type, or the failure kind
retry_state             object                 ``RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED``, ...
cause                   object                 cause enum (``WORKFLOW_TASK_FAILED_CAUSE_...``)
history_size_bytes      Int64                  ``WorkflowTaskStarted``: the history's size as the
                                               server counted it when it started the task
                                               (``historySizeBytes``; <NA> where not recorded)
suggest_continue_as_new boolean                ``WorkflowTaskStarted``: True where the server
                                               suggested continue-as-new, else <NA>
input                   object                 decoded input payloads (list), else None
result                  object                 decoded result payloads (list), else None
details                 object                 decoded details (list, or dict for markers)
attributes              object (Mapping)       the complete ``*EventAttributes`` as written in
                                               the source, unknown fields/enums included
extra                   object (Mapping)       every other event field (taskId, version,
                                               workerMayIgnore, links, userMetadata, ...)
======================  =====================  ================================================

Ids
---
Where each id comes from, first found wins:

``workflow_id``
    1. the history's own fields: the started event's ``workflowId`` (servers write it since
       2024), else its ``rootWorkflowExecution`` when the run has no parent (such a run is its
       own root); 2. the container: a ``workflowId`` next to ``events``, a ``WorkflowHistory``
       object, a live fetch; 3. the path, with ``read_history(..., workflow_id_from=...)``
       (a regular expression or a function; ``write_dataset`` and ``read_histories`` pass it
       on).
``namespace``
    events do not carry their own run's namespace: the container (a ``namespace`` field, a
    live fetch), the Cloud export path (``export/<namespace>/<Y>/<M>/<D>/...``),
    ``workflow_id_from=`` (group ``namespace``); ``write_dataset(namespace=)`` fills the rest.
``run_id``
    the container's or the file name's run id first (a UI download is named after it), then
    the started event's ``originalExecutionRunId``: a reset copies the started event into the
    new run, so that field can name the run the reset started from.
``workflow_type``
    the started event's ``workflowType``.
"""

from toolkit.histories.events import COLUMNS
from toolkit.histories.reading.batch import HistoryBatch, iter_histories, read_histories
from toolkit.histories.reading.fetch import fetch_histories, fetch_history
from toolkit.histories.reading.read import read_history
from toolkit.histories.write import to_history, to_workflow_history, write_history

__all__ = [
    "COLUMNS",
    "HistoryBatch",
    "fetch_histories",
    "fetch_history",
    "iter_histories",
    "read_histories",
    "read_history",
    "to_history",
    "to_workflow_history",
    "write_history",
]
