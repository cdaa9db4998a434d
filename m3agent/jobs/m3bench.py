"""``m3agent bench m3``: every question of a benchmark through the control process, judged, into a report.

For each video: find its memory (our DB, an M3-Agent pickle converted once, or the video memorized first;
:mod:`m3agent.eval.memories`), answer its questions through the control loop ``control.batch_size`` at a
time (several videos at once with ``bench.workers``), and judge them. Every question gets one line in
``results.jsonl`` the moment it is answered (then again once judged), so a killed run loses nothing: a
re-run skips judged questions, judges answered ones again whose verdict is missing (or came from another
judge), and asks failed ones again. A question that cannot be answered (no memory, a corrupt one, a bad
annotation, a failing model or judge) gets its reason, and the run goes on. Models load only when a
question needs them, so a run with no memories at all finishes at once with every reason written. ``--out``
is a run folder (:mod:`m3agent.files.outfolder`): it belongs to one annotation file, memory folder and set of
answering settings, and a re-run resumes only for the same.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from m3agent.config import BUNDLED_ADAPTER, Config
from m3agent.errors import M3AgentError
from m3agent.eval.annotations import BenchItem, asked_early, timed
from m3agent.eval.grounding import answer_unfound
from m3agent.eval.judge import Judge, Verdict, choice_prompt, score_choice
from m3agent.eval.memories import MemoryPlan, plan_memory
from m3agent.eval.report import Summary, write_report
from m3agent.files.outfolder import claim, fingerprint, settings, staged
from m3agent.files.private import open_private
from m3agent.files.resumable import Appender, ResultsFile
from m3agent.media.fingerprint import content_fingerprint

if TYPE_CHECKING:
    from m3agent.control import Controller
    from m3agent.memory.graph import MemoryGraph

log = logging.getLogger(__name__)

RESULT_KEYS = frozenset({"id", "video", "question", "verdict"})
RESULTS_NAME = "results.jsonl"
OWN_NAMES = frozenset({RESULTS_NAME, "report.md", "summary.json", "accuracy_by_type.png", "converted"})


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_bench`, raised once every finished result is on disk."""

    def __init__(self, saved: int):
        super().__init__()
        self.saved = saved


@dataclass
class BenchSetup:
    """What the run reads and where it writes; the models are built on first need by the two factories."""

    memories: Path
    out: Path
    config: Config
    chat: Callable[[], object]  # -> ChatModel (the control model)
    judge: Callable[[], Judge]
    judge_label: str  # the judge's label, known without building it (see m3agent.factory.judge_label)
    videos: Path | None = None
    questions: str = ""  # fingerprint of the annotation file's questions (items may be a part); "": the items run
    progress: Callable[[int], None] | None = None
    notice: Callable[[str], None] = lambda text: log.info("%s", text)
    _built: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, name: str):
        with self._lock:
            if name not in self._built:
                self._built[name] = getattr(self, name)()
            return self._built[name]

    def open_memory(self, path: Path, **kwargs) -> MemoryGraph:
        """A memory DB opened with the run's settings (:func:`m3agent.factory.open_memory`); the memories of a
        run share their embedders, so each model loads once whichever video needs it first."""
        from m3agent.factory import SharedEmbedders, open_memory

        with self._lock:
            embedders = self._built.setdefault("embedders", SharedEmbedders(self.config.embedder))
        return open_memory(path, self.config, embedders=embedders, **kwargs)

    def controller(self, graph: MemoryGraph) -> Controller:
        """The control loop over ``graph`` with the run's control model (:func:`m3agent.factory.build_controller`)."""
        from m3agent.factory import build_controller

        return build_controller(graph, self.config, self.get("chat"))


def results_path(out: str | Path) -> Path:
    return Path(out) / RESULTS_NAME


def load_results(out: str | Path) -> dict[str, dict]:
    return ResultsFile(results_path(out), RESULT_KEYS, "m3agent bench").load()


# ------------------------------------------------------------------ a run as the command asks for it
@dataclass(frozen=True)
class M3BenchRequest:
    """What ``m3agent bench m3`` is asked for: its options, as given (paths relative to the working folder)."""

    annotations: str
    memories: str
    out: str
    videos: str | None = None
    limit: int | None = None
    format: str = "auto"
    duration: str | None = None
    evidence: str | None = None
    title: str | None = None
    feedback: bool = False
    correction_rate: float | None = None
    overrides: Sequence[str] = ()  # the --set options, repeated in the report's command line

    @property
    def benchmark(self) -> str:
        """The report's title: ``--title``, else the annotation file's name."""
        return self.title or Path(self.annotations).name


def select_questions(request: M3BenchRequest, config: Config) -> tuple[list[BenchItem], str]:
    """The questions the run asks (``--duration`` and ``--limit`` take a part of the file) and the fingerprint
    of the whole file's questions: the run folder belongs to the whole file."""
    from m3agent.config import ConfigError
    from m3agent.eval.annotations import read_annotations

    items = read_annotations(request.annotations, fmt=request.format, evidence=request.evidence,
                             clip_seconds=config.memorize.perception.clip_seconds)
    questions = fingerprint(items)
    if request.duration:
        items = [item for item in items if item.duration == request.duration]
    if request.limit is not None:
        if request.limit < 1:
            raise ConfigError(f"--limit must be >= 1 (got {request.limit})")
        items = items[:request.limit]
    return items, questions


def check_paths(request: M3BenchRequest) -> None:
    """``--memories`` and ``--videos`` are folders (memories may be missing where videos are given: the first
    memorization creates it), and ``--out`` would not write over the annotations."""
    from m3agent.config import ConfigError

    for flag, folder in (("--memories", request.memories), ("--videos", request.videos)):
        if folder is not None and not Path(folder).is_dir():
            if flag == "--memories" and request.videos is not None and not Path(folder).exists():
                continue  # created when the first video is memorized into it
            raise ConfigError(f"{flag} {folder} is not a folder")
    out = Path(request.out)
    if results_path(out).resolve() == Path(request.annotations).resolve():
        raise ConfigError(f"--out {out} would write over the annotations {request.annotations}")


def bench_setup(request: M3BenchRequest, config: Config, questions: str = "", *,
                progress: Callable[[int], None] | None = None,
                notice: Callable[[str], None] | None = None) -> BenchSetup:
    """The run's :class:`BenchSetup`: the control model and the judge ``config`` names, built on first need."""
    from m3agent import factory

    extra = {"notice": notice} if notice is not None else {}
    return BenchSetup(memories=Path(request.memories), out=Path(request.out), config=config,
                      chat=lambda: factory.build_chat(config.control.chat),
                      judge=lambda: factory.build_judge(config.bench.judge),
                      judge_label=factory.judge_label(config.bench.judge),
                      videos=Path(request.videos) if request.videos else None, questions=questions,
                      progress=progress, **extra)


def applied_adapter(chat) -> str:
    """The adapter the control model's local backend applies, in that backend's form (none: "")."""
    from m3agent.factory import chat_backend
    from m3agent.models.bundled import chat_adapter

    backend = chat_backend(chat.backend)
    if backend not in ("llamacpp", "transformers"):
        return ""
    return chat_adapter(chat.adapter, chat.model, "gguf" if backend == "llamacpp" else "peft")


def adapter_label(chat) -> str:
    """How a report names the control model's adapter: the one its local backend applies (none: nothing)."""
    if not applied_adapter(chat):
        return ""
    return " + the shipped control adapter" if chat.adapter == BUNDLED_ADAPTER else f" + adapter {chat.adapter}"


def adapter_identity(chat) -> str:
    """The content of the adapter file the control model applies (a fingerprint; "" for none): the setting
    ``control.chat.adapter=bundled`` names whatever adapter is shipped, so a run's answers must not be reused after
    that file changed."""
    path = applied_adapter(chat)
    if not path:
        return ""
    weights = Path(path) / "adapter_model.safetensors" if Path(path).is_dir() else Path(path)
    return content_fingerprint(weights) if weights.is_file() else str(path)


def run_context(request: M3BenchRequest, config: Config) -> dict[str, str]:
    """What produced the numbers, written at the top of the report: the command, the control model and its
    settings, the machine and the date."""
    import datetime
    import shlex

    from m3agent.factory import chat_backend
    from m3agent.jobs.machine import describe as describe_machine

    def shown(path) -> str:
        relative = os.path.relpath(path)
        return relative if not relative.startswith("..") else str(path)

    words = [w for o in request.overrides for w in ("--set", o)] + [
        "bench", "m3", "--annotations", shown(request.annotations), "--memories", shown(request.memories),
        "--out", shown(request.out)]
    for flag, value in (("--videos", request.videos), ("--limit", request.limit), ("--duration", request.duration),
                        ("--evidence", request.evidence)):
        if value is not None:
            words += [flag, shown(value) if flag in ("--videos", "--evidence") else str(value)]
    if request.format != "auto":
        words += ["--format", request.format]
    if request.feedback:
        words += ["--feedback"] + (["--correction-rate", f"{request.correction_rate:g}"]
                                   if request.correction_rate is not None else [])
    chat = config.control.chat
    model = chat.model or ("bundled SmolLM2-135M-Instruct" if chat.backend in ("", "auto") else "")
    search = config.memory.search
    threshold = search.threshold if search.threshold is not None else "the embedder's"
    return {"command": "m3agent " + shlex.join(words),
            "control model": chat_backend(chat.backend) + (f": {model}" if model else "") + adapter_label(chat),
            "control": f"{config.control.max_rounds} rounds, question searched first: {config.control.seed_search}"
                       + (" (and the person it describes)" if config.control.follow_names else "") + ", "
                       f"batches of {config.control.batch_size}; search top {search.top_k} clips, threshold {threshold}, "
                       f"{search.retrieval} ranking, {config.control.lessons} lessons shown"
                       + (" (only those about the question)" if config.control.lesson_gate else " (the nearest)"),
            "machine": describe_machine(),
            "date": datetime.date.today().isoformat()}


def run_identity(items: Sequence[BenchItem], setup: BenchSetup) -> dict:
    """What the answers of a run folder depend on, so a re-run reuses them only where these are the same: the
    questions (the annotation file as read, with its format and evidence; --limit and --duration take a part of
    it), the memories, the control loop's settings with its search and embedder, the adapter file's content. Not
    the judge: each verdict
    carries its judge's label, and another judge judges the kept answers again."""
    config = setup.config
    return {"annotation questions": setup.questions or fingerprint(list(items)),
            "memories": str(setup.memories.resolve()), **settings(config.control, "control"),
            "control.chat.adapter file": adapter_identity(config.control.chat),
            **settings(config.memory.search, "memory.search"), **settings(config.memory.index, "memory.index"),
            **settings(config.embedder, "embedder")}


def older_run(out: Path) -> bool:
    """A folder bench m3 wrote before run folders were marked: only names it writes, its results.jsonl ours
    (a foreign one is refused by :class:`ResultsFile`)."""
    names = set(os.listdir(out))
    if RESULTS_NAME not in names or not names <= OWN_NAMES:
        return False
    load_results(out)
    return True


def status(record: dict | None, judge_label: str | None) -> str:
    """``done`` (judged by this judge), ``judge`` (answered, no verdict from it yet) or ``ask``."""
    if record is None or record.get("error") or record.get("answer") is None:
        return "ask"
    verdict = record.get("verdict") or {}
    if verdict.get("correct") is None or (judge_label is not None and verdict.get("judge") != judge_label):
        return "judge"
    return "done"


def run_bench(items: Sequence[BenchItem], setup: BenchSetup, *, benchmark: str = "M3-Bench",
              context: dict[str, str] | None = None) -> Summary:
    """Answer, judge and report ``items``; returns the summary written to ``setup.out``."""
    claim(setup.out, "bench m3", run_identity(items, setup), older=older_run)
    results = ResultsFile(results_path(setup.out), RESULT_KEYS, "m3agent bench")
    earlier = results.load()
    by_video: dict[str, list[BenchItem]] = {}
    for item in items:
        by_video.setdefault(item.video, []).append(item)
    todo = {video: [i for i in group if status(earlier.get(i.id), _label(i, setup.judge_label)) != "done"]
            for video, group in by_video.items()}
    if setup.progress:
        setup.progress(sum(len(group) for group in by_video.values()) - sum(len(g) for g in todo.values()))
    with results.appender() as out:
        writer = _Writer(out, setup.progress)
        stop = threading.Event()
        work = [(video, group) for video, group in todo.items() if group]
        try:
            if setup.config.bench.workers <= 1:
                for video, group in work:
                    _video(video, group, earlier, setup, writer, stop)
            else:
                with ThreadPoolExecutor(setup.config.bench.workers) as pool:
                    futures = [pool.submit(_video, video, group, earlier, setup, writer, stop) for video, group in work]
                    try:
                        for future in futures:
                            future.result()
                    except KeyboardInterrupt:  # videos not started are dropped; running ones stop after their batch
                        stop.set()
                        pool.shutdown(wait=True, cancel_futures=True)
                        raise
        except KeyboardInterrupt as exc:
            stop.set()
            raise BenchInterrupted(writer.count) from exc
    final = results.load()
    records = [final[item.id] for item in items if item.id in final]
    choice = any(i.multiple_choice for i in items)
    judge_text = "the chosen letter against the key (no judge model)" if choice else setup.judge_label
    if choice and not all(i.multiple_choice for i in items):
        judge_text += f"; free answers: {setup.judge_label}"
    with staged(setup.out) as folder:  # each file of the report replaces the last one's at once
        return write_report(records, folder, benchmark, judge_text, context=context)


def _label(item: BenchItem, judge_label: str | None) -> str | None:
    return "choice" if item.multiple_choice else judge_label


class _Writer:
    """One results line at a time (worker threads share it); counts and reports progress."""

    def __init__(self, out: Appender, progress: Callable[[int], None] | None):
        self.out, self.progress, self.count = out, progress, 0
        self._lock = threading.Lock()

    def write(self, record: dict, finished: bool = True) -> None:
        with self._lock:
            self.out.write(record)
            if finished:
                self.count += 1
                if self.progress:
                    self.progress(1)


def _base(item: BenchItem) -> dict:
    record = {"id": item.id, "video": item.video, "types": list(item.types), "question": item.question,
              "reference": item.reference, "before_clip": item.before_clip, "timestamp": item.timestamp,
              "evidence": list(item.evidence)}
    if item.options:
        record["options"] = list(item.options)
    return record


def _failed(item: BenchItem, stage: str, reason: str) -> dict:
    return {**_base(item), "answer": None, "verdict": None, "error": reason, "stage": stage}


def _video(video: str, group: list[BenchItem], earlier: dict[str, dict], setup: BenchSetup, writer: _Writer,
           stop: threading.Event) -> None:
    """All pending questions of one video: bad annotations recorded, answered ones re-judged, the rest asked. A
    question asked before the first clip ends waits for the memory: its clips may be shorter than configured."""
    ask, rejudge = [], []
    for item in group:
        if item.problem and not asked_early(item):
            writer.write(_failed(item, "annotation", item.problem))
        elif status(earlier.get(item.id), None) != "ask":  # answered: only its verdict is missing or stale
            rejudge.append((item, earlier[item.id]))
        else:
            ask.append(item)
    _judge_and_write(rejudge, setup, writer)
    if not ask or stop.is_set():
        return
    plan = ready_memory(video, ask, setup, writer)
    if plan is not None:
        _answer(plan, ask, setup, writer, stop)


def ready_memory(video: str, items: list[BenchItem], setup: BenchSetup, writer: _Writer) -> MemoryPlan | None:
    """The video's memory, converted or memorized first if need be; None (every item told why) if there is none."""
    first = items[0]
    plan = plan_memory(video, setup.memories, setup.out / "converted", mem_path=first.mem_path,
                       video_path=first.video_path, videos=setup.videos)
    problem = plan.problem or _prepare(plan, setup)
    if problem:
        for item in items:
            writer.write(_failed(item, "memory", problem))
        return None
    return plan


_MEMORIZING = threading.Lock()  # one memorization at a time: the models of a process are shared


def _prepare(plan: MemoryPlan, setup: BenchSetup) -> str:
    """Convert the M3-Agent pickle or memorize the video the plan names; the reason it failed, or ""."""
    if plan.pickle is not None:
        return _convert(plan, setup)
    if plan.video_file is None:
        return ""
    from m3agent.jobs.batch import VideoJob, memorize_job

    with _MEMORIZING:
        setup.notice(f"memorizing {plan.video_file} into {plan.db}")
        job = memorize_job(VideoJob(str(plan.video_file), plan.video, str(plan.db)), setup.config)
    if job.status == "failed":
        return f"memorizing {plan.video_file} failed: {job.error}"
    return ""


def _convert(plan: MemoryPlan, setup: BenchSetup) -> str:
    """Import the pickle into the run's own DB once (a marker records which pickle it holds)."""
    from m3agent.memory.m3_import import load_m3_pickle

    marker = plan.db.with_name(plan.db.name + ".imported.json")
    fingerprint = content_fingerprint(plan.pickle)
    try:
        if json.loads(marker.read_text()).get("fingerprint") == fingerprint and plan.db.is_file():
            return ""
    except (OSError, ValueError, AttributeError):
        pass
    try:
        source = load_m3_pickle(plan.pickle)
        with _MEMORIZING, setup.open_memory(plan.db, create=True) as graph:
            stats = graph.import_m3(source, plan.video)
    except M3AgentError as exc:
        return f"cannot use the M3-Agent memory {plan.pickle}: {exc}"
    with open_private(marker, "w", encoding="utf-8") as fh:
        json.dump({"pickle": str(plan.pickle), "fingerprint": fingerprint, **stats}, fh)
    return ""


def _open(plan: MemoryPlan, setup: BenchSetup, item: BenchItem):
    """The memory, read-only, and this video in it; raises a project error naming the cause."""
    from m3agent.memory.errors import MemoryStoreError

    graph = setup.open_memory(plan.db, readonly=True)
    try:
        videos = graph.videos()
        if len(videos) == 1:
            return graph, videos[0]
        for name in (plan.video, Path(item.video_path).name, Path(item.video_path).stem):
            match = [v for v in videos if name and v.name == name]
            if match:
                return graph, match[0]
        names = ", ".join(repr(v.name) for v in videos) or "none"
        raise MemoryStoreError(f"{plan.db} holds {len(videos)} videos ({names}), none named {plan.video!r}")
    except BaseException:
        graph.close()
        raise


def _answer(plan: MemoryPlan, items: list[BenchItem], setup: BenchSetup, writer: _Writer,
            stop: threading.Event) -> None:
    from m3agent.control import Question

    try:
        graph, video = _open(plan, setup, items[0])
    except M3AgentError as exc:
        for item in items:
            writer.write(_failed(item, "memory", f"cannot open the memory {plan.db}: {exc}"))
        return
    video_id = video.id
    items = [timed(item, video.clip_seconds) for item in items]  # in the clips the memory was cut into
    with graph:
        try:
            controller = setup.controller(graph)
        except M3AgentError as exc:  # the control model cannot start: every question says so
            for item in items:
                writer.write(_failed(item, "answer", f"the control model cannot start: {exc}"))
            return
        size = max(1, setup.config.control.batch_size)
        for start in range(0, len(items), size):
            if stop.is_set():
                return
            group, asked, answered = items[start:start + size], [], []
            for item in group:
                if item.problem:  # asked before the first clip of this memory ends
                    writer.write(_failed(item, "annotation", item.problem))
                    continue
                try:
                    asked.append((item, Question(choice_prompt(item) if item.multiple_choice else item.question,
                                                 item.before_clip, video_id)))
                except M3AgentError as exc:
                    writer.write(_failed(item, "annotation", str(exc)))
            for index, answer in controller.iter_answers([q for _, q in asked]):
                item = asked[index][0]
                record = {**_base(item), **_answer_fields(answer, choice=item.multiple_choice)}
                if answer.error:
                    writer.write({**record, "verdict": None, "stage": "answer"})
                else:
                    writer.write({**record, "verdict": None}, finished=False)  # saved before it is judged
                    answered.append((item, record))
            _judge_and_write(answered, setup, writer)


def _answer_fields(answer, *, choice: bool = False) -> dict:
    """What a record keeps of ``answer``; a free-form answer also lists its words no note shown holds (``unfound``:
    invented, :mod:`m3agent.eval.grounding`), and the model's own answer when a note was quoted in its place
    (``quoted``); a letter chosen from options does neither."""
    data = answer.to_dict()
    clips = list(dict.fromkeys(hit["clip"] for hit in answer.evidence))
    fields = {"answer": None if answer.error else answer.answer, "rounds": data["rounds"], "clips": clips,
              "model_rounds": sum(1 for r in answer.rounds if r.by == "model"), "seconds": data["seconds"],
              "tokens": data["tokens"], "error": answer.error}
    if not answer.error and not choice:
        fields["unfound"] = answer_unfound(answer)
        if answer.rounds and answer.rounds[-1].replaced_by == "quote":  # the model's own answer, mostly invented
            fields["quoted"] = answer.rounds[-1].replaced
    return fields


def _judge_and_write(pairs: list[tuple[BenchItem, dict]], setup: BenchSetup, writer: _Writer) -> None:
    if not pairs:
        return
    choice = [(i, r) for i, r in pairs if i.multiple_choice]
    free = [(i, r) for i, r in pairs if not i.multiple_choice]
    verdicts: list[tuple[dict, Verdict]] = [(r, score_choice(i, r["answer"])) for i, r in choice]
    if free:
        try:
            judged = setup.get("judge").judge_many([(i, r["answer"]) for i, r in free])
        except M3AgentError as exc:  # a judge that cannot even start: no verdict, and the run goes on
            log.warning("the judge failed: %s", exc)
            judged = [Verdict(None, setup.judge_label, reason=f"the judge cannot start: {exc}") for _ in free]
        verdicts += [(r, v) for (_, r), v in zip(free, judged)]
    for record, verdict in verdicts:
        stage = {"stage": "judge"} if verdict.correct is None else {}
        writer.write({**{k: v for k, v in record.items() if k != "stage"}, "verdict": verdict.to_dict(), **stage})
