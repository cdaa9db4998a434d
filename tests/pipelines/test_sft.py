"""Memorizer SFT data with a scripted chat model standing in for the teacher, on the repository's real short
video: records in the memorizer's target format, resumable after an interruption (a torn last line dropped,
no clip asked twice), and the SFT entry point's dry run tokenizing them on CPU."""

import json

import numpy as np
import pytest

from m3agent.config import load_config
from m3agent.media.fingerprint import content_fingerprint
from m3agent.memorize.pipeline import MemorizationInterrupted
from m3agent.memory import MemoryGraph
from m3agent.models.llm.scripted import ScriptedChat
from m3agent.perception.faces.base import FaceDetection
from m3agent.perception.identity import IdentityBank
from m3agent.perception.pipeline import ClipPerception, FaceTrack, Utterance, VoiceTrack
from pipelines.sft import teacher as sft_teacher
from pipelines.sft import train as sft_train
from tests.data import VIDEO_CLIP

CONFIG = load_config(overrides=["memorize.perception.clip_seconds=5"])  # the 10-s clip in two clips


class StubPerceiver:
    """Perception without models: one face and one voice per clip, matched to the nodes memory already holds."""

    def face_bank(self, snapshots):
        return IdentityBank(0.5, lambda a, b: np.zeros((len(a), len(b))), snapshots)

    voice_bank = face_bank

    def face_identity(self):
        return {}

    def close(self):
        pass

    def perceive(self, clip, face_bank, voice_bank, on_stage=None, upcoming=None, voice_faces=None):
        if not clip.frames:  # the file's last 20 ms make a clip of their own, with nothing in it
            return ClipPerception(clip)
        dets = [FaceDetection(i, t, (10, 10, 60, 60), 1.0, np.ones(128, np.float32),
                              np.ascontiguousarray(clip.frames[i][10:60, 10:60]), 50.0)
                for i, t in enumerate(clip.frame_times)]
        said = Utterance(clip.start + 1, clip.start + 3, "Hello, my name is Nora.", np.ones(256, np.float32), voice=0)
        return ClipPerception(clip, [FaceTrack(dets, next(iter(face_bank.snapshots), None))], [said],
                              [VoiceTrack([said], next(iter(voice_bank.snapshots), None))])


def face_of(prompt):
    """The face tag number the memorizer's question lists for the clip."""
    return prompt.split("Faces in this clip")[1].split("<face_")[1].split(">")[0]


def teacher_reply(messages):
    """What a VLM teacher answers: lines about the tags the question names (and one invented tag)."""
    face = face_of(messages[0]["content"][0]["text"])
    return json.dumps({"episodic": [f"<face_{face}> stands on a stage and sings.", "<face_999> waves."],
                       "semantic": [f"<face_{face}> is a performer."]})


def teach(out, db, embedder, chat, **kwargs):
    with MemoryGraph.open(db, CONFIG.memory, embedder=embedder) as graph:
        done = set(sft_teacher.records_file(out).load())
        return sft_teacher.teach_video(VIDEO_CLIP, out, graph, StubPerceiver(), chat, CONFIG, done=done, **kwargs)


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_records_hold_the_memorizer_question_and_the_checked_answer(tmp_path, embedder):
    out = tmp_path / "sft.jsonl"
    report = teach(out, tmp_path / "m.db", embedder, ScriptedChat(teacher_reply))
    assert report.to_dict() == {"video": VIDEO_CLIP.name, "records_written": 2, "already_written": 0,
                                "teacher_failed": 0, "empty_clips": 1}
    records = lines(out)
    fingerprint = content_fingerprint(VIDEO_CLIP)
    assert [r["id"] for r in records] == [f"{fingerprint}:0", f"{fingerprint}:1"]
    first = records[0]
    assert (first["clip"], first["start"], first["end"], first["teacher"]) == (0, 0.0, 5.0, "auto")
    user, assistant = first["messages"]
    assert user["role"] == "user" and assistant["role"] == "assistant"
    assert "Return one JSON object" in user["content"][0]["text"]  # the chat memorizer's own prompt
    assert any(part["type"] == "image_url" for part in user["content"])  # face crop and frames
    target = json.loads(assistant["content"])
    face = face_of(user["content"][0]["text"])
    assert target == {"episodic": [f"<face_{face}> stands on a stage and sings."],  # <face_999> checked out
                      "semantic": [f"<face_{face}> is a performer."]}
    second_face = face_of(records[1]["messages"][0]["content"][0]["text"])
    assert second_face == face  # identities persist across clips, as in memorization
    with MemoryGraph.open(tmp_path / "m.db", readonly=True, create=False) as graph:
        texts = [n.text for n in graph.store.text_nodes(graph.resolve_video(VIDEO_CLIP.name).id)]
    assert f"<face_{face}> is a performer." in texts and any(t.startswith("Equivalence:") for t in texts)


def test_an_interrupted_run_resumes_without_asking_a_clip_twice(tmp_path, embedder):
    out, db = tmp_path / "sft.jsonl", tmp_path / "m.db"

    def killed_on_second_clip(messages):
        if "(00:05 to" in messages[0]["content"][0]["text"]:
            raise KeyboardInterrupt
        return teacher_reply(messages)

    with pytest.raises(MemorizationInterrupted):
        teach(out, db, embedder, ScriptedChat(killed_on_second_clip))
    assert len(lines(out)) == 1
    with open(out, "a", encoding="utf-8") as fh:
        fh.write('{"id": "torn by the kill", "vid')  # a write cut short
    chat = ScriptedChat(teacher_reply)
    report = teach(out, db, embedder, chat)
    assert (report.written, report.skipped, len(chat.calls)) == (1, 0, 1)  # only the second clip was asked
    assert [r["clip"] for r in lines(out)] == [0, 1]
    # the DB gone but the records kept: perception runs again, the teacher is not asked again
    again = ScriptedChat(teacher_reply)
    report = teach(out, tmp_path / "fresh.db", embedder, again)
    assert (report.written, report.skipped, len(again.calls)) == (0, 2, 0) and len(lines(out)) == 2


def test_a_teacher_that_fails_gives_no_record_and_text_only_drops_images(tmp_path, embedder):
    out = tmp_path / "sft.jsonl"
    report = teach(out, tmp_path / "m.db", embedder, ScriptedChat(["no json here"]))
    assert (report.written, report.failed) == (0, 2) and not out.read_text()
    report = teach(tmp_path / "text.jsonl", tmp_path / "t.db", embedder, ScriptedChat(teacher_reply), text_only=True)
    assert report.written == 2
    assert all(isinstance(r["messages"][0]["content"], str) for r in lines(tmp_path / "text.jsonl"))


def test_foreign_out_file_is_refused(tmp_path):
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text("my notes\n")
    code = sft_teacher.main([str(VIDEO_CLIP), "--out", str(foreign), "--set", "memorize.chat.backend=scripted"])
    assert code == 2 and foreign.read_text() == "my notes\n"
    assert sft_teacher.main([str(VIDEO_CLIP), "--out", str(tmp_path / "x.jsonl")]) == 2  # no teacher configured


class CharTokenizer:
    """A stand-in tokenizer: one token per character, a plain chat template."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        text = "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages)
        return text + ("<assistant>" if add_generation_prompt else "")

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


def test_the_encoder_masks_the_question_and_the_collator_pads():
    record = {"id": "x", "messages": [{"role": "user", "content": [{"type": "text", "text": "Q?"},
                                                                  {"type": "image_url", "image_url": {"url": "d,AA"}}]},
                                      {"role": "assistant", "content": "A"}]}
    item = sft_train.Encoder(CharTokenizer())(record)
    assert "".join(map(chr, item["input_ids"])) == "<user>Q?</user><assistant>A</assistant>"
    assert "".join(chr(t) for t in item["labels"] if t != sft_train.IGNORE) == "A</assistant>"
    batch = sft_train.collate(0)([item, {"input_ids": [5], "labels": [5]}])
    assert batch["input_ids"].shape == batch["labels"].shape == batch["attention_mask"].shape
    assert batch["labels"][1, 1:].eq(sft_train.IGNORE).all() and batch["attention_mask"][1].sum() == 1
    with pytest.raises(sft_train.DataError, match="max-length"):
        sft_train.Encoder(CharTokenizer(), max_length=10)(record)


def test_records_are_read_without_rewriting_and_bad_ones_named(tmp_path):
    good = {"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps(good) + "\n" + '{"id": "b", "mess')
    assert sft_train.read_records(path) == [good] and path.read_text().endswith('"mess')
    path.write_text(json.dumps({"id": "c", "messages": [{"role": "user", "content": "q"}]}) + "\n")
    with pytest.raises(sft_train.DataError, match="not a chat record"):
        sft_train.read_records(path)


@pytest.mark.models  # reads the bundled SmolLM2 GGUF for its tokenizer
def test_train_dry_run_builds_and_tokenizes_the_records_on_cpu(tmp_path, embedder, capsys):
    out = tmp_path / "sft.jsonl"
    teach(out, tmp_path / "m.db", embedder, ScriptedChat(teacher_reply))
    code = sft_train.main(["--data", str(out), "--output", str(tmp_path / "ckpt"), "--dry-run", "--text-only"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 2 and summary["tokenized"] == 2
    first = summary["examples"][0]
    assert 0 < first["target_tokens"] < first["tokens"]  # the loss covers the answer only
    assert "is a performer" in first["target_text"]
    assert not (tmp_path / "ckpt").exists()  # a dry run trains nothing


@pytest.mark.models
def test_teacher_script_with_real_perception(tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([json.dumps({"episodic": ["Someone sings on a stage."], "semantic": []})]))
    out = tmp_path / "data" / "sft.jsonl"
    argv = [str(VIDEO_CLIP), "--out", str(out), "--quiet", "--set", "memorize.chat.backend=scripted",
            "--set", f"memorize.chat.model={replies}", "--set", "memorize.perception.clip_seconds=5",
            "--set", "embedder.backend=hashing"]
    assert sft_teacher.main(argv) == 0
    assert [r["clip"] for r in lines(out)] == [0, 1]
    episodic = json.loads(lines(out)[0]["messages"][1]["content"])["episodic"]
    assert episodic[0] == "Someone sings on a stage."  # the teacher's line, then what OCR read and scene changes
    assert all(line.startswith(("The text ", "The scene changes at ")) for line in episodic[1:])
    asked = lines(out)[0]["messages"][0]["content"]  # the teacher was asked what the chat memorizer asks
    prompt = next(part["text"] for part in asked if part.get("type") == "text")
    assert "Text on screen and scene changes" in prompt
    assert episodic[1:] and all(line in prompt for line in episodic[1:])  # what OCR read, in the question too
    texts = [part.get("text", "") for part in asked]
    assert any(t.startswith("Frames of the clip, in order") for t in texts)
    assert any(part.get("type") == "image_url" for part in asked)  # key frames first (tests/memorize/test_chat.py)
    assert list((tmp_path / "data" / "sft.memories").glob("*.db"))
    assert sft_teacher.main(argv) == 0 and len(lines(out)) == 2  # a re-run adds nothing


@pytest.mark.models  # trains the bundled SmolLM2-135M (dequantized from its GGUF) for one step on CPU
def test_train_one_step_on_cpu_saves_a_model(tmp_path):
    out = tmp_path / "sft.jsonl"
    answer = json.dumps({"episodic": ["<face_1> waves."], "semantic": ["<voice_2>'s name is Nora"]})
    record = {"id": "v:0", "video": "v", "clip": 0, "messages": [
        {"role": "user", "content": "Faces: <face_1> on screen 00:00-00:05. Speech: <voice_2>: my name is Nora."},
        {"role": "assistant", "content": answer}]}
    out.write_text(json.dumps(record) + "\n")  # one short record: a step costs seconds, not minutes
    ckpt = tmp_path / "ckpt"
    assert sft_train.main(["--data", str(out), "--output", str(ckpt), "--text-only", "--max-steps", "1",
                           "--grad-accum", "1"]) == 0
    assert (ckpt / "model.safetensors").stat().st_size > 100e6 and (ckpt / "tokenizer.json").exists()
