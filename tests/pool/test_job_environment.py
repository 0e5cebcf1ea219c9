"""A job's environment as HTCondor's starter makes it: STARTER_JOB_ENVIRONMENT for every
job (the job's own Environment wins a name both set), and ``$$(CondorScratchDir)`` in the
environment's values and in the arguments is the job's scratch directory."""

from __future__ import annotations

import jobledger
from jobledger.daemons.starter import job_arguments, job_environment
from tests.pool.conftest import running_pool, wait_until

import pytest


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, STARTER_JOB_ENVIRONMENT='"SAMPLE_VAR=AnExample SHARED=pool"')


def test_the_environment_and_arguments_of_a_job():
    job = {"Environment": "A=$$(CondorScratchDir)/foo SHARED=job", "Arguments": "x $$(CondorScratchDir)/in"}
    env = job_environment(job, "/scratch/dir_1", '"SAMPLE_VAR=AnExample SHARED=pool"')
    assert (env["A"], env["SAMPLE_VAR"], env["SHARED"]) == ("/scratch/dir_1/foo", "AnExample", "job")
    assert job_environment({"Env": "B=1;C=$$(CondorScratchDir)"}, "/s", "OLD=v1;X=2")["C"] == "/s"
    assert job_environment({}, "/s", "OLD=v1;X=2")["X"] == "2"
    assert job_arguments(job, "/scratch/dir_1") == ["x", "/scratch/dir_1/in"]
    assert job_arguments(job) == ["x", "$$(CondorScratchDir)/in"]


def test_a_running_job_sees_its_scratch_directory_and_the_pools_variables(pool, tmp_path):
    script = tmp_path / "show.sh"
    script.write_text('#!/bin/sh\necho "$VAR_FROM_SUBMIT"\necho "$_CONDOR_SCRATCH_DIR/foo"\necho "$SAMPLE_VAR"\n'
                      'echo "$1"\n')
    script.chmod(0o755)
    sub = jobledger.Submit({"executable": str(script), "arguments": "$$(CondorScratchDir)/arg",
                            "environment": "VAR_FROM_SUBMIT=$$(CondorScratchDir)/foo",
                            "output": str(tmp_path / "out"), "log": str(tmp_path / "log")})
    cluster = pool.schedd.submit(sub).cluster()
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"]), 60, what="the job's end")
    from_submit, from_env, sample, argument = (tmp_path / "out").read_text().splitlines()
    assert from_submit == from_env and "$$" not in from_submit
    assert sample == "AnExample" and argument == from_env[:-len("foo")] + "arg"
