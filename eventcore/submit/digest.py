"""The submit digest of a late-materialization submit, as HTCondor's condor_submit writes it.

A submit with ``max_materialize`` (or ``max_idle`` / ``materialize_max_idle``) makes a
*job factory*: condor_submit sends the schedd its cluster ad, its item rows and a
*digest* -- the submit description with everything that does not vary from job to
job already folded into the cluster ad -- and the schedd keeps the digest as
``$(SPOOL)/<cluster % 10000>/condor_submit.<cluster>.digest`` and the rows as
``condor_submit.<cluster>.items`` beside it.

``make_digest`` writes it as HTCondor's ``SubmitHash::make_digest`` does:
``FACTORY.Requirements=MY.Requirements`` first, then each command the user set
(``FACTORY.Iwd`` among them), ordered by name without regard to case, its value
expanded except for the references to the per-job macros (``Process``, ``ProcId``,
``Step``, ``Row``, ``Node``, ``Item``, ``TaskId`` and the queue statement's
variables), which stay as written.  A command is left out when it is one of
HTCondor's *prunable* commands (those its job-ad builder reads once per cluster:
``executable``, ``arguments``, ``max_idle``, ``request_memory`` ...) and no per-job
reference is left in its value; ``getenv``, ``requirements`` and
``on_evict_check`` never appear.  A blank line and ``Queue <count> <vars> from
<items file>`` (``Queue <count>`` without items) end it.  Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jobledger.eventcore.submit.macros import Expander, MacroError

__all__ = ["PER_JOB_MACROS", "is_prunable", "make_digest", "queue_line", "wants_factory", "items_text"]

PER_JOB_MACROS = ("Process", "ProcId", "Step", "Row", "Node", "Item", "TaskId")
FACTORY_KEYS = ("max_materialize", "max_idle", "materialize_max_idle")
_OMITTED = frozenset({"getenv", "get_env", "requirements", "on_evict_check"})
_PENDING = re.compile("\x01([^\x02]*)\x02")

# HTCondor's prunable submit commands and their attribute names (submit_utils.cpp,
# prunable_keywords), lower case.
_PRUNABLE = frozenset("""
    accounting_group accounting_group_user accountinggroup acctgroupuser allow_arguments_v1
    allow_environment_v1 allowed_execute_duration allowed_job_duration allowedexecuteduration
    allowedjobduration append_files appendfiles arc_rte arcrte args arguments arguments2
    aws_access_key_id_file aws_region aws_secret_access_key_file awsregion azure_admin_key
    azure_admin_username azure_auth_file azure_image azure_location azure_size azureadminkey
    azureadminusername azureauthfile azureimage azurelocation azuresize batch_extra_submit_args
    batch_id batch_name batch_project batch_queue batch_runtime batchextrasubmitargs batchproject
    batchqueue batchruntime buffer_block_size buffer_files buffer_size bufferblocksize bufferfiles
    buffersize checkpoint_destination checkpoint_exit_code checkpointdestination cmd
    commoninputfiles compress_files compressfiles concurrency_limits concurrency_limits_expr
    concurrencylimits container_image container_is_common container_service_names
    container_target_dir containerimage containeriscommon containerservicenames containertargetdir
    core_size coresize cron_day_of_month cron_day_of_week cron_hour cron_minute cron_month
    cron_prep_time cron_window crondayofmonth crondayofweek cronhour cronminute cronmonth
    cronpreptime cronwindow cuda_version cudaversion dag_node_name dagman_job_id dagman_log
    dagmanjobid dagmannodeslog dagnodename deferral_prep_time deferral_time deferral_window
    deferralpreptime deferraltime deferralwindow delegatejobgsicredentialslifetime description
    docker_image docker_network_type docker_override_entrypoint docker_pull_policy
    docker_send_credentials dockerimage dockernetworktype dockeroverrideentrypoint dockerpullpolicy
    dockersendcredentials dont_encrypt_input_files dont_encrypt_output_files dontencryptinputfiles
    dontencryptoutputfiles ec2_access_key_id ec2_ami_id ec2_availability_zone
    ec2_block_device_mapping ec2_ebs_volumes ec2_elastic_ip ec2_iam_profile_arn ec2_iam_profile_name
    ec2_instance_type ec2_key_pair_file ec2_keyp_air ec2_keypair ec2_keypair_file
    ec2_parameter_names ec2_secret_access_key ec2_security_groups ec2_security_ids ec2_spot_price
    ec2_tag_names ec2_user_data ec2_user_data_file ec2_vpc_ip ec2_vpc_subnet ec2accesskeyid ec2amiid
    ec2availabilityzone ec2blockdevicemapping ec2elasticblockstoragevolumes ec2elasticip
    ec2iamprofilearn ec2iamprofilename ec2instancetype ec2keypair ec2keypairfile ec2paramnames
    ec2secretaccesskey ec2securitygroups ec2securityids ec2spotprice ec2tagnames ec2userdata
    ec2userdatafile ec2vpcip ec2vpcsubnet email_attributes emailattributes encrypt_execute_directory
    encrypt_input_files encrypt_output_files encryptexecutedirectory encryptinputfiles
    encryptoutputfiles env environment environment2 erase_output_and_error_on_restart
    eraseoutputanderroronrestart err error executable fetch_files fetchfiles file_remaps fileremaps
    gce_account gce_auth_file gce_image gce_json_file gce_machine_type gce_metadata
    gce_metadata_file gce_preemptible gceaccount gceauthfile gceimage gcejsonfile gcemachinetype
    gcemetadata gcemetadatafile gcepreemptible get_env getenv gpus_maximum_capability
    gpus_minimum_capability gpus_minimum_memory gpus_minimum_runtime gpusmaxcapability
    gpusmincapability gpusminmemory gpusminruntime grid_resource gridresource gs_access_key_id_file
    gs_secret_access_key_file hold_kill_sig holdkillsig image_size imagesize in input isnoopjob
    jar_files jarfiles java_vm_args java_vm_arguments java_vm_arguments2 javavmargs
    job_ad_information_attrs job_lease_duration job_machine_attrs job_machine_attrs_history_length
    job_max_vacate_time jobadinformationattrs jobbatchid jobbatchname jobdescription
    jobleaseduration jobmachineattrs jobmachineattrshistorylength jobmaterializemaxidle
    jobmaxretries jobmaxvacatetime jobnotification jobprio jobset jobsetname jobstarterdebug
    jobstarterlog jobsuccessexitcode jobvm_macaddr jobvmcheckpoint jobvmnetworking
    jobvmnetworkingtype jobvmtype jobvmvncconsole keep_claim_idle keepclaimidle kill_sig
    kill_sig_timeout killsig killsigtimeout lastmatchlistlength leave_in_queue leavejobinqueue
    load_profile loadprofile local_files localfiles log log_xml machine_count machinecount manifest
    manifest_dir manifestdesired manifestdir match_list_length materialize_max_idle max_idle
    max_job_retirement_time max_retries max_transfer_input_mb max_transfer_output_mb
    maxjobretirementtime maxtransferinputmb maxtransferoutputmb mount_under_scratch
    mountunderscratch next_job_start_delay nextjobstartdelay nice_user niceuser node_count nodecount
    noop_job noop_job_exit_code noop_job_exit_signal noopjobexitcode noopjobexitsignal notification
    notify_user notifyuser on_evict_checks on_exit_hold on_exit_hold_reason on_exit_hold_subcode
    on_exit_remove onexithold onexitholdreason onexitholdsubcode onexitremove out output
    output_destination output_directory outputdestination outputdirectory parallel_script_shadow
    parallel_script_starter parallelscriptshadow parallelscriptstarter periodic_hold
    periodic_hold_reason periodic_hold_subcode periodic_release periodic_remove periodic_vacate
    periodichold periodicholdreason periodicholdsubcode periodicrelease periodicremove
    periodicvacate preferences preserve_relative_paths preserverelativepaths primary_unix_group
    primaryunixgroup prio priority project_name projectname rank remote_initialdir remoteiwd
    remove_kill_sig removekillsig request_cpus request_disk request_gpu_memory request_gpus
    request_gpus_memory request_memory requestcpus requestdisk requestgpus requestmemory
    retry_request_memory retry_request_memory_increase retry_request_memory_max retry_until
    run_as_owner runasowner s3_access_key_id_file s3_secret_access_key_file scitokens_file
    scitokensfile should_transfer_files shouldtransferfiles skip_if_dataflow skipifdataflow
    stack_size stacksize starter_debug starter_log stderr stdin stdout stream_error stream_input
    stream_output streamerr streamin streamout submit_event_notes submit_event_notes_attrs
    submit_event_user_notes submiteventnotes submiteventnotesattrs submiteventusernotes
    success_exit_code successcheckpointexitcode suspend_job_at_exec suspendjobatexec
    tool_daemon_args tool_daemon_arguments tool_daemon_arguments2 tool_daemon_cmd tool_daemon_error
    tool_daemon_input tool_daemon_output tooldaemonargs tooldaemoncmd tooldaemonerror
    tooldaemoninput tooldaemonoutput transfer_checkpoint_files transfer_common_input
    transfer_container transfer_error transfer_executable transfer_input transfer_input_files
    transfer_output transfer_output_files transfer_output_remaps transfer_plugins transfercheckpoint
    transfercontainer transfererr transferexecutable transferin transferinput transferinputfiles
    transferout transferoutput transferoutputfiles transferoutputremaps transferplugins
    transformonevict ulog_execute_attrs use_scitoken use_scitokens use_x509userproxy userlog
    userlogexecuteeventattrs userlogusexml vm_checkpoint vm_disk vm_macaddr vm_memory vm_networking
    vm_networking_type vm_no_output_vm vm_type vm_vcpus vm_vnc want_graceful_removal want_io_proxy
    want_job_networking wantgracefulremoval wantioproxy wantjobnetworking wantparallelscheduling
    when_to_transfer_output whentotransferoutput x509userproxy xen_initrd xen_kernel
    xen_kernel_params xen_root
""".split())


def is_prunable(key: str) -> bool:
    """HTCondor's ``key_is_prunable``: a known command its job-ad builder reads once, or
    any ``My.`` attribute."""
    low = key.lower()
    return low in _PRUNABLE or low.startswith("my.")


def wants_factory(lookup: Callable[[str], str | None]) -> bool:
    """condor_submit's ``want_factory_submit``: ``max_materialize`` or a ``max_idle`` set."""
    return any((lookup(key) or "").strip() for key in FACTORY_KEYS)


def make_digest(commands: list[tuple[str, str]], variables: tuple[str, ...], cluster: int,
                iwd: str, lookup: Callable[[str], str | None], env) -> str:
    """The digest of ``commands`` (``(name as written, raw value)``, in any order) up to
    its queue statement (``queue_line``: the schedd names its items file there);
    ``lookup`` gives any macro's raw value (the submit's own, then the automatic ones)."""
    skip = {name.lower() for name in PER_JOB_MACROS} | {v.lower() for v in variables}

    def held_back(name: str) -> str | None:
        low = name.lower()
        if low in skip:
            return "\x01" + name + "\x02"
        if low in ("cluster", "clusterid"):
            return str(cluster)
        return lookup(name)

    expander = Expander(held_back, env, strict=False)
    lines = ["FACTORY.Requirements=MY.Requirements"]
    entries = [(name, value) for name, value in commands if name.lower() not in _OMITTED]
    entries.append(("FACTORY.Iwd", iwd))
    for name, raw in sorted(entries, key=lambda pair: pair[0].lower()):
        try:
            value = expander.expand(raw)
        except MacroError:
            value = raw
        pending = "\x01" in value
        value = _PENDING.sub(lambda m: "$(" + m.group(1) + ")", value)
        if pending or not is_prunable(name):
            lines.append(f"{name}@=end\n{value.rstrip(chr(10))}\n@end" if "\n" in value else f"{name}={value}")
    return "\n".join(lines) + "\n\n"


def queue_line(count: int, variables: tuple[str, ...], items_file: str | None) -> str:
    """The digest's last line: ``Queue <count>``, and ``<vars> from <items file>``."""
    line = f"Queue {count}"
    if items_file is not None:
        line += f" {','.join(variables) or 'Item'} from {items_file}"
    return line + "\n"


def items_text(rows: list[list[str]]) -> str:
    """The items file: a line per row, its values joined by a space (a value holding a
    blank joins its row with commas)."""
    out = []
    for values in rows:
        sep = "," if any(" " in v or "\t" in v for v in values) else " "
        out.append(sep.join(values))
    return "".join(line + "\n" for line in out)
