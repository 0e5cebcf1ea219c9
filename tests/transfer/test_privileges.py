"""A root starter transfers as the job's owner: it reads and writes only what the owner may."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = '''
import os, sys
from jobledger.daemons.transfer import acting_as, give_to, send_output, stage_input
from jobledger.eventcore.errors import TransferError
from jobledger.eventcore.transfer import InputPlan, Output, Source
root = sys.argv[1]
nobody = (65534, 65534)
secret = os.path.join(root, "secret.txt")      # root's, mode 0600
with open(secret, "w") as handle:
    handle.write("root only")
os.chmod(secret, 0o600)
sandbox = os.path.join(root, "sandbox")
os.mkdir(sandbox, 0o700)
give_to(sandbox, nobody)
plan = InputPlan((Source(secret, "secret.txt"),), "", None)
try:
    with acting_as(nobody):
        stage_input(plan, sandbox)
    print("read the secret")
except TransferError as failed:
    print("input", failed.code, failed.subcode)
assert os.geteuid() == 0 and os.getegid() == 0    # privileges are back
with open(os.path.join(sandbox, "result.txt"), "w") as handle:
    handle.write("output")
give_to(sandbox, nobody)
closed = os.path.join(root, "closed")
os.mkdir(closed, 0o700)                        # root's: nobody may not write here
try:
    with acting_as(nobody):
        send_output({"Iwd": closed}, [Output("result.txt", os.path.join(closed, "result.txt"))], sandbox, "1.0")
    print("wrote into root's directory")
except TransferError as failed:
    print("output", failed.code, failed.subcode)
stage_input(plan, sandbox)                     # as root it works
print(open(os.path.join(sandbox, "secret.txt")).read())
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_transfers_run_with_the_owners_privileges(tmp_path):
    os.chmod(tmp_path, 0o755)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=60, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["input 13 13", "output 12 13", "root only"]
