"""Deliberate differences from HTCondor 25 in what a pool does, each pinned here."""

from __future__ import annotations

from tests.pool.test_transfer import events_of, finished, submit, wait_event


def test_input_transfer_events_follow_execute(pool, tmp_path):
    """HTCondor writes the input FILE_TRANSFER events before EXECUTE (the shadow
    starts the transfer, the starter reports execution after it).  Here EXECUTE
    is the journal's record that the job runs -- the claim is activated and the
    starter started -- and the starter then transfers the inputs, so their
    events come after it; the output events come before JOB_TERMINATED as in
    HTCondor."""
    iwd = tmp_path / "iwd"
    cluster = submit(pool, iwd, "echo out\n")
    assert finished(pool, cluster)["JobStatus"] == 4
    wait_event(iwd, 5)
    kinds = [(int(e.type), e.get("Type")) for e in events_of(iwd)]
    assert kinds == [(0, None), (1, None), (40, 2), (40, 3), (40, 5), (40, 6), (5, None)]
