"""``htcondor jobset``: HTCondor's job-set files, and the sets in the queue.

A job-set file (HTCondor's language, htcondor_cli/job_set.py)::

    name = TestSubmit
    iterator = table A,B {
        wisconsin,iowa
        iowa,illinois
    }
    job {
      executable = /bin/echo
      arguments = $(A).data $(B).data
    }
    job C=A D=B {            # the block's $(C) and $(D) read the iterator's A and B
      ...
    }

Each job block is one cluster, queued once per iterator row; its jobs carry
``JobSetName`` and ``InJobSet``.  ``iterator = table NAMES FILE`` reads the rows
from FILE.  A cluster that fails to submit removes the set's clusters already
submitted.
"""

from __future__ import annotations

import datetime
import getpass
import logging
import re
from pathlib import Path

from jobledger.eventcore import adwire
from jobledger.eventcore.enums import SubmitMethod

COMMANDS = ("name", "iterator", "job")


class JobSetFile:
    """A parsed job-set file: ``name``, ``itemdata`` (one dict per row), ``jobs`` (Submit)."""

    def __init__(self, path: str):
        self.path = path
        self.name: str | None = None
        self.itemdata: list[dict] | None = None
        self.jobs: list = []
        with open(path, "rt", encoding="utf-8") as handle:
            self._lines = handle.read().splitlines()
        self._read()
        if self.name is None:
            raise ValueError(f"Required name not found in {path}")
        if self.itemdata is None:
            raise ValueError(f"Required iterator not found in {path}")

    def _read(self) -> None:
        index = 0
        while index < len(self._lines):
            line = self._lines[index].strip()
            index += 1
            if not line or line.startswith("#"):
                continue
            command = line.split()[0].split("=")[0].casefold()
            if command not in COMMANDS:
                raise ValueError(f'Unrecognized command "{command}" in {self.path} at line {index}.')
            value = line.split("#")[0]
            if command == "name":
                if self.name is not None:
                    raise ValueError(f"Job set name can only be set once, second name found in {self.path} "
                                     f"at line {index}.")
                self.name = value.split("=", 1)[1].strip() if "=" in value else ""
                if not self.name:
                    raise ValueError(f"Job set name is empty in {self.path} at line {index}.")
            elif command == "iterator":
                index = self._iterator(value, index)
            else:
                index = self._job(value, index)

    def _block(self, start: int) -> tuple[list[str], int]:
        """The lines after ``start`` up to a line holding only ``}``; the index after it."""
        index = start
        while index < len(self._lines):
            if self._lines[index].split("#")[0].strip() == "}":
                return self._lines[start:index], index + 1
            index += 1
        raise ValueError(f"Unclosed bracket in {self.path} starting at line {start}.")

    def _iterator(self, value: str, index: int) -> int:
        if self.itemdata is not None:
            raise ValueError(f"Job set iterator can only be set once, second iterator found in {self.path} "
                             f"at line {index}.")
        value = value.split("=", 1)[1].strip() if "=" in value else ""
        words = value.replace(",", " ").split()
        if len(words) < 3:
            raise ValueError(f'Unparseable iterator "{value}" in {self.path} at line {index}.')
        if words[0] != "table":
            raise ValueError(f'Unknown iterator type "{words[0]}" in {self.path} at line {index}.')
        names = words[1:-1]
        if words[-1] == "{":
            rows, after = self._block(index)
            self.itemdata = _rows(names, rows, self.path, index + 1)
            return after
        source = Path(self.path).parent / words[-1] if not Path(words[-1]).is_absolute() else Path(words[-1])
        self.itemdata = _rows(names, source.read_text("utf-8").splitlines(), str(source), 1)
        return index

    def _job(self, value: str, index: int) -> int:
        import jobledger
        words = value.split()[1:]
        if not words:
            raise ValueError(f"job needs a submit description in {self.path} at line {index}.")
        mappings = {}
        for pair in words[:-1]:
            key, sep, target = pair.partition("=")
            if not sep or not key.strip() or not target.strip():
                raise ValueError(f'Unparseable variable mapping "{pair}" in {self.path} at line {index}.')
            mappings[key.strip()] = target.strip()
        if words[-1] == "{":
            body, after = self._block(index)
            text = "\n".join(line.lstrip() for line in body) + "\n"
        else:
            source = Path(words[-1]) if Path(words[-1]).is_absolute() else Path(self.path).parent / words[-1]
            text, after = source.read_text("utf-8"), index
        description = jobledger.Submit(text)
        for key in list(description.keys()):
            for old, new in mappings.items():
                if "$(" in description[key]:
                    description[key] = re.sub(rf"\$\({re.escape(old)}\)", f"$({new})", description[key],
                                              flags=re.IGNORECASE)
        description["MY.JobSetName"] = adwire.quote(self.name or "")
        description["MY.InJobSet"] = "true"
        description.setSubmitMethod(int(SubmitMethod.HTCondorJobSetSubmit), True)
        self.jobs.append(description)
        return after


def _rows(names: list[str], lines: list[str], source: str, first: int) -> list[dict]:
    rows = []
    for number, line in enumerate(lines, first):
        line = line.split("#")[0].strip()
        if not line:
            continue
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(names):
            raise ValueError(f"Mismatch between number of iterator names ({len(names)}) and values "
                             f"({len(values)}) in {source} at line {number}.")
        rows.append(dict(zip(names, values)))
    return rows


def submit(log: logging.Logger, job_set_file: str, **_) -> None:
    import jobledger
    jobset = JobSetFile(job_set_file)
    if not jobset.jobs:
        log.warning(f"Warning: No jobs found in {job_set_file}")
    schedd = jobledger.Schedd()
    done: list[int] = []
    for number, job in enumerate(jobset.jobs):
        try:
            result = schedd.submit(job, itemdata=iter(jobset.itemdata or []))
        except Exception as exc:
            for cluster in done:          # the set goes in whole or not at all
                try:
                    schedd.act(jobledger.JobAction.RemoveX, f"ClusterId == {cluster}",
                               reason=f"Aborted job set {jobset.name} submission.")
                except Exception:
                    log.warning(f"Warning: could not remove cluster {cluster} of the aborted job set.")
            raise RuntimeError(f"Error while submitting job {number} from {job_set_file}:\n{exc}") from None
        log.debug(f"Submitted job {number} to job cluster {result.cluster()}.")
        done.append(result.cluster())
    log.info(f"Submitted job set {jobset.name} containing {len(jobset.jobs)} job clusters.")


def list_sets(log: logging.Logger, allusers: bool = False, **_) -> None:
    import jobledger
    constraint = "(InJobSet == True)"
    if not allusers:
        constraint += f" && (Owner == {adwire.quote(getpass.getuser())})"
    ads = jobledger.Schedd().query(constraint, ["Owner", "JobSetName"])
    sets = sorted({(str(ad.get("Owner", "")), str(ad.get("JobSetName", ""))) for ad in ads})
    if not sets:
        log.error("No active job sets found.")
        return
    if allusers:
        width = max(len(owner) for owner, _name in sets)
        print(f"{'OWNER':<{width}}  JOB_SET_NAME")
        for owner, name in sets:
            print(f"{owner:<{width}}  {name}")
    else:
        print("JOB_SET_NAME")
        for _owner, set_name in sets:
            print(set_name)


STATUS_COLUMNS = (("DONE", 4), ("RUN", 2), ("IDLE", 1), ("REMOVED", 3), ("HOLD", 5), ("SUSPENDED", 7))


def status(log: logging.Logger, job_set_name: str, owner: str | None = None, **_) -> None:
    import jobledger
    owner = owner or getpass.getuser()
    ads = jobledger.Schedd().query(
        f"(JobSetName == {adwire.quote(job_set_name)}) && (Owner == {adwire.quote(owner)})",
        ["ClusterId", "ProcId", "JobStatus", "QDate"])
    if not ads:
        log.error(f'No active job sets found matching "{job_set_name}" for user {owner}.')
        return
    counts = {name: 0 for name, _ in STATUS_COLUMNS}
    for ad in ads:
        state = ad.get("JobStatus")
        for name, number in STATUS_COLUMNS:
            if state == number or (name == "RUN" and state == 6):
                counts[name] += 1
    ids = sorted((int(ad["ClusterId"]), int(ad["ProcId"])) for ad in ads)
    row = {"BATCH_NAME": f"Set: {job_set_name}",
           "SUBMITTED": datetime.datetime.fromtimestamp(min(int(ad.get("QDate", 0)) for ad in ads))
           .strftime("%m/%d %H:%M"),
           **{name: str(value) if value else "-" for name, value in counts.items()},
           "TOTAL": str(len(ads)),
           "JOB_IDS": "%d.%d" % ids[0] if len(ids) == 1 else "%d.%d-%d.%d" % (ids[0] + ids[-1])}
    columns = ["BATCH_NAME", "SUBMITTED", "DONE", "RUN", "IDLE", "REMOVED", "HOLD", "SUSPENDED", "TOTAL", "JOB_IDS"]
    columns = [c for c in columns if not (c in ("REMOVED", "HOLD", "SUSPENDED") and counts[c] == 0)]
    widths = {c: max(len(c), len(row[c])) for c in columns}
    def line(values: dict) -> str:
        return "  ".join(f"{values[c]:<{widths[c]}}" if c in ("BATCH_NAME", "JOB_IDS")
                         else f"{values[c]:>{widths[c]}}" for c in columns)
    print()
    print(line({c: c for c in columns}))
    print(line(row))
    print(f"{len(ads)} jobs; {counts['DONE']} completed; {counts['REMOVED']} removed; {counts['IDLE']} idle; "
          f"{counts['RUN']} running; {counts['HOLD']} held; {counts['SUSPENDED']} suspended")
    print()


def remove(log: logging.Logger, job_set_name: str, owner: str | None = None, **_) -> None:
    import jobledger
    owner = owner or getpass.getuser()
    result = jobledger.Schedd().act(
        jobledger.JobAction.Remove,
        f"(JobSetName == {adwire.quote(job_set_name)}) && (Owner == {adwire.quote(owner)})",
        reason=f"via htcondor jobset remove (by user {getpass.getuser()})")
    log.info(f"Removed {result.get('TotalSuccess', 0)} jobs matching job set {job_set_name} for user {owner}.")
    if result.get("TotalError", 0):
        log.warning(f"Warning: Could not remove {result['TotalError']} matching jobs.")
