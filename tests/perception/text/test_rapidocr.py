"""The bundled PP-OCRv4 reader on drawn frames: signs, upside-down, sideways and tilted text, a page full of text,
none."""

import numpy as np
import pytest

from m3agent.config import PerceptionConfig
from m3agent.factory import _build
from m3agent.samples.screen_text import Writing, picture

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def reader():
    return _build("text", "rapidocr", PerceptionConfig())


def frame(tmp_path, *writings, name="f.png"):
    from PIL import Image

    return np.asarray(Image.open(picture(tmp_path / name, None, writings)).convert("RGB"))


def test_reads_a_sign_and_a_slide_where_they_are(reader, tmp_path):
    from PIL import Image

    from m3agent.samples.episode import photo

    signed = np.asarray(Image.open(picture(tmp_path / "s.png", photo("david_1.jpg"), (Writing("HALLWAY"),))))
    found = reader.read(signed)
    assert [t.text for t in found] == ["HALLWAY"]
    x0, y0, x1, y1 = found[0].box
    assert x0 < 120 and y0 < 120 and x1 > 200 and found[0].score > 0.9
    slide = reader.read(frame(tmp_path, Writing("Quarterly Budget\nRevenue up 12 percent", "slide")))
    assert [t.text for t in slide] == ["Quarterly Budget", "Revenue up 12 percent"]


def test_upside_down_and_tilted_text(reader, tmp_path):
    from PIL import Image

    page = Image.open(picture(tmp_path / "p.png", None, (Writing("Platform 9\nTrains to Oxford", "slide"),)))
    assert {"Platform 9", "Trains to Oxford"} <= {t.text for t in reader.read(np.asarray(page.rotate(180)))}
    tilted = reader.read(np.asarray(page.rotate(8, expand=False, fillcolor=(250, 250, 246))))
    assert {"Platform 9", "Trains to Oxford"} <= {t.text for t in tilted}
    for quarter in (90, 270):  # a phone filmed sideways, a sign on a pillar: text running up or down
        sideways = reader.read(np.asarray(page.rotate(quarter, expand=True)))
        assert {"Platform 9", "Trains to Oxford"} <= {t.text for t in sideways}


def test_no_text_and_a_page_full_of_text(reader, tmp_path):
    assert reader.read(np.full((720, 1280, 3), 90, np.uint8)) == []
    assert reader.read(np.zeros((8, 8, 3), np.uint8)) == []
    from PIL import Image, ImageDraw

    from m3agent.samples.screen_text import _font

    page = Image.new("RGB", (1280, 720), (255, 255, 255))
    draw = ImageDraw.Draw(page)
    for k in range(40):  # 40 lines of small print in two columns
        draw.text((20 + 640 * (k % 2), 10 + 35 * (k // 2)), f"Item {k} costs {k * 3} euros", fill=(0, 0, 0), font=_font(22))
    found = reader.read(np.asarray(page))
    assert len(found) <= reader.max_lines  # the largest lines only: a bounded cost, whatever the page holds
    assert sum(t.text.startswith("Item") for t in found) >= reader.max_lines // 2


def test_reads_chinese(reader):
    from importlib import resources

    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(resources.files("noto_cjk_sans_jp_regular") / "NotoSansCJKjp-Regular.otf"), 56)
    page = Image.new("RGB", (1280, 720), (250, 250, 246))
    draw = ImageDraw.Draw(page)
    draw.text((100, 100), "会议室在三楼", fill=(20, 20, 20), font=font)
    draw.text((100, 300), "Exit 出口", fill=(20, 20, 20), font=font)
    found = [t.text for t in reader.read(np.asarray(page))]
    assert found[0] == "会议室在三楼" and "出口" in found[1]
