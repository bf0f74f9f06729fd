"""Tests for sidecar.redact.

Fake credentials are generated from a seeded RNG in the documented shape of each format,
so no real-looking secret is committed literally and every run sees the same values.
"""

from __future__ import annotations

import ast
import base64
import functools
import hashlib
import json
import random
import string
import time
import uuid
from dataclasses import dataclass

import pytest

from sidecar.ingest.redact import KINDS, redact
from sidecar.notes import Finding

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
LETTERS = LOWER + UPPER
ALNUM = LETTERS + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "_-"
UPPER_DIGITS = UPPER + DIGITS


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    """n random characters, containing every class (lower/upper/digit) the alphabet has,
    as real random tokens of these lengths practically always do."""
    wanted = [cls for cls in (LOWER, UPPER, DIGITS) if set(cls) & set(alphabet)]
    while True:
        value = "".join(rng.choices(alphabet, k=n))
        if all(set(value) & set(cls) for cls in wanted):
            return value


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class Sample:
    snippet: str  # what gets pasted into a note
    secret: str  # must not survive redaction
    anchor: str = ""  # the finding's line is where this starts; defaults to the secret
    url: str | None = None  # the secret inside a URL, where that is a realistic place


def _token(value: str) -> Sample:
    return Sample(value, value, url=f"https://example.com/callback?code={value}&state=abc")


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": _rand(rng, ALNUM, 12), "iat": rng.randint(10**9, 2 * 10**9)}).encode())
    return f"{header}.{payload}.{_rand(rng, B64URL, 43)}"


def _pem(rng: random.Random, label: str) -> Sample:
    body = [_rand(rng, B64, 64) for _ in range(5)] + [_rand(rng, B64, 20) + "=="]
    block = "\n".join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"])
    return Sample(block, body[2], anchor="-----BEGIN")


LATER_KINDS = (  # added after the second attack round (issue 14), sampled from tests/secret_corpus.py
    "discord", "mailgun", "azure_sas", "age", "atlassian", "grafana", "databricks", "docker", "planetscale",
    "hashicorp_vault", "terraform_cloud", "square", "flutterwave", "artifactory", "postman", "shippo",
    "doppler", "dynatrace", "easypost", "sentry", "rubygems", "nuget", "dropbox", "google_oauth", "brevo",
    "mailchimp", "heroku", "newrelic", "pulumi", "supabase", "netlify", "tailscale", "groq", "replicate",
    "perplexity", "figma", "contentful", "prefect", "readme", "clojars", "typeform", "duffel", "onepassword",
    "openshift", "harness", "cloudflare", "azure_ad_secret", "password",
)  # fmt: skip


def _corpus_samples(seed: int) -> dict[str, list[Sample]]:
    """The kinds added after the attack's second round, sampled from tests/secret_corpus.py."""
    from tests.secret_corpus import secrets_corpus

    out: dict[str, list[Sample]] = {}
    for kind, secret, _line in secrets_corpus(per_template=1, seed=seed):
        if kind in LATER_KINDS:
            sample = Sample(secret, secret.rsplit(" ", 1)[-1]) if kind == "password" else _token(secret)
            out.setdefault(kind, []).append(sample)
    return out


def _samples(rng: random.Random) -> dict[str, list[Sample]]:
    """Every kind's samples: the first round's, written here, and the later kinds' from the corpus."""
    return {**_first_round_samples(rng), **_corpus_samples(rng.randrange(10**9))}


def _first_round_samples(rng: random.Random) -> dict[str, list[Sample]]:
    def r(alphabet: str, n: int) -> str:
        return _rand(rng, alphabet, n)

    aws_secrets = r(B64, 40), r(B64, 40)
    hex_a, hex_b = r(HEX, 32), r(HEX, 32)
    azure = r(B64, 86) + "=="
    password = r(ALNUM + "!*~", 16)
    bearer = r(ALNUM + "._-", 40)
    basic = base64.b64encode(f"alice:{r(ALNUM, 14)}".encode()).decode()
    generic = [r(ALNUM + "#%+=-@^", 24) for _ in range(4)] + [r(ALNUM, 24)]
    telegram = f"{rng.randint(10**8, 10**10 - 1)}:AA{r(B64URL, 33)}"
    slack_path = f"T{r(UPPER_DIGITS, 10)}/B{r(UPPER_DIGITS, 10)}/{r(ALNUM, 24)}"
    jwt = _jwt(rng)
    return {
        "openai": [
            _token(f"sk-proj-{r(B64URL, 120)}"),
            _token(f"sk-svcacct-{r(B64URL, 80)}"),
            _token(f"sk-{r(ALNUM, 48)}"),
        ],
        "anthropic": [_token(f"sk-ant-api03-{r(B64URL, 93)}AA"), _token(f"sk-ant-admin01-{r(B64URL, 93)}AA")],
        "github": [_token(f"gh{c}_{r(ALNUM, 36)}") for c in "pousr"]
        + [_token(f"github_pat_{r(ALNUM, 22)}_{r(ALNUM, 59)}")],
        "gitlab": [_token(f"glpat-{r(ALNUM + '_-', 20)}"), _token(f"gldt-{r(ALNUM, 24)}")],
        "aws_access_key": [_token(f"{p}{r(UPPER_DIGITS, 16)}") for p in ("AKIA", "ASIA")],
        "aws_secret_key": [
            Sample(f"aws_secret_access_key = {aws_secrets[0]}", aws_secrets[0]),
            Sample(f'"SecretAccessKey": "{aws_secrets[1]}"', aws_secrets[1]),
        ],
        "stripe": [
            _token(f"sk_live_{r(ALNUM, 24)}"),
            _token(f"rk_test_{r(ALNUM, 99)}"),
            _token(f"whsec_{r(ALNUM, 32)}"),
        ],
        "slack": [
            _token(f"xoxb-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(ALNUM, 24)}"),
            _token(f"xoxp-{r(DIGITS, 12)}-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(HEX, 32)}"),
            _token(f"xapp-1-A{r(UPPER_DIGITS, 10)}-{r(DIGITS, 13)}-{r(HEX, 64)}"),
        ],
        "slack_webhook": [
            Sample(
                f"https://hooks.slack.com/services/{slack_path}",
                slack_path,
                url=f"https://hooks.slack.com/services/{slack_path}",
            )
        ],
        "google_api_key": [_token(f"AIza{r(B64URL, 35)}")],
        "huggingface": [_token(f"hf_{r(LETTERS, 34)}")],
        "npm": [_token(f"npm_{r(ALNUM, 36)}")],
        "pypi": [_token(f"pypi-AgEIcHlwaS5vcmc{r(B64URL, 150)}")],
        "sendgrid": [_token(f"SG.{r(B64URL, 22)}.{r(B64URL, 43)}")],
        "twilio": [
            _token(f"SK{r(HEX, 32)}"),
            Sample(f"TWILIO_AUTH_TOKEN={hex_a}", hex_a),
            Sample(f"AC{r(HEX, 32)}:{hex_b}", hex_b),
        ],
        "azure_storage_key": [
            Sample(
                f"DefaultEndpointsProtocol=https;AccountName=notes{r(DIGITS, 4)};AccountKey={azure};"
                "EndpointSuffix=core.windows.net",
                azure,
            )
        ],
        "notion": [_token(f"secret_{r(ALNUM, 43)}"), _token(f"ntn_{r(ALNUM, 46)}")],
        "linear": [_token(f"lin_api_{r(ALNUM, 40)}")],
        "digitalocean": [_token(f"{p}_v1_{r(HEX, 64)}") for p in ("dop", "doo", "dor")],
        "shopify": [_token(f"shp{p}_{r(HEX, 32)}") for p in ("at", "ca", "pa", "ss")],
        "telegram_bot": [Sample(telegram, telegram, url=f"https://api.telegram.org/bot{telegram}/getMe")],
        "private_key": [
            _pem(rng, "RSA PRIVATE KEY"),
            _pem(rng, "PRIVATE KEY"),
            _pem(rng, "EC PRIVATE KEY"),
            _pem(rng, "OPENSSH PRIVATE KEY"),
            _pem(rng, "ENCRYPTED PRIVATE KEY"),
        ],
        "jwt": [Sample(jwt, jwt, url=f"https://app.example.com/callback#id_token={jwt}")],
        "url_password": [
            Sample(
                f"postgres://app_user:{password}@db.example.com:5432/app",
                password,
                url=f"https://deploy:{password}@git.example.com/team/repo.git",
            )
        ],
        "authorization_header": [
            Sample(f"Authorization: Bearer {bearer}", bearer),
            Sample(f"curl -H 'Authorization: Basic {basic}' https://api.example.com", basic),
            Sample(f'curl -H "X-Api-Key: {bearer[::-1]}" https://api.example.com', bearer[::-1]),
            Sample(f"curl -u deploy:{password[::-1]} https://api.example.com", password[::-1]),
        ],
        "generic_secret": [
            Sample(f'api_key: "{generic[0]}"', generic[0]),
            Sample(f"DB_PASSWORD={generic[1]}", generic[1]),
            Sample(f"client_secret = '{generic[2]}'", generic[2]),
            Sample(f'"password": "{generic[3]}"', generic[3]),
            Sample(
                f"token:: {generic[4]}",
                generic[4],
                url=f"https://api.example.com/v1/items?access_token={generic[4]}&page=2",
            ),
        ],
    }


SAMPLES = _samples(random.Random(20240601))

TEMPLATES = {
    "mid_line": "Some prose first, then {s} and more prose.\nSecond line.\n",
    "line_start": "{s}\nfollowing line\n",
    "code_fence": "# Setup\n\nRun this:\n\n```bash\n{s}\n```\n\nDone.\n",
    "frontmatter": "---\ntitle: Setup\nref: {s}\ntags: [ops]\n---\nBody text.\n",
}


def _cases() -> list[pytest.ParameterSet]:
    """(kind, text, secret, anchor) for every sample in every placement."""
    cases = []
    for kind, samples in SAMPLES.items():
        for i, sample in enumerate(samples):
            for place, template in TEMPLATES.items():
                text = template.format(s=sample.snippet)
                cases.append(pytest.param(kind, text, sample.secret, sample.anchor, id=f"{kind}-{i}-{place}"))
            if sample.url is not None:
                text = f"Open <{sample.url}> later.\n"
                cases.append(pytest.param(kind, text, sample.secret, "", id=f"{kind}-{i}-url"))
    return cases


def _assert_redacted(text: str, kind: str, secret: str, anchor: str) -> None:
    out = redact(text)
    assert secret not in out.text
    assert f"[REDACTED:{kind}]" in out.text
    line = text[: text.index(anchor or secret)].count("\n") + 1
    assert out.findings == (Finding(kind, line),)
    assert out.text.count("\n") == text.count("\n")
    assert len(out.text.splitlines()) == len(text.splitlines())
    again = redact(out.text)
    assert again.text == out.text
    assert again.findings == ()


# --- the kind list --------------------------------------------------------------------

EXPECTED_KINDS = (
    "openai", "anthropic", "github", "gitlab", "aws_access_key", "aws_secret_key", "stripe",
    "slack", "slack_webhook", "google_api_key", "huggingface", "npm", "pypi", "sendgrid",
    "twilio", "azure_storage_key", "notion", "linear", "digitalocean", "shopify",
    "telegram_bot", "private_key", "jwt", "url_password", "authorization_header",
    "generic_secret",
)  # fmt: skip


def test_kinds_are_exactly_the_documented_74() -> None:
    assert len(KINDS) == 74  # docs/security.md quotes this number
    assert len(set(KINDS)) == 74
    assert set(KINDS) == set(EXPECTED_KINDS + LATER_KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_a_positive_sample(kind: str) -> None:
    # Parametrised over KINDS itself: a new kind without samples fails here.
    assert SAMPLES.get(kind), f"no positive sample for {kind}"
    sample = SAMPLES[kind][0]
    assert kind in {f.kind for f in redact(sample.snippet).findings}


def test_samples_cover_only_known_kinds() -> None:
    assert set(SAMPLES) == set(KINDS)


# --- positives ------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "text", "secret", "anchor"), _cases())
def test_secret_is_redacted_in_place(kind: str, text: str, secret: str, anchor: str) -> None:
    _assert_redacted(text, kind, secret, anchor)


def test_url_password_keeps_the_rest_of_the_url() -> None:
    pw = _rand(random.Random(1), ALNUM, 18)
    out = redact(f"DSN: postgres://alice:{pw}@db.internal:5432/notes?sslmode=require\n")
    assert out.text == "DSN: postgres://alice:[REDACTED:url_password]@db.internal:5432/notes?sslmode=require\n"
    redis = redact(f"redis://:{pw}@cache:6379/0")
    assert redis.text == "redis://:[REDACTED:url_password]@cache:6379/0"


def test_url_password_with_unencoded_at_sign_is_fully_removed() -> None:
    out = redact("mysql://root:p@ss-W0rd-9x@db.example.com/app")
    assert "ss-W0rd" not in out.text
    assert out.text.endswith("@db.example.com/app")


def test_authorization_header_keeps_scheme() -> None:
    token = _rand(random.Random(2), ALNUM, 32)
    assert redact(f"Authorization: Bearer {token}").text == "Authorization: Bearer [REDACTED:authorization_header]"


def test_specific_kind_beats_generic_and_header() -> None:
    rng = random.Random(3)
    openai = f"sk-proj-{_rand(rng, B64URL, 60)}"
    github = f"ghp_{_rand(rng, ALNUM, 36)}"
    jwt = _jwt(rng)
    text = f"OPENAI_API_KEY={openai}\nAuthorization: token {github}\nAuthorization: Bearer {jwt}\n"
    out = redact(text)
    assert out.findings == (Finding("openai", 1), Finding("github", 2), Finding("jwt", 3))
    assert out.text == (
        "OPENAI_API_KEY=[REDACTED:openai]\nAuthorization: token [REDACTED:github]\n"
        "Authorization: Bearer [REDACTED:jwt]\n"
    )


def test_aws_secret_key_next_to_its_access_key_id() -> None:
    rng = random.Random(4)
    key_id, secret = f"AKIA{_rand(rng, UPPER_DIGITS, 16)}", _rand(rng, B64, 40)
    out = redact(f"User name,Access key ID,Secret access key\nci,{key_id},{secret}\n")
    assert out.findings == (Finding("aws_access_key", 2), Finding("aws_secret_key", 2))
    assert secret not in out.text
    assert key_id not in out.text


def test_aws_secret_key_told_after_its_key_id_in_prose() -> None:
    rng = random.Random(41)
    key_id, secret = f"AKIA{_rand(rng, UPPER_DIGITS, 16)}", _rand(rng, B64, 40)
    out = redact(f"AWS for the backups: {key_id} with secret {secret}, rotate in March\n")
    assert out.findings == (Finding("aws_access_key", 1), Finding("aws_secret_key", 1))
    assert secret not in out.text and key_id not in out.text


@pytest.mark.parametrize(("text", "secret"), [
    ("mysql -u root -pMyRootPw99 shop", "MyRootPw99"),
    ("mysqldump -h db.internal -u admin -p'S3cr3t!x' shop > shop.sql", "S3cr3t!x"),
])
def test_a_password_glued_to_a_mysql_client_flag(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out.text and out.findings == (Finding("password", 1),)


def test_the_cells_of_a_password_column() -> None:
    """A line-by-line rule cannot see that a table's header names the column "Password"."""
    table = ("| Device | User | Password | Notes |\r\n| --- | --- | :---: | --- |\r\n"
             "| router | admin | Zx9!kLm2Qp | in the hall |\r\n| nas | root | 40718 | |\r\n"
             "| printer | - | — | see the vault |\r\n\r\n| Secret | Meaning |\n|---|---|\n| photosynthesis | light |\n")
    out = redact(table)
    assert "Zx9!kLm2Qp" not in out.text and "40718" not in out.text
    assert out.findings == (Finding("password", 3), Finding("password", 4))
    assert "| printer | - | — | see the vault |" in out.text and "photosynthesis" in out.text
    assert out.text.count("\n") == table.count("\n")


WIF = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"  # the well-known example key of the Bitcoin wiki


def test_a_wallet_key_and_a_recovery_phrase() -> None:
    phrase = "legal winner thank year wave sausage worth useful legal winner thank yellow"  # a BIP-39 test vector
    out = redact(f"cold wallet {WIF}\nSeed phrase:\n{phrase}\n")
    assert WIF not in out.text and phrase not in out.text
    assert out.findings == (Finding("private_key", 1), Finding("private_key", 3))


@pytest.mark.parametrize("text", [
    f"a look-alike {WIF[:-1]}K whose checksum fails",
    "mysql -p -u root (it asks for the password)",
    "The recovery phrase: never share these words with anyone online because scammers will take funds",
    "seed words come from the BIP-39 list of two thousand and forty-eight english words",
    # eleven words and the start of a twelfth: BIP-39 words are whole words of 3-8 letters
    "Secret santa list anna bob carl dave emma fred gina hugo ivan christopher.",
    "alpha backup obsidian index budget tag sqlite sqlite lock rust python lock travel kubernetes docker",
])
def test_what_only_looks_like_a_wallet_key_or_a_password(text: str) -> None:
    assert redact(text).findings == ()


def test_aws_secret_shaped_value_without_context_is_kept() -> None:
    value = _rand(random.Random(5), B64, 40)
    text = f"checksum blob {value} in the manifest"
    out = redact(text)
    assert (out.text, out.findings) == (text, ())


def test_twilio_account_sid_stays_but_auth_token_goes() -> None:
    rng = random.Random(6)
    sid, token = f"AC{_rand(rng, HEX, 32)}", _rand(rng, HEX, 32)
    out = redact(f"curl -u {sid}:{token} https://api.twilio.com/2010-04-01/Accounts.json")
    assert sid in out.text
    assert token not in out.text
    assert out.findings == (Finding("twilio", 1),)


def test_pem_block_lines_are_all_removed_and_line_count_kept() -> None:
    sample = _pem(random.Random(7), "OPENSSH PRIVATE KEY")
    body = sample.snippet.splitlines()[1:-1]
    text = f"# Server\n\nKey:\n{sample.snippet}\nAfter the key.\n"
    out = redact(text)
    assert all(line not in out.text for line in body)
    assert out.findings == (Finding("private_key", 4),)
    lines = out.text.split("\n")
    assert lines[3] == "[REDACTED:private_key]"
    assert lines[4 : 4 + len(body) + 1] == [""] * (len(body) + 1)
    assert lines[4 + len(body) + 1] == "After the key."
    assert len(lines) == len(text.split("\n"))


def test_unterminated_pem_redacts_to_end_of_text() -> None:
    body = [_rand(random.Random(8), B64, 64) for _ in range(3)]
    text = "intro\n-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\nmore words\n"
    out = redact(text)
    assert out.text == "intro\n[REDACTED:private_key]" + "\n" * (len(body) + 2)
    assert out.findings == (Finding("private_key", 2),)


def test_pem_inside_json_string_is_redacted() -> None:
    body = _rand(random.Random(9), B64, 64)
    text = '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n' + body
    text += '\\n-----END PRIVATE KEY-----\\n", "client_email": "bot@example.iam"}'
    out = redact(text)
    assert body not in out.text
    assert '"client_email": "bot@example.iam"' in out.text
    assert [f.kind for f in out.findings] == ["private_key"]


def test_crlf_and_unicode_line_breaks_are_preserved() -> None:
    sample = _pem(random.Random(10), "RSA PRIVATE KEY")
    text = "a\r\n" + sample.snippet.replace("\n", "\r\n") + "\r\nb\u2028c\r\n"
    out = redact(text)
    assert len(out.text.splitlines()) == len(text.splitlines())
    assert out.text.count("\r\n") == text.count("\r\n")
    assert out.text.endswith("\r\nb\u2028c\r\n")


def test_generic_quoted_passphrase_and_trailing_punctuation() -> None:
    phrase = redact('password: "correct horse battery staple"')
    assert phrase.text == 'password: "[REDACTED:generic_secret]"'
    prose = redact("The wifi password: Xk9#mQ2$vLp7. Ask Sam for the other one.")
    assert prose.text == "The wifi password: [REDACTED:generic_secret]. Ask Sam for the other one."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pass: s3cretPass!", "pass: [REDACTED:generic_secret]"),  # its last character was left in clear
        ("my password: s3cretPass!?", "my password: [REDACTED:generic_secret]"),
        ("The wifi password is: BlueOcean!2024", "The wifi password is: [REDACTED:password]"),
        ("senha: MinhaSenha#99", "senha: [REDACTED:password]"),  # pt-BR users wrote their passwords so
        ("a senha do wifi é MinhaSenha#99", "a senha do wifi é [REDACTED:password]"),
        ("Kennwort für das WLAN: Sonne!2024x", "Kennwort für das WLAN: [REDACTED:password]"),
        ("contraseña: Girasol!2024", "contraseña: [REDACTED:password]"),
        ("mot de passe : Tournesol!2024x", "mot de passe : [REDACTED:password]"),
        ("пароль: Solnce!2024", "пароль: [REDACTED:password]"),
        ("Wi-Fiのパスワードは Himitsu2024", "Wi-Fiのパスワードは [REDACTED:password]"),
        ("비밀번호: Bimil!2024x", "비밀번호: [REDACTED:password]"),
        ("密码是 abc123!x", "密码是 [REDACTED:password]"),
    ],
)
def test_a_password_under_its_name_in_any_language(text: str, expected: str) -> None:
    assert redact(text).text == expected


@pytest.mark.parametrize("text", [
    "A senha é obrigatória.", "A senha do cofre é necessária para sincronizar.", "senha: `********`",
    "Passwortmanager: Bitwarden2", "パスワードは大文字と小文字を区別します。", "Mot de passe : oublié ?",
    "비밀번호는 8자 이상이어야 합니다.", "senha: 12345678",
])
def test_words_about_passwords_in_any_language_are_no_password(text: str) -> None:
    assert redact(text).text == text


def test_findings_give_lines_not_values() -> None:
    rng = random.Random(11)
    values = [f"ghp_{_rand(rng, ALNUM, 36)}", f"npm_{_rand(rng, ALNUM, 36)}", f"hf_{_rand(rng, LETTERS, 34)}"]
    text = f"one\n{values[0]} and {values[1]}\nthree\n\nfive {values[2]}\n"
    out = redact(text)
    assert out.findings == (Finding("github", 2), Finding("npm", 2), Finding("huggingface", 5))
    assert not any(v in repr(out.findings) for v in values)


def test_composite_document_is_idempotent() -> None:
    snippets = [s.snippet for samples in SAMPLES.values() for s in samples]
    text = "---\ntitle: Everything\n---\n" + "\n\n".join(f"- item {i}: {s}" for i, s in enumerate(snippets)) + "\n"
    out = redact(text)
    assert len(out.findings) == len(snippets)
    assert all(s.secret not in out.text for samples in SAMPLES.values() for s in samples)
    assert len(out.text.splitlines()) == len(text.splitlines())
    again = redact(out.text)
    assert (again.text, again.findings) == (out.text, ())


def test_adjacent_secrets_are_each_redacted_once() -> None:
    rng = random.Random(12)
    a, b = f"ghp_{_rand(rng, ALNUM, 36)}", f"AKIA{_rand(rng, UPPER_DIGITS, 16)}"
    out = redact(f"{a},{b};{a}")
    assert out.text == "[REDACTED:github],[REDACTED:aws_access_key];[REDACTED:github]"
    assert [f.kind for f in out.findings] == ["github", "aws_access_key", "github"]


# --- negatives ------------------------------------------------------------------------


def _not_secrets(rng: random.Random) -> list[str]:
    png = base64.b64encode(rng.randbytes(600)).decode()
    digest = hashlib.sha256(rng.randbytes(32)).hexdigest()
    sri = {n: base64.b64encode(rng.randbytes(n // 8)).decode() for n in (256, 384, 512)}
    return [
        f"Ticket id {uuid.UUID(int=rng.getrandbits(128), version=4)} was closed.",
        f"Fixed in commit {rng.getrandbits(160):040x} (short {rng.getrandbits(28):07x}, {rng.getrandbits(48):012x}).",
        f"The SHA-256 of the release tarball is {digest}.",
        f"sha256: {digest}",
        *(f'<script src="app.js" integrity="sha{n}-{v}" crossorigin="anonymous"></script>' for n, v in sri.items()),
        "A paragraph with a block id ^a1b2c3",
        "See [[Project Plan#^blk-42]] and ![[diagram.png]] #project/alpha",
        f"![chart](data:image/png;base64,{png})",
        "Meeting 2024-05-17T12:30:45Z, moved to 10:00-11:00 on 2024-05-18.",
        "Upgraded to v1.2.3 (build 10.0.19045.3803), python==3.11.7, node@20.11.1",
        "reset your password = easy",
        "Password: see the shared vault",
        "API key: stored in 1Password",
        "The Authorization header carries a bearer token (RFC 6750).",
        "Authorization: required for every endpoint",
        "token: 4096",
        "max_tokens: 4096",
        "tokenizer: bert-base-uncased",
        "token_endpoint: https://auth.example.com/oauth/token",
        "password_reset_url: https://example.com/account/reset",
        "password_hash: $argon2id$v=19$m=65536,t=3,p=4",
        "password: changeme",
        "api_key: <your-key>",
        "token: ${GITHUB_TOKEN}",
        "secret: xxx",
        "password: ****",
        "API_KEY=your-api-key-here",
        'password: "{{ vault_db_password }}"',
        "client_secret: REPLACE_ME",
        "token = os.environ['TOKEN']",
        "password = get_password()",
        "secret = settings.SECRET_KEY",
        "const token = await getToken();",
        "if password == confirm_password:",
        "def login(password: str, token: Optional[str]) -> None:",
        "secretary: Jane Doe",
        "keyboard: ergonomic split",
        "monkey: island",
        "bypass: true",
        "[the docs](https://example.com/docs/page?id=42) and <https://example.com>",
        "pip install scikit-learn; import sklearn; see task-sk-1 and the sk-learn alias",
        "docker run -u 1000:1000 image && git push -u origin main",
        "postgres://user:password@localhost:5432/db",
        "https://user@example.com/path and git@github.com:owner/repo.git",
        "ssh://git@github.com:22/owner/repo and http://localhost:8080/health",
        f"publishable key pk_test_{_rand(rng, ALNUM, 24)} is fine in the browser",
        f"Twilio account AC{_rand(rng, HEX, 32)} (identifier only)",
        "-----BEGIN PUBLIC KEY-----\n" + _rand(rng, B64, 64) + "\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\n" + _rand(rng, B64, 64) + "\n-----END CERTIFICATE-----",
        f"random blob {_rand(rng, B64URL, 43)} and {rng.getrandbits(256):064x}",
        "AWS docs use AKIAIOSFODNN7EXAMPLE as the example key id",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx is the placeholder shape",
        "| key | value |\n|-----|-------|\n| timeout | 30 |",
        "Ratio 12345678:1 and build 987654321:release",
        "- [ ] call Sam 📅 2024-05-01 ⏫",
        'Key files start with "-----BEGIN OPENSSH PRIVATE KEY-----" and need mode 600.\nNext line.',
        "password: SecretBytes\ntoken: EventLoopToken | None = None\nprivate_key: PrivateKeyTypes,",
        'client_secret="my-client-secret"; EXPIRED_TOKEN = "expired_token"',
        '<assemblyIdentity name="Microsoft.VC90.CRT" publicKeyToken="1fc8b3b9a1e18e3b"/>',
        'stdin.write(f"username={user}\\npassword={token}\\n")',
        "# Cache for the exchanged token: re-exchanging on every call is wasteful",
    ]


NOT_SECRETS = _not_secrets(random.Random(99))


@pytest.mark.parametrize("text", NOT_SECRETS, ids=[f"neg{i}" for i in range(len(NOT_SECRETS))])
def test_not_a_secret(text: str) -> None:
    out = redact(text)
    assert out.findings == ()
    assert out.text == text


def test_ten_thousand_lines_of_ordinary_notes_have_no_findings() -> None:
    rng = random.Random(123)

    def line() -> str:
        choice = rng.randrange(8)
        if choice == 0:
            return f"- [[Note {rng.randrange(999)}]] id {uuid.UUID(int=rng.getrandbits(128), version=4)}"
        if choice == 1:
            return f"commit {rng.getrandbits(160):040x} on {rng.randrange(2000, 2030)}-0{rng.randrange(1, 10)}-1{rng.randrange(10)}"
        if choice == 2:
            return f"Paragraph text about topic {rng.randrange(10**6)} ^{rng.getrandbits(24):06x}"
        if choice == 3:
            return f"sha256 {hashlib.sha256(rng.randbytes(8)).hexdigest()} v{rng.randrange(9)}.{rng.randrange(99)}.{rng.randrange(9)}"
        if choice == 4:
            return f"integrity sha512-{base64.b64encode(rng.randbytes(64)).decode()}"
        if choice == 5:
            return f"see [link](https://example.com/{rng.getrandbits(32):x}?page={rng.randrange(50)}) #tag/{rng.randrange(99)}"
        if choice == 6:
            return f"short hash {rng.getrandbits(40):010x} at {rng.randrange(24):02d}:{rng.randrange(60):02d}"
        return f"key points: {' '.join(rng.choice(['alpha', 'beta', 'token', 'password', 'key', 'secret']) for _ in range(6))}"

    text = "\n".join(line() for _ in range(10_000))
    out = redact(text)
    assert out.findings == ()
    assert out.text == text


# --- performance ----------------------------------------------------------------------


@functools.cache
def _one_mb_lines() -> dict[str, str]:
    rng = random.Random(31)
    words = " ".join(_rand(rng, ALNUM, rng.randint(3, 12)) for _ in range(120_000))
    mixed = " ".join(
        rng.choice([f"ghp_{_rand(rng, ALNUM, 36)}", str(uuid.UUID(int=rng.getrandbits(128))), "password: x", "word"])
        for _ in range(50_000)
    )
    size = 1_000_000
    return {
        "words": words[:size],
        "mixed_with_secrets": mixed[:size],
        "eyJ_run": ("eyJ" * size)[:size],
        "keyword_run": ("password" * size)[:size],
        "separator_run": ("api key: " * size)[:size],
        "begin_run": ("-----BEGIN PRIVATE KEY-----" * 40_000)[:size],
        "url_run": ("https://a:b" * size)[:size],
        "digits_colon": ("1234567890:" * size)[:size],
        "base64": _rand(rng, B64, size),
    }


@pytest.mark.parametrize("name", list(_one_mb_lines()))
def test_one_megabyte_line_is_fast(name: str) -> None:
    text = _one_mb_lines()[name]
    assert len(text) >= 999_000
    start = time.process_time()  # CPU time: other processes' load does not count
    out = redact(text)
    elapsed = time.process_time() - start
    assert elapsed < 5.0, f"{name}: {elapsed:.2f}s"
    assert out.text.count("\n") == text.count("\n")


@pytest.mark.slow
def test_twenty_megabyte_file_is_not_pathological() -> None:
    rng = random.Random(32)
    token = f"ghp_{_rand(rng, ALNUM, 36)}"
    line = (
        f"- [[Note]] commit {rng.getrandbits(160):040x} ^blk1 see https://example.com/p/1 "
        f"{uuid.UUID(int=rng.getrandbits(128))} and some more ordinary words here"
    )
    lines = [line] * 150_000
    lines[::1000] = [f"token {token}"] * len(lines[::1000])
    text = "\n".join(lines)
    assert len(text) >= 20_000_000
    start = time.process_time()  # CPU time: other processes' load does not count
    out = redact(text)
    elapsed = time.process_time() - start
    assert elapsed < 40.0, f"{elapsed:.1f}s"
    assert len(out.findings) == len(lines[::1000])
    assert token not in out.text


def test_the_redaction_stage_reads_no_file() -> None:
    """A pure stage: redact.py opens nothing, not even its own source (the core reads that for the
    fingerprint, which still moves with any change to the module's code)."""
    from pathlib import Path

    from sidecar.core import redaction_rules
    from sidecar.ingest import redact as module
    from sidecar.ingest.redact import rules_fingerprint

    source = Path(module.__file__).read_bytes()
    tree = ast.parse(source)
    io = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in ("open", "__file__", "Path")}
    io |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith(("read_", "open"))}
    assert io == set()
    assert redaction_rules() == rules_fingerprint(source)
    assert rules_fingerprint(source + b"\n# a changed heuristic\n") != rules_fingerprint(source)
