"""The default ``Requirements`` expression a submit generates (submit.md section 6).

The user's ``requirements`` (parenthesised) AND-ed with clauses for the
machine attributes it does not already mention: architecture, operating
system, disk, memory, CPUs, custom ``request_<tag>`` resources, file
transfer and deferral.
"""

from __future__ import annotations

import functools

from jobledger.eventcore.errors import ClassAdError, SubmitError

ARCH = "X86_64"
OPSYS = "LINUX"
VANILLA_LIKE = {5, 10, 11, 13}
DISK_VERSION_CLAUSE = '(versionGE(split(TARGET.CondorVersion)[1], "25.12.0") || (TARGET.Disk >= RequestDisk))'


@functools.lru_cache(maxsize=1024)
def _references(text: str) -> frozenset[str]:
    from jobledger.eventcore.classad import parse_expr, references
    try:
        return frozenset(references(parse_expr(text)))
    except (ClassAdError, RecursionError):
        raise SubmitError(f"requirements = {text}: not a valid ClassAd expression") from None


def _literal_at_most(text: str | None, limit: float) -> bool:
    if text is None:
        return True
    try:
        return float(text) <= limit
    except ValueError:
        return False


def default_requirements(user: str | None, universe: int, container: str | None, cpus: str | None,
                         memory: str | None, disk: str | None, stf: str, deferral: bool,
                         custom_requests: list[str] = (), gpus: tuple[str, bool] | None = None,
                         plugins: list[str] = ()) -> str:
    """``gpus``: (request_gpus text, whether RequireGPUs is set) or None;
    ``plugins``: URL schemes the job's file transfer needs a plugin for."""
    refs = _references(user) if user else frozenset()
    if "requirements" in refs:
        raise SubmitError("requirements = " + user + ": Is Circular (it refers to Requirements)")
    if universe == 9:
        return f"({user})" if user else "true"
    clauses = [f"({user})"] if user else []
    if universe == 10:
        clauses.append("(TARGET.HasJava)")
    else:
        if "arch" not in refs:
            clauses.append(f'(TARGET.Arch == "{ARCH}")')
        if container == "docker":
            clauses.append("(TARGET.HasDocker)")
        elif container == "container":
            clauses.append("(TARGET.HasContainer)")
        elif not refs & {"opsys", "opsysandver", "opsysname", "opsysmajorver", "opsysversion"}:
            clauses.append(f'(TARGET.OpSys == "{OPSYS}")')
    if disk is not None and not _literal_at_most(disk, 0) and "disk" not in refs:
        clauses.append(DISK_VERSION_CLAUSE if universe == 5 else "(TARGET.Disk >= RequestDisk)")
    if memory is not None and not _literal_at_most(memory, 0) and "memory" not in refs:
        clauses.append("(TARGET.Memory >= RequestMemory)")
    if cpus is not None and not _literal_at_most(cpus, 1) and "cpus" not in refs:
        clauses.append("(TARGET.Cpus >= RequestCpus)")
    if gpus is not None and not _literal_at_most(gpus[0], 0) and "gpus" not in refs:
        clauses.append("(countMatches(MY.RequireGPUs,TARGET.AvailableGPUs) >= RequestGPUs)" if gpus[1]
                       else "(TARGET.GPUs >= RequestGPUs)")
    for command in custom_requests:
        tag = command[len("request_"):]
        if tag.lower() not in refs:
            clauses.append(f"(TARGET.{tag} >= Request{tag})")
    if universe in VANILLA_LIKE:
        transfer = "TARGET.HasFileTransfer" + "".join(
            f' && stringListIMember("{scheme}",TARGET.HasFileTransferPluginMethods)' for scheme in plugins)
        clauses.append({"NO": "(TARGET.FileSystemDomain == MY.FileSystemDomain)",
                        "YES": f"({transfer})"}.get(
            stf, f"((TARGET.FileSystemDomain == MY.FileSystemDomain) || ({transfer}))"))
    if deferral:
        clauses.append("(TARGET.HasJobDeferral && (((time() + ScheddInterval) >= (DeferralTime - "
                       "DeferralPrepTime)) && (time() < (DeferralTime + DeferralWindow))))")
    return " && ".join(clauses) if clauses else "true"
