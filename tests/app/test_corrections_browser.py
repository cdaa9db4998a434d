"""Correcting who is who from the Characters tab, in a real headless Chromium, on a small hand-built memory
(no model runs): rename, merge, keep apart, split clips off, each listed under the cards with its Undo, and
what cannot be done said in a line, never a traceback. (The full app, memorizing a real video and renaming
one of its characters, is ``test_browser.py``.)"""

import io
import re
import shutil
import time

import numpy as np
import pytest

from m3agent.config import MemoryConfig
from m3agent.memory import MemoryGraph
from m3agent.models.embed.hashing import HashingEmbedder
from tests.app.test_browser import ARGS, CHROMIUM, choose, open_tab
from tests.data import VIDEO_CLIP

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

MEMORY = "memories/kitchen.db"


def _jpeg(shade: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (48, 48), (shade, 120, 200 - shade)).save(out, format="JPEG")
    return out.getvalue()


def _vec(seed: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def build_kitchen(path, video_path) -> dict:
    """Alice (a face and a voice, named), Bob (a face seen in clips 1 and 3) over 4 clips of ``video_path``."""
    ids = {}
    with MemoryGraph.open(path, MemoryConfig(), embedder=HashingEmbedder(dim=512)) as graph:
        video = graph.add_video("kitchen", path=str(video_path), duration=120.0)
        with graph.clip(video, 0, 0, 30) as b:
            ids["alice"] = a = b.face([_vec(1, 128)], crops=[(_jpeg(40), 0.9)])
            ids["voice"] = v = b.voice([_vec(2, 256)], segments=[(3.0, 5.0, "hi I am Alice")])
            b.episodic(f"<face_{a}> opens the fridge in the kitchen")
            b.semantic(f"Equivalence: <face_{a}>, <voice_{v}>")
            b.semantic(f"<voice_{v}>'s name is Alice")
        with graph.clip(video, 1, 30, 60) as b:
            ids["bob"] = bob = b.face([_vec(3, 128)], crops=[(_jpeg(200), 0.8)])
            b.episodic(f"<face_{bob}> plays guitar on the sofa")
        with graph.clip(video, 2, 60, 90) as b:
            b.episodic(f"<face_{a}> waters the plants")
        with graph.clip(video, 3, 90, 120) as b:
            b.face([_vec(4, 128)], node_id=bob)
            b.episodic(f"<face_{bob}> cooks pasta in the kitchen")
    return ids


@pytest.fixture(scope="module")
def kitchen(app_url):
    _, workspace = app_url
    video = workspace.folder.root / "kitchen.mp4"  # a real one: Alice's card plays a sample of her voice
    shutil.copyfile(VIDEO_CLIP, video)
    return build_kitchen(workspace.folder.memories_dir / "kitchen.db", video)


@pytest.fixture(scope="module")
def page(app_url, kitchen):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.errors = []  # the page's own script failing (a card view drawn again wrongly would)
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.goto(app_url[0], wait_until="load")
        page.wait_for_function(f"document.querySelector('#memory input')?.value == '{MEMORY}'", timeout=30_000)
        open_tab(page, "Characters")
        page.wait_for_selector(".card-title", timeout=30_000)
        yield page
        browser.close()


def titles(page) -> list[str]:
    """Each card's first line (Gradio puts a Markdown's classes on its block and on the text inside: ``.block``
    picks each once)."""
    return [t.split("\n")[0] for t in page.locator(".block.card-title").all_inner_texts()]


def wait_for(page, what, check, timeout: float = 30.0):
    """Poll ``what()`` until ``check`` holds on it (the cards redraw a moment after a click)."""
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if check(value):
            return value
        assert time.monotonic() < deadline, f"never held; last seen {value!r}"
        page.wait_for_timeout(200)


def message(page) -> str:
    return page.locator("#fix-message").inner_text()


def corrections(page) -> list[str]:
    return page.locator("#corrections .block.correction-text").all_inner_texts()


def card(page, number: int):
    return page.locator(f"#card-{number}")


def test_rename_from_a_card_then_undo(page, kitchen):
    alice = kitchen["alice"]
    assert wait_for(page, lambda: titles(page), lambda t: f"Alice (character_{alice})" in t)
    assert page.locator("#corrections .block.no-corrections").count() == 1
    card(page, alice).locator(".rename-box textarea, .rename-box input").first.fill("Alicia Keys")
    card(page, alice).locator(".rename-btn").click()
    wait_for(page, lambda: titles(page), lambda t: f"Alicia Keys (character_{alice})" in t)
    assert re.search(r"Correction 1 stored: face_\d+ is called “Alicia Keys”", message(page)), message(page)
    box = card(page, alice).locator(".rename-box textarea, .rename-box input").first
    wait_for(page, lambda: box.input_value(), lambda v: v == "")  # emptied once stored
    assert wait_for(page, lambda: corrections(page), lambda c: len(c) == 1)[0].startswith("1.")
    page.locator("#undo-1").click()
    wait_for(page, lambda: titles(page), lambda t: f"Alice (character_{alice})" in t)
    assert "Correction 1 undone" in message(page)
    wait_for(page, lambda: corrections(page), lambda c: c == [])
    assert page.errors == []


def test_merge_keep_apart_and_what_cannot_be_done(page, kitchen):
    alice, voice, bob = kitchen["alice"], kitchen["voice"], kitchen["bob"]
    card(page, bob).locator(".merge-btn").click()  # nobody chosen
    wait_for(page, lambda: message(page), lambda m: "Choose who this is the same person as" in m)
    choose(page, f"#card-{bob} .merge-with", f"Alice (character_{alice})")
    card(page, bob).locator(".merge-btn").click()
    merged = wait_for(page, lambda: page.locator(".block.card-title").all_inner_texts(), lambda t: len(t) == 1)
    assert all(f"{m}" in merged[0] for m in (f"face_{alice}", f"voice_{voice}", f"face_{bob}"))  # one person now
    wait_for(page, lambda: card(page, alice).locator(".faces img").count(), lambda n: n == 2)  # both faces
    wait_for(page, lambda: card(page, alice).locator(".voice audio").count(), lambda n: n >= 1)  # and her voice
    assert "one person" in message(page)
    page.locator("#corrections .undo-btn").last.click()
    wait_for(page, lambda: len(titles(page)), lambda n: n == 2)

    choose(page, f"#card-{alice} .apart-from", f"character_{bob}")
    card(page, alice).locator(".apart-btn").click()
    wait_for(page, lambda: message(page), lambda m: "two people" in m)
    card(page, alice).locator(".rename-box textarea, .rename-box input").first.fill("   ")
    card(page, alice).locator(".rename-btn").click()
    wait_for(page, lambda: message(page), lambda m: "Type the new name first" in m)
    card(page, alice).locator(".split-clips textarea, .split-clips input").first.fill("9-x")
    card(page, alice).locator(".split-btn").click()
    wait_for(page, lambda: message(page), lambda m: m.startswith("⚠ Not corrected:"))
    assert "Traceback" not in page.content()
    while page.locator("#corrections .undo-btn").count():  # leave the memory as it was
        count = page.locator("#corrections .undo-btn").count()
        page.locator("#corrections .undo-btn").first.click()
        wait_for(page, lambda: page.locator("#corrections .undo-btn").count(), lambda n, c=count: n == c - 1)
    assert sorted(titles(page)) == sorted([f"Alice (character_{alice})", f"character_{bob}"])
    wait_for(page, lambda: card(page, alice).locator(".voice audio").count(), lambda n: n >= 1)
    assert card(page, bob).locator(".faces img").count() == 1
    assert page.errors == []


def test_split_clips_off_a_node_then_undo(page, kitchen):
    bob = kitchen["bob"]  # one face, seen in clips 1 and 3
    assert page.locator(f"#card-{bob} .split-node input").input_value() == f"face_{bob}"
    card(page, bob).locator(".split-clips textarea, .split-clips input").first.fill("3")
    card(page, bob).locator(".split-btn").click()
    after = wait_for(page, lambda: titles(page), lambda t: len(t) == 3)  # someone else in clip 3
    split = re.search(rf"face_{bob} in clips 3 split off as (face_\d+)", message(page))
    assert split, message(page)
    new = split.group(1)
    assert f"character_{new.split('_')[1]}" in after
    assert card(page, bob).locator(".clip-link").all_inner_texts() == ["clip 1"]
    assert page.locator(f"#card-{new.split('_')[1]} .clip-link").all_inner_texts() == ["clip 3"]
    page.locator("#corrections .undo-btn").first.click()
    wait_for(page, lambda: len(titles(page)), lambda n: n == 2)
    assert card(page, bob).locator(".clip-link").all_inner_texts() == ["clip 1", "clip 3"]
    wait_for(page, lambda: corrections(page), lambda c: c == [])
    assert page.errors == []
