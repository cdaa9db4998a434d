"""The people in a memory: ``forget`` (a person, or a text source's speaker), ``characters`` (who is who, and a
person's corrections of it), ``timeline`` (the clips in order, or one character's)."""

from __future__ import annotations

from m3agent.cli.common import open_db, print_json, warn
from m3agent.config import Config
from m3agent.errors import M3AgentError


def cmd_forget(args, config: Config) -> int:
    with open_db(args, config) as graph:
        video = graph.resolve_video(args.video)
        report = graph.forget(video.id, args.character, keep_mentions=args.keep_mentions, wait=args.wait)
    print_json(report)
    return 0


def cmd_characters(args, config: Config) -> int:
    if args.action:  # a person's correction: written to the DB, then the cards as they now stand
        with open_db(args, config) as graph:
            if args.action == "corrections":
                print_json(graph.corrections(args.video))
                return 0
            if args.action == "undo":
                if len(args.targets) != 1 or not args.targets[0].isdigit() or len(args.targets[0]) > 18:
                    raise M3AgentError("undo needs the number of a correction (m3agent characters DB corrections)")
                graph.undo_correction(args.video, int(args.targets[0]))
            elif args.action == "split":
                if len(args.targets) != 1 or not args.clips:
                    raise M3AgentError("split needs one node or character and its clips: split voice_9 --clips 3,5-7")
                fix = graph.correct(args.video, "split", args.targets[0], args.clips)
                warn("characters", f"correction {fix['id']} stored: clips {args.clips} of {args.targets[0]} are "
                      f"node {fix['b']} now")
            else:
                if len(args.targets) != 2:
                    raise M3AgentError(f"{args.action} needs two arguments: "
                                       + ("A NAME" if args.action == "rename" else "A B"))
                fix = graph.correct(args.video, args.action, *args.targets)
                warn("characters", f"correction {fix['id']} stored: {args.action} {' '.join(args.targets)}")
            print_json([card.to_dict() for card in graph.character_cards(args.video)])
        return 0
    with open_db(args, config, readonly=True) as graph:
        if args.check:  # where identities look wrong; exit 1 when anything does (scripts gate on it)
            problems = graph.identity_problems(args.video)
            print_json(problems)
            return 1 if problems else 0
        cards = [card.to_dict() for card in graph.character_cards(args.video)]
        if args.explain:  # why nodes became one (each fold into a member, with its evidence) or two (corrections)
            folds, fixes = graph.folds(args.video), graph.corrections(args.video)
            for card in cards:
                members = {int(m.rsplit("_", 1)[1]) for m in card["members"]}
                card["folds"] = [f for f in folds if f["into"] in members]
                card["corrections"] = [f for f in fixes if f["a"] in members or f["b"] in members]
    print_json(cards)
    return 0


def cmd_timeline(args, config: Config) -> int:
    with open_db(args, config, readonly=True) as graph:
        character = None if args.character is None else graph.resolve_character(args.video, args.character)
        print_json([clip.to_dict() for clip in graph.timeline(args.video, character)])
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("forget", help="remove a person (or a text source's speaker): their faces, voice, lines, and "
                                      "what others said of them")
    p.add_argument("db")
    p.add_argument("character", help="character_k, <character_k>, or a name the memory knows them by")
    p.add_argument("--video", default=None)
    p.add_argument("--keep-mentions", action="store_true",
                   help="keep lines where others speak of them by name (only their own lines and tags go)")
    p.add_argument("--wait", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for other processes reading the DB to finish (default 30)")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("characters", help="one card per character: members, name, clips, a voice sample's time; "
                       "or a correction: merge A B, not-same A B, rename A NAME, split A --clips 3,5-7, "
                       "corrections, undo N")
    p.add_argument("db")
    p.add_argument("action", nargs="?", choices=["merge", "not-same", "rename", "split", "corrections", "undo"],
                   help="correct who is who (stored in the DB; kept across resumes and later memorization); A and B "
                        "are characters (character_3 or a name) or nodes (face_3, voice_9)")
    p.add_argument("targets", nargs="*", metavar="A B|NAME|N")
    p.add_argument("--clips", default=None, metavar="3,5-7",
                   help="split: the clips of A that are another person (they get a node of their own, kept apart)")
    p.add_argument("--video", default=None, help="video name or id (default: the only one)")
    p.add_argument("--explain", action="store_true",
                   help="also each fold into the character's nodes (two nodes found to be one person) and its "
                        "evidence: similarity, the faces, clips and names checked; and the corrections touching it")
    p.add_argument("--check", action="store_true",
                   help="list characters whose identity looks wrong (two names, a voice seen as two faces, a face "
                        "node holding two groups of faces) "
                        "instead; exit 1 when there is any")
    p.set_defaults(func=cmd_characters)

    p = sub.add_parser("timeline", help="the clips in order with their lines (superseded ones marked)")
    p.add_argument("db")
    p.add_argument("--video", default=None, help="video name or id (default: the only one)")
    p.add_argument("--character", default=None, help="only this character (number, character_N or a name)")
    p.set_defaults(func=cmd_timeline)
