"""The one machine line every report and benchmark writes."""

import os
import platform

from m3agent.config import Config
from m3agent.jobs import m3bench, memorybench
from m3agent.jobs.machine import cpu_model, describe


def test_the_cpu_model_is_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: Example\nmodel name\t: Example CPU 9000 @ 2.0GHz\n\n"
                    "processor\t: 1\nmodel name\t: Example CPU 9000 @ 2.0GHz\n")
    assert cpu_model(info) == "Example CPU 9000 @ 2.0GHz"


def test_without_cpuinfo_the_platform_names_the_processor(tmp_path):
    assert cpu_model(tmp_path / "absent") == (platform.processor() or platform.machine())


def test_the_line_names_cpu_model_cores_and_python():
    line = describe()
    assert line.startswith(cpu_model() + ", ") and f"{os.cpu_count()} cores" in line
    assert line.endswith(f"Python {platform.python_version()}")


def test_every_report_writes_the_same_line(tmp_path):
    from bench.perf_memory import machine

    request = m3bench.M3BenchRequest(annotations="a.json", memories="mem", out="out")
    assert m3bench.run_context(request, Config())["machine"] == describe()
    setup = memorybench.MemoryBenchSetup(out=tmp_path, config=Config(), embedder=None, chat=None, user=None,
                                         judge=None)
    context = memorybench.run_context(setup, "m3agent bench memorybench")
    assert context["machine"] == describe() and context["date"]
    assert machine() == describe()
