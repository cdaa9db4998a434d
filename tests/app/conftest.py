"""The app launched in this process over a data folder of its own, once per test module."""

import socket

import pytest

from m3agent.config import load_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """``(url, workspace)`` of a running app on 127.0.0.1."""
    from app.main import launch

    data = tmp_path_factory.mktemp("data")
    config = load_config(None, {}, [f"app.data_dir={data}", f"app.port={free_port()}"])
    demo, url, workspace = launch(config, block=False)
    yield url, workspace
    demo.close()
    workspace.close()
