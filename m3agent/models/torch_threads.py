"""torch on one thread for small pieces of work: a short query, one speech segment. On 2 shared cores a
single query took a median 156 ms with torch's default threads under load and 16.7 ms with one."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_one_thread_at_a_time = threading.Lock()


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread inside the block, the caller's earlier count restored after. Under OpenMP
    (torch's CPU builds) the count belongs to the calling thread, the main thread's being also the default of
    threads that never set one; blocks run one at a time, so that none reads another's 1 as the count to
    restore (a block holds one short query, so this queues little)."""
    import torch

    with _one_thread_at_a_time:
        before = torch.get_num_threads()
        if before == 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)
