"""What the running app gives out, and to whom: only the data folder's videos and what Gradio cached for the
page, never a memory DB, its WAL, vectors, lock or log, nor the app's state, whatever the path looks like;
and only to requests for a host the app is served as, from pages of its own origin."""

import http.client
import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from m3agent.workspace.guard import host_name, served_as
from tests.data import VIDEO_CLIP

SECRET = b"SQLite format 3\x00 faces, voices and words of someone"
BESIDE_A_DB = ("", "-wal", "-shm", ".vec", ".ivf", ".lock", ".memorize.jsonl")


@pytest.mark.parametrize("header, name", [("127.0.0.1:7860", "127.0.0.1"), ("LocalHost", "localhost"),
                                          ("[::1]:7860", "[::1]"), ("box.lan:80", "box.lan"),
                                          ("evil.example:7860:1", None), ("localhost:", None),
                                          ("localhost:७८", None), ("[::1", None), ("", None)])
def test_a_host_header_names_a_host_and_maybe_a_port(header, name):
    assert host_name(header) == name


def test_the_app_answers_as_loopback_its_address_and_the_names_allowed():
    assert served_as("127.0.0.1") == {"127.0.0.1", "localhost", "[::1]"}
    assert served_as("0.0.0.0") == served_as("::") == {"127.0.0.1", "localhost", "[::1]"}
    assert served_as("192.168.1.5", "box.lan fe80::1 Box2:7860") == \
        {"127.0.0.1", "localhost", "[::1]", "192.168.1.5", "box.lan", "[fe80::1]", "box2"}


def call(url: str, path: str, method: str = "GET", host: str | None = None, body: bytes | None = None,
         **headers: str) -> tuple[int, bytes]:
    """The request exactly as written (no client-side normalizing of ``..`` or percent signs)."""
    address = url.split("//")[1].rstrip("/")
    connection = http.client.HTTPConnection(address, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Host": host or address, **headers})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def folder(app_url):
    """The running app's folder with a memory DB and everything beside one, the app's state, a video, and
    symlinks that name the DB with a video's name."""
    root = app_url[1].folder.root
    for suffix in BESIDE_A_DB:
        for db in (root / "memories" / "talk.db", root / "clips" / "old.db"):
            db.parent.mkdir(exist_ok=True)
            Path(f"{db}{suffix}").write_bytes(SECRET)
    (root / ".app" / "jobs.json").write_bytes(SECRET)
    (root / ".app" / "faces.webp").write_bytes(SECRET)
    (root / ".app" / "hidden.mp4").write_bytes(SECRET)
    shutil.copy(VIDEO_CLIP, root / "clips" / "talk.mp4")
    os.symlink(root / "memories" / "talk.db", root / "clips" / "alias.mp4")
    os.symlink(root / "memories" / "talk.db", root / "clips" / "alias.db")
    os.symlink(root / "memories", root / "clips" / "shelf")
    return root


def secrets_of(root: Path) -> list[Path]:
    return ([Path(f"{root}/memories/talk.db{s}") for s in BESIDE_A_DB] +
            [root / "clips" / n for n in ("old.db", "old.db-wal", "alias.mp4", "alias.db", "shelf/talk.db")] +
            [root / ".app" / n for n in ("jobs.json", "faces.webp", "hidden.mp4")])


def spellings(root: Path, secret: Path) -> list[str]:
    """``secret`` named absolutely, relative to the server's working folder, through ``..`` from a folder of
    videos or a symlinked folder, percent-encoded once and twice, and followed by an encoded NUL or newline."""
    inside = secret.relative_to(root).as_posix()
    traversal = f"{root}/clips/../{inside}"
    return [str(secret), os.path.relpath(secret), traversal, f"{root}/clips/shelf/../../{inside}",
            traversal.replace("..", "%2e%2e"), traversal.replace("..", "%252e%252e"),
            quote(str(secret), safe=""), quote(quote(str(secret), safe=""), safe=""),
            quote(os.path.relpath(secret), safe=""), f"{secret}%00.mp4", f"{secret}%0a"]


@pytest.mark.slow
def test_no_memory_file_nor_the_apps_state_is_served_by_any_path(app_url, folder):
    url, _ = app_url
    for secret in secrets_of(folder):
        for spelled in spellings(folder, secret):
            for route in ("/gradio_api/file=", "/gradio_api/file/"):
                for method in ("GET", "HEAD"):
                    status, body = call(url, route + spelled, method)
                    assert status in (403, 404) and SECRET not in body, (route + spelled, method, status)


@pytest.mark.slow
def test_the_folders_videos_and_what_gradio_cached_are_served(app_url, folder):
    url, workspace = app_url
    video = (folder / "clips" / "talk.mp4").read_bytes()
    for spelled in (f"{folder}/clips/talk.mp4", f"{folder}/memories/%2e%2e/clips/talk.mp4",
                    os.path.relpath(folder / "clips" / "talk.mp4")):
        status, body = call(url, "/gradio_api/file=" + spelled)
        assert status == 200 and body == video, spelled
    cached = upload(url, VIDEO_CLIP.read_bytes())
    assert call(url, "/gradio_api/file=" + cached) == (200, VIDEO_CLIP.read_bytes())
    status, body = call(url, "/gradio_api/file=" + upload(url, SECRET, "talk.db"))  # cached, yet not media
    assert status == 403 and SECRET not in body
    assert call(url, "/gradio_api/file=https://example.com/talk.mp4")[0] == 403  # nor fetched for a page


def upload(url: str, content: bytes, name: str = "clip.mp4", **headers: str) -> str:
    """Uploads ``content`` the way the page does; returns the path Gradio keeps it at."""
    status, body = call(url, "/gradio_api/upload", "POST", body=multipart(content, name),
                        **{"Content-Type": "multipart/form-data; boundary=b0undary", **headers})
    assert status == 200, body
    return json.loads(body)[0]


def multipart(content: bytes, name: str) -> bytes:
    return (b"--b0undary\r\nContent-Disposition: form-data; name=\"files\"; filename=\"" + name.encode() +
            b"\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + b"\r\n--b0undary--\r\n")


@pytest.mark.slow
def test_only_the_hosts_the_app_is_served_as_get_an_answer(app_url, folder):
    url, _ = app_url
    port = url.rstrip("/").rsplit(":", 1)[1]
    video = f"/gradio_api/file={folder}/clips/talk.mp4"
    for path in ("/", "/config", "/gradio_api/info", video):
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", "0.0.0.0"):
            status, body = call(url, path, host=host)
            assert status == 403 and b"answers only as" in body, (path, host, status)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
            assert call(url, path, host=host)[0] == 200, (path, host)
    status, _ = call(url, "/gradio_api/upload", "POST", host="evil.example", body=multipart(SECRET, "x.mp4"),
                     **{"Content-Type": "multipart/form-data; boundary=b0undary"})
    assert status == 403


@pytest.mark.slow
def test_a_page_of_another_site_cannot_call_the_app(app_url):
    url, _ = app_url
    own = url.rstrip("/")
    for origin in ("http://evil.example", "null", "http://127.0.0.1.evil.example", own.replace("127.0.0.1",
                                                                                                 "localhost")):
        status, _ = call(url, "/gradio_api/upload", "POST", body=multipart(b"x", "x.mp4"), Origin=origin,
                         **{"Content-Type": "multipart/form-data; boundary=b0undary"})
        assert status == 403, origin
        status, _ = call(url, "/gradio_api/queue/join", "POST", body=b"{}", Origin=origin,
                         **{"Content-Type": "application/json"})
        assert status == 403, origin
    assert upload(url, b"x", Origin=own)  # the app's own page
