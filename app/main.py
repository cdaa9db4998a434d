"""The Gradio app over a data folder: pick, upload or open, watch it memorized, browse, ask.

Only layout and wiring live here; every answer, card, timeline and job comes from
:class:`m3agent.workspace.Workspace`, the same code the CLI runs.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

from m3agent.config import Config
from m3agent.control.records import replaced_note
from m3agent.errors import M3AgentError
from m3agent.eval.grounding import unfound_note
from m3agent.media.clock import clock
from m3agent.workspace import APP_CHAT_BACKENDS, ChatChoice, Workspace
from m3agent.workspace.guard import WILDCARDS, AppGuard, in_cache, served_as

CSS = """
.card {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px;}
.superseded {color: var(--body-text-color-subdued);}
.card .fix-row button, #corrections button {border: 1px solid var(--border-color-accent) !important;
  background: var(--background-fill-primary) !important; border-radius: 6px !important;}
#corrections {padding: 8px;}
#jobs progress {width: 100%; height: 14px;}
"""


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
            hits = ", ".join(f"clip {h['clip']} ({clock(h['start'])}–{clock(h['end'])}, score {h['score']:.2f})"
                             for h in step["hits"]) or "nothing new"
            lines.append(f"**{label}** — search `{step['content']}` → {hits}")
        elif step.get("replaced"):
            why = replaced_note(step["replaced"], step.get("replaced_by", ""))
            lines.append(f"**{label}** — answer: {_escape(step['content'])} ({_escape(why)})")
        else:
            lines.append(f"**{label}** — answer: {step['content']}")
    if answer.get("unfound"):
        lines.append(f"**⚠ {_escape(unfound_note(answer['unfound']))}**")
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


#: what a card's correction needs before it can be made
MISSING = {"rename": "Type the new name first.", "merge": "Choose who this is the same person as first.",
           "not-same": "Choose who this is not first.", "split": "Type the clips to split off first (e.g. 3,5-7)."}


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

    def on_fix(name: str | None, action: str, a: str, b: str | None, count: int):
        """One correction from a card: ``(message, count)``, the count moved on when it was stored."""
        if not name:
            return warn("Open a memory first."), count
        if not (b or "").strip():
            return warn(MISSING[action]), count
        try:
            fix = workspace.correct(name, action, a, b)
        except (M3AgentError, ValueError) as exc:
            return warn(f"Not corrected: {exc}"), count
        gr.Info(f"Correction {fix['id']} stored: {fix['text']}")
        return f"Correction **{fix['id']}** stored: {_escape(fix['text'])}.", count + 1

    def on_undo(name: str | None, number: int, count: int):
        if not name:
            return warn("Open a memory first."), count
        try:
            text = workspace.undo_correction(name, number)
        except (M3AgentError, ValueError) as exc:
            return warn(f"Not undone: {exc}"), count
        gr.Info(f"Correction {number} undone: {text}")
        return f"Correction **{number}** undone ({_escape(text)}).", count + 1

    def emptied(done: tuple, count: int, typed: str) -> tuple:
        """``done`` and what goes back in the box that was typed in: nothing once the correction is stored."""
        return (*done, "" if done[1] != count else typed)

    def warn(text: str) -> str:
        gr.Warning(text)
        return f"⚠ {_escape(text)}"

    def keyed(name: str, *parts) -> dict:
        """A key for a block of a memory's card view, which is drawn again after each correction (a block of the
        last drawing is never taken for a new one), with nothing kept from the last drawing."""
        return {"key": "|".join(str(p) for p in (name, *parts)), "preserved_by_key": None}

    def correction_controls(name: str, card, others: list) -> None:
        """A card's rename, merge with, keep apart from and split clips off: each stored at once, then the view
        is drawn again (``corrected`` moves on)."""
        this = f"character_{card.number}"
        nodes = [m for m in card.members if m.startswith(("face_", "voice_"))]
        wires = {"concurrency_id": "correct", "show_progress": "minimal"}
        with gr.Row(elem_classes=["fix-row"], equal_height=False, **keyed(name, this, "fix")):
            with gr.Column(min_width=150, **keyed(name, this, "rename")):
                rename_box = gr.Textbox(label="Rename to", placeholder="a name", max_lines=1,
                                        elem_classes=["rename-box"], **keyed(name, this, "rename-box"))
                rename_btn = gr.Button("Rename", size="sm", elem_classes=["rename-btn"],
                                       **keyed(name, this, "rename-btn"))
            with gr.Column(min_width=150, **keyed(name, this, "merge")):
                same_as = gr.Dropdown(others, value=None, label="Same person as", elem_classes=["merge-with"],
                                      **keyed(name, this, "merge-with"))
                merge_btn = gr.Button("Merge", size="sm", elem_classes=["merge-btn"], **keyed(name, this, "merge-btn"))
            with gr.Column(min_width=150, **keyed(name, this, "apart")):
                apart_from = gr.Dropdown(others, value=None, label="Not the same as", elem_classes=["apart-from"],
                                         **keyed(name, this, "apart-from"))
                apart_btn = gr.Button("Keep apart", size="sm", elem_classes=["apart-btn"],
                                      **keyed(name, this, "apart-btn"))
            if nodes:
                with gr.Column(min_width=240, scale=2, **keyed(name, this, "split")):
                    with gr.Row(**keyed(name, this, "split-row")):
                        split_clips = gr.Textbox(label="Split clips", placeholder="e.g. 3,5-7", max_lines=1,
                                                 min_width=100, elem_classes=["split-clips"],
                                                 **keyed(name, this, "split-clips"))
                        split_node = gr.Dropdown(nodes, value=nodes[0], label="of", min_width=100,
                                                 elem_classes=["split-node"], **keyed(name, this, "split-node"))
                    split_btn = gr.Button("Split off as someone else", size="sm", elem_classes=["split-btn"],
                                          **keyed(name, this, "split-btn"))
                split_btn.click(lambda clips, node, count: emptied(on_fix(name, "split", node, clips, count), count,
                                                                   clips),
                                [split_clips, split_node, corrected], [fix_message, corrected, split_clips], **wires)
        for trigger in (rename_btn.click, rename_box.submit):
            trigger(lambda new, count: emptied(on_fix(name, "rename", this, new, count), count, new),
                    [rename_box, corrected], [fix_message, corrected, rename_box], **wires)
        merge_btn.click(lambda b, count: on_fix(name, "merge", this, b, count), [same_as, corrected],
                        [fix_message, corrected], **wires)
        apart_btn.click(lambda b, count: on_fix(name, "not-same", this, b, count), [apart_from, corrected],
                        [fix_message, corrected], **wires)

    def corrections_list(name: str, fixes: list[dict]) -> None:
        """Below the cards: the corrections in force, each with its Undo."""
        with gr.Group(elem_id="corrections", **keyed(name, "corrections")):
            gr.Markdown("### Corrections", elem_classes=["corrections-title"], **keyed(name, "corrections-title"))
            if not fixes:
                gr.Markdown("None yet: rename a character, merge two, keep two apart or split clips off; each can be "
                            "undone here.", elem_classes=["no-corrections"], **keyed(name, "none"))
            for fix in fixes:
                number = fix["id"]
                with gr.Row(elem_classes=["correction"], elem_id=f"correction-{number}", **keyed(name, "fix", number)):
                    gr.Markdown(f"**{number}.** {_escape(fix['text'])}", elem_classes=["correction-text"],
                                **keyed(name, "fix-text", number))
                    undo = gr.Button("Undo", size="sm", scale=0, min_width=80, elem_classes=["undo-btn"],
                                     elem_id=f"undo-{number}", **keyed(name, "undo", number))
                    undo.click(lambda count, n=number: on_undo(name, n, count), [corrected], [fix_message, corrected],
                               concurrency_id="correct", show_progress="minimal")

    with gr.Blocks(title="m3agent", analytics_enabled=False) as demo:
        answer_state = gr.State(None)
        finished = gr.State(0)  # memorizations finished: views of a memory redraw when it grows
        corrected = gr.State(0)  # corrections made or undone here: the cards, timeline and names redraw
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
                    fix_message = gr.Markdown(elem_id="fix-message")
                    @gr.render(inputs=[memory], triggers=[memory.change, finished.change, refresh_cards.click, demo.load,
                                                          corrected.change])
                    def character_view(name):
                        if not name:
                            return
                        try:
                            cards = workspace.characters(name)
                            fixes = workspace.corrections(name)
                        except M3AgentError as exc:
                            gr.Markdown(f"**{_escape(str(exc))}**")
                            return
                        if not cards:
                            gr.Markdown("No characters in this memory (no faces or voices were found).")
                        everyone = [(c.label, f"character_{c.number}") for c in cards]
                        # the cards in a column of their own, then the corrections: when a card goes (a merge), what
                        # follows it must not move into its place (Gradio 6 then gives a gallery a wrong value)
                        with gr.Column(elem_id="cards", **keyed(name, "cards")):
                            for card in cards:
                                this = f"character_{card.number}"
                                with gr.Group(elem_classes=["card"], elem_id=f"card-{card.number}", **keyed(name, this)):
                                    gr.Markdown(f"### {_escape(card.label)}\n{len(card.clips)} clips · {card.lines} lines · "
                                                f"{', '.join(card.members)}", elem_classes=["card-title"],
                                                **keyed(name, this, "title"))
                                    with gr.Row(**keyed(name, this, "media")):
                                        if card.faces:
                                            gr.Gallery([Image.open(io.BytesIO(j)) for j in card.faces], columns=3,
                                                       height=120, show_label=False, allow_preview=False,
                                                       elem_classes=["faces"], **keyed(name, this, "faces"))
                                        if card.voice is not None:
                                            sample = workspace.voice_sample(name, card.voice.start, card.voice.end)
                                            if sample is not None:
                                                gr.Audio(sample, label=f"Voice: “{card.voice.text[:80]}”",
                                                         elem_classes=["voice"], **keyed(name, this, "voice"))
                                    with gr.Row(**keyed(name, this, "clips")):
                                        for clip in card.clips[:24]:
                                            button = gr.Button(f"clip {clip}", size="sm", elem_classes=["clip-link"],
                                                               **keyed(name, this, "clip", clip))
                                            button.click(lambda n=name, c=clip: player_at(n, c), None, player)
                                    correction_controls(name, card, [o for o in everyone if o[1] != this])
                        corrections_list(name, fixes)

                with gr.Tab("Timeline", id="timeline"):
                    who = gr.Dropdown(label="Only this character", choices=[("everyone", -1)], value=-1,
                                      elem_id="who")
                    @gr.render(inputs=[memory, who], triggers=[memory.change, finished.change, who.change, demo.load,
                                                               corrected.change])
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
                                button = gr.Button(f"▶ clip {clip.clip}  {clock(clip.start)}–{clock(clip.end)}", size="sm",
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
                                button = gr.Button(f"▶ clip {item['clip']} ({clock(item['start'])}–{clock(item['end'])})",
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
        memory.change(lambda: "", None, fix_message, show_progress="hidden")

        def on_corrected(name, current):
            """After a correction: the timeline's people as they now are (names, merged or split ones)."""
            if not name:
                return gr.update()
            try:
                cards = workspace.characters(name)
            except M3AgentError:
                return gr.update()
            people = [("everyone", -1)] + [(c.label, c.number) for c in cards]
            return gr.Dropdown(choices=people, value=current if current in [n for _, n in people] else -1)

        corrected.change(on_corrected, [memory, who], who, show_progress="hidden")

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
