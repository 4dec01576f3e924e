"""1,000 loads of a small trace do not leak the graph: resident memory stays bounded."""

import gc


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_thousand_loads_keep_memory_bounded(dd, small):
    path = str(small)
    for _ in range(100):  # warm-up: allocator pools, interned strings, module state
        t = dd.load(path)
        t.tasks()
        t.replay()
    del t
    gc.collect()
    warm = _rss_kib()
    tasks = 0
    for _ in range(900):
        t = dd.load(path)
        tasks = t.task_count
        r = t.replay()
        del r, t
    gc.collect()
    grown = _rss_kib() - warm
    # Each load holds two copies of a graph of `tasks` tasks; 900 leaked graphs would take
    # far more than this bound (and the bound is far above allocator noise).
    assert tasks > 100
    assert grown < 40 * 1024, f"resident memory grew {grown} KiB over 900 loads"
