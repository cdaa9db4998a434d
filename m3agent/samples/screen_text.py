"""Pictures with text on them (a panel on a wall, a slide, a caption band, burned-in subtitles, a channel mark)
and a short episode built from them with :func:`m3agent.samples.synth.build_episode`: the fixture for
on-screen text. Text is drawn with Pillow's bundled font, so no system font is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from m3agent.samples.episode import PEOPLE, photo
from m3agent.samples.synth import Scene, SceneTiming, build_episode

SIZE = (1280, 720)
BACKGROUND = (32, 40, 48)


@dataclass(frozen=True)
class Writing:
    """Text drawn on a picture: ``where`` is ``panel`` (dark letters on a light panel, upper left), ``slide`` (a title
    and lines on a white page), ``caption`` (a band along the bottom) or ``mark`` (small, lower right)."""

    text: str
    where: str = "panel"


def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size)


def picture(out: str | Path, base: str | None, writings: tuple[Writing, ...] = ()) -> Path:
    """``base`` (a photo, fitted to 1280x720 on a dark background; None: a white page) with ``writings`` drawn on."""
    from PIL import Image, ImageDraw

    canvas = Image.new("RGB", SIZE, BACKGROUND if base else (250, 250, 246))
    if base:
        with Image.open(base) as image:
            image = image.convert("RGB")
            image.thumbnail(SIZE)
            canvas.paste(image, ((SIZE[0] - image.width) // 2, (SIZE[1] - image.height) // 2))
    draw = ImageDraw.Draw(canvas)
    panel_top = 40  # panels stack down the left side
    for writing in writings:
        if writing.where == "panel":
            font = _font(56)
            left, top, right, bottom = draw.textbbox((0, 0), writing.text, font=font)
            draw.rectangle((40, panel_top, 40 + right - left + 48, panel_top + bottom - top + 40), fill=(236, 232, 220))
            draw.text((64 - left, panel_top + 20 - top), writing.text, fill=(24, 24, 24), font=font)
            panel_top += bottom - top + 70
        elif writing.where == "slide":
            title, *rest = writing.text.split("\n")
            draw.text((100, 90), title, fill=(20, 30, 90), font=_font(64))
            for k, line in enumerate(rest):
                draw.text((130, 230 + 90 * k), line, fill=(30, 30, 30), font=_font(44))
        elif writing.where == "caption":
            draw.rectangle((0, SIZE[1] - 110, SIZE[0], SIZE[1] - 30), fill=(150, 20, 30))
            draw.text((60, SIZE[1] - 98), writing.text, fill=(255, 255, 255), font=_font(48))
        elif writing.where == "mark":
            draw.text((SIZE[0] - 150, SIZE[1] - 70), writing.text, fill=(255, 255, 255), font=_font(36), stroke_width=3,
                      stroke_fill=(0, 0, 0))
        else:
            raise ValueError(f"unknown place for text: {writing.where!r}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(out)
    return out


def with_writing(base: str | None, writings: tuple[Writing, ...], pictures: str | Path | None, name: str) -> str | None:
    """``base`` with ``writings`` drawn on, saved as ``pictures/name``; ``base`` itself when nothing is written."""
    if not writings:
        return base
    if pictures is None:
        raise ValueError(f"{name} shows writing: give a folder for its pictures")
    return str(picture(Path(pictures) / name, base, writings))


MARK = Writing("CH7", "mark")
#: (person or None for a slide, photo index, what is said, what is written, seconds): two 30-s clips. Scene 2 and 3
#: are one shot of Sarah: the caption appears 5 s in (a region that changes and settles); Peter's line is also
#: burned in as a subtitle; the channel mark stays on screen throughout.
SCRIPT = [
    ("david", 0, "Hello, my name is David. Please keep quiet in here.", (Writing("LIBRARY"), MARK), 15.0),
    (None, 0, "", (Writing("Quarterly Budget\nRevenue up 12 percent\nHiring pauses until March", "slide"), MARK), 15.0),
    ("sarah", 0, "", (MARK,), 5.0),
    ("sarah", 0, "Hi, I am Sarah. The weather is lovely today.",
     (Writing("Live from Marble Plaza", "caption"), MARK), 10.0),
    ("peter", 0, "Tonight we cook lentil stew.", (Writing("Tonight we cook lentil stew.", "caption"), MARK), 15.0),
]


def build_text_episode(path: str | Path) -> list[SceneTiming]:
    """Render the on-screen text fixture at ``path`` (pictures beside it, in ``<stem>-pictures``)."""
    path = Path(path)
    pictures = path.parent / f"{path.stem}-pictures"
    scenes = []
    for k, (person, index, line, writings, seconds) in enumerate(SCRIPT):
        base = photo(PEOPLE[person][2][index]) if person else None
        image = str(picture(pictures / f"scene{k}.png", base, writings))
        voice = PEOPLE[person][0] if person and line else None
        scenes.append(Scene(person if line else None, image, voice, line, min_seconds=seconds, pause=0.5))
    return build_episode(scenes, path)
