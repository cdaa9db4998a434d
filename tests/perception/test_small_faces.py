"""Faces below ``face_min_embed_size`` are seen but never identified: the pipeline's rule, with a stand-in
detector (no model)."""

import numpy as np

from m3agent.config import PerceptionConfig
from m3agent.media.clips import MediaClip
from m3agent.perception.faces.base import FaceBackend
from m3agent.perception.pipeline import Perceiver


class Boxes(FaceBackend):
    """Finds the boxes it is given for each frame; a face's embedding is its frame's first pixel value."""

    name, dim, same_person_distance = "boxes", 2, 0.5

    def __init__(self, per_frame):
        self.per_frame, self.embedded = per_frame, []

    def locate(self, frame):
        return [(box, 0.99) for box in self.per_frame[int(frame[0, 0, 0])]]

    def embed(self, frame, box):
        self.embedded.append(box)
        return np.array([1.0, 0.0], np.float32)


def test_small_faces_are_counted_not_embedded_and_found_no_node():
    big, small_a, small_b = (100, 100, 180, 190), (500, 300, 520, 325), (700, 300, 725, 330)
    per_frame = [[big], [big, small_a], [big, small_a, small_b], [small_a], []]
    frames = [np.full((720, 1280, 3), i, np.uint8) for i in range(len(per_frame))]
    clip = MediaClip(0, 0.0, 5.0, frames, [0.0, 1.0, 2.0, 3.0, 4.0])
    backend = Boxes(per_frame)
    perceiver = Perceiver(backend, None, None, PerceptionConfig(face_min_embed_size=30))
    out = perceiver.perceive(clip, perceiver.face_bank({}), perceiver.voice_bank({}))
    assert len(out.faces) == 1 and len(out.faces[0].detections) == 3
    assert all(box == big for box in backend.embedded)  # the small ones were never embedded
    assert len(out.small_faces) == 4 and all(not d.embedding.size for d in out.small_faces)
    assert out.small_face_count == 2  # at most two on one frame
    assert out.small_face_spans(gap=2.0) == [(1.0, 3.0, 2)]
    # with the threshold at 0 every face is identified
    everything = Perceiver(Boxes(per_frame), None, None, PerceptionConfig(face_min_embed_size=0))
    out = everything.perceive(clip, everything.face_bank({}), everything.voice_bank({}))
    assert not out.small_faces and sum(len(t.detections) for t in out.faces) == 7


class Swap(Boxes):
    """One box on every frame; the person in it changes at frame ``at``."""

    def __init__(self, frames, at):
        super().__init__([[(100, 100, 180, 190)]] * frames)
        self.at = at

    def embed(self, frame, box):
        self.embedded.append(int(frame[0, 0, 0]))
        return np.array([1.0, 0.0] if frame[0, 0, 0] < self.at else [0.0, 1.0], np.float32)


def test_a_person_replaced_in_place_is_cut_by_bisection_not_by_embedding_every_face():
    frames = [np.full((720, 1280, 3), i, np.uint8) for i in range(30)]
    clip = MediaClip(0, 0.0, 30.0, frames, [float(i) for i in range(30)])
    backend = Swap(30, at=17)
    perceiver = Perceiver(backend, None, None, PerceptionConfig())
    out = perceiver.perceive(clip, perceiver.face_bank({}), perceiver.voice_bank({}))
    runs = sorted([d.frame_index for d in track.detections] for track in out.faces)
    assert runs == [list(range(17)), list(range(17, 30))]
    assert len(backend.embedded) <= 8  # ends, about log2(30) probes, the new run's ends
