"""``RecentCount``: a total and its recent part over DaemonCore's 20-minute window of
4-minute quanta (the startd's JobStarts / RecentJobStarts)."""

from jobledger.daemons.selfmonitor import RecentCount


def test_an_event_stays_recent_for_the_window_then_leaves_with_its_quantum():
    count = RecentCount(window=1200, quantum=240)
    count.add(100.0)            # quantum 0
    count.add(250.0, 2)         # quantum 1
    assert count.total == 3 and count.recent(250.0) == 3
    assert count.recent(1199.0) == 3        # quantum 4: the window is quanta 0-4
    assert count.recent(1200.0) == 2        # quantum 5: quantum 0 has left
    assert count.recent(1440.0) == 0        # quantum 6: quantum 1 too
    assert count.total == 3                 # the total never forgets
    count.add(1500.0)
    assert count.recent(1500.0) == 1 and count.total == 4


def test_the_buckets_stay_bounded():
    count = RecentCount(window=1200, quantum=240)
    for second in range(0, 100_000, 7):
        count.add(float(second))
    assert len(count._buckets) <= 5
    assert count.recent(99_999.0) == sum(1 for s in range(0, 100_000, 7) if s // 240 > 99_999 // 240 - 5)
