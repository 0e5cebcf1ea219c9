"""Odd but readable text, read exactly as htcondor2 reads it (live comparison).

Each case came out of a differential run against the real reader: sscanf-style
blanks, partial matches, numbers whatever words follow them, a blank inside a
timestamp read through, years before 1900, trailing words after a ClassAd
value, names that are not identifiers, negative counts that are no
attribute, and XML strings with ClassAd escapes.
"""

from __future__ import annotations

import json

import pytest

from tests.userlog.oracle import event_record, read_all, typed

htcondor2 = pytest.importorskip("htcondor2")
pytestmark = pytest.mark.oracle

U = "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  "
TERM_TAIL = "".join(f"{U}{w} Usage\n" for w in ("Run Remote", "Run Local", "Total Remote", "Total Local"))
CASES = {
    "time_with_blank": "024 (1.0.0) 1970-01-01 00: 05:02 Job reconnection failed\n    r\n"
                       "    Can not reconnect to s, rescheduling job\n...\n",
    "year_before_1900": "011 (1.0.0) 0999-03-05T10:00:00 Job was unsuspended.\n...\n",
    "two_digit_year": "047 (1.0.0) 70-01-01 02:14:42 Common files event: T\n...\n",
    "blanks_in_codes": "012 (1.0.0) 2024-03-05 10:00:00 Job was held.\n\tr\n\tCode   3  Subcode  4\n...\n"
                       "037 (1.-1.-1) 2024-03-05 10:00:00 Job Materialization Paused\n\tc\n\tHoldCode  32\n...\n",
    "partial_codes": "004 (1.0.0) 2024-03-05 10:00:00 Job was evicted. Code 242 SubCode 10\n"
                     "\t(1) Job was checkpointed.\n" + U + "Run Remote Usage\n" + U + "Run Local Usage\n"
                     "\t1  -  Run Bytes Sent By Job\n\t2  -  Run Bytes Received By Job\n...\n"
                     "012 (1.1.0) 2024-03-05 10:00:00 Job was held.\n\tr\n\tCode 15 SubCode 2\n...\n"
                     "036 (1.-1.-1) 2024-03-05 10:00:00 Cluster removed\n\tMaterialized 105 jobs \n...\n",
    "numbers_whatever_words": "003 (1.0.0) 2024-03-05 10:00:00 Job was checkpointed.\n"
                              "\tUsr 0 00:00:01, Sys 0 00:00:02  -  Run Remote Usage\n"
                              "\tUsr 0 00:00:01, Sys 0 00:00:02  -  Run Local Usage\n\t21123  -  Run Bytes Se\n...\n"
                              "007 (1.1.0) 2024-03-05 10:00:00 Shadow exception!\n\tm\n\t671  -  run bytes sent\n...\n",
    "negative_usage_days": "004 (1.0.0) 2024-03-05 10:00:00 Job was evicted.\n\t(1) Job was checkpointed.\n"
                           "\t\tUsr -1 10:46:04, Sys 0 01:05:34  -  Run Remote Usage\n" + U + "Run Local Usage\n...\n",
    "negative_exit_values": "005 (1.0.0) 2024-03-05 10:00:00 Job terminated.\n"
                            "\t(1) Normal termination (return value -1)\n" + TERM_TAIL + "...\n"
                            "015 (1.1.0) 2024-03-05 10:00:00 Node 1 terminated.\n"
                            "\t(0) Abnormal termination (signal -2)\n\t(0) No core file\n" + TERM_TAIL + "...\n"
                            "006 (1.2.0) 2024-03-05 10:00:00 Image size of job updated: 5\n"
                            "\t-182924  -  ResidentSetSize of job (KB)\n...\n",
    "trailing_words_and_names": "048 (1.0.0) 2024-03-05 10:00:00 h\n\ta b = 1\n\t-x = 2\n\t = 4\n"
                                "\tq = \"v\" trailing\n\tr = 1 + 2 x\n\ts = 1 +\n...\n"
                                "001 (1.1.0) 2024-03-05 10:00:00 Job executing on host: h \n"
                                "\tEj = true trailing\n\tOk = 1\n...\n",
    "remote_error_lines": "021 (1.0.0) 2024-03-05 10:00:00 Error from s on h:\n\n\tdA\n...\n"
                          "021 (1.1.0) 2024-03-05 10:00:00 Error from s on h:\n\tx\n\t\n...\n"
                          "021 (1.2.0) 2024-03-05 10:00:00 Error from b on h:\n    Code 46 Subcode 15\n...\n",
    "file_transfer_order": "040 (1.0.0) 2024-03-05 10:00:00 Entered queue to transfer input files\n"
                           "\tTransferring to host: h\n\tSeconds spent in queue: 5\n...\n"
                           "040 (1.1.0) 2024-03-05 10:00:00 Finished transferring input files\n"
                           "    Seconds spent in queue: 17\n\tTransferring to host: h\n...\n",
    "xml_string_escapes": "".join(
        '<c>\n    <a n="MyType"><s>JobAbortedEvent</s></a>\n    <a n="EventTypeNumber"><i>9</i></a>\n'
        '    <a n="EventTime"><s>2024-03-05T10:00:00</s></a>\n    <a n="Cluster"><i>1</i></a>\n'
        f'    <a n="Proc"><i>{i}</i></a>\n    <a n="Subproc"><i>0</i></a>\n'
        f'    <a n="Reason"><s>{text}</s></a>\n</c>\n'
        for i, text in enumerate([r"a\\b", r"a\"b", r"a\303\251b", r"a\nb", r"tail\\"])),
}


def their_records(path):
    jel = htcondor2.JobEventLog(str(path))
    out = []
    while True:
        try:
            for e in jel.events(0):
                out.append(e)
            break
        except htcondor2.HTCondorException:
            continue
    records = []
    from tests.userlog.test_htcondor_reads_ours import their_json
    for e in out:
        records.append({"type": e["EventTypeNumber"], "cluster": e.cluster, "proc": e.proc,
                        "timestamp": e.timestamp,
                        "attrs": {k: their_json(v) for k, v in sorted(e.items())}})
    jel.close()
    return records


@pytest.mark.parametrize("name", sorted(CASES))
def test_read_like_htcondor(tmp_path, name):
    path = tmp_path / f"{name}.log"
    path.write_text(CASES[name], encoding="utf-8")
    ours = [event_record(e, with_text=False) for e in read_all(path, 2026)]
    for rec in ours:
        rec.pop("end_offset")
    assert ours, "nothing read"
    assert [typed(r) for r in json.loads(json.dumps(ours))] == \
        [typed(r) for r in json.loads(json.dumps(their_records(path)))]
