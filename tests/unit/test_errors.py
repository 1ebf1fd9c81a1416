"""dltui's errors are one family: the CLI says every one of them in one place."""

from __future__ import annotations

import pytest

from dltui.agent.config import ConfigFileError
from dltui.commands import exit_status
from dltui.errors import DltuiError, UsageError
from dltui.fleet.compare import ExportError
from dltui.plans.check import PlanError
from dltui.recording.export import TableExportError
from dltui.recording.format import RecordingError


@pytest.mark.parametrize(
    "error", [PlanError, ConfigFileError, RecordingError, TableExportError, ExportError]
)
def test_what_a_user_asked_for_wrongly_is_a_usage_error(error):
    assert issubclass(error, UsageError) and issubclass(error, DltuiError)
    assert exit_status.of_error(error("why")) == exit_status.USAGE == 2


def test_the_agent_has_one_configuration_error():
    from dltui.agent import server

    assert not hasattr(server, "ConfigError") and server.ConfigFileError is ConfigFileError
