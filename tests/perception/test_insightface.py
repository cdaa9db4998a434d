"""The production face backend. Its weights (buffalo_l) never ship in a package, so the real test
runs only where ``M3AGENT_INSIGHTFACE_DIR`` points at them and insightface is installed."""

import os

import numpy as np
import pytest

from m3agent.config import load_config
from m3agent.factory import build_perceiver
from m3agent.models.bundled import ModelNotFoundError


def insightface_config(model_dir: str):
    return load_config(overrides=["memorize.perception.face_backend=insightface",
                                  f"memorize.perception.face_model_dir={model_dir}"]).memorize.perception


def test_missing_model_dir_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFoundError, match="buffalo_l.*face_model_dir"):
        build_perceiver(insightface_config(str(tmp_path)))


def test_cosine_distance_contract():
    from m3agent.perception.faces.base import iou
    from m3agent.perception.faces.insightface import InsightFaceBackend

    backend = InsightFaceBackend.__new__(InsightFaceBackend)
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert np.allclose(backend.distance(a, a), [[0.0, 1.0], [1.0, 0.0]])
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(1 / 3)


@pytest.mark.models
def test_buffalo_l_on_real_photos():
    model_dir = os.environ.get("M3AGENT_INSIGHTFACE_DIR")
    if not model_dir:
        pytest.skip("set M3AGENT_INSIGHTFACE_DIR to a folder with models/buffalo_l to run this test")
    pytest.importorskip("insightface", reason="insightface is not installed (pip install 'm3agent[gpu]')")
    from PIL import Image

    from tests.data import FACES

    backend = build_perceiver(insightface_config(model_dir)).faces
    a = backend.detect(np.asarray(Image.open(FACES / "obama.jpg").convert("RGB")))
    b = backend.detect(np.asarray(Image.open(FACES / "obama2.jpg").convert("RGB")))
    c = backend.detect(np.asarray(Image.open(FACES / "biden.jpg").convert("RGB")))
    assert a and b and c and a[0].embedding.shape == (512,)
    assert backend.distance(a[0].embedding, b[0].embedding)[0, 0] < backend.same_person_distance
    assert backend.distance(a[0].embedding, c[0].embedding)[0, 0] > backend.same_person_distance
