"""The app in a real headless Chromium: upload, memorize, characters, timeline, ask, the chat
answering while another memorization runs, and a character renamed from its card, then the rename undone.
It saves a screenshot of each view (to ``M3AGENT_SCREENSHOTS`` when set: ``docs/screenshots`` is made
this way)."""

import json
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.data import VIDEO_CLIP

pytestmark = [pytest.mark.models, pytest.mark.slow, pytest.mark.timeout(900)]

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--mute-audio"]


@pytest.fixture(scope="module")
def page(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.outside, page.refused = [], []
        page.on("request", lambda r: page.outside.append(r.url)
                if not r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else None)
        page.files = []  # (status, url) of what the page fetched through Gradio's file route
        page.on("response", lambda r: page.files.append((r.status, r.url))
                if "/gradio_api/file=" in r.url else None)
        page.on("response", lambda r: page.refused.append(r.url) if r.status == 403 else None)
        page.goto(app_url[0], wait_until="load")
        page.wait_for_selector("#memorize")
        yield page
        browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = Path(os.environ.get("M3AGENT_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def text_of(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def wait_text(page, selector: str, pattern: str, timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = text_of(page, selector)
        if re.search(pattern, text):
            return text
        assert time.monotonic() < deadline, f"{selector} never matched {pattern!r}; it shows {text!r}"
        time.sleep(0.5)


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()


def choose(page, selector: str, option: str) -> None:
    page.locator(f"{selector} input").click()
    page.get_by_role("option", name=option).click()


def test_upload_memorize_and_see_the_characters(page, shots):
    page.locator("#upload input[type=file]").set_input_files(str(VIDEO_CLIP))
    wait_text(page, "#message", "Uploaded .*short_hamilton_clip.mp4", 60)
    page.wait_for_function("(() => { const v = document.querySelector('#player video');"
                           " return v && v.src && v.src.includes('short_hamilton_clip'); })()", timeout=30_000)
    page.click("#memorize")
    wait_text(page, "#jobs", r"short_hamilton_clip.mp4: (queued|starting|clip|done)", 30)
    # the live view: the clip in work with its stages (a fast machine may be done before a poll sees it)
    wait_text(page, "#jobs", r"short_hamilton_clip.mp4: (clip 1 of 1: \w|done)", 300)
    page.screenshot(path=str(shots / "video.png"), full_page=True)
    wait_text(page, "#jobs", r"short_hamilton_clip.mp4: done: 1 clips, [\d.]+x real time", 300)
    page.wait_for_function("document.querySelector('#memory input').value == 'memories/short_hamilton_clip.db'",
                           timeout=30_000)
    open_tab(page, "Characters")
    page.wait_for_function("[...document.querySelectorAll('.card .faces img')]"
                           ".some(i => i.complete && i.naturalWidth > 0)", timeout=60_000)  # crops shown
    page.wait_for_selector(".card .voice", timeout=30_000)
    page.wait_for_function("!!document.querySelector('.card .voice audio')", timeout=30_000)
    deadline = time.monotonic() + 30
    while not any(status == 200 and url.endswith(".wav") for status, url in page.files):  # the sample loads
        assert time.monotonic() < deadline, page.files
        page.wait_for_timeout(200)
    assert "Voice:" in text_of(page, ".card .voice")  # a sample of its voice, with what it said
    assert "character_" in text_of(page, ".card-title")
    assert page.locator(".card .clip-link").first.inner_text() == "clip 0"


def test_chat_answers_on_one_memory_while_another_is_memorized(page, shots, app_url):
    open_tab(page, "Video")
    page.click("#sample")
    wait_text(page, "#jobs", r"sample_episode.mp4: (building|starting|clip)", 60)
    open_tab(page, "Ask")
    page.fill("#question textarea", "What does the person on screen say?")
    page.click("#ask-btn")
    page.wait_for_selector(".evidence-clip", timeout=300_000)
    jobs = text_of(page, "#jobs")
    assert re.search(r"sample_episode.mp4: (building|starting|clip \d)", jobs), jobs  # still memorizing
    chat = text_of(page, "#chat")
    assert "What does the person on screen say?" in chat and len(chat.split("What does the person on screen say?")[1].strip()) > 0
    trace = text_of(page, "#trace")
    assert "Before round 1" in trace and "search" in trace and re.search(r"clip 0 \(00:00–00:10, score", trace)
    assert page.locator(".evidence-clip").first.inner_text().startswith("▶ clip 0")
    page.screenshot(path=str(shots / "ask.png"), full_page=True)
    again = page.context.browser.new_page()  # a browser that comes back sees where the memorization stands
    again.goto(app_url[0], wait_until="load")
    wait_text(again, "#jobs", r"sample_episode.mp4: (building|starting|clip \d|done)", 60)
    assert "short_hamilton_clip.mp4: done" in text_of(again, "#jobs")
    again.close()


def test_the_sample_episode_browses_by_character_and_jumps_to_a_clip(page, shots):
    wait_text(page, "#jobs", r"sample_episode.mp4: done: \d+ clips", 600)
    choose(page, "#memory", "memories/sample_episode.db")
    open_tab(page, "Characters")
    # the view redraws for the chosen memory: its cards carry the names the memory learned
    page.wait_for_function("[...document.querySelectorAll('.card-title')]"
                           ".some(e => /[A-Z][a-z]+ \\(character_\\d+\\)/.test(e.innerText))", timeout=60_000)
    names = page.locator(".card-title").all_inner_texts()
    assert len(names) >= 3 and sum(bool(re.search(r"[A-Z][a-z]+ \(character_\d+\)", n)) for n in names) >= 3, names
    page.screenshot(path=str(shots / "characters.png"), full_page=True)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # on a cold machine the view may still be busy with the memory just finished: a person whose timeline stays
    # empty opens the tab again (once seen in CI: no clips within 60 s, then fine on every later run)
    for _ in range(3):
        open_tab(page, "Timeline")
        try:
            page.wait_for_function("document.querySelectorAll('.timeline-clip').length >= 3", timeout=60_000)
            break
        except PlaywrightTimeout:
            open_tab(page, "Characters")
    assert page.locator(".timeline-clip").count() >= 3

    # the memory's own view may still be arriving (it loads the player at 0:00): a click it overtakes is clicked
    # again, as a person would; the jump must land within a few tries
    for _ in range(4):
        page.locator(".timeline-clip .clip-link").nth(2).click()
        try:
            page.wait_for_function("(() => { const v = document.querySelector('#player video');"
                                   " return v && v.currentTime >= 59; })()", timeout=45_000)
            break
        except PlaywrightTimeout:
            continue
    assert page.evaluate("document.querySelector('#player video').currentTime") >= 59
    page.screenshot(path=str(shots / "timeline.png"), full_page=True)


def test_a_character_is_renamed_from_its_card_and_the_rename_undone(page, shots, app_url):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    workspace, memory = app_url[1], "memories/sample_episode.db"
    open_tab(page, "Characters")
    page.wait_for_function("document.querySelectorAll('.card-title').length >= 3", timeout=60_000)
    title = page.locator(".block.card-title").first.inner_text().split("\n")[0]
    number = int(re.search(r"character_(\d+)", title).group(1))
    card = f"#card-{number}"
    renamed = f"Zelda Quinn (character_{number})"
    # the view may be drawn again under the click (as the memory's own view arrives): the click is made again
    # only while the memory holds no such correction, as a person would, until the card shows the new name
    for _ in range(4):
        if not any(fix["value"] == "Zelda Quinn" for fix in workspace.corrections(memory)):
            page.locator(f"{card} .rename-box textarea, {card} .rename-box input").first.fill("Zelda Quinn")
            page.locator(f"{card} .rename-btn").click()
        try:
            page.wait_for_function(f"[...document.querySelectorAll('{card} .card-title')]"
                                   f".some(e => e.innerText.startsWith({json.dumps(renamed)}))", timeout=30_000)
            break
        except PlaywrightTimeout:
            continue
    assert page.locator(f"{card} .block.card-title").inner_text().startswith(renamed)
    fixes = workspace.corrections(memory)
    assert [(f["action"], f["value"]) for f in fixes] == [("name", "Zelda Quinn")]
    wait_text(page, "#fix-message", rf"Correction {fixes[0]['id']} stored: \w+_\d+ is called “Zelda Quinn”", 30)
    wait_text(page, "#corrections", rf"{fixes[0]['id']}\. \w+_\d+ is called “Zelda Quinn”", 30)
    page.screenshot(path=str(shots / "corrections.png"), full_page=True)
    for _ in range(4):
        if workspace.corrections(memory):
            page.locator(f"#undo-{fixes[0]['id']}").click()
        try:
            page.wait_for_function(f"[...document.querySelectorAll('{card} .card-title')]"
                                   f".some(e => e.innerText.startsWith({json.dumps(title)}))", timeout=30_000)
            break
        except PlaywrightTimeout:
            continue
    assert page.locator(f"{card} .block.card-title").inner_text().split("\n")[0] == title
    assert workspace.corrections(memory) == []
    wait_text(page, "#fix-message", rf"Correction {fixes[0]['id']} undone", 30)
    wait_text(page, "#corrections", "None yet", 30)


def test_nothing_leaves_the_machine_and_no_file_outside_the_data_folder_is_served(page, app_url):
    url, workspace = app_url
    assert page.outside == []
    for path in ("/etc/passwd", "../../../../etc/passwd", str(VIDEO_CLIP), "%2e%2e/%2e%2e/etc/passwd"):
        for route in ("gradio_api/file=", "file="):
            try:
                with urllib.request.urlopen(url + route + path, timeout=10) as response:
                    body = response.read()
                    assert b"root:" not in body and response.headers.get_content_type() == "text/html", path
            except urllib.error.HTTPError as exc:
                assert exc.code in (400, 403, 404), (path, exc.code)
    inside = workspace.folder.resolve("uploads/short_hamilton_clip.mp4")
    with urllib.request.urlopen(url + "gradio_api/file=" + str(inside), timeout=10) as response:
        assert response.status == 200  # the folder's videos are served to the player
    for memory in workspace.folder.memories_dir.iterdir():  # the memories themselves are not
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(url + "gradio_api/file=" + str(memory), timeout=10)
    assert page.refused == []  # nothing the page asked for was refused
    assert json.loads(json.dumps(workspace.config.app.host)) == "127.0.0.1"
