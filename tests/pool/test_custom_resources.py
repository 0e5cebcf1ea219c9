"""Custom machine resources on the local startd (daemons.custom_resources): GPUs declared by
id list, count or an inventory command, as HTCondor's MACHINE_RESOURCE_* knobs do, held by
dynamic slots and handed to jobs through their environment."""

from __future__ import annotations

import stat

import pytest

import jobledger as htcondor
from jobledger.daemons import custom_resources as cr
from jobledger.eventcore import adwire
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import running_pool, wait_until

NO_GPU = lambda: "DetectedGPUs = 0\n"    # noqa: E731 - default discovery on a machine without GPUs


def test_a_count_an_id_list_and_offline_ids():
    found = cr.machine_resources({"MACHINE_RESOURCE_Boards": "3", "MACHINE_RESOURCE_GPUs": "CUDA0, CUDA1 CUDA2",
                                  "OFFLINE_MACHINE_RESOURCE_GPUs": "CUDA1"}, detect=NO_GPU)
    assert (found["Boards"].count, found["Boards"].ids) == (3, [])
    assert (found["GPUs"].count, found["GPUs"].ids) == (2, ["CUDA0", "CUDA2"])
    assert cr.machine_resources({"MACHINE_RESOURCE_Boards": "2 * 4"}, detect=NO_GPU)["Boards"].count == 8


def test_an_inventory_ad_gives_the_ids_and_the_machine_attributes():
    output = 'DetectedGPUs = "GPU-1a2b3c4d, GPU-5e6f7a8b"\nCUDADriverVersion = 12.2\nGPUs = 7\n'
    found = cr.machine_resources({"MACHINE_RESOURCE_INVENTORY_GPUs": "/some/tool -x"},
                                 run=lambda tag, command: output)
    gpus = found["GPUs"]
    assert gpus.ids == ["GPU-1a2b3c4d", "GPU-5e6f7a8b"] and gpus.count == 2
    assert {name: adwire.literal(text) for name, text in gpus.attrs.items()} == {
        "CUDADriverVersion": 12.2}   # DetectedGPUs and GPUs are the startd's own


def test_default_gpu_discovery_unless_declared_or_turned_off():
    two = lambda: 'DetectedGPUs = "GPU-00000001, GPU-00000002"\n'   # noqa: E731
    assert cr.machine_resources({}, detect=two)["GPUs"].count == 2
    assert "GPUs" not in cr.machine_resources({"STARTD_DETECT_GPUS": "false"}, detect=two)
    assert "GPUs" not in cr.machine_resources({"STARTD_DETECT_GPUS": ""}, detect=two)
    assert cr.machine_resources({"MACHINE_RESOURCE_GPUs": "1"}, detect=two)["GPUs"].count == 1
    assert cr.machine_resources({}, detect=NO_GPU) == {}     # no GPUs: nothing published


def test_resource_names_limit_the_tags_and_builtin_names_are_refused():
    found = cr.machine_resources({"MACHINE_RESOURCE_NAMES": "boards", "MACHINE_RESOURCE_Boards": "1",
                                  "MACHINE_RESOURCE_Fpgas": "2"}, detect=NO_GPU)
    assert list(found) == ["Boards"]
    with pytest.raises(HTCondorException, match="'Memory' is a reserved resource name"):
        cr.machine_resources({"MACHINE_RESOURCE_Memory": "4"}, detect=NO_GPU)


def test_an_unreadable_inventory_is_none_of_its_resource_and_a_missing_tool_is_named():
    heard = []
    assert cr.machine_resources({"MACHINE_RESOURCE_INVENTORY_GPUs": "x"}, run=lambda tag, command: "[[ not an ad",
                                warn=heard.append) == {}      # HTCondor: a quantity of 0
    assert len(heard) == 1 and "'GPUs'" in heard[0]
    with pytest.raises(HTCondorException, match="inventory script"):
        cr.run_inventory("GPUs", "/nonexistent/tool")


def test_a_reused_claim_keeps_its_devices_and_others_take_free_ones():
    custom = {"GPUs": cr.Resource("GPUs", 3, ["CUDA0", "CUDA1", "CUDA2"])}
    old = {"assigned": {"GPUs": ["CUDA2"]}}
    other = {"assigned": {"GPUs": ["CUDA0"]}}
    assert cr.assign(custom, {"GPUs": 1}, old, [old, other]) == {"GPUs": ["CUDA2"]}
    assert cr.assign(custom, {"GPUs": 1}, None, [old, other]) == {"GPUs": ["CUDA1"]}
    assert cr.assign(custom, {"GPUs": 0}, None, []) == {}


@pytest.fixture(scope="module")
def gpu_pool(tmp_path_factory):
    tool = tmp_path_factory.mktemp("tools") / "gpu_inventory"
    tool.write_text('#!/bin/sh\necho \'DetectedGPUs = "GPU-aaaa1111, GPU-bbbb2222"\'\n'
                    'echo "CUDADriverVersion = 12.2"\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    yield from running_pool(tmp_path_factory, MACHINE_RESOURCE_INVENTORY_GPUs=str(tool), NUM_CPUS="4")


def test_slot_ads_offer_the_inventory_gpus(gpu_pool):
    pslot = next(ad for ad in gpu_pool.collector.query(htcondor.AdType.Startd)
                 if ad.get("SlotType") == "Partitionable")
    assert (pslot["TotalGPUs"], pslot["GPUs"]) == (2, 2)
    assert pslot["DetectedGPUs"] == "GPU-aaaa1111, GPU-bbbb2222"
    assert pslot["AssignedGPUs"] == "GPU-aaaa1111,GPU-bbbb2222"
    assert pslot["CUDADriverVersion"] == 12.2 and "GPUs" in pslot["MachineResources"].split()


def test_jobs_get_their_own_gpus_and_others_none(gpu_pool, tmp_path):
    script = tmp_path / "show.sh"
    # Each GPU job waits for a file the test writes once it has seen two of them running,
    # so the two GPUs are held at once and a third GPU job must wait for one of them.
    script.write_text('#!/bin/sh\necho "$_CONDOR_AssignedGPUs $CUDA_VISIBLE_DEVICES" > "$1"\n'
                      'if [ "$2" = wait ]; then n=0; while [ ! -e release ] && [ $n -lt 600 ]; do sleep 0.1; '
                      'n=$((n+1)); done; fi\n')
    script.chmod(0o755)
    schedd = gpu_pool.schedd
    gpu_jobs = schedd.submit(htcondor.Submit({
        "executable": str(script), "arguments": "gpu$(ProcId).out wait", "request_gpus": "1",
        "initialdir": str(tmp_path), "log": str(tmp_path / "gpu.log"), "should_transfer_files": "NO"}),
        count=3).cluster()
    wait_until(lambda: len(list((tmp_path).glob("gpu*.out"))) >= 2, 60, what="two GPU jobs to run")
    running = wait_until(lambda: schedd.query(f"ClusterId == {gpu_jobs} && JobStatus == 2", ["ProcId"])
                         if len(schedd.query(f"ClusterId == {gpu_jobs} && JobStatus == 2", ["ProcId"])) == 2
                         else None, 30, what="two GPU jobs running")
    idle = schedd.query(f"ClusterId == {gpu_jobs} && JobStatus == 1", ["ProcId"])
    assert len(idle) == 1 and not (tmp_path / f"gpu{idle[0]['ProcId']}.out").exists()   # it waits for a GPU
    (tmp_path / "release").write_text("")
    wait_until(lambda: len(schedd.history(f"ClusterId == {gpu_jobs}", ["ProcId"])) == 3, 90,
               what="the GPU jobs to finish")
    seen = {proc: (tmp_path / f"gpu{proc}.out").read_text().split() for proc in range(3)}
    assert all(assigned == visible and visible in ("GPU-aaaa1111", "GPU-bbbb2222")
               for assigned, visible in seen.values())
    assert {seen[ad["ProcId"]][0] for ad in running} == {"GPU-aaaa1111", "GPU-bbbb2222"}   # one each
    plain = schedd.submit(htcondor.Submit({
        "executable": str(script), "arguments": "plain.out", "initialdir": str(tmp_path),
        "should_transfer_files": "NO"})).cluster()
    wait_until(lambda: schedd.history(f"ClusterId == {plain}", ["ProcId"]), 60, what="the plain job")
    assert (tmp_path / "plain.out").read_text().split() == ["10000"]   # no GPU of its own: none visible
