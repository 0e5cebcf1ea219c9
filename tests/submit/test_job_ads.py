"""Submit commands -> job attributes (submit.md sections 4 and 6)."""

from __future__ import annotations

import pytest

from jobledger.eventcore.errors import MacroError, SubmitError
from jobledger.eventcore.submit import StaticEnvironment, Submit, plan_cluster

ENV = StaticEnvironment(files={"/submit/items.txt": "a 1\nb 2\nc 3\n", "/bin/tool": "x" * 3000},
                        dirs={"/submit/runs", "/submit/runs/a"}, variables={"HOME": "/home/me", "PATH": "/bin"},
                        cwd="/submit", clock=1700000000, domain="example.org")


def ads(text: str, **kw) -> list[dict[str, str]]:
    sub = Submit.using(ENV, text)
    plan = plan_cluster(sub, ENV, cluster_id=kw.pop("cluster_id", 9), qdate=1700000000, owner="alice", **kw)
    return [plan.merged(i) for i in range(plan.num_procs)]


def one(text: str) -> dict[str, str]:
    (ad,) = ads("executable = /bin/tool\n" + text)
    return ad


def test_defaults_of_a_plain_job():
    ad = one("")
    assert ad["ClusterId"] == "9" and ad["ProcId"] == "0" and ad["JobStatus"] == "1"
    assert ad["Cmd"] == '"/bin/tool"' and ad["JobUniverse"] == "5"
    assert ad["In"] == ad["Out"] == ad["Err"] == '"/dev/null"'
    assert ad["TransferIn"] == ad["TransferOut"] == ad["TransferErr"] == "false"
    assert ad["Arguments"] == '""' and ad["Environment"] == '""' and "Args" not in ad
    assert ad["Iwd"] == '"/submit"' and ad["Owner"] == '"alice"'
    assert ad["QDate"] == ad["EnteredCurrentStatus"] == "1700000000"
    assert ad["RequestCpus"] == "1" and ad["RequestMemory"] == "128"
    assert ad["RequestDisk"].startswith("MAX(")
    assert ad["ShouldTransferFiles"] == '"IF_NEEDED"' and ad["WhenToTransferOutput"] == '"ON_EXIT"'
    assert ad["JobPrio"] == "0" and ad["Rank"] == "0.0" and ad["JobNotification"] == "0"
    assert ad["LeaveJobInQueue"] == "false" and ad["JobLeaseDuration"] == "2400"
    assert ad["MinHosts"] == ad["MaxHosts"] == "1" and ad["MyType"] == '"Job"'
    assert ad["ExecutableSize"] == ad["ImageSize"] == "3"
    assert ad["FileSystemDomain"] == '"example.org"' and ad["JobSubmitMethod"] == "2"
    assert ad["Requirements"] == (
        '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && '
        '(versionGE(split(TARGET.CondorVersion)[1], "25.12.0") || (TARGET.Disk >= RequestDisk)) && '
        '(TARGET.Memory >= RequestMemory) && '
        '((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))')


def test_requirements_keeps_the_user_part_and_skips_what_it_names():
    ad = one("requirements = Memory > 100 && Arch == \"X86_64\"\nrequest_cpus = 4\n"
             "should_transfer_files = YES\n")
    req = ad["Requirements"]
    assert req.startswith('(Memory > 100 && Arch == "X86_64") && (TARGET.OpSys == "LINUX")')
    assert "TARGET.Arch" not in req and "TARGET.Memory" not in req
    assert "(TARGET.Cpus >= RequestCpus)" in req and req.endswith("(TARGET.HasFileTransfer)")
    assert one("+Requirements = true\n")["Requirements"] == "true"


@pytest.mark.parametrize("value,mib", [("2GB", "2048"), ("1.5G", "1536"), ("1024M", "1024"), ("2048", "2048"),
                                        ("512 MB", "512")])
def test_request_memory_units(value, mib):
    assert one(f"request_memory = {value}\n")["RequestMemory"] == mib


@pytest.mark.parametrize("value,kib", [("1GB", "1048576"), ("1.5 GB", "1572864"), ("2048K", "2048"),
                                        ("100", "100")])
def test_request_disk_units(value, kib):
    assert one(f"request_disk = {value}\n")["RequestDisk"] == kib


def test_hold_and_spool():
    ad = one("hold = true\n")
    assert (ad["JobStatus"], ad["HoldReasonCode"]) == ("5", "15")
    assert ad["HoldReason"] == "\"submitted on hold at user's request\""
    (spooled,) = ads("executable = /bin/tool\n", spool=True)
    assert (spooled["JobStatus"], spooled["HoldReasonCode"]) == ("5", "16")


def test_retries_build_the_exit_policy():
    ad = one("max_retries = 3\non_exit_remove = ExitCode == 7\n")
    assert ad["JobMaxRetries"] == "3" and ad["OnExitHold"] == "false"
    assert ad["OnExitRemove"] == "NumJobCompletions > JobMaxRetries || ExitCode =?= 0 || (ExitCode == 7)"
    ad = one("success_exit_code = 2\nretry_until = 9\n")
    assert ad["JobMaxRetries"] == "2" and ad["JobSuccessExitCode"] == "2"
    assert ad["OnExitRemove"].endswith("ExitCode =?= JobSuccessExitCode || ExitCode =?= 9")
    ad = one("periodic_hold = NumJobStarts > 2\nperiodic_remove = false\non_exit_hold = ExitCode != 0\n")
    assert ad["PeriodicHold"] == "NumJobStarts > 2" and ad["PeriodicRemove"] == "false"
    assert ad["OnExitHold"] == "ExitCode != 0" and "OnExitRemove" not in ad


def test_arguments_v1_and_v2_and_environment():
    assert one("arguments = a b  c\n")["Args"] == '"a b  c"'
    ad = one("arguments = \"one 'two three' \"\"q\"\"\"\n")
    assert ad["Arguments"] == '"one \'two three\' \'\\"q\\"\'"' and "Args" not in ad
    assert one("environment = A=1;B=x y\n")["Environment"] == "\"A=1 'B=x y'\""
    assert one("environment = \"A=1 B='x y'\"\n")["Environment"] == "\"A=1 'B=x y'\""
    assert one("getenv = HOME\nenvironment = A=1\n")["Environment"] == '"HOME=/home/me A=1"'
    with pytest.raises(SubmitError, match="Missing '='"):
        one("environment = \"A=1 oops\"\n")


def test_files_paths_and_transfer():
    ad = one("input = in.txt\noutput = out.txt\nstream_output = true\nlog = job.log\n"
             "transfer_input_files = a.txt , b.txt,\ninitialdir = runs\n")
    assert ad["In"] == '"in.txt"' and ad["StreamIn"] == "false" and "TransferIn" not in ad
    assert ad["StreamOut"] == "true" and ad["UserLog"] == '"/submit/runs/job.log"'
    assert ad["Iwd"] == '"/submit/runs"' and ad["TransferInput"] == '"a.txt,b.txt"'
    with pytest.raises(SubmitError, match="No such directory"):
        one("initialdir = nowhere\n")


def test_custom_attributes_and_other_commands():
    ad = one('+Project = "physics"\nMY.Weight = 7\nbatch_name = "run 1"\nnotification = Complete\n'
             "priority = 5\nuniverse = local\naccounting_group = grp\n")
    assert ad["Project"] == '"physics"' and ad["Weight"] == "7"
    assert ad["JobBatchName"] == '"run 1"' and ad["JobNotification"] == "2" and ad["JobPrio"] == "5"
    assert ad["JobUniverse"] == "12" and ad["KillSig"] == '"SIGTERM"' and "JobLeaseDuration" not in ad
    assert ad["AccountingGroup"] == '"grp.alice"' and ad["AcctGroup"] == '"grp"'
    assert "FileSystemDomain ==" not in ad["Requirements"]


def test_project_name_is_a_string():
    """``project_name`` sets ProjectName as a string (HTCondor's SetAccountingGroup), which
    names the job's Project record."""
    assert one("project_name = physics\n")["ProjectName"] == '"physics"'
    assert one('project_name = "chem lab"\n')["ProjectName"] == '"chem lab"'
    assert "ProjectName" not in one("")


@pytest.mark.parametrize("text,message", [
    ("universe = moon\n", "I don't know about the 'moon' universe"),
    ("notification = sometimes\n", "notification"),
    ("priority = high\n", "must be an integer"),
    ("+Bad = (1 +\n", "not a valid ClassAd expression"),
    ("requirements = Requirements\n", "Is Circular"),
    ("arguments = a\narguments2 = b\n", "allow_arguments_v1"),
])
def test_bad_commands_name_the_line(text, message):
    with pytest.raises(SubmitError, match=message) as info:
        one(text)
    assert info.value.line == 2


def test_missing_executable():
    with pytest.raises(SubmitError, match="No 'executable'"):
        ads("arguments = x\n")


def test_per_job_values_and_slices():
    got = ads("executable = /bin/tool\narguments = $(x) $(ProcId) $(Step) $(Row) $(Cluster)\n"
              "queue 2 x in [1:3] (a b c d e)\n")
    assert [a["Args"] for a in got] == ['"b 0 0 1 9"', '"b 1 1 1 9"', '"c 2 0 2 9"', '"c 3 1 2 9"']


def test_from_file_count_override_and_itemdata():
    sub = Submit.using(ENV, "executable = /bin/tool\narguments = $(n) $(v)\nqueue n,v from items.txt\n")
    plan = plan_cluster(sub, ENV, cluster_id=1, count=2)
    assert plan.num_procs == 6 and plan.proc_attrs[1]["Args"] == '"a 1"'
    plan = plan_cluster(sub, ENV, cluster_id=1, itemdata=[{"n": "p", "v": "q"}, {"n": "r", "v": "s"}])
    assert [p["Args"] for p in plan.proc_attrs] == ['"p q"', '"r s"']
    plan = plan_cluster(Submit.using(ENV, "executable = /bin/tool\narguments = $(Item)\n"), ENV,
                        itemdata=iter(["x", "y"]))
    assert [p["Args"] for p in plan.proc_attrs] == ['"x"', '"y"']
    with pytest.raises(ValueError):
        plan_cluster(sub, ENV, count=1, queue="3")


@pytest.mark.parametrize("queue", ["queue 0", "queue x matching *.nothing", "queue x in [5:] (a b)"])
def test_statements_that_make_no_jobs_are_refused(queue):
    with pytest.raises(SubmitError, match="invalid Queue statement"):
        ads(f"executable = /bin/tool\n{queue}\n")


def test_common_attributes_are_stored_once():
    sub = Submit.using(ENV, "executable = /bin/tool\noutput = o.$(Process)\nerror = e.txt\nqueue 3\n")
    plan = plan_cluster(sub, ENV, cluster_id=4)
    assert plan.cluster_attrs["Err"] == '"e.txt"' and "Out" not in plan.cluster_attrs
    assert plan.proc_attrs == [{"ProcId": str(i), "JobStatus": "1", "Out": f'"o.{i}"', "StreamOut": "false"}
                               for i in range(3)]


def test_jobs_gives_classads():
    sub = Submit.using(ENV, "executable = /bin/tool\n+Label = \"run-$(ProcId)\"\nqueue 2\n")
    ads_ = list(sub.jobs(clusterid=5, qdate=1700000000, owner="bob"))
    assert [ad["Label"] for ad in ads_] == ["run-0", "run-1"]
    assert ads_[1]["ClusterId"] == 5 and ads_[1]["ProcId"] == 1 and ads_[0]["Owner"] == "bob"
    assert [dict(p) for p in sub.procs()][1]["ProcId"] == 1


def test_macro_errors_in_jobs_name_the_command_line():
    sub = Submit.using(ENV, "executable = /bin/tool\nx = $CHOICE(Step,a,b)\narguments = $(x)\nqueue 3\n")
    with pytest.raises(MacroError) as info:
        plan_cluster(sub, ENV)
    assert info.value.line == 3 and "index 2 is out of range" in info.value.message
    assert info.value.text == "arguments = $(x)"
    unused = Submit.using(ENV, "executable = /bin/tool\nx = $CHOICE(Step,a,b)\nqueue 3\n")
    assert plan_cluster(unused, ENV).num_procs == 3
    with pytest.raises(KeyError):
        Submit.using(ENV, "x = $CHOICE(5,a,b)\n").expand("x")


def test_circular_references_end_with_an_error():
    sub = Submit.using(ENV, "executable = /bin/tool\na = $(b)\nb = $(a)\narguments = $(a)\n")
    with pytest.raises(KeyError):
        sub.expand("a")
    with pytest.raises(SubmitError, match="does not end"):
        plan_cluster(sub, ENV)


def test_random_macros_come_from_the_environment():
    env = StaticEnvironment(seed=5)
    sub = Submit.using(env, "executable = /bin/tool\nr = $RANDOM_INTEGER(10,20,5)\narguments = $(r)\nqueue 20\n")
    values = {p["Args"] for p in plan_cluster(sub, env).proc_attrs}
    assert values <= {'"10"', '"15"', '"20"'} and len(values) > 1


def test_gpus():
    ad = one("request_gpus = 1\ngpus_minimum_capability = 8.0\ngpus_minimum_memory = 4GB\n")
    assert ad["RequestGPUs"] == "1" and ad["GPUsMinCapability"] == "8.0" and ad["GPUsMinMemory"] == "4096"
    assert ad["RequireGPUs"] == "Capability >= 8.0 && GlobalMemoryMb >= 4096"
    assert "(countMatches(MY.RequireGPUs,TARGET.AvailableGPUs) >= RequestGPUs)" in ad["Requirements"]
    plain = one("request_gpus = 2\n")
    assert "(TARGET.GPUs >= RequestGPUs)" in plain["Requirements"] and "RequireGPUs" not in plain
    assert "GPUs" not in one("request_gpus = 0\n")["Requirements"]


def test_gpu_requirements_match_a_slot_with_a_capable_gpu():
    from jobledger.eventcore.classad import ClassAd
    sub = Submit.using(ENV, "executable = /bin/tool\nrequest_gpus = 1\ngpus_minimum_capability = 7.0\n")
    job = next(sub.jobs())
    slot = ClassAd('[Arch = "X86_64"; OpSys = "LINUX"; Disk = 100000000; Memory = 4096; Cpus = 4; '
                   'CondorVersion = "$CondorVersion: 25.14.1 2025-01-01 $"; HasFileTransfer = true; '
                   'GPUs = 1; AvailableGPUs = { GPU_1 }; GPU_1 = [ Capability = 8.0 ]]')
    assert job.lookup("Requirements").eval(scope=job, target=slot) is True
    slot["GPU_1"] = ClassAd("[ Capability = 6.1 ]")
    assert job.lookup("Requirements").eval(scope=job, target=slot) is False


def test_url_transfers_need_plugins():
    req = one("transfer_input_files = https://x/a.tgz, local.txt, osdf:///b\nshould_transfer_files = YES\n")[
        "Requirements"]
    assert req.endswith('(TARGET.HasFileTransfer && stringListIMember("https",TARGET.HasFileTransferPluginMethods)'
                        ' && stringListIMember("osdf",TARGET.HasFileTransferPluginMethods))')


def test_transfer_input_size_as_condor_submit_computes_it():
    """HTCondor's SetTransferFiles: the executable's KiB (rounded up) plus each input's
    (a directory: its files'; a URL: 0) plus stdin's unless transfer_input = false;
    DiskUsage in KiB, TransferInputSizeMB in whole MiB rounded up; disk_usage given:
    DiskUsage is that and TransferInputSizeMB is not computed (its default 0 stays)."""
    env = StaticEnvironment(files={"/bin/tool": "x" * 3000, "/submit/big.dat": "d" * (2 << 20),
                                   "/submit/in.txt": "i" * 1500, "/submit/data/a": "a" * 1024,
                                   "/submit/data/sub/b": "b" * 1025},
                            dirs={"/submit/data", "/submit/data/sub"}, cwd="/submit", clock=1700000000)

    def ad(text: str) -> dict[str, str]:
        sub = Submit.using(env, "executable = /bin/tool\n" + text)
        return plan_cluster(sub, env, cluster_id=9, qdate=1700000000, owner="alice").merged(0)

    plain = ad("")
    assert (plain["DiskUsage"], plain["TransferInputSizeMB"]) == ("3", "1")
    both = ad("transfer_input_files = big.dat, data, https://example.org/x, nothing-here\ninput = in.txt\n")
    assert both["DiskUsage"] == str(3 + 2048 + (1 + 2) + 2)          # tool, big.dat, data/a + data/sub/b, in.txt
    assert both["TransferInputSizeMB"] == "3"                         # 2056 KiB -> 3 MiB
    no_stdin = ad("transfer_input_files = big.dat\ninput = in.txt\ntransfer_input = false\n")
    assert no_stdin["DiskUsage"] == str(3 + 2048)
    given = ad("transfer_input_files = big.dat\ndisk_usage = 5MB\n")
    assert given["DiskUsage"] == "5120" and given["TransferInputSizeMB"] == "0"
    with pytest.raises(SubmitError, match="'0' is not valid for disk_usage. It must be >= 1"):
        ad("disk_usage = 0\n")
