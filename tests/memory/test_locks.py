"""One writer at a time: a second writing process fails at once and is told who writes."""

import subprocess
import sys
import textwrap

import pytest

from m3agent.memory import MemoryGraph
from m3agent.memory.locks import WriterBusyError

HOLDER = textwrap.dedent("""
    import sys, time
    from m3agent.memory import MemoryGraph
    from m3agent.models.embed.hashing import HashingEmbedder
    g = MemoryGraph.open(sys.argv[1], embedder=HashingEmbedder(dim=512))
    print("writing", flush=True)
    time.sleep(60)
""")


@pytest.fixture
def holder(kitchen, db_path):
    kitchen.close()
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    yield proc
    proc.kill()
    proc.wait()


def test_second_writer_fails_at_once_naming_the_first(holder, db_path, embedder):
    with pytest.raises(WriterBusyError, match=rf"being written by another process \(pid {holder.pid}: .*since"):
        MemoryGraph.open(db_path, embedder=embedder)
    with MemoryGraph.open(db_path, embedder=embedder, readonly=True) as reader:  # readers are welcome
        assert reader.search("plays guitar", threshold=0.1).clips
    holder.kill()
    holder.wait()
    with MemoryGraph.open(db_path, embedder=embedder) as graph:  # the lock died with its process
        assert graph.videos()


def test_cli_forget_during_a_memorization_is_refused_in_one_line(holder, db_path):
    proc = subprocess.run([sys.executable, "-m", "m3agent.cli", "forget", str(db_path), "Alice"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"m3agent forget: error: {db_path} is being written by another process")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_writers_in_one_process_share_the_lock(kitchen, db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as second:  # threads of one app, e.g. the demo
        assert second.videos() == kitchen.videos()
