"""MemoryBench records, read from JSON lines, JSON, Parquet or a Hugging Face dataset folder (Arrow).

A record (the published schema): ``{test_idx, input_prompt | input_chat_messages, info, dataset_name, lang,
dialog, implicit_feedback: [{round, implicit_actions, satisfaction_score, terminated}]}``. ``info`` holds
what scoring needs (the reference answer, the task's options); ``dialog`` and ``implicit_feedback`` are the
recorded conversation with a simulated user, which the off-policy driver memorizes. A record that does
not fit is kept with its ``problem`` (the harness reports it and goes on); a source that cannot be read at
all is a :class:`MemoryBenchDataError`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3agent.errors import M3AgentError
from m3agent.files.jsonl import MAX_LINE, LineError, file_lines, loads, read_text, too_long

_UNREADABLE = "cannot read MemoryBench data {source}: {reason}"
#: how a case is keyed in results: one dataset's test_idx values are unique, several datasets' are not
CASE_KEY = "{dataset}:{test_idx}"


class MemoryBenchDataError(M3AgentError, ValueError):
    """A MemoryBench source that cannot be read (the message names the path and why)."""


@dataclass(frozen=True)
class FeedbackTurn:
    round: int
    actions: tuple[str, ...]
    satisfaction: float | None
    terminated: bool


@dataclass(frozen=True)
class MBRecord:
    dataset: str
    test_idx: str
    lang: str = "en"
    prompt: str | None = None
    messages: tuple[dict, ...] = ()
    info: dict = field(default_factory=dict)
    dialog: tuple[dict, ...] = ()
    feedback: tuple[FeedbackTurn, ...] = ()
    problem: str | None = None
    split: str | None = None  # "train" or "test" where the source is already split (the published layout)

    @property
    def key(self) -> str:
        return CASE_KEY.format(dataset=self.dataset, test_idx=self.test_idx)

    def question(self) -> str:
        """The user's request as one text: the prompt, or the last user message of the chat input."""
        if self.prompt:
            return self.prompt
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content", ""))
        return ""

    def reference(self) -> Any:
        """The reference answer in ``info`` (datasets name it differently)."""
        for key in ("golden_answer", "answer", "reference", "label", "target", "output"):
            if key in self.info and self.info[key] not in (None, ""):
                return self.info[key]
        return None


def _messages(value: Any) -> tuple[dict, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = loads(value)
    if not isinstance(value, list) or not all(isinstance(m, dict) and "content" in m for m in value):
        raise ValueError("input_chat_messages must be a list of {role, content}")
    return tuple({"role": str(m.get("role", "user")), "content": str(m["content"])} for m in value)


def _feedback(value: Any) -> tuple[FeedbackTurn, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = loads(value)
    if not isinstance(value, list):
        raise ValueError("implicit_feedback must be a list")
    turns = []
    for item in value:
        if not isinstance(item, dict):
            raise ValueError("implicit_feedback holds a non-object")
        actions = item.get("implicit_actions") or []
        if isinstance(actions, str):
            actions = [actions]
        score = item.get("satisfaction_score")
        turns.append(FeedbackTurn(int(item.get("round", len(turns) + 1)), tuple(str(a) for a in actions),
                                  None if score is None else float(score), bool(item.get("terminated", False))))
    return tuple(turns)


def parse_record(raw: Any, position: int, split: str | None = None) -> MBRecord:
    """One record; anything malformed gives a record with its ``problem`` instead of an exception."""
    if isinstance(raw, str):  # a line the reader could not parse says why
        return MBRecord("?", f"#{position}", problem=raw)
    if not isinstance(raw, dict):
        return MBRecord("?", f"#{position}", problem=f"record {position} is not a JSON object")
    dataset = str(raw.get("dataset_name") or raw.get("dataset") or "").strip()
    test_idx = raw.get("test_idx", raw.get("id"))
    if test_idx is None or test_idx == "":
        test_idx = f"#{position}"
    test_idx = str(test_idx)
    if not dataset:
        return MBRecord("?", test_idx, problem=f"record {position} has no dataset_name")
    try:
        info = raw.get("info") or {}
        if isinstance(info, str):
            info = loads(info)
        if not isinstance(info, dict):
            raise ValueError("info must be an object")
        prompt = raw.get("input_prompt")
        messages = _messages(raw.get("input_chat_messages"))
        if not (isinstance(prompt, str) and prompt.strip()) and not messages:
            raise ValueError("neither input_prompt nor input_chat_messages")
        # corpus datasets carry the dialogs of the published baselines instead of one of their own
        dialog = raw.get("dialog") or next((raw[k] for k in sorted(raw) if k.startswith("dialog_") and raw[k]), [])
        if isinstance(dialog, str):
            dialog = loads(dialog)
        if not isinstance(dialog, list):
            raise ValueError("dialog must be a list")
        return MBRecord(dataset, test_idx, str(raw.get("lang") or "en"),
                        prompt.strip() if isinstance(prompt, str) and prompt.strip() else None, messages, info,
                        tuple(d if isinstance(d, dict) else {"content": str(d)} for d in dialog),
                        _feedback(raw.get("implicit_feedback") or next(
                            (raw[k] for k in sorted(raw) if k.startswith("implicit_feedback_") and raw[k]), None)),
                        split=split or _split_name(raw.get("split")))
    except (ValueError, TypeError) as exc:
        return MBRecord(dataset, test_idx, problem=f"malformed record: {exc}")


def load_records(path: str | os.PathLike[str]) -> list[MBRecord]:
    """Every record of ``path``: a ``.jsonl``/``.json``/``.parquet`` file, a Hugging Face dataset folder
    (``save_to_disk`` Arrow files, read with pyarrow; ``datasets`` is not needed), or a folder of those."""
    path = Path(path)
    if not path.exists():
        raise MemoryBenchDataError(f"MemoryBench data not found: {path}")
    rows = list(_rows(path))
    return [parse_record(raw, n, split) for n, (raw, split) in enumerate(rows, start=1)]


def _split_name(value: Any) -> str | None:
    return value if value in ("train", "test") else None


def _rows(path: Path):
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".arrow", ".parquet", ".jsonl", ".json")
                       and p.name not in ("dataset_info.json", "state.json", "dataset_dict.json"))
        if not files:
            raise MemoryBenchDataError(f"{path} holds no .arrow, .parquet, .jsonl or .json records")
        for file in files:
            yield from _rows(file)
        return
    split = next((part for part in reversed(path.parts[:-1]) if part in ("train", "test")), None)
    for row in _file_rows(path):
        yield row, split


def _file_rows(path: Path):
    try:
        if path.suffix == ".arrow":
            yield from _arrow_rows(path)
        elif path.suffix == ".parquet":
            import pyarrow.parquet as pq

            yield from pq.read_table(path).to_pylist()
        elif path.suffix == ".json":
            data = loads(read_text(path, error=MemoryBenchDataError, unreadable=_UNREADABLE))
            yield from data if isinstance(data, list) else [data]
        else:
            for number, line in file_lines(path, error=MemoryBenchDataError, unreadable=_UNREADABLE):
                try:
                    yield loads(line) if line is not None else f"line {number} of {path.name} is {too_long(MAX_LINE)}"
                except LineError as exc:
                    yield f"line {number} of {path.name} is not JSON ({exc.msg})"
    except MemoryBenchDataError:
        raise
    except (OSError, LineError) as exc:
        raise MemoryBenchDataError(f"cannot read MemoryBench data {path}: {exc}") from exc
    except Exception as exc:  # pyarrow's own errors: a damaged Arrow or Parquet file
        raise MemoryBenchDataError(f"cannot read MemoryBench data {path}: {exc}") from exc


def _arrow_rows(path: Path):
    """Rows of an Arrow file as ``datasets.save_to_disk`` writes it (the IPC stream format)."""
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        try:
            table = pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            table = pa.ipc.open_file(source).read_all()
    yield from table.to_pylist()


def load_corpus(path: str | os.PathLike[str]) -> dict[str, list[dict]]:
    """A corpus dataset's conversation as turns ``{"id", "text", "time", "speaker", "session"}``, grouped by
    conversation. Reads the published layout (one row whose ``text`` is Locomo's conversation JSON, or
    DialSim's transcript with ``[Date: ..., Session #n]`` headers) and plain turns (JSON lines of those
    keys, with ``conversation``). A line that is not a JSON object is an error: a damaged corpus would
    otherwise answer its questions from part of the conversation, or none of it, without a word."""
    out: dict[str, list[dict]] = {}
    name = Path(path).stem
    for position, (row, _) in enumerate(_rows(Path(path)), start=1):
        if isinstance(row, str):
            raise MemoryBenchDataError(f"corpus {path}: {row}")
        if not isinstance(row, dict):
            raise MemoryBenchDataError(f"corpus {path}: row {position} is not a JSON object")
        if not row.get("text"):
            continue
        text = row["text"]
        if isinstance(text, str) and text.lstrip().startswith("{"):
            try:
                out.setdefault(name, []).extend(locomo_turns(loads(text)))
                continue
            except (LineError, ValueError, TypeError, AttributeError):
                pass
        if isinstance(text, str) and _DIALSIM.search(text):
            out.setdefault(name, []).extend(dialsim_turns(text))
            continue
        out.setdefault(str(row.get("conversation") or name), []).append(row)
    return out


_DIALSIM = re.compile(r"\[Date: (.*?), Session #(\d+)\]\n\n(.*?)(?=(?:\[Date:)|$)", re.S)


def locomo_turns(data: dict) -> list[dict]:
    """Turns of Locomo's conversation JSON (``session_N`` lists and ``session_N_date_time``)."""
    conversation = data.get("conversation", data)
    turns, n = [], 1
    while f"session_{n}" in conversation:
        when = conversation.get(f"session_{n}_date_time")
        for turn in conversation[f"session_{n}"]:
            text = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append({"id": turn.get("dia_id", f"D{n}:{len(turns)}"), "text": text, "time": when,
                          "speaker": turn.get("speaker"), "session": str(n)})
        n += 1
    if not turns:
        raise ValueError("no session_1 in the conversation")
    return turns


def dialsim_turns(text: str) -> list[dict]:
    """Turns of a DialSim transcript: ``[Date: D, Session #n]`` blocks of ``Speaker: text`` lines."""
    turns = []
    for date, number, body in _DIALSIM.findall(text):
        for i, line in enumerate(x for x in body.splitlines() if x.strip()):
            speaker, _, said = line.partition(":")
            turns.append({"id": f"D{number}:{i}", "text": said.strip() or line.strip(), "time": f"{date}, Session #{number}",
                          "speaker": speaker.strip() if said else None, "session": number})
    return turns
