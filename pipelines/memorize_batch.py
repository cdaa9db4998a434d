"""Launcher for batch memorization on a cluster node.

``python pipelines/memorize_batch.py LIST MEMORY_DIR [memorize-batch options]`` runs
``m3agent memorize-batch`` (e.g. with ``--ray auto`` or ``--workers 8``); config overrides come from
``M3AGENT__...`` environment variables, so job scripts stay one line.
"""

import sys

from m3agent.cli import main

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python pipelines/memorize_batch.py LIST MEMORY_DIR [memorize-batch options]")
    video_list, memory_dir, *rest = sys.argv[1:]
    sys.exit(main(["memorize-batch", video_list, "--memory-dir", memory_dir, *rest]))
