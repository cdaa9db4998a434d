"""Supervised fine-tuning of a memorizer on the teacher's records (``pipelines/sft/teacher.py``), with
transformers' Trainer.

    python pipelines/sft/train.py --data sft.jsonl --model /models/Qwen2.5-VL-7B-Instruct --output ckpt/ --bf16
    torchrun --nproc_per_node 8 pipelines/sft/train.py ... --deepspeed zero3.json    # one 8-GPU node
    python pipelines/sft/train.py --data sft.jsonl --output ckpt/ --dry-run --text-only  # CPU: check the data

Each record is one example: the model's chat template over the memorizer's question and the teacher's answer,
with the loss on the answer's tokens only (the question's are labelled -100). A vision-language model (a
directory whose processor has an image processor) gets the question's images, decoded from their data URLs;
``--text-only`` drops them and trains a text LLM memorizer on the prompt's text (faces and speech are in it).
``--dry-run`` builds the dataset, tokenizes ``--dry-run-records`` records with the model's tokenizer and prints
their sizes; it loads no weights and trains nothing. Without ``--model`` both use the bundled SmolLM2-135M GGUF
(text only): a CPU smoke run of the whole path, e.g. ``--text-only --max-steps 1``. The
trained model is served back like any other (``vllm serve ckpt/``) and used with
``--set memorize.memorizer=chat --set memorize.chat.backend=openai``.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from m3agent.errors import M3AgentError
from m3agent.files.jsonl import json_lines, read_text
from m3agent.models.llm.base import text_only

IGNORE = -100  # the label of a token the loss skips


class DataError(M3AgentError, ValueError):
    """A records file the trainer cannot use."""


def read_records(path: str | Path) -> list[dict]:
    """The chat records of a teacher file (its torn last line skipped; it is never rewritten here)."""
    text = read_text(path, error=DataError)
    records = []
    for number, record in json_lines(text, path, error=DataError, message="{source}:{number} is not JSON ({msg})",
                                     torn_tail=True):
        messages = record.get("messages") if isinstance(record, dict) else None
        if not isinstance(messages, list) or len(messages) < 2 or messages[-1].get("role") != "assistant":
            raise DataError(f"{path}:{number} is not a chat record (messages ending with the assistant's answer)")
        records.append(record)
    if not records:
        raise DataError(f"{path} holds no records")
    return records


def template_messages(messages: list[dict], images: bool) -> tuple[list[dict], list]:
    """Messages as HF chat templates take them, and the PIL images their image parts stand for."""
    if not images:
        return text_only(messages), []
    from PIL import Image

    out, pictures = [], []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": [{"type": "text", "text": content}]})
            continue
        parts = []
        for part in content:
            if part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                pictures.append(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": part.get("text", "")})
        out.append({"role": message["role"], "content": parts})
    return out, pictures


class Encoder:
    """One record -> ``input_ids`` and ``labels`` (and a VLM's image tensors), the question masked out."""

    def __init__(self, tokenizer, processor=None, max_length: int = 8192):
        self.tokenizer, self.processor, self.max_length = tokenizer, processor, max_length

    def __call__(self, record: dict) -> dict:
        messages, pictures = template_messages(record["messages"], self.processor is not None)
        owner = self.processor or self.tokenizer
        prompt = owner.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
        full = owner.apply_chat_template(messages, tokenize=False)
        if not full.startswith(prompt):
            raise DataError(f"record {record.get('id')!r}: the chat template does not extend the question with "
                            "the answer; this model's template cannot mask the question")
        if self.processor is not None:
            encoded = self.processor(text=[full], images=pictures or None, return_tensors="pt")
            asked = self.processor(text=[prompt], images=pictures or None, return_tensors="pt")
            ids, cut = encoded.pop("input_ids")[0].tolist(), asked["input_ids"].shape[1]
            extra = {k: v for k, v in encoded.items() if k != "attention_mask"}
        else:
            ids = self.tokenizer(full, add_special_tokens=False)["input_ids"]
            cut, extra = len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"]), {}
        labels = [IGNORE] * cut + ids[cut:]
        if len(ids) > self.max_length:
            raise DataError(f"record {record.get('id')!r} has {len(ids)} tokens, over --max-length {self.max_length}")
        return {"input_ids": ids, "labels": labels, **extra}


class Examples:
    """The records as a map-style dataset, encoded when read (images stay compressed until then)."""

    def __init__(self, records: list[dict], encoder: Encoder):
        self.records, self.encoder = records, encoder

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> dict:
        return self.encoder(self.records[index])


def collate(pad_id: int):
    """Right-padded batches; image tensors of a VLM are concatenated (their processors count patches per image)."""
    import torch

    def batch(items: list[dict]) -> dict:
        width = max(len(i["input_ids"]) for i in items)
        out = {
            "input_ids": torch.tensor([i["input_ids"] + [pad_id] * (width - len(i["input_ids"])) for i in items]),
            "labels": torch.tensor([i["labels"] + [IGNORE] * (width - len(i["labels"])) for i in items]),
            "attention_mask": torch.tensor([[1] * len(i["input_ids"]) + [0] * (width - len(i["input_ids"]))
                                            for i in items]),
        }
        for key in items[0].keys() - out.keys():
            out[key] = torch.cat([i[key] for i in items])
        return out

    return batch


def model_source(model: str) -> tuple[str, dict]:
    """Where transformers loads ``model`` from: a directory, or a GGUF file (dequantized; text models only);
    empty means the bundled SmolLM2 GGUF."""
    if not model:
        from m3agent.models.bundled import bundled_chat_gguf

        model = str(bundled_chat_gguf())
    if model.endswith(".gguf"):
        return str(Path(model).parent), {"gguf_file": Path(model).name}
    return model, {}


def load_tokenizer(model: str, images: bool):
    """The tokenizer (and for a VLM the processor) of ``model`` (see :func:`model_source`)."""
    from transformers import AutoProcessor, AutoTokenizer

    source, kwargs = model_source(model)
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    if not images or kwargs:
        return tokenizer, None
    processor = AutoProcessor.from_pretrained(model)
    if getattr(processor, "image_processor", None) is None:
        raise DataError(f"{model} has no image processor: give --text-only for a text-only model")
    return tokenizer, processor


def dry_run(records: list[dict], encoder: Encoder, count: int, model: str) -> dict:
    examples = []
    for record in records[:count]:
        item = encoder(record)
        target = [t for t in item["labels"] if t != IGNORE]
        examples.append({"id": record.get("id"), "tokens": len(item["input_ids"]), "target_tokens": len(target),
                         "image_tensors": sorted(k for k in item if k not in ("input_ids", "labels")),
                         "target_text": encoder.tokenizer.decode(target)})
    return {"records": len(records), "tokenized": len(examples), "model": model or "bundled SmolLM2 GGUF",
            "examples": examples}


def train(args, records: list[dict], encoder: Encoder) -> None:
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
        Trainer,
        TrainingArguments,
    )

    loader = AutoModelForCausalLM if encoder.processor is None else AutoModelForImageTextToText
    source, kwargs = model_source(args.model)
    model = loader.from_pretrained(source, dtype="bfloat16" if args.bf16 else "float32", **kwargs)
    if kwargs:  # transformers dequantizes a GGUF file on load: its weights are plain tensors, free to train
        model.is_quantized, model.hf_quantizer = False, None
    extra = {"gradient_checkpointing": True} if args.gradient_checkpointing else {}
    settings = TrainingArguments(
        output_dir=args.output, num_train_epochs=args.epochs, max_steps=args.max_steps, learning_rate=args.lr,
        per_device_train_batch_size=args.batch_size, gradient_accumulation_steps=args.grad_accum,
        warmup_steps=args.warmup, lr_scheduler_type="cosine", bf16=args.bf16, logging_steps=10,
        save_strategy="epoch" if args.max_steps < 0 else "no", deepspeed=args.deepspeed, remove_unused_columns=False, report_to="none",
        seed=args.seed, dataloader_pin_memory=torch.cuda.is_available(), **extra)
    pad = encoder.tokenizer.pad_token_id
    pad = encoder.tokenizer.eos_token_id if pad is None else pad
    trainer = Trainer(model=model, args=settings, train_dataset=Examples(records, encoder), data_collator=collate(pad))
    trainer.train()
    trainer.save_model(args.output)
    (encoder.processor or encoder.tokenizer).save_pretrained(args.output)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SFT of a memorizer on teacher records (transformers Trainer).")
    parser.add_argument("--data", required=True, help="the teacher's JSON-lines records")
    parser.add_argument("--model", default="", help="HF model directory (a VLM, or a text LLM with --text-only), "
                        "or a GGUF file of a text LLM")
    parser.add_argument("--output", required=True)
    parser.add_argument("--text-only", action="store_true", help="train on the text of the questions, no images")
    parser.add_argument("--max-length", type=int, default=8192)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--max-steps", type=int, default=-1, help="stop after this many optimizer steps (-1: epochs)")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--batch-size", type=int, default=1, help="per device")
    parser.add_argument("--grad-accum", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=0.03, help="warm-up: a share of the steps (< 1) or a count")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--deepspeed", default=None, help="a DeepSpeed JSON config (ZeRO-3 for 7B+ on one node)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--dry-run", action="store_true", help="build and tokenize, print sizes, train nothing")
    parser.add_argument("--dry-run-records", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        records = read_records(args.data)
        tokenizer, processor = load_tokenizer(args.model, images=not args.text_only)
        encoder = Encoder(tokenizer, processor, args.max_length)
        if args.dry_run:
            print(json.dumps(dry_run(records, encoder, args.dry_run_records, args.model), indent=2, ensure_ascii=False))
            return 0
        train(args, records, encoder)
    except M3AgentError as exc:
        print(f"sft: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
