"""Start llama.cpp's OpenAI-compatible server on loopback: a local stand-in for a vLLM server.

Used by the tests and ``bench/perf_control.py`` to exercise the ``openai`` backend over real HTTP.
``--interrupt_requests False`` matters: without it, concurrent requests come back empty.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from m3agent.models.bundled import bundled_chat_gguf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(log_path: str | Path, model: str | Path | None = None, context: int = 8192, threads: int = 2,
                 start_timeout: float = 90.0, adapter: str | Path | None = None) -> Iterator[str]:
    """Run the server for the ``with`` block and yield its base URL (``http://127.0.0.1:PORT/v1``); ``adapter``:
    a GGUF LoRA adapter the server applies to the model.

    Its output goes to ``log_path`` (a pipe would fill up and block it)."""
    port = free_port()
    with open(log_path, "w+b") as log:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model or bundled_chat_gguf()),
                                 "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads),
                                 "--n_ctx", str(context), "--interrupt_requests", "False"]
                                + (["--lora_path", str(adapter)] if adapter else []),
                                stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                try:
                    urllib.request.urlopen(url + "/models", timeout=1).read()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        tail = log.read().decode(errors="replace")[-2000:]
                        raise RuntimeError(f"llama.cpp server did not start:\n{tail}") from None
                    time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
