"""The open-once shelf."""

from __future__ import annotations

import threading

from m3agent.files.shelf import Shelf


def test_a_shelf_opens_each_key_once_and_closes_what_it_opened():
    opened, closed = [], []
    shelf = Shelf(lambda key: opened.append(key) or [key], closer=closed.append, lock=threading.Lock())
    first = shelf.get("a")
    assert shelf.get("a") is first and shelf.get("b") == ["b"] and opened == ["a", "b"] and len(shelf) == 2
    shelf.close()
    assert closed == [["a"], ["b"]] and "a" not in shelf
