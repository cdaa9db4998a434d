"""The warm-start memory benchmark's section: a row per measurement and the ratio of recomputing to keeping."""


def test_the_section_gives_each_setting_its_peak_and_the_ratios():
    from bench.perf_warm_start import render

    rows = [{"tokens": 500, "checkpointing": False, "loaded_gb": 1.2, "peak_gb": 4.0, "step_seconds": 10.0},
            {"tokens": 500, "checkpointing": True, "loaded_gb": 1.2, "peak_gb": 2.0, "step_seconds": 11.0}]
    section = render(rows)
    assert "| 500 | kept (default) | 4.0 GB | 10.0 s |" in section and "| 500 | recomputed (--checkpointing) | 2.0 GB | 11.0 s |" in section
    assert "- 500 tokens: recomputing needs 0.50x the memory and 1.10x the time of keeping." in section
