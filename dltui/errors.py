"""dltui's own errors: one family, so a caller catches what dltui means to say in one place.

    DltuiError                   an error dltui raises on purpose, in words a user can act on
    ├── UsageError               what was asked cannot be done as asked: a command line, a file
    │   │                        it names, a missing extra (the CLI shows the command's usage)
    │   ├── PlanError            plans/check.py: a plan or plan file that names something wrong
    │   ├── ConfigFileError      agent/config.py: an agent configuration that is unreadable,
    │   │                        unsafe or impossible
    │   ├── RecordingError       recording/format.py: not a recording, or one that is newer
    │   ├── TableExportError     recording/export.py: a recording's tables cannot be written so
    │   └── ExportError          fleet/compare.py: results cannot be written to that file
    └── Unreachable              client/session.py: an agent did not answer, or refused us

Errors that are not dltui's to word stay what they are: a peer's bad frame is a ProtocolError
(protocol/errors.py), which closes that connection and never reaches a user as such.
"""

from __future__ import annotations


class DltuiError(Exception):
    """The root: `dltui` prints the message and exits with the status of its `kind`
    (commands/exit_status.py holds the one table)."""

    kind: str = "error"


class UsageError(DltuiError):
    """What was asked cannot be done as asked; the command line shows its usage with it."""

    kind = "usage"
