"""The Gradio app over a data folder: pick, upload or open, watch it memorized, browse, ask.

Only layout and wiring live here; every answer, card, timeline and job comes from
:class:`m3agent.workspace.Workspace`, the same code the CLI runs.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

from m3agent.app_guard import WILDCARDS, AppGuard, in_cache, served_as
from m3agent.config import Config
from m3agent.errors import M3AgentError
from m3agent.workspace import APP_CHAT_BACKENDS, ChatChoice, Workspace

CSS = """
.card {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px;}
.superseded {color: var(--body-text-color-subdued);}
#jobs progress {width: 100%; height: 14px;}
"""


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60:02d}:{seconds % 60:02d}"


def _jobs_html(statuses) -> str:
    if not statuses:
        return "<p>No memorization yet: pick a video, upload one, or try the sample episode.</p>"
    rows = []
    for status in reversed(statuses[-8:]):
        state = status.job.state
        value = f'{status.progress.fraction:.3f}' if state != "queued" else "0"
        rows.append(f'<div class="job job-{state}"><div>{_escape(status.describe())}</div>'
                    f'<progress max="1" value="{value}"></progress></div>')
    return "\n".join(rows)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _trace_markdown(answer: dict) -> str:
    lines = []
    model_round = 0
    for step in answer.get("trace", []):
        if step["by"] == "model":
            model_round += 1
        label = f"Round {model_round}" if step["by"] == "model" else "Before round 1 (the question itself)"
        if step["action"] == "search":
            hits = ", ".join(f"clip {h['clip']} ({_clock(h['start'])}–{_clock(h['end'])}, score {h['score']:.2f})"
                             for h in step["hits"]) or "nothing new"
            lines.append(f"**{label}** — search `{step['content']}` → {hits}")
        else:
            lines.append(f"**{label}** — answer: {step['content']}")
    if answer.get("error"):
        lines.append(f"**Error**: {answer['error']}")
    lines.append(f"*{answer.get('seconds', 0):.1f} s, {answer.get('tokens', 0)} tokens*")
    return "\n\n".join(lines)


def _timeline_markdown(clip) -> str:
    out = []
    for line in clip.lines:
        text = _escape(line.text)
        if line.superseded_by is not None:
            at = f" at clip {line.superseded_at}" if line.superseded_at is not None else ""
            out.append(f"- *{line.kind}* ~~{text}~~ <span class='superseded'>(superseded{at})</span>")
        else:
            out.append(f"- *{line.kind}* {text}")
    return "\n".join(out) or "*(no lines)*"


def build_app(workspace: Workspace):
    import gradio as gr
    from PIL import Image

    def choices():
        return workspace.videos(), workspace.memories()

    def player_at(memory: str | None, clip: int):
        span = workspace.clip_span(memory, clip) if memory else None
        video = workspace.video_file(memory) if memory else None
        if video is None or span is None:
            gr.Warning("the video of this memory is not in the data folder")
            return gr.update()
        return gr.Video(value=video, playback_position=float(span[0]))

    with gr.Blocks(title="m3agent", analytics_enabled=False) as demo:
        answer_state = gr.State(None)
        finished = gr.State(0)  # memorizations finished: views of a memory redraw when it grows
        gr.Markdown("# m3agent — memory of a long video\nPick or upload a video and memorize it, or open a "
                    "memory; then browse its characters and timeline, and ask.")
        with gr.Row():
            with gr.Column(scale=2):
                player = gr.Video(label="Player", interactive=False, elem_id="player", height=320)
                memory = gr.Dropdown(label="Memory", choices=[], value=None, elem_id="memory",
                                     info="memories in the data folder (memories/*.db)")
                jobs = gr.HTML(elem_id="jobs")
            with gr.Column(scale=3), gr.Tabs():
                with gr.Tab("Video", id="video"):
                    video = gr.Dropdown(label="Videos in the data folder", choices=[], value=None, elem_id="video")
                    upload = gr.File(label=f"Upload a video (up to {workspace.config.app.max_upload_mb} MB)",
                                     file_types=list(workspace.folder.video_types), elem_id="upload")
                    with gr.Row():
                        memorize_btn = gr.Button("Memorize this video", variant="primary", elem_id="memorize")
                        sample_btn = gr.Button("Sample episode (one click)", elem_id="sample")
                    message = gr.Markdown(elem_id="message")
                with gr.Tab("Characters", id="characters"):
                    refresh_cards = gr.Button("Refresh", size="sm")
                    @gr.render(inputs=[memory], triggers=[memory.change, finished.change, refresh_cards.click, demo.load])
                    def character_view(name):
                        if not name:
                            return
                        try:
                            cards = workspace.characters(name)
                        except M3AgentError as exc:
                            gr.Markdown(f"**{_escape(str(exc))}**")
                            return
                        if not cards:
                            gr.Markdown("No characters in this memory (no faces or voices were found).")
                        for card in cards:
                            with gr.Group(elem_classes=["card"]):
                                gr.Markdown(f"### {_escape(card.label)}\n{len(card.clips)} clips · {card.lines} lines · "
                                            f"{', '.join(card.members)}", elem_classes=["card-title"])
                                with gr.Row():
                                    if card.faces:
                                        gr.Gallery([Image.open(io.BytesIO(j)) for j in card.faces], columns=3, height=120,
                                                   show_label=False, allow_preview=False, elem_classes=["faces"])
                                    if card.voice is not None:
                                        sample = workspace.voice_sample(name, card.voice.start, card.voice.end)
                                        if sample is not None:
                                            gr.Audio(sample, label=f"Voice: “{card.voice.text[:80]}”", elem_classes=["voice"])
                                with gr.Row():
                                    for clip in card.clips[:24]:
                                        button = gr.Button(f"clip {clip}", size="sm", elem_classes=["clip-link"])
                                        button.click(lambda n=name, c=clip: player_at(n, c), None, player)

                with gr.Tab("Timeline", id="timeline"):
                    who = gr.Dropdown(label="Only this character", choices=[("everyone", -1)], value=-1,
                                      elem_id="who")
                    @gr.render(inputs=[memory, who], triggers=[memory.change, finished.change, who.change, demo.load])
                    def timeline_view(name, character):
                        if not name:
                            return
                        try:
                            clips = workspace.timeline(name, None if character in (None, -1) else int(character))
                        except M3AgentError as exc:
                            gr.Markdown(f"**{_escape(str(exc))}**")
                            return
                        for clip in clips:
                            with gr.Group(elem_classes=["timeline-clip"]):
                                button = gr.Button(f"▶ clip {clip.clip}  {_clock(clip.start)}–{_clock(clip.end)}", size="sm",
                                                   elem_classes=["clip-link"])
                                button.click(lambda n=name, c=clip.clip: player_at(n, c), None, player)
                                gr.Markdown(_timeline_markdown(clip))

                with gr.Tab("Ask", id="ask"):
                    chatbot = gr.Chatbot(label="Answers", elem_id="chat", height=260)
                    question = gr.Textbox(label="Question", placeholder="Who is on screen at the start?",
                                          elem_id="question")
                    with gr.Row():
                        ask_btn = gr.Button("Ask", variant="primary", elem_id="ask-btn")
                        as_of_on = gr.Checkbox(label="Answer as at an earlier clip", value=False, elem_id="as-of-on")
                        as_of = gr.Slider(0, 1, value=0, step=1, label="as at clip", elem_id="as-of")
                    trace = gr.Markdown(elem_id="trace")
                    @gr.render(inputs=[answer_state])
                    def evidence_view(answer):
                        if not answer or not answer.get("evidence"):
                            return
                        gr.Markdown("**Evidence** (click to watch):")
                        for item in answer["evidence"]:
                            with gr.Row():
                                button = gr.Button(f"▶ clip {item['clip']} ({_clock(item['start'])}–{_clock(item['end'])})",
                                                   size="sm", elem_classes=["evidence-clip"], scale=0, min_width=200)
                                button.click(lambda n=answer["memory"], c=item["clip"]: player_at(n, c), None, player)
                                gr.Markdown(_escape(item.get("line", "")))

                    with gr.Accordion("Settings: chat model", open=False):
                        backend = gr.Radio(list(APP_CHAT_BACKENDS), value="configured", label="Backend",
                                           info="configured: control.chat (the embedded SmolLM2 unless the config "
                                                "names another); openai: any OpenAI-compatible server")
                        base_url = gr.Textbox(label="Server URL", placeholder="http://127.0.0.1:8000/v1")
                        model = gr.Textbox(label="Model", placeholder="(the server's only model)")
        timer = gr.Timer(1.0, active=False)

        # ------------------------------------------------------------ folder, upload, memorize
        def refresh(current_video=None, current_memory=None):
            videos, memories = choices()
            busy = workspace.queue.busy
            statuses = workspace.jobs()
            return (gr.Dropdown(choices=videos, value=current_video if current_video in videos else None),
                    gr.Dropdown(choices=memories, value=current_memory if current_memory in memories else
                                (memories[0] if memories and current_memory is None else None)),
                    _jobs_html(statuses), gr.Timer(active=busy), sum(s.job.state == "done" for s in statuses))

        demo.load(refresh, None, [video, memory, jobs, timer, finished], show_progress="hidden")

        def on_upload(file, current_memory):
            if file is None:
                return gr.update(), gr.update(), "", gr.update()
            path = file if isinstance(file, str) else file.name
            try:
                kept = workspace.upload(path, os.path.basename(path))
            except M3AgentError as exc:
                return gr.update(), gr.update(value=None), f"**Not accepted**: {_escape(str(exc))}", gr.update()
            videos, _ = choices()
            return (gr.Dropdown(choices=videos, value=kept), gr.update(value=None),
                    f"Uploaded **{_escape(kept)}**: press *Memorize this video*.",
                    gr.Video(value=str(workspace.folder.resolve(kept))))

        upload.upload(on_upload, [upload, memory], [video, upload, message, player])

        def on_pick_video(name):
            if not name:
                return gr.update()
            return gr.Video(value=str(workspace.folder.resolve(name)))

        video.input(on_pick_video, video, player)

        def on_memorize(name, current_memory):
            if not name:
                return "Pick or upload a video first.", _jobs_html(workspace.jobs()), gr.Timer(active=True)
            try:
                job = workspace.memorize(name)
            except M3AgentError as exc:
                return f"**Cannot memorize**: {_escape(str(exc))}", gr.update(), gr.update()
            return (f"Queued **{_escape(name)}** into `{workspace.memory_of(name)}` (job {job.id}).",
                    _jobs_html(workspace.jobs()), gr.Timer(active=True))

        memorize_btn.click(on_memorize, [video, memory], [message, jobs, timer], concurrency_id="queue",
                           show_progress="hidden")

        def on_sample():
            job = workspace.memorize_sample()
            return (f"Queued the sample episode (job {job.id}); it is built first (about 15 s).",
                    _jobs_html(workspace.jobs()), gr.Timer(active=True))

        sample_btn.click(on_sample, None, [message, jobs, timer], concurrency_id="queue", show_progress="hidden")

        def on_tick(current_video, current_memory):
            return refresh(current_video, current_memory)

        timer.tick(on_tick, [video, memory], [video, memory, jobs, timer, finished], concurrency_id="status",
                   concurrency_limit=4, show_progress="hidden")

        def on_memory(name):
            if not name:
                return gr.update(), gr.Dropdown(choices=[("everyone", -1)], value=-1), gr.update()
            try:
                cards = workspace.characters(name)
                file = workspace.video_file(name)
                last = workspace.last_clip(name)
            except M3AgentError as exc:
                gr.Warning(str(exc))
                return gr.update(), gr.update(), gr.update()
            people = [("everyone", -1)] + [(c.label, c.number) for c in cards]
            return (gr.Video(value=file) if file else gr.update(),
                    gr.Dropdown(choices=people, value=-1), gr.Slider(0, max(last, 1), value=last, step=1))

        memory.change(on_memory, memory, [player, who, as_of])
        finished.change(on_memory, memory, [player, who, as_of])

        # ------------------------------------------------------------ chat
        def on_ask(name, text, limited, before, history, chosen_backend, url, model_name):
            history = list(history or [])
            if not name:
                gr.Warning("Open a memory first.")
                return history, "", None, gr.update()
            try:
                before_clip = int(before) if limited else None
                answer = workspace.ask(name, text, before_clip, ChatChoice(chosen_backend or "configured", (url or "").strip(), (model_name or "").strip()))
            except M3AgentError as exc:
                return history + [{"role": "user", "content": text},
                                  {"role": "assistant", "content": f"⚠ {exc}"}], "", None, gr.update()
            reply = answer["answer"] or f"(no answer: {answer.get('error')})"
            history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
            return history, _trace_markdown(answer), {"memory": name, **answer}, gr.update(value="")

        ask_btn.click(on_ask, [memory, question, as_of_on, as_of, chatbot, backend, base_url, model],
                      [chatbot, trace, answer_state, question], concurrency_id="chat")
        question.submit(on_ask, [memory, question, as_of_on, as_of, chatbot, backend, base_url, model],
                        [chatbot, trace, answer_state, question], concurrency_id="chat")

    return demo


def theme():
    """Gradio's default theme with system fonts: the stock one fetches fonts from Google."""
    import gradio as gr

    system = ["ui-sans-serif", "system-ui", "sans-serif"]
    return gr.themes.Default(font=system, font_mono=["ui-monospace", "monospace"])


def guard(config: Config, workspace: Workspace):
    """The middleware in front of Gradio's routes: only the app's own host names, pages of its own origin,
    and on the file route only the folder's videos and the media Gradio cached for the page."""
    from gradio.utils import get_upload_folder
    from starlette.middleware import Middleware

    cached = in_cache(get_upload_folder())
    return Middleware(AppGuard, hosts=served_as(config.app.host, config.app.allowed_hosts),
                      serves=lambda path: workspace.folder.holds_video(path) or cached(path))


def launch(config: Config, cli_args: Sequence[str] = (), *, block: bool = True):
    """Open the app on ``config.app.host:port``; returns ``(demo, url, workspace)`` when not blocking."""
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    workspace = Workspace(config, cli_args)
    os.environ.setdefault("GRADIO_TEMP_DIR", str(workspace.folder.state_dir / "gradio"))
    demo = build_app(workspace)
    demo.queue(default_concurrency_limit=1)
    # allowed_paths lets Gradio copy a returned video into its cache; what is served is guard()'s rule, and
    # ssr_mode/num_workers keep every request on the guarded Python server (no Node proxy, no file workers)
    _, url, _ = demo.launch(server_name=config.app.host, server_port=config.app.port or None, share=False,
                            quiet=True, prevent_thread_lock=True, show_error=True, inbrowser=False,
                            allowed_paths=[str(workspace.folder.root)], footer_links=[],
                            app_kwargs={"middleware": [guard(config, workspace)]}, ssr_mode=False,
                            num_workers=0, max_file_size=f"{config.app.max_upload_mb}mb", theme=theme(),
                            css=CSS, enable_monitoring=False, mcp_server=False)
    if not block:
        return demo, url, workspace
    print(f"m3agent app: {url} (data folder {workspace.folder.root}); Ctrl-C stops", flush=True)
    if config.app.host in WILDCARDS:
        print("other machines reach it only by the names in app.allowed_hosts", flush=True)
    try:
        demo.block_thread()
    finally:
        workspace.close()
    return demo, url, workspace
