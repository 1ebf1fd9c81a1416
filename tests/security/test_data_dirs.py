"""A plan never names a path the agent's own config did not allow: time-to-accuracy folders
must be among `data_dirs` (or inside one), and any other is refused with the same words
whether it exists or not, without being looked at (issue #13: a plan could list the agent's
folders through the worker's "found [...]" and "is not a folder" errors)."""

from __future__ import annotations

import asyncio
import os

import pytest

from dltui.agent.config import ConfigFileError, load_config
from dltui.agent.jobs import data_dir_refusal
from dltui.protocol.bench_plans import ModelPlan
from dltui.protocol.messages import JobEnd, JobResult, Run
from tests.agents import connect
from tests.conftest import require


def to_accuracy(folder: str) -> ModelPlan:
    return ModelPlan(models=["googlenet"], device="cpu", image_size=32, batch=2,
                     data_dir=folder, target_accuracy=0.5)  # fmt: skip


@pytest.fixture
def folders(tmp_path):
    """An allowed folder with a class inside, a secret folder beside it, a link out."""
    allowed = tmp_path / "allowed"
    (allowed / "digits" / "zero").mkdir(parents=True)
    (tmp_path / "secret" / "dirsecret").mkdir(parents=True)
    os.symlink(tmp_path / "secret", allowed / "way-out")
    return tmp_path


def refusal(folders, name: str) -> str | None:
    return data_dir_refusal(to_accuracy(str(folders / name)), (str(folders / "allowed"),))


@pytest.mark.parametrize("name", ["allowed", "allowed/digits", "allowed/not-yet"])
def test_an_allowed_folder_and_those_inside_it_may_be_read(folders, name):
    assert refusal(folders, name) is None


@pytest.mark.parametrize(
    "name", ["secret", "secret/dirsecret", "nothing-here", "allowed/../secret",
             "allowed/way-out", "allowed/way-out/dirsecret", "allowed-too"],
)  # fmt: skip
def test_anything_else_is_refused(folders, name):
    assert "is not among the folders this agent's config allows" in refusal(folders, name)


def test_without_data_dirs_no_folder_is_read(folders):
    assert data_dir_refusal(to_accuracy(str(folders / "allowed")), ()) is not None
    assert data_dir_refusal(ModelPlan(), ()) is None  # synthetic data: no folder at all


def test_the_config_names_them_as_absolute_paths(tmp_path):
    config = tmp_path / "agent.toml"
    config.write_text('data_dirs = ["/data/imagenet/", "/srv/../data/digits"]\n')
    assert load_config(config)["data_dirs"] == ("/data/imagenet", "/data/digits")
    for bad in ('data_dirs = ["data"]', 'data_dirs = "/data"', "data_dirs = [1]"):
        config.write_text(bad + "\n")
        with pytest.raises(ConfigFileError, match="data_dirs: expected"):
            load_config(config)


async def end_of(client, plan: ModelPlan, seq: int) -> tuple[JobEnd, list[JobResult]]:
    """Run the plan; how its job ended, and its results."""
    job = f"job-{seq}"
    await client.stream.send(Run.of(seq, job, plan))
    results = []
    while not isinstance(message := await asyncio.wait_for(client.stream.receive(), 60), JobEnd):
        if isinstance(message, JobResult):
            results.append(message)
    assert message.job == job
    return message, results


async def test_a_real_agent_says_the_same_for_what_exists_and_what_does_not(agent_factory, folders):
    agent = agent_factory("--data-dir", str(folders / "allowed"))
    client, _ = await connect(agent.address)
    said = {}
    for seq, name in enumerate(["secret", "nothing-here", "allowed/way-out"], start=1):
        end, _ = await end_of(client, to_accuracy(str(folders / name)), seq)
        assert end.state == "refused"
        said[name] = end.error
    assert len(set(said.values())) == 1, said
    assert "dirsecret" not in str(said) and "not a folder" not in str(said)
    await client.close()


async def test_a_local_agent_reads_what_its_user_can(folders):
    """Over stdio the client is the user who started the agent: no data_dirs needed."""
    require("torch")
    client, _ = await connect("local")
    end, (result,) = await end_of(client, to_accuracy(str(folders / "nothing-here")), 1)
    assert end.state == "done" and result.model is not None
    assert "is not a folder on this server" in (result.model.error or ""), result
    await client.close()
