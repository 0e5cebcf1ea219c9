"""GPU ids of an execute machine and the environment of a job holding some (daemons.gpus)."""

from jobledger.daemons.gpus import DEFAULT_ENVIRONMENT, job_environment, machine_gpu_ids, pick


def test_ids_come_from_the_machine_cuda_visible_devices_else_count_from_zero():
    assert machine_gpu_ids(2, None) == ["CUDA0", "CUDA1"]
    assert machine_gpu_ids(2, "3, 5,7") == ["CUDA3", "CUDA5"]
    assert machine_gpu_ids(2, "GPU-1a2b,GPU-3c4d") == ["GPU-1a2b", "GPU-3c4d"]
    assert machine_gpu_ids(3, "4") == ["CUDA4"]       # only what the machine can see
    assert machine_gpu_ids(0, "1,2") == []


def test_pick_takes_free_ids_or_none():
    assert pick(["CUDA0", "CUDA1", "CUDA2"], {"CUDA0"}, 2) == ["CUDA1", "CUDA2"]
    assert pick(["CUDA0", "CUDA1"], {"CUDA0"}, 2) is None
    assert pick(["CUDA0"], set(), 0) == []


def test_environment_rewrites_each_id_per_variable():
    env = job_environment(["CUDA1", "CUDA3"], True)
    assert env == {"_CONDOR_AssignedGPUs": "CUDA1,CUDA3", "GPU_DEVICE_ORDINAL": "1,3",
                   "CUDA_VISIBLE_DEVICES": "1,3"}
    assert job_environment(["GPU-1a2b"], True)["CUDA_VISIBLE_DEVICES"] == "GPU-1a2b"
    assert job_environment(["CUDA1"], True, "MY_GPUS, OTHER=/CUDA/dev/") == {
        "_CONDOR_AssignedGPUs": "CUDA1", "MY_GPUS": "CUDA1", "OTHER": "dev1"}


def test_no_gpus_held_on_a_gpu_machine_hides_them_and_none_on_a_plain_machine():
    assert job_environment([], True, DEFAULT_ENVIRONMENT, "10000") == {
        "GPU_DEVICE_ORDINAL": "10000", "CUDA_VISIBLE_DEVICES": "10000"}
    assert job_environment([], False) == {}
