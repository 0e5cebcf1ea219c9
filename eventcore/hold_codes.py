"""HTCondor's hold reason codes by name (condor_holdcodes.h, CONDOR_HOLD_CODE): the keys of a
job's ``NumHoldsByReason``."""

from __future__ import annotations

HOLD_CODE_NAMES: dict[int, str] = dict(enumerate((
    "Unspecified", "UserRequest", "GlobusGramError", "JobPolicy", "CorruptedCredential",
    "JobPolicyUndefined", "FailedToCreateProcess", "UnableToOpenOutput", "UnableToOpenInput",
    "UnableToOpenOutputStream", "UnableToOpenInputStream", "InvalidTransferAck", "DownloadFileError",
    "UploadFileError", "IwdError", "SubmittedOnHold", "SpoolingInput", "JobShadowMismatch",
    "InvalidTransferGoAhead", "HookPrepareJobFailure", "MissedDeferredExecutionTime", "StartdHeldJob",
    "UnableToInitUserLog", "FailedToAccessUserAccount", "NoCompatibleShadow", "InvalidCronSettings",
    "SystemPolicy", "SystemPolicyUndefined", "GlexecChownSandboxToUser", "PrivsepChownSandboxToUser",
    "GlexecChownSandboxToCondor", "PrivsepChownSandboxToCondor", "MaxTransferInputSizeExceeded",
    "MaxTransferOutputSizeExceeded", "JobOutOfResources", "InvalidDockerImage", "FailedToCheckpoint",
    "EC2UserError", "EC2InternalError", "EC2AdminError", "EC2ConnectionProblem", "EC2ServerError",
    "EC2InstancePotentiallyLostError", "PreScriptFailed", "PostScriptFailed", "SingularityTestFailed",
    "JobDurationExceeded", "JobExecuteExceeded")))


def hold_code_name(code: int) -> str:
    """The name of hold code ``code`` (an unknown one as its number, as a ClassAd name can't be)."""
    return HOLD_CODE_NAMES.get(code, f"Code{code}")
