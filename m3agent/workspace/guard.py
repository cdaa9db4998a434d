"""Whom the app answers, and which files its file route gives out.

Gradio answers any ``Host`` and serves every file under ``launch(allowed_paths=...)``. The app must list the
data folder there (Gradio copies a video a handler returns into its cache only from an allowed path), yet a
page only ever fetches media: the folder's videos and what Gradio cached for its components (face crops,
voice samples, uploads). :class:`AppGuard` sits in front of Gradio's routes and refuses, with a 403:

- a request whose ``Host`` is not a name the app is served as: a web page whose DNS name is rebound to
  127.0.0.1 would otherwise reach the API, the ask panel's model URL and the files;
- a request sent by a page of another origin (its ``Origin`` is not the ``Host`` it asks);
- a request on the file route for anything the ``serves`` rule does not name, so a memory DB, its WAL,
  vectors, lock, log and the app's state stay on disk whatever path, ``..``, encoding or symlink names them.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from m3agent.workspace.folder import listed_file

log = logging.getLogger(__name__)

#: names a browser on this machine reaches the app by, whatever address it is bound to
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
#: bound addresses that mean every interface: they name no host of their own
WILDCARDS = ("", "0.0.0.0", "::", "[::]")
#: what Gradio caches for the app's components: gallery images, voice samples, videos, uploads
CACHED_MEDIA = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".wav", ".mp3", ".ogg", ".flac", ".m4a", ".mp4",
                ".webm")
#: Gradio's file routes, ``file=PATH`` and the older ``file/PATH``
_FILE_ROUTE = re.compile(r"/gradio_api/file[=/]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def host_name(header: str) -> str | None:
    """``"LocalHost:7860"`` -> ``"localhost"``, ``"[::1]:7860"`` -> ``"[::1]"``; None for what is not
    ``name[:port]``."""
    value = header.lower()
    if value.startswith("["):
        end = value.find("]") + 1
        name, port = (value[:end], value[end:]) if end else ("", "")
    else:
        name, colon, rest = value.partition(":")
        port = colon + rest
    if port and not (port[0] == ":" and port[1:].isascii() and port[1:].isdigit()):
        return None
    return name or None


def served_as(bound: str, allowed: str = "") -> frozenset[str]:
    """The ``Host`` names the app answers: loopback, the address it is bound to unless that is every
    interface, and ``app.allowed_hosts`` (space-separated; a bare IPv6 address is bracketed)."""
    names = set(LOOPBACK)
    for given in [bound if bound not in WILDCARDS else "", *allowed.split()]:
        name = host_name(f"[{given}]" if given.count(":") > 1 and not given.startswith("[") else given)
        if name:
            names.add(name)
    return frozenset(names)


def in_cache(cache_dir: str | os.PathLike[str]) -> Callable[[Path], bool]:
    """A ``serves`` rule: media Gradio wrote into its cache (``GRADIO_TEMP_DIR``) for the page to fetch."""
    root = Path(cache_dir).resolve()
    return lambda path: listed_file(root, path, CACHED_MEDIA)


class AppGuard:
    """ASGI middleware in front of Gradio's routes: ``launch(app_kwargs={"middleware": [Middleware(AppGuard,
    hosts=..., serves=...)]})``. ``serves`` gets the absolute path the file route would open (relative paths
    are taken from the working folder, as Gradio does) and says whether a page may have it."""

    def __init__(self, app, *, hosts: Iterable[str], serves: Callable[[Path], bool]):
        self.app = app
        self.hosts = frozenset(hosts)
        self.serves = serves

    async def __call__(self, scope, receive, send) -> None:
        refusal = self.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        log.debug("refused %s: %s", scope.get("path"), refusal)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accepting: the server answers 403
            return
        body = f"403 Forbidden: {refusal}\n".encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def refusal(self, scope) -> str | None:
        """Why this request is refused, or None when it may go on."""
        hosts = _headers(scope, b"host")
        if len(hosts) != 1 or host_name(hosts[0]) not in self.hosts:
            return f"this app answers only as {' '.join(sorted(self.hosts))} (app.allowed_hosts adds names)"
        if any(_netloc(origin) != hosts[0].lower() for origin in _headers(scope, b"origin")):
            return "a page of another site may not call this app"
        route = _FILE_ROUTE.search(scope["path"])
        if route and not self._serves(scope["path"][route.end():]):
            return "not a file this app serves"
        return None

    def _serves(self, requested: str) -> bool:
        if not requested or _CONTROL.search(requested):
            return False
        try:
            return self.serves(Path(os.path.abspath(requested)))
        except (OSError, RuntimeError, ValueError):
            return False


def _headers(scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", ()) if key.lower() == name]


def _netloc(origin: str) -> str:
    try:
        return urlsplit(origin).netloc.lower()
    except ValueError:
        return ""
