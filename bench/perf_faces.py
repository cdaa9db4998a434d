"""Face recall by face size, false hits and speed of the face detectors, on real photos placed into 720p frames.

Usage: ``python -m bench.perf_faces [--write docs/BENCHMARKS.md]``. Every face of the repository's photos
(``tests/data/faces``, ``tests/data/faces_more``; not the group photo ``t1.jpg``, which is measured on its own,
nor a face cut by the photo's edge) is cut out with some of its surroundings, scaled so that the face is 20, 30,
40, 60 or 110 px wide and placed into 1280x720 frames whose background is a collage of the photos' face-free
parts. A detection is a hit when its box and the face's box each hold the other's centre; any other
detection, on these frames or on face-free frames, is a false hit. For the detectors that embed (dlib's
descriptor), "recognized" counts the hits whose embedding lies within the backend's same-person distance of the
same face's embedding in the full-size photo.

Identity: the hits of each face size (and of all sizes together) are grouped into nodes the way memorization
groups one clip's faces (``m3agent.perception.identity.cluster`` under the backend's same-person distance), and
scored as ``bench/perf_identity.py`` scores nodes (``bench/identity_scores.py``): merges, nodes holding two or more
people (the costly error; 0 is the goal), apart from nodes a person, the mean number of nodes each person found is
in (1.0 is ideal; above 1, a split). Only the faces of photos showing one person, named by the photo's file
(``PEOPLE``), are grouped and scored; the photos with several people do not record which face is whom, and the
group photo names nobody: not scored.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SIZES = (20, 30, 40, 60, 110)
FRAME = (720, 1280)  # height, width
MARGIN = 0.45  # context kept around a face, per side, as a fraction of its box
PER_FRAME = 8
FACE_FREE_FRAMES = 4
# who each photo showing one person shows (the photos' files name them, tests/data/README.md); the photos with
# several people (test_obama_and_biden.jpg, two_people.jpg, kit_with_rose.jpg) do not say which face is whom
PEOPLE = {
    "obama": ("obama.jpg", "obama2.jpg", "obama-480p.jpg", "obama-720p.jpg", "obama1.jpg", "obama3.jpg",
              "obama_small.jpg", "obama_partial_face.jpg"),
    "biden": ("biden.jpg", "train_biden_biden2.jpg"),
    "rose_leslie": ("train_rose_leslie_img1.jpg", "train_rose_leslie_img2.jpg"),
    "alex_lacamoire": ("alex-lacamoire.png", "train_alex_lacamoire_img1.jpg", "alex_lacamoire1.jpg"),
    "lin-manuel-miranda": ("lin-manuel-miranda.png",),
    "johnsnow": ("test_johnsnow_test1.jpg",),
    "astronaut": ("astronaut.png",),
}
PERSON = {photo: person for person, photos in PEOPLE.items() for photo in photos}


@dataclass
class Face:
    photo: str
    box: tuple[int, int, int, int]  # in the photo
    embedding: np.ndarray | None = None  # dlib descriptor at full size
    person: str | None = None  # who it is (``PEOPLE``); None: not known, not scored for identity


def _photos():
    from tests.data import FACES, FACES_MORE

    return sorted(p for folder in (FACES, FACES_MORE) for p in folder.iterdir()
                  if p.suffix in (".jpg", ".png") and p.name != "t1.jpg")


@cache
def _photo(name: str) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(next(p for p in _photos() if p.name == name)).convert("RGB"))


@cache
def _all_faces() -> dict[str, list[tuple[tuple[int, int, int, int], float]]]:
    """Anything face-like in each photo at full size (RetinaFace, score >= 0.5, any size)."""
    from m3agent.perception.faces.retinaface import RetinaFaceBackend

    detector = RetinaFaceBackend(min_score=0.5, min_size=1, max_side=10_000)
    return {path.name: detector.locate(_photo(path.name)) for path in _photos()}


def reference_faces() -> list[Face]:
    """Every clear face of the photos at full size (score >= 0.95, at least 60 px, not touching the photo's
    edge): faces every detector measured here finds at that size."""
    faces = []
    for name, found in _all_faces().items():
        h, w = _photo(name).shape[:2]
        clear = []
        for box, score in found:
            edge = box[0] <= 1 or box[1] <= 1 or box[2] >= w - 1 or box[3] >= h - 1
            if score >= 0.95 and min(box[2] - box[0], box[3] - box[1]) >= 60 and not edge:
                clear.append(box)
        # a named photo's face is its person's only when it is the photo's one clear face
        faces += [Face(name, box, person=PERSON.get(name) if len(clear) == 1 else None) for box in clear]
    return faces


def _face_boxes(photo: str) -> list[tuple[int, int, int, int]]:
    return [box for box, _ in _all_faces()[photo]]


def _cutout(image: np.ndarray, face: Face, others: list[tuple[int, int, int, int]], width: int) -> tuple:
    """The face with ``MARGIN`` of context, other faces in it greyed out, scaled so the face is ``width`` px
    wide; returns the patch and the face's box in it."""
    from PIL import Image

    left, top, right, bottom = face.box
    bw, bh = right - left, bottom - top
    h, w = image.shape[:2]
    x0, y0 = max(0, int(left - MARGIN * bw)), max(0, int(top - MARGIN * bh))
    x1, y1 = min(w, int(right + MARGIN * bw)), min(h, int(bottom + MARGIN * bh))
    patch = image[y0:y1, x0:x1].copy()
    for o in others:
        if o != face.box:
            patch[max(0, o[1] - y0):max(0, o[3] - y0), max(0, o[0] - x0):max(0, o[2] - x0)] = 128
    scale = width / bw
    size = (max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale)))
    patch = np.asarray(Image.fromarray(patch).resize(size, Image.LANCZOS))
    box = ((left - x0) * scale, (top - y0) * scale, (right - x0) * scale, (bottom - y0) * scale)
    return patch, box


def background(seed: int) -> np.ndarray:
    """A 1280x720 collage of face-free pieces of the photos (each piece keeps a face's width clear of
    every face): real textures (clothes, hair, rooms) with no face in them."""
    rng = np.random.default_rng(seed)
    h, w = FRAME
    frame = np.zeros((h, w, 3), np.uint8)
    photos = _photos()
    y = 0
    while y < h:
        x, row = 0, int(rng.integers(140, 260))
        while x < w:
            pw = int(rng.integers(140, 320))
            for _ in range(200):
                name = photos[int(rng.integers(len(photos)))].name
                image = _photo(name)
                ih, iw = image.shape[:2]
                if ih <= row or iw <= pw:
                    continue
                px, py = int(rng.integers(iw - pw)), int(rng.integers(ih - row))
                clear = all(px + pw < b[0] - (b[2] - b[0]) or px > b[2] + (b[2] - b[0]) or
                            py + row < b[1] - (b[3] - b[1]) or py > b[3] + (b[3] - b[1])
                            for b in _face_boxes(name))
                if clear:
                    piece = image[py:py + row, px:px + pw]
                    frame[y:y + row, x:x + pw] = piece[: h - y, : w - x]
                    break
            x += pw
        y += row
    return frame


def pasted_frames(faces: list[Face], width: int, seed: int = 0) -> list[tuple[np.ndarray, list[tuple]]]:
    """Frames holding every face at ``width`` px, at most ``PER_FRAME`` per frame, each on its own cell of a
    grid; returns ``(frame, [(face index, box), ...])``."""
    rng = np.random.default_rng(seed + width)
    out = []
    for start in range(0, len(faces), PER_FRAME):
        frame = background(seed * 1000 + width * 10 + start)
        truth = []
        cols, rows = 4, 2
        for k, index in enumerate(range(start, min(start + PER_FRAME, len(faces)))):
            face = faces[index]
            image = _photo(face.photo)
            patch, box = _cutout(image, face, _face_boxes(face.photo), width)
            cw, ch = FRAME[1] // cols, FRAME[0] // rows
            ph, pw = min(patch.shape[0], ch), min(patch.shape[1], cw)
            cx, cy = (k % cols) * cw, (k // cols) * ch
            ox = cx + int(rng.integers(0, cw - pw + 1))
            oy = cy + int(rng.integers(0, ch - ph + 1))
            frame[oy:oy + ph, ox:ox + pw] = patch[:ph, :pw]
            truth.append((index, (box[0] + ox, box[1] + oy, box[2] + ox, box[3] + oy)))
        out.append((frame, truth))
    return out


def is_hit(det, truth) -> bool:
    """Each box holds the other's centre."""
    def inside(point, box):
        return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]

    def centre(box):
        return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2

    return inside(centre(det), truth) and inside(centre(truth), det)


def identities(backend, named: list[tuple[str, np.ndarray]]) -> dict:
    """``(person, embedding)`` pairs grouped into nodes the way one clip's faces are (without the cannot-link of
    faces on screen together: a frame here holds up to ``PER_FRAME`` photos); merges and nodes a person."""
    from bench.identity_scores import merged, merges, nodes_a_person
    from m3agent.perception.identity import cluster

    people = {person for person, _ in named}
    if not named:
        return {"grouped": 0, "people": 0, "nodes": 0, "merges": 0, "nodes_a_person": None, "merged": []}
    groups = cluster(np.stack([e for _, e in named]), backend.same_person_distance, backend.distance)
    nodes = {g: {named[i][0] for i in members} for g, members in enumerate(groups)}
    return {"grouped": len(named), "people": len(people), "nodes": len(groups), "merges": merges(nodes),
            "nodes_a_person": round(nodes_a_person(nodes, people), 2), "merged": list(merged(nodes).values())}


def measure(backend, faces: list[Face], sets: dict[int, list], face_free: list[np.ndarray],
            embed: bool = True) -> dict:
    """Recall (and recognition, merges and nodes a person) per size, false hits, ms per frame for one detector."""
    per_size, times, false_hits, named = {}, [], 0, {}
    for width, frames in sets.items():
        found = recognized = 0
        named[width] = []
        for frame, truth in frames:
            t = time.perf_counter()
            boxes = backend.locate(frame)
            times.append(time.perf_counter() - t)
            matched = set()
            for box, _ in boxes:
                hit = next((i for i, (index, gt) in enumerate(truth) if i not in matched and is_hit(box, gt)), None)
                if hit is None:
                    false_hits += 1
                    continue
                matched.add(hit)
                found += 1
                face = faces[truth[hit][0]]
                if embed and face.embedding is not None:
                    e = backend.embed(frame, box)
                    recognized += float(backend.distance(e, face.embedding)[0, 0]) <= backend.same_person_distance
                    if face.person:
                        named[width].append((face.person, e))
        per_size[width] = {"found": found, "recognized": recognized, "faces": len(faces),
                           **({"identity": identities(backend, named[width])} if embed else {})}
    for frame in face_free:
        t = time.perf_counter()
        false_hits += len(backend.locate(frame))
        times.append(time.perf_counter() - t)
    found = sum(s["found"] for s in per_size.values())
    together = {"identity": identities(backend, [pair for pairs in named.values() for pair in pairs])} if embed else {}
    return {"per_size": per_size, "found": found, "faces": len(faces) * len(sets), "false_hits": false_hits,
            "frames": len(times), "ms_per_frame": 1000 * statistics.median(times), **together}


def group_photo(backend, scales=(1.0, 0.5, 0.25)) -> list[dict]:
    """Faces found on ``t1.jpg`` (6 people) as it is and shrunk, placed on a 1280x720 frame."""
    from PIL import Image

    from tests.data import FACES_MORE

    photo = Image.open(FACES_MORE / "t1.jpg").convert("RGB")
    out = []
    for scale in scales:
        image = photo.resize((round(photo.width * scale), round(photo.height * scale)), Image.LANCZOS)
        if scale == 1.0:
            frame = np.asarray(image)
        else:
            canvas = Image.new("RGB", (FRAME[1], FRAME[0]), (64, 80, 96))
            canvas.paste(image, ((FRAME[1] - image.width) // 2, (FRAME[0] - image.height) // 2))
            frame = np.asarray(canvas)
        boxes = backend.locate(frame)
        widths = sorted(b[2] - b[0] for b, _ in boxes)
        out.append({"scale": scale, "found": len(boxes), "widths": widths})
    return out


def detectors() -> dict:
    from m3agent.perception.faces.dlib import DlibFaceBackend
    from m3agent.perception.faces.retinaface import RetinaFaceBackend

    return {
        "RetinaFace, 1280 px (default)": RetinaFaceBackend(),
        "RetinaFace, 960 px (`face_max_side=960`)": RetinaFaceBackend(max_side=960),
        "dlib HOG, 960 px": DlibFaceBackend(),
        "dlib HOG, 1280 px, upsample 1": DlibFaceBackend(upsample=1, max_side=1280, min_size=16),
    }


def run(sizes=SIZES) -> dict:
    from m3agent.perception.faces.dlib import DlibEncoder
    from m3agent.perception.faces.retinaface import dlib_square

    faces = reference_faces()
    encode = DlibEncoder()
    for face in faces:
        image = _photo(face.photo)
        face.embedding = encode(image, dlib_square(face.box, image.shape[1], image.shape[0]))
    sets = {width: pasted_frames(faces, width) for width in sizes}
    face_free = [background(10_000 + k) for k in range(FACE_FREE_FRAMES)]
    face_free.append(np.full((*FRAME, 3), (0x40, 0x50, 0x60), np.uint8))
    results = {}
    for name, backend in detectors().items():
        backend.locate(face_free[0])  # warm up
        results[name] = {**measure(backend, faces, sets, face_free), "group_photo": group_photo(backend)}
    named = [f for f in faces if f.person]
    return {"faces": len(faces), "photos": len({f.photo for f in faces}), "sizes": list(sizes),
            "named_faces": len(named), "named_photos": len({f.photo for f in named}),
            "people": sorted({f.person for f in named}), "face_free_frames": len(face_free), "detectors": results}


def identity_table(r: dict) -> str:
    """Per detector, merges and nodes a person at each size and over all sizes; the group photo is not scored."""
    sizes = r["sizes"]
    head = " | ".join(f"{s} px" for s in sizes) + " | all sizes"
    rows = [f"| detector | merges: {head} | nodes a person: {head} | group photo |",
            "|---|" + "---|" * (2 * len(sizes) + 3)]
    for name, d in r["detectors"].items():
        cases = [d["per_size"][s]["identity"] for s in sizes] + [d["identity"]]
        merges = " | ".join(str(c["merges"]) if c["people"] else "-" for c in cases)
        nodes = " | ".join(f"{c['nodes_a_person']:.2f}" if c["people"] else "-" for c in cases)
        rows.append(f"| {name} | {merges} | {nodes} | not scored |")
    return "\n".join(rows)


def render(r: dict, note: str = "") -> str:
    """The block ``perf_faces`` of the results file (under its hand-written heading)."""
    from bench.perf_memory import machine

    sizes = r["sizes"]
    head = " | ".join(f"{s} px" for s in sizes)
    rows = []
    for name, d in r["detectors"].items():
        cells = " | ".join(f"{d['per_size'][s]['found']}/{d['per_size'][s]['faces']}" for s in sizes)
        recog = " | ".join(f"{d['per_size'][s]['recognized']}" for s in sizes)
        group = ", ".join(f"{g['found']}/6" for g in d["group_photo"])
        rows.append(f"| {name} | {cells} | {d['found']}/{d['faces']} ({d['found'] / d['faces']:.0%}) | "
                    f"{d['false_hits']} | {d['ms_per_frame']:.0f} ms | {group} | {recog} |")
    widths = r["detectors"][next(iter(r["detectors"]))]["group_photo"]
    scales = ", ".join(f"x{g['scale']:g} (faces {min(g['widths'], default=0)}-{max(g['widths'], default=0)} px)"
                       for g in widths)
    people = ", ".join(r["people"])
    return f"""Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.perf_faces --write docs/BENCHMARKS.md`.
{note + chr(10) + chr(10) if note else ''}{r['faces']} faces of {r['photos']} photos of `tests/data/faces*` (every face found at full size, not the group photo
and not a face cut by the photo's edge), each cut out with some surroundings, scaled to the face width of the column
and placed into 1280x720 frames ({PER_FRAME} to a frame) over a collage of the photos' face-free parts; plus
{r['face_free_frames']} face-free frames. Hit: the detection's box and the face's box each hold the other's centre;
any other detection is a false hit. ms/frame: median `locate` time of one 1280x720 frame (detection only, one
thread each: in memorization speech runs on the other core).
Group photo: `faces_more/t1.jpg` (6 people) as it is, and shrunk onto a 1280x720 frame: {scales} (face widths
as RetinaFace measures them). Recognized: hits whose dlib 128-d embedding (on the detector's box; RetinaFace's
made square) is within the same-person distance (0.55) of that face's embedding at full size.

| detector | {head} | all | false hits | ms/frame | group photo | recognized: {head} |
|---|{'---|' * len(sizes)}---|---|---|---|{'---|' * len(sizes)}
{chr(10).join(rows)}

dlib HOG at 960 px is the previous default (its row is the figure before RetinaFace). The default stack
(`memorize.perception.face_backend=retinaface`) embeds and identifies faces at least `face_min_embed_size` (30 px)
wide; smaller ones are counted as seen, never identified.

Identity: the hits of each size, and of all sizes together, grouped into nodes the way memorization groups one
clip's faces (average linkage of their dlib embeddings under the same-person distance, 0.55; without the cannot-link
of faces on screen together, as each frame here holds {PER_FRAME} photos). Only the {r['named_faces']} faces of the
{r['named_photos']} photos that show one person, named by the photo's file ({len(r['people'])} people: {people}), are
grouped and scored; the faces of the photos with several people (which face is whom is not recorded) are left
out, and the group photo (6 people, unnamed) is not scored. Merges: nodes holding two or more people (the costly
error; 0 is the goal). Nodes a person: the mean number of nodes each person found at that size is in (1.00 is
ideal; above 1, someone is split over several nodes, the cheap error). "-": no named face found. The 20 px column
says what such faces' embeddings would do; the default stack never identifies them.

{identity_table(r)}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None, help="update this file's perf_faces block")
    parser.add_argument("--note", default="", help="a line added under the machine (e.g. that it was shared)")
    args = parser.parse_args()
    result = run()
    print(json.dumps(result, indent=1))
    section = render(result, args.note)
    print(section)
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "perf_faces", section)


if __name__ == "__main__":
    main()
