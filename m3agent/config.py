"""One typed configuration tree, built from defaults, a TOML file, the environment and CLI overrides.

Nothing is read at import time: call :func:`load_config` where the program starts and pass the
result down. Overrides are dotted paths, as in ``memory.search.top_k=3``; environment variables use
``M3AGENT__`` and double underscores (``M3AGENT__MEMORY__SEARCH__TOP_K=3``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3agent.errors import M3AgentError

ENV_PREFIX = "M3AGENT__"
RETRIEVAL_MODES = ("fused", "dense", "lexical")
#: the clip length videos are memorized in unless configured (``memorize.perception.clip_seconds``), M3-Agent's.
#: A memory stores the length each of its videos was cut into (``Video.clip_seconds``): once a video exists,
#: that stored value is the one to count its clips in, never this default or the configured one.
DEFAULT_CLIP_SECONDS = 30.0
#: ``ChatConfig.adapter`` naming the control adapter this project trained and ships (on the bundled model only)
BUNDLED_ADAPTER = "bundled"


@dataclass(frozen=True)
class EmbedderConfig:
    """Text embedder. ``model`` empty means the bundled all-MiniLM-L6-v2 package."""

    backend: str = "sentence-transformers"
    model: str = ""
    device: str = "cpu"
    batch_size: int = 64
    #: up to this many texts (a query and its variants) are encoded on one CPU thread: waking torch's other
    #: threads costs more than they save on a few short texts (MiniLM per query under load: 156 ms with all
    #: threads, 17 ms with one). Larger batches keep all threads. 0: always all threads
    single_thread_texts: int = 8


@dataclass(frozen=True)
class IndexConfig:
    """Vector index. ``auto`` searches exactly below ``ann_threshold`` text nodes and uses IVF above."""

    backend: str = "auto"
    ann_threshold: int = 20_000
    target_recall: float = 0.95  # on deliberately hard synthetic probes; real questions score higher
    nprobe: int = 0  # 0 = calibrate at build time to reach target_recall


@dataclass(frozen=True)
class SearchConfig:
    """M3-Agent search semantics: clip-level top-k with a score threshold."""

    top_k: int = 2
    threshold: float | None = None  # None: the embedder's relevance_threshold (M3-Agent: 0.5)
    line_top_k: int = 20  # lines returned for a "character id" query
    max_query_variants: int = 100
    name_variants: bool = True  # also search with known names replaced by their <character_k> ids
    #: how lines are ranked: "fused" (reciprocal-rank fusion of BM25 over the DB's FTS5 index and the
    #: vectors), "dense" (vectors only, M3-Agent's search) or "lexical" (BM25 only)
    retrieval: str = "fused"
    rrf_k: int = 60  # reciprocal-rank fusion: a line ranked r adds 1 / (rrf_k + r)
    lexical_top: int = 20  # lexical candidates per search
    lexical_postings: int = 1000  # lines BM25 may score per search (rarest query words first)
    #: a lesson shown to the control model scores at least this against the question (it is about that question);
    #: None: the embedder's lesson_threshold
    lesson_threshold: float | None = None


@dataclass(frozen=True)
class MemoryConfig:
    face_snapshots: int = 10
    voice_snapshots: int = 20
    crops_per_face: int = 5
    reinforce_cosine: float = 0.85
    index: IndexConfig = field(default_factory=IndexConfig)
    search: SearchConfig = field(default_factory=SearchConfig)


@dataclass(frozen=True)
class PerceptionConfig:
    """Clips, frames and the perception backends. Zero thresholds mean "the backend's default"."""

    clip_seconds: float = DEFAULT_CLIP_SECONDS
    fps: float = 1.0
    max_side: int = 1280  # frames are decoded at most this large (720p stays whole: small faces need it)
    decoder: str = "pyav"  # or "decord" (pip install decord)
    device: str = "cpu"
    face_backend: str = "retinaface"  # or "dlib" (HOG), "insightface" (buffalo_l, GPU)
    face_model_dir: str = ""  # insightface buffalo_l lives here
    face_min_score: float = 0.0  # the detector's own scale: retinaface 0.9, dlib 0.5, insightface 0.5
    face_min_size: int = 0  # smaller boxes are dropped as noise: retinaface 16 px, dlib and insightface 40 px
    face_max_side: int = 0  # faces are looked for at most this large: retinaface 1280, dlib 960
    face_min_embed_size: int = 30  # smaller faces are counted as seen, never identified (no embedding)
    face_search_changes: bool = True  # after a clip's first frame, detect faces only where the frame changed
    face_distance: float = 0.0
    voice_backend: str = "campp"  # or "resemblyzer" (GE2E, 256-d)
    voice_cosine: float = 0.0  # 0: the backend's calibrated same-speaker cosine
    # two voice nodes of a video fold into one when they are this much closer than the matching threshold (with a
    # face in common: at the threshold; linked to different faces, heard in one clip or named differently: never)
    voice_face_margin: float = 0.03
    min_segment_seconds: float = 1.0  # shorter speech gets no voice embedding ("Someone says")
    min_new_voice_seconds: float = 2.5  # less speech than this may match a voice node, not create one
    asr_backend: str = "faster-whisper"
    asr_model: str = ""  # empty: the bundled Whisper tiny.en
    asr_language: str = "en"
    #: Whisper's beam search (1: greedy). 5 beams: a third fewer word errors on speech with known lines for about a
    #: quarter more recognition time (bench/perf_asr.py)
    asr_beam_size: int = 5
    text_backend: str = "rapidocr"  # on-screen text reader ("" : none; shots and key frames are found either way)
    text_frames: int = 4  # key frames read whole per clip at most (each shot's first frame; the longest shots first)
    text_regions: int = 3  # regions that changed and settled inside a shot, read per clip at most (largest first)
    text_min_score: float = 0.8  # lines the reader is less sure of are dropped
    text_max_lines: int = 24  # lines recognised per read at most (the largest): a page of text costs a bounded time
    text_detect_side: int = 736  # text is looked for in frames scaled to this long side, read from full-size pixels


@dataclass(frozen=True)
class ChatConfig:
    """A chat model. ``backend``: ``auto`` (the embedded SmolLM2 GGUF through llama-cpp-python, else
    transformers), ``openai`` (any OpenAI-compatible server), ``vllm`` (in-process, GPU),
    ``transformers``, ``llamacpp``, ``scripted`` (replies from the JSON file in ``model``).
    ``model`` empty means the bundled GGUF (local backends) or the server's only model (``openai``)."""

    backend: str = "auto"
    model: str = ""
    #: a LoRA adapter on ``model``: a GGUF adapter file (llamacpp: llama.cpp applies it) or PEFT's folder
    #: (transformers: merged into the weights); ``bundled``: the control adapter shipped with m3agent (applied to
    #: the bundled model only); empty: the model as it is
    adapter: str = ""
    #: llamacpp: merge the adapter into a copy of the model's weights once (cached, see
    #: :mod:`m3agent.models.llm.merged_gguf`) instead of applying it at every token, which decodes slower
    merge_adapter: bool = True
    base_url: str = ""  # e.g. http://gpu-node:8000/v1 for a vLLM server
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable, never from config
    api_version: str = ""  # set for Azure OpenAI (base_url is then the Azure endpoint)
    timeout: float = 120.0  # seconds per request (local backends stop generating and keep the partial text)
    retries: int = 2  # further attempts after a timeout, refused connection or server error
    concurrency: int = 8  # requests in flight at once (openai backend)
    context: int = 8192  # context window of local models
    #: CPU threads of local models (llamacpp: to decode and to read the prompt; transformers: torch's). 0: the
    #: library's default (llama.cpp decodes on half the cores and reads on all; torch uses all). 1 on a shared
    #: machine: threads that wait for each other on busy cores decode several times slower than one
    threads: int = 0
    #: decode a reply under the grammar of the format its caller asks for (the control step's ``Action:``/
    #: ``Content:``): llamacpp in process; openai only with ``grammar_field``; other backends ignore it
    grammar: bool = True
    grammar_field: str = ""  # openai: the request field a server reads GBNF from ("grammar": llama.cpp's server)
    device: str = "cpu"  # transformers: cpu / cuda
    dtype: str = "auto"  # transformers / vllm weights dtype
    tensor_parallel: int = 1  # vllm
    gpu_memory: float = 0.9  # vllm: fraction of GPU memory to use
    seed: int = 0


@dataclass(frozen=True)
class MemorizeConfig:
    memorizer: str = "grounded"  # or "chat": a VLM through ``chat`` describes each clip
    chat: ChatConfig = field(default_factory=ChatConfig)
    chat_retries: int = 1
    crops_per_clip: int = 2
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)


@dataclass(frozen=True)
class ControlConfig:
    """The search/answer loop (M3-Agent: H = 5 rounds)."""

    max_rounds: int = 5
    max_tokens: int = 1024
    temperature: float = 0.0
    seed_search: bool = True  # search the question itself before round 1 (M3-Agent starts with no evidence)
    #: after the seed search, search once more for the person the note nearest the question names where the
    #: question only describes them ("the person who moved the hairdryer"): the second hop's line is in another clip.
    #: Off: the shipped adapter gains questions of two hops and loses others with it, and answers slower (RESULTS.md)
    follow_names: bool = False
    lessons: int = 3  # procedural lines (feedback learned earlier) shown with the question; 0: none
    #: show only lessons about the question asked (memory.search.lesson_threshold), not the nearest others: a
    #: lesson's answer is copied, and another question's answer is wrong here
    lesson_gate: bool = True
    #: an answer that repeats what the user called wrong for this very question (a lesson shown says so) gives
    #: the user's correction instead: a small model does not always take a correction over memory's line
    hold_corrections: bool = True
    #: an answer mostly made of words no note shown holds gives the note nearest the question instead (the model's
    #: answer stays in the trace): a small model that misses its line answers from what it knew before
    quote_invented: bool = True
    batch_size: int = 16  # questions `m3agent qa` moves through their rounds together
    #: the bundled SmolLM2 with the adapter ``m3agent train control`` trained (``chat.adapter=`` for the model alone)
    chat: ChatConfig = field(default_factory=lambda: ChatConfig(adapter=BUNDLED_ADAPTER))


@dataclass(frozen=True)
class JudgeConfig:
    """Who decides whether an answer is right. ``offline`` (normalized containment, or token F1 with no number or
    half of the ground truth swapped; no model: for CI, and not the paper's judge) or ``chat``: M3-Agent's yes/no question "can the ground truth be
    inferred from the answer?" put to ``chat`` at temperature 0 (the paper used GPT-4o)."""

    backend: str = "offline"
    retries: int = 2  # further asks after a reply that is neither yes nor no
    f1: float = 0.5  # offline: token F1 at or above this counts as right
    chat: ChatConfig = field(default_factory=ChatConfig)


@dataclass(frozen=True)
class MemoryBenchConfig:
    """MemoryBench: the systems scored, the simulated user and judge models, and the drivers' sizes
    (the published ones by default: batches of 100, 10 on-policy steps, 3 answers per dialog)."""

    systems: str = "core,bm25-m,bm25-s,embed-m,embed-s"  # comma-separated
    answer: ChatConfig = field(default_factory=ChatConfig)  # the model the systems answer with
    user: ChatConfig = field(default_factory=ChatConfig)  # plays the user (LLM-as-user path)
    judge: ChatConfig = field(default_factory=ChatConfig)  # grades judge-scored datasets
    top_k: int = 5  # memory lines shown per answer
    lessons: int = 3  # procedural lines shown per answer (systems that learn them)
    batch: int = 100
    steps: int = 10
    max_rounds: int = 3
    seed: int = 42
    max_tokens: int = 512


@dataclass(frozen=True)
class BenchConfig:
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    workers: int = 1  # videos answered at once (their questions share the control backend)
    memorybench: MemoryBenchConfig = field(default_factory=MemoryBenchConfig)


@dataclass(frozen=True)
class RewardConfig:
    """The control task's reward: the judge's verdict (1 right, 0 wrong or undecided), minus optional shaping,
    each off by default (0): ``id_penalty`` once when the raw answer still holds character, face or voice ids
    (the prompt asks for names), ``malformed_penalty`` per model reply that followed no ``Action:`` format,
    ``round_cost`` per model round used (rewards answering with fewer searches)."""

    judge: JudgeConfig = field(default_factory=JudgeConfig)
    id_penalty: float = 0.0
    malformed_penalty: float = 0.0
    round_cost: float = 0.0


@dataclass(frozen=True)
class MemoryBuildConfig:
    """The memory-construction policy (Mem-alpha style, :mod:`m3agent.memory_tools`): a chat model reads a stream in
    chunks and keeps memory with insert/update/delete/search tools. As the ``memory-build`` environment its
    episode reward is ``accuracy - size_penalty * min(1, memory chars / stream chars) - format_penalty *
    (share of replies with a malformed call)``, accuracy being the held-out questions the judge finds
    answered by what memory recalls for them (the core block and ``answer_lines`` lines): the training judge,
    ``train.reward.judge`` (offline by default: cheap and deterministic)."""

    chat: ChatConfig = field(default_factory=ChatConfig)  # the policy; left at its defaults, control.chat is used
    chunk_records: int = 8  # consecutive records of one session read as one chunk (at most this many)
    core_chars: int = 1000  # the core block (shown at every step) holds at most this many characters
    line_chars: int = 600  # one semantic or episodic line holds at most this many
    max_calls: int = 16  # tool calls run per reply; the rest are reported to the model, not run
    shown_lines: int = 5  # stored lines related to a chunk shown beside it, with their ids (0: none)
    search_lines: int = 5  # lines a search call returns when it gives no "k"
    max_search_lines: int = 20
    max_tokens: int = 1024  # per policy reply
    temperature: float = 0.0
    answer_lines: int = 5  # lines recalled per held-out question (environment reward)
    size_penalty: float = 0.2  # 0.2: storing the whole stream verbatim costs a fifth of full accuracy
    format_penalty: float = 0.1  # all replies malformed costs this much


@dataclass(frozen=True)
class TrainConfig:
    """RL training of the control model (``pipelines/train``): the environment the verl agent loop drives, its
    reward, and how ``m3agent train-data`` splits questions into train and validation sets (by video)."""

    env: str = "control"  # registered env backend (m3agent.registry kind "env")
    reward: RewardConfig = field(default_factory=RewardConfig)
    val_fraction: float = 0.1  # share of videos (not questions) held out for validation
    seed: int = 42
    # sections of further environments go below (the memory-construction env adds its own here)
    memory_build: MemoryBuildConfig = field(default_factory=MemoryBuildConfig)  # the "memory-build" env


@dataclass(frozen=True)
class AppConfig:
    """``m3agent app``: the Gradio demo. It reads files only inside ``data_dir`` and serves only the videos
    there and the media Gradio caches for the page (face crops, voice samples): never a memory DB or ``.app/``."""

    data_dir: str = "m3agent-data"  # videos, uploads (uploads/), memories (memories/), the app's state (.app/)
    host: str = "127.0.0.1"  # another address makes the app reachable from other machines: on purpose only
    #: names the app also answers as, space-separated, beside 127.0.0.1, localhost, [::1] and ``host`` (unless
    #: 0.0.0.0): the machine's names or addresses when bound to 0.0.0.0. Any other Host header is refused
    allowed_hosts: str = ""
    port: int = 7860  # 0: a free port
    max_upload_mb: int = 2048
    video_types: str = ".mp4 .mkv .mov .webm .avi .m4v"  # file name endings an upload may have


@dataclass(frozen=True)
class Config:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    memorize: MemorizeConfig = field(default_factory=MemorizeConfig)
    control: ControlConfig = field(default_factory=ControlConfig)
    bench: BenchConfig = field(default_factory=BenchConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    app: AppConfig = field(default_factory=AppConfig)


class ConfigError(M3AgentError, ValueError):
    """A configuration key or value that does not fit the typed tree."""


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        annotation = args[0]
    if annotation is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key}: expected a boolean, got {value!r}")
    if annotation is str:
        return str(value)
    if annotation not in (int, float):
        return value
    number = value
    if isinstance(value, str):  # from --set or the environment
        for convert in (int, float):
            try:
                number = convert(value)
                break
            except ValueError:
                pass
    if isinstance(number, int | float) and not isinstance(number, bool):
        if annotation is float:
            with contextlib.suppress(OverflowError):  # an int too large for a float
                return float(number)
        elif isinstance(number, int) or number.is_integer():  # 2 and 2.0 are whole numbers; 1.5, inf and nan are not
            return int(number)
    raise ConfigError(f"{key}: expected {annotation.__name__}, got {value!r}")


def _merge(obj: Any, data: Mapping[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(type(obj))
    names = {f.name for f in dataclasses.fields(obj)}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        path = f"{prefix}{name}"
        if name not in names:
            raise ConfigError(f"unknown config key {path!r}")
        current = getattr(obj, name)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{path}: expected a table of settings")
            changes[name] = _merge(current, value, path + ".")
        else:
            changes[name] = _coerce(value, hints[name], path)
    return dataclasses.replace(obj, **changes)


def _nest(path: str, value: Any) -> dict[str, Any]:
    parts = [p for p in path.split(".") if p]
    if not parts:
        raise ConfigError(f"empty config key in {path!r}")
    out: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        out = {part: out}
    return out


def parse_override(text: str) -> dict[str, Any]:
    """``"memory.search.top_k=3"`` -> ``{"memory": {"search": {"top_k": "3"}}}``."""
    key, sep, value = text.partition("=")
    if not sep:
        raise ConfigError(f"override must look like key.path=value, got {text!r}")
    return _nest(key.strip(), value.strip())


def load_config(
    path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Iterable[str] = (),
) -> Config:
    """Defaults <- TOML file <- ``M3AGENT__*`` environment <- ``key=value`` overrides."""
    config = Config()
    if path is not None:
        table = _read_toml(Path(path))
        try:
            config = _merge(config, table)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
    for key, value in sorted((env if env is not None else {}).items()):
        if key.startswith(ENV_PREFIX):
            dotted = key[len(ENV_PREFIX):].lower().replace("__", ".")
            config = _merge(config, _nest(dotted, value))
    for item in overrides:
        config = _merge(config, parse_override(item))
    validate(config)
    return config


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML table; a file that is missing, not UTF-8 text (a BOM is fine) or not TOML is a
    :class:`ConfigError` in one line, never a traceback."""
    try:
        data = path.read_bytes()
        return tomllib.loads(data.decode("utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"cannot read config file {path}: line {line} is not UTF-8 text "
                          f"(byte 0x{data[exc.start]:02x})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read config file {path}: not valid TOML: {exc}") from exc


#: numbers that must be > 0, per settings class; every other number must be >= 0 unless it is in _SIGNED
_POSITIVE = {
    EmbedderConfig: {"batch_size"},
    SearchConfig: {"top_k", "line_top_k", "max_query_variants", "rrf_k", "lexical_postings"},
    MemoryConfig: {"face_snapshots", "voice_snapshots"},
    PerceptionConfig: {"clip_seconds", "fps", "max_side", "text_max_lines", "text_detect_side", "asr_beam_size"},
    ChatConfig: {"timeout", "concurrency", "context", "tensor_parallel", "gpu_memory"},
    ControlConfig: {"max_rounds", "max_tokens", "batch_size"},
    BenchConfig: {"workers"},
    MemoryBenchConfig: {"top_k", "batch", "steps", "max_rounds", "max_tokens"},
    MemoryBuildConfig: {"chunk_records", "core_chars", "line_chars", "max_calls", "search_lines", "max_search_lines",
                        "max_tokens", "answer_lines"},
}
_SIGNED = {SearchConfig: {"threshold", "lesson_threshold"}, MemoryConfig: {"reinforce_cosine"}, ChatConfig: {"seed"}}
_AT_MOST_ONE = {IndexConfig: {"target_recall"}, PerceptionConfig: {"text_min_score"}, MemoryConfig: {"reinforce_cosine"}, ChatConfig: {"gpu_memory"},
                JudgeConfig: {"f1"}, TrainConfig: {"val_fraction"}}

#: no setting counts past this (the largest whole number a float and JSON keep exactly; SQLite stops at 2**63)
_LARGEST = 2**53


def _check_numbers(settings: Any, prefix: str = "") -> None:
    """Every number finite and in its range, so that fps=0 or top_k=0 fails here, not deep in a run."""
    kind = type(settings)
    for f in dataclasses.fields(settings):
        value, path = getattr(settings, f.name), prefix + f.name
        if dataclasses.is_dataclass(value):
            _check_numbers(value, path + ".")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        rule = None
        if isinstance(value, float) and not math.isfinite(value):
            rule = "be a finite number"
        elif f.name in _POSITIVE.get(kind, ()) and value <= 0:
            rule = "be > 0"
        elif value < 0 and f.name not in _SIGNED.get(kind, ()):
            rule = "be >= 0"
        elif value > 1 and f.name in _AT_MOST_ONE.get(kind, ()):
            rule = "be <= 1"
        elif abs(value) > _LARGEST:
            rule = f"be at most {_LARGEST:.0e} in size"
        if rule:
            raise ConfigError(f"{path} must {rule} (got {value:g})" if isinstance(value, float) else
                              f"{path} must {rule} (got {value})")


def validate(config: Config) -> None:
    """Check every number and backend name now, before anything loads, naming the setting that is wrong."""
    _check_numbers(config)
    from m3agent.registry import check_name

    pc, mc = config.memorize.perception, config.memorize
    named = [("embedder", config.embedder.backend, "embedder.backend"),
             ("face", pc.face_backend, "memorize.perception.face_backend"),
             ("memorizer", mc.memorizer, "memorize.memorizer"),
             ("chat", mc.chat.backend, "memorize.chat.backend"),
             ("chat", config.control.chat.backend, "control.chat.backend"),
             ("judge", config.bench.judge.backend, "bench.judge.backend")]
    mb = config.bench.memorybench
    named += [("chat", mb.answer.backend, "bench.memorybench.answer.backend"),
              ("chat", mb.user.backend, "bench.memorybench.user.backend"),
              ("chat", mb.judge.backend, "bench.memorybench.judge.backend")]
    if config.bench.judge.backend == "chat":
        named.append(("chat", config.bench.judge.chat.backend, "bench.judge.chat.backend"))
    reward_judge = config.train.reward.judge
    named.append(("judge", reward_judge.backend, "train.reward.judge.backend"))
    if reward_judge.backend == "chat":
        named.append(("chat", reward_judge.chat.backend, "train.reward.judge.chat.backend"))
    named.append(("env", config.train.env, "train.env"))
    named.append(("chat", config.train.memory_build.chat.backend, "train.memory_build.chat.backend"))
    if pc.voice_backend:
        named.append(("voice", pc.voice_backend, "memorize.perception.voice_backend"))
    if pc.asr_backend:
        named.append(("asr", pc.asr_backend, "memorize.perception.asr_backend"))
    if pc.text_backend:
        named.append(("text", pc.text_backend, "memorize.perception.text_backend"))
    for kind, name, setting in named:
        check_name(kind, name, setting)
    if config.memory.search.retrieval not in RETRIEVAL_MODES:
        raise ConfigError(f"memory.search.retrieval must be one of {', '.join(RETRIEVAL_MODES)} "
                          f"(got {config.memory.search.retrieval!r})")
    if mc.memorizer == "chat" and mc.chat.backend in ("", "auto"):  # the embedded SmolLM2 is text-only and tiny
        raise ConfigError("memorize.memorizer=chat needs a vision-language model: set memorize.chat.backend "
                          "(e.g. openai with memorize.chat.base_url of a vLLM server running Qwen2.5-VL)")


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)
