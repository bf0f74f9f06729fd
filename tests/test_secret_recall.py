"""Secret recall on a corpus not written from the rules (tests/secret_corpus.py): docs/security.md
quotes these figures. Targets: >= 99 % of the secrets redacted, <= 1 false positive per 1,000
look-alike lines."""

from __future__ import annotations

from sidecar.ingest.redact import redact
from tests.secret_corpus import lookalikes, secrets_corpus


def test_the_corpus_is_as_large_as_promised() -> None:
    corpus = secrets_corpus()
    assert len(corpus) >= 200 and len({kind for kind, _s, _l in corpus}) >= 60
    assert len(lookalikes()) >= 2000


def test_recall_is_at_least_99_percent() -> None:
    corpus = secrets_corpus()
    missed = [(kind, line[:100]) for kind, secret, line in corpus if secret in redact(line).text]
    assert len(missed) <= len(corpus) // 100, missed


def test_at_most_one_false_positive_per_thousand_lookalike_lines() -> None:
    lines = lookalikes()
    flagged = [(line[:100], [f.kind for f in found]) for line in lines if (found := redact(line).findings)]
    assert len(flagged) <= len(lines) // 1000, flagged


def test_the_six_secrets_the_attack_found_are_redacted() -> None:
    """Stored and served before: Discord bot token, Mailgun key, Azure SAS sig, age key, Atlassian token,
    and a password told in prose."""
    for line in ("DISCORD_TOKEN MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdEFGHijklMNOPqrstUVWXyz0123456789",
                 "mailgun key-3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
                 "https://x.blob.core.windows.net/c?sv=2022-11-02&sig=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl%3D",
                 "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE",
                 "ATATT3xFfGF0" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ" * 6,
                 "the wifi password is Otter-wsnE37-93"):
        out = redact(line)
        assert out.findings and "[REDACTED:" in out.text, line
    assert redact("the wifi password is Otter-wsnE37-93").text == "the wifi password is [REDACTED:password]"
