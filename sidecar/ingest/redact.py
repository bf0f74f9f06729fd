"""Credential redaction: the last stage before anything is stored, embedded or served.

Pure (no I/O). Every rule yields candidate spans; overlapping candidates are resolved by
priority, then length, so a specific kind (a GitHub token) beats a context rule
(``Authorization: ...``) which beats the generic ``key = value`` heuristic, and nothing is
redacted twice. Each chosen span becomes ``[REDACTED:kind]`` followed by the line breaks
it contained, so line numbers reported by later stages stay valid.

Existing markers and base64 ``data:`` URIs are protected spans: markers so that a second
pass finds nothing (idempotence), data URIs because embedded images are opaque payloads,
not credentials, and scanning them only invites false positives.

Patterns avoid catastrophic backtracking: a lookbehind right after each token's leading
literal rules out starts inside a longer run of the same charset, open-ended runs are
possessive (``++``/``{n,m}+``) and every backtracking run is bounded, so each rule scans
text in linear time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from sidecar.notes import Finding, Redacted

Span = tuple[int, int]
Locate = Callable[[re.Match[str]], Span | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    priority: int
    pattern: re.Pattern[str]
    locate: Locate  # the span to replace, or None when the match is rejected
    needles: tuple[str, ...] = ()  # lowercase; when set, the rule runs only if one occurs


class _Candidate(NamedTuple):
    start: int
    end: int
    priority: int
    kind: str  # "" marks a protected span: it wins overlaps but is never rewritten


# Priorities: a prefixed token format is stronger evidence than any context rule.
_P_PROTECTED = 1000
_P_PRIVATE_KEY = 100
_P_TOKEN = 90
_P_JWT = 85
_P_AWS_SECRET = 80
_P_URL_PASSWORD = 70
_P_AUTH = 60
_P_GENERIC = 10

_MAX_PASSES = 4  # a pass can expose a fragment a longer loser covered; repeat to a fixed point

# A token must not run on into more token characters.
_R = r"(?![A-Za-z0-9_-])"

MARKER = re.compile(r"\[(REDACTED:[a-z_]{1,40})\]")  # what replaces a credential (_marker)
_DATA_URI = re.compile(r"data:[\w.+-]{1,60}/[\w.+-]{1,80}(?:;[\w=.-]{1,40})*;base64,[A-Za-z0-9+/]++=*")
# Every character str.splitlines() treats as a boundary, so both "\n" counts and
# splitlines() counts survive the rewrite.
_BREAKS = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


# --- value heuristics -----------------------------------------------------------------


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _random_looking(value: str, min_entropy: float = 3.0) -> bool:
    """Rejects documentation fillers such as ``ghp_xxxx...`` or ``sk-0000...``."""
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value)))
    return classes >= 2 and _entropy(value) >= min_entropy


_PLACEHOLDER_WORDS = frozenset(
    {
        "pass", "pwd", "none", "null", "nil", "true", "false", "yes", "no", "undefined",
        "required", "optional", "string", "empty", "default", "bearer", "basic", "sample",
        "test", "todo", "tbd", "fixme", "hidden", "admin", "root", "user", "username",
    }
)  # fmt: skip
# Template syntax, environment references and doc fillers: a value written this way is a
# pointer to a secret or an instruction to supply one, not the secret itself. A value
# that names itself ("my-client-secret", "expired_token", 'Password used to ...') is a
# label or an example; a random token containing such a word is vanishingly unlikely.
_PLACEHOLDER = re.compile(
    r"""^(?:\$\(.*\)|\$[A-Za-z_]\w*|%\(\w*\)s|%s|<.*>|ENC\[.*|!vault.*)$
    |\$?\{\{?[\w.!: -]*\}|change[_-]?me|example|placeholder|your[_-]?|xxx|\*\*\*|\.\.\.|•••|dummy
    |redacted|replace[_-]?me|insert[_-]|password|passwd|secret|token|api[_-]?key|private[_-]?key""",
    re.IGNORECASE | re.VERBOSE,
)


def _is_placeholder(value: str) -> bool:
    return value.lower() in _PLACEHOLDER_WORDS or _PLACEHOLDER.search(value) is not None


def _wordlike(value: str) -> bool:
    """A short plain word ("required", "Hidden") in prose, not a credential."""
    plain_case = value.islower() or value.isupper() or value.istitle()
    return value.isalpha() and plain_case and len(value) < 16


# Unquoted values that are code, not data: ``settings.TOKEN``, ``os.getenv(...)``,
# ``db_password``, ``DB_PASSWORD``.
_CODE_REF = re.compile(
    r"^[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+$"  # attribute access
    r"|[()]"  # calls and parenthesised expressions
    r"|^[A-Za-z_$][\w.$]*\["  # subscripts
    r"|^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$"  # snake_case variable
    r"|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"  # CONSTANT
    r"|^_?(?:[A-Z][a-z]{2,}|[A-Z]{2,5}(?=[A-Z][a-z]|$)){2,}$"  # CamelCase type in an annotation
)
# Lowercase words joined by "_" or "-": identifiers and enum values, not tokens.
_JOINED_WORDS = re.compile(r"^[a-z]+(?:[_-][a-z]+)+$")
_PATH_OR_URL = re.compile(r"^(?:[/~.]|[A-Za-z]:\\|[A-Za-z][\w+.-]*://)")


# --- locators -------------------------------------------------------------------------


def _secret_span(m: re.Match[str]) -> Span:
    return m.span("s") if "s" in m.re.groupindex else m.span()


def _when(test: Callable[[str], bool]) -> Locate:
    """Locate the secret group (or whole match) and keep it only if ``test`` accepts it."""

    def locate(m: re.Match[str]) -> Span | None:
        start, end = _secret_span(m)
        return (start, end) if test(m.string[start:end]) else None

    return locate


def _token_ok(value: str) -> bool:
    # "EXAMPLE" marks vendor documentation keys (AWS ships AKIA...EXAMPLE); a random
    # token containing it is astronomically unlikely.
    return _random_looking(value) and "EXAMPLE" not in value


def _jwt_ok(value: str) -> bool:
    """The header must decode to JSON naming an algorithm: RFC 7515 makes "alg" required."""
    header = value.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(b"{") and b'"alg"' in decoded


def _aws_secret_ok(value: str) -> bool:
    # 40 chars of base64 alphabet; requiring both letter cases rules out hex digests.
    has_cases = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return has_cases and _entropy(value) >= 3.5 and not _is_placeholder(value)


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _wif_ok(value: str) -> bool:
    """Base58Check: the last 4 bytes are the first 4 of the double SHA-256 of the rest (1 chance in 4
    billion for a word that merely looks like one)."""
    number = 0
    for char in value:
        number = number * 58 + _BASE58.index(char)
    raw = number.to_bytes(38, "big").lstrip(b"\0")
    body, check = raw[:-4], raw[-4:]
    return len(raw) in (37, 38) and hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4] == check


# Words a sentence about a phrase has and BIP-39's word list does not.
_PROSE_WORDS = frozenset((
    "the", "and", "you", "your", "with", "from", "this", "that", "are", "have", "for", "not", "but", "will", "was",
    "were", "they", "them", "his", "her", "its", "our", "can", "into", "than", "then", "when", "what", "which",
    "should", "would", "could", "there", "their", "these", "those", "been", "being", "has", "had", "does", "did",
))


def _seed_phrase_ok(value: str) -> bool:
    """12, 15, 18, 21 or 24 words (BIP-39 lengths), none of them a word prose cannot do without."""
    words = value.split()
    return len(words) in (12, 15, 18, 21, 24) and not _PROSE_WORDS.intersection(words)


def _url_password_ok(value: str) -> bool:
    # The URL shape is the evidence, so short human passwords count; only fillers don't.
    return not _is_placeholder(value)


def _header_value_ok(value: str) -> bool:
    return len(value) >= 8 and _entropy(value) >= 2.5 and not _is_placeholder(value) and not _wordlike(value)


def _prose_password_ok(value: str) -> bool:
    """A told password mixes letters with digits or symbols; "the password is required" does not."""
    value = value.rstrip(".,;:!?)")
    mixed = any(c.isdigit() for c in value) + any(c.isalpha() for c in value) + any(not c.isalnum() for c in value)
    return mixed >= 2 and not _is_placeholder(value) and not _wordlike(value) and not _PATH_OR_URL.match(value)


def _told_password_ok(value: str) -> bool:
    """As _prose_password_ok, and written in Latin script: "パスワードは大文字と小文字を区別します" is prose."""
    return _prose_password_ok(value) and not any(ord(c) >= 0x2E80 for c in value)


def _curl_user(m: re.Match[str]) -> Span | None:
    user, password = m.group("u"), m.group("s")
    if user.isdigit() and password.isdigit():
        return None  # "docker run -u 1000:1000" is uid:gid
    return m.span("s") if not _is_placeholder(password) else None


# --- generic key = value --------------------------------------------------------------

_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pass"})
_SECRET_WORDS = frozenset({"secret", "token", "apikey", "credential", "credentials"})
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "auth", "signing", "encryption", "master", "client",
     "app", "service", "account", "license", "webhook"}
)  # fmt: skip
# For names written without separators ("DBPASSWORD", "apikey", "csrftoken").
_JOINED_SUFFIXES = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "secretkey", "accesskey",
    "privatekey", "authkey", "secretkeybase",
)  # fmt: skip
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _secret_key_class(name: str) -> str | None:
    """Classify a key name: "password", "secret", or None when it names no credential.

    English compounds are head-final, so the last word decides: ``password_hash`` and
    ``token_endpoint`` are not secrets, ``client_secret`` and ``api_key`` are.
    """
    segments = [s.lower() for s in _SEGMENT.findall(name)]
    if not segments or "public" in segments:  # publicKeyToken, public_key: published by design
        return None
    last, joined = segments[-1], "".join(segments)
    if last in _PASSWORD_WORDS or joined.endswith(("password", "passwd", "passphrase")):
        return "password"
    if last in _SECRET_WORDS or joined.endswith(_JOINED_SUFFIXES):
        return "secret"
    if last == "key" and len(segments) > 1 and segments[-2] in _KEY_QUALIFIERS:
        return "secret"
    return None


def _name_start(text: str, end: int, limit: int) -> int:
    start = end
    while start > max(0, end - limit) and text[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _name_before(text: str, end: int) -> str:
    """The name ending at ``end`` (the rules anchor on the keyword, which may sit inside
    it), plus one plain word before it so that prose like "API key:" is understood."""
    start = _name_start(text, end, 64)
    if start >= 2 and text[start - 1] == " " and text[start - 2].isalpha():
        word = _name_start(text, start - 1, 20)
        if text[word : start - 1].isalpha() and (word == 0 or text[word - 1] not in _NAME_CHARS):
            start = word
    return text[start:end]


_OPENERS = {")": "(", "]": "[", "}": "{"}


def _strip_value(start: int, end: int, text: str) -> Span:
    """Quotes are syntax, not secret; trailing sentence punctuation and unbalanced closing
    brackets ("(password: x)") are prose."""
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        return start + 1, end - 1
    while end > start:
        last = text[end - 1]
        opener = _OPENERS.get(last)
        unbalanced = opener is not None and text.count(opener, start, end) < text.count(last, start, end)
        if last not in ".:!?" and not unbalanced:
            break
        end -= 1
    return start, end


def _generic_value_ok(value: str, quoted: bool, key_class: str) -> bool:
    if _is_placeholder(value) or value.isdigit() or _wordlike(value) or _PATH_OR_URL.match(value):
        return False
    if not quoted and _CODE_REF.search(value):
        return False
    # Tokens never contain spaces; a quoted passphrase may.
    if " " in value and not (quoted and key_class == "password"):
        return False
    if key_class == "secret" and _JOINED_WORDS.match(value):
        return False  # passwords may be diceware ("correct-horse-battery"), tokens are not
    min_len, min_entropy = (8, 2.5) if key_class == "password" else (12, 3.0)
    return len(value) >= min_len and _entropy(value) >= min_entropy


def _generic(m: re.Match[str]) -> Span | None:
    raw_start, raw_end = m.span("s")
    start, end = _strip_value(raw_start, raw_end, m.string)
    # Cheap exits first: values too short for any key class, and markers seen again by
    # the re-check pass (those are protected anyway).
    if end - start < 8 or m.string.startswith("[REDACTED:", start):
        return None
    key_class = _secret_key_class(_name_before(m.string, m.start()) + m.group("k"))
    if key_class is None:
        return None
    quoted = start != raw_start
    if not _generic_value_ok(m.string[start:end], quoted, key_class):
        return None
    while end < raw_end and m.string[end] in "!?":  # "pass: s3cretPass!" may end in either: not left in clear
        end += 1
    return start, end


def _aws_named(m: re.Match[str]) -> Span | None:
    """A 40-char value is an AWS secret only if its name says AWS or "secret access key"."""
    name = (_name_before(m.string, m.start()) + m.string[m.start() : m.end("k")]).lower()
    if "aws" not in name and "access" not in name:
        return None
    return m.span("s") if _aws_secret_ok(m.group("s")) else None


_ID_GLUE = _NAME_CHARS | {":"}


def _telegram(m: re.Match[str]) -> Span | None:
    """The rule anchors on ":" + 35 chars; the bot id is the 8-10 digits before it."""
    text, colon = m.string, m.start()
    start = colon
    while start > max(0, colon - 11) and text[start - 1] in "0123456789":
        start -= 1
    if not 8 <= colon - start <= 10 or text[start] == "0":
        return None
    glued = start > 0 and text[start - 1] in _ID_GLUE
    if glued and not text.endswith("bot", 0, start):  # ".../bot<token>/getMe" is the API URL form
        return None
    return (start, m.end()) if _random_looking(text[colon + 1 : m.end()], 3.5) else None


# --- rules ----------------------------------------------------------------------------

# Rules start with a literal so the regex engine can skip ahead with a fast substring
# search; the left boundary is then checked by a lookbehind placed after that literal.
# Case-insensitive rules cannot start with a literal, so they carry "needles" and only
# run when one occurs in the lowercased text.


def _after(lead: str, left: str = "A-Za-z0-9_-") -> str:
    """``lead`` not glued to a longer run of [left] characters (keeps "task-sk-1" out)."""
    return re.escape(lead) + rf"(?<![{left}].{{{len(lead)}}})"


def _token(kind: str, lead: str, body: str, right: str = _R) -> _Rule:
    return _Rule(kind, _P_TOKEN, re.compile(_after(lead) + body + right), _when(_token_ok))


def _variants(*words: str) -> str:
    return "|".join(v for w in words for v in (w, w.title(), w.upper()))


_SEP = r"[\"'`]?[ \t]{0,8}(?:::?|:=|=>|=(?!=))[ \t]{0,8}[\"'`]?"
_AWS_SK_VALUE = r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
_AWS_KEY_ID = _after("A", "A-Za-z0-9") + r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}"

_RULES: tuple[_Rule, ...] = (
    # OpenAI: "sk-" + 32+ alphanumerics (legacy), or "sk-proj-" / "sk-svcacct-" /
    # "sk-admin-" + a long base64url tail.
    _token("openai", "sk-", r"(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}+|[A-Za-z0-9]{32,}+)"),
    # Anthropic: "sk-ant-" + kind and two-digit version ("api03", "admin01") + base64url.
    _token("anthropic", "sk-ant-", r"(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{32,}+"),
    # GitHub: "ghp_/gho_/ghu_/ghs_/ghr_" + 36 alphanumerics; fine-grained "github_pat_" + 82.
    _token("github", "gh", r"[pousr]_[A-Za-z0-9]{36,251}+"),
    _token("github", "github_pat_", r"[A-Za-z0-9_]{60,255}+"),
    # GitLab: "glpat-" (personal), "gldt-" (deploy), "glrt-" (runner), "glptt-" (trigger)
    # + 20+ base64url; newer PATs carry ".01." style dotted suffixes.
    _token("gitlab", "gl", r"(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}+(?:\.[A-Za-z0-9_-]++)*+"),
    # AWS access key id: 4-letter type prefix + 16 uppercase alphanumerics (20 total).
    _Rule("aws_access_key", _P_TOKEN, re.compile(_AWS_KEY_ID + r"(?![A-Za-z0-9])"), _when(_token_ok)),
    # AWS secret access key: 40 chars of [A-Za-z0-9/+], indistinguishable from other
    # base64 on its own, so only after an aws-secret-ish name ...
    _Rule(
        "aws_secret_key",
        _P_AWS_SECRET,
        re.compile(rf"(?:{_variants('secret')})(?P<k>[\w.-]{{0,20}}?(?:{_variants('key')})){_SEP}{_AWS_SK_VALUE}"),
        _aws_named,
    ),
    # ... or right after its access key id on the same line (credentials.csv layout).
    _Rule(
        "aws_secret_key",
        _P_AWS_SECRET,
        re.compile(_AWS_KEY_ID + r"[\"']?[ \t]*[,;:|\t][ \t]*[\"']?" + _AWS_SK_VALUE),
        _when(_aws_secret_ok),
    ),
    # ... or told after its access key id in prose, on the same line ("AKIA... with secret 9dKq2+...").
    _Rule(
        "aws_secret_key",
        _P_AWS_SECRET,
        re.compile(_AWS_KEY_ID + rf"[^\n]{{0,60}}?(?:{_variants('secret')})[^\n]{{0,20}}?[^A-Za-z0-9/+\n]"
                   + _AWS_SK_VALUE),
        _when(_aws_secret_ok),
    ),
    # Stripe: secret "sk_" and restricted "rk_" keys, live or test, + 24+ alphanumerics;
    # webhook signing secrets "whsec_". Publishable "pk_" keys are public by design.
    _token("stripe", "sk_", r"(?:live|test)_[A-Za-z0-9]{20,247}+"),
    _token("stripe", "rk_", r"(?:live|test)_[A-Za-z0-9]{20,247}+"),
    _token("stripe", "whsec_", r"[A-Za-z0-9+/]{24,}+=*"),
    # Slack: "xox" + type letter (bot, user, app, refresh, ...) + dash-separated parts;
    # app-level tokens "xapp-".
    _token("slack", "xox", r"[abposre](?:\.xox[bp])?-[A-Za-z0-9-]{10,}+"),
    _token("slack", "xapp-", r"[A-Za-z0-9-]{10,}+"),
    # Slack incoming webhook: the path after the host is the credential (team T..., then
    # the bot/app id and a 24-char secret); the host stays readable.
    _Rule(
        "slack_webhook",
        _P_TOKEN,
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>T[A-Z0-9]{6,20}+/[A-Za-z0-9/]{20,300}+)"),
        _when(_token_ok),
    ),
    # Google API key: "AIza" + 35 base64url characters (39 total).
    _token("google_api_key", "AIza", r"[A-Za-z0-9_-]{35}"),
    # Hugging Face user access token: "hf_" + 34+ mixed-case letters.
    _token("huggingface", "hf_", r"[A-Za-z0-9]{34,}+"),
    # npm access token: "npm_" + 36 alphanumerics.
    _token("npm", "npm_", r"[A-Za-z0-9]{36}"),
    # PyPI API token: "pypi-" + base64 macaroon whose first bytes encode "pypi.org"
    # ("AgEIcHlwaS5vcmc") or "test.pypi.org" ("AgENdGVzdC5weXBpLm9yZw").
    _token("pypi", "pypi-", r"(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}+"),
    # SendGrid: "SG." + 22 base64url + "." + 43 base64url.
    _token("sendgrid", "SG.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    # Twilio API key SID: "SK" + 32 lowercase hex. The account SID ("AC" + 32 hex) is an
    # identifier, not a credential, so it is never redacted; its auth token (32 hex) is,
    # when it sits next to the SID ...
    _token("twilio", "SK", r"[0-9a-f]{32}"),
    _Rule(
        "twilio",
        _P_TOKEN,
        re.compile(
            _after("AC", "A-Za-z0-9")
            + r"[0-9a-f]{32}[\"']?[ \t]*[:,;|\t][ \t]*[\"']?(?P<s>[0-9a-f]{32})(?![A-Za-z0-9])"
        ),
        _when(_token_ok),
    ),
    # ... or is named as a Twilio auth token.
    _Rule(
        "twilio",
        _P_TOKEN,
        re.compile(r"(?i)twilio[\w.-]{0,20}?auth[_.-]?token" + _SEP + r"(?P<s>[0-9a-f]{32})(?![A-Za-z0-9])"),
        _when(_token_ok),
        ("twilio",),
    ),
    # Azure storage: "AccountKey=" + 88 chars of base64 (64 bytes) in a connection string;
    # the key name and the rest of the connection string stay readable.
    _Rule(
        "azure_storage_key",
        _P_TOKEN,
        re.compile(_after("AccountKey", "A-Za-z0-9") + r"[ \t]*=[ \t]*(?P<s>[A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])"),
        _when(_token_ok),
    ),
    # Notion: legacy "secret_" + 43 alphanumerics; current "ntn_" + ~46 alphanumerics.
    _token("notion", "secret_", r"[A-Za-z0-9]{43}"),
    _token("notion", "ntn_", r"[A-Za-z0-9]{40,60}+"),
    # Linear personal API key: "lin_api_" + 40 alphanumerics.
    _token("linear", "lin_api_", r"[A-Za-z0-9]{40}"),
    # DigitalOcean: "dop_v1_" (personal), "doo_v1_" (OAuth), "dor_v1_" (refresh) + 64 hex.
    _token("digitalocean", "do", r"[opr]_v1_[a-f0-9]{64}"),
    # Shopify: "shpat_" (admin), "shpca_" (custom app), "shppa_" (private app),
    # "shpss_" (shared secret) + 32 hex.
    _token("shopify", "shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    # Discord bot token: base64 of the bot's numeric id (starts M, N or O) "." 6 "." 27-38 base64url.
    _Rule("discord", _P_TOKEN, re.compile(r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}"
                                          r"\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])"), _when(_token_ok)),
    # Mailgun private API key: "key-" + 32 hex.
    _token("mailgun", "key-", r"[0-9a-f]{32}"),
    # Azure shared access signature: the "sig=" parameter of a SAS URL or connection string.
    _Rule("azure_sas", _P_TOKEN, re.compile(r"(?<=[?&;])sig=(?P<s>[A-Za-z0-9%+/]{30,120}+(?:=|%3[Dd]){0,2})"),
          _when(_token_ok), ("sig=",)),
    # age secret key: "AGE-SECRET-KEY-1" + 58 bech32 characters.
    _Rule("age", _P_TOKEN, re.compile(r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}(?![A-Za-z0-9])"), _secret_span),
    # Atlassian API token: "ATATT3" + ~186 base64url (with a checksum tail).
    _token("atlassian", "ATATT3", r"[A-Za-z0-9_=-]{150,250}+"),
    # Grafana: cloud "glc_" + base64; service account "glsa_" + 32 + "_" + 8 hex.
    _token("grafana", "glc_", r"[A-Za-z0-9+/]{32,400}+={0,2}"),
    _token("grafana", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    # Databricks personal access token: "dapi" + 32 hex (an optional "-N" suffix).
    _token("databricks", "dapi", r"[a-f0-9]{32}(?:-\d)?"),
    # Docker Hub personal access token: "dckr_pat_" + 27 base64url.
    _token("docker", "dckr_pat_", r"[A-Za-z0-9_-]{27,}+"),
    # PlanetScale: "pscale_tkn_" (service token), "pscale_pw_" (password), "pscale_oauth_".
    _token("planetscale", "pscale_", r"(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64}+"),
    # HashiCorp Vault: "hvs." (service) and "hvb." (batch) tokens; Terraform Cloud ".atlasv1.".
    _token("hashicorp_vault", "hv", r"[sb]\.[A-Za-z0-9_-]{24,}+"),
    _Rule("terraform_cloud", _P_TOKEN, re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}+"),
          _when(_token_ok), (".atlasv1.",)),
    # Square: access "sq0atp-" + 22, OAuth secret "sq0csp-" + 43; "EAAA" sandbox/production tokens.
    _token("square", "sq0", r"(?:atp-[A-Za-z0-9_-]{22}|csp-[A-Za-z0-9_-]{43})"),
    # Flutterwave secret key: "FLWSECK-" or "FLWSECK_TEST-" + 32 hex + "-X".
    _token("flutterwave", "FLWSECK", r"(?:_TEST)?-[a-h0-9]{32}-X"),
    # JFrog Artifactory: API key "AKCp" + 69, reference token "cmVmdGtu" + 56.
    _token("artifactory", "AKCp", r"[A-Za-z0-9]{69}"),
    _token("artifactory", "cmVmdGtu", r"[A-Za-z0-9]{56}"),
    # Postman API key: "PMAK-" + 24 hex + "-" + 34 hex.
    _token("postman", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    # Shippo: "shippo_live_" / "shippo_test_" + 40 hex.
    _token("shippo", "shippo_", r"(?:live|test)_[a-f0-9]{40}"),
    # Doppler: "dp.pt." (personal), "dp.st." (service), "dp.sa.", "dp.ct." + 40+ alphanumerics.
    _token("doppler", "dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}+"),
    # Dynatrace API token: "dt0c01." + 24 + "." + 64.
    _token("dynatrace", "dt0c01.", r"[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    # EasyPost: "EZAK" (production) / "EZTK" (test) + 54 alphanumerics.
    _token("easypost", "EZ", r"[AT]K[A-Za-z0-9]{54}"),
    # Sentry: org auth token "sntrys_" + base64 JSON; user token "sntryu_" + 64 hex.
    _token("sentry", "sntry", r"(?:s_eyJ[A-Za-z0-9+/=_-]{60,}+|u_[a-f0-9]{64})"),
    # RubyGems API key: "rubygems_" + 48 hex. NuGet: "oy2" + 43 lowercase alphanumerics.
    _token("rubygems", "rubygems_", r"[a-f0-9]{48}"),
    _token("nuget", "oy2", r"[a-z0-9]{43}"),
    # Dropbox short-lived access token: "sl." + 130+ base64url.
    _token("dropbox", "sl.", r"[A-Za-z0-9_=-]{130,}+"),
    # Google OAuth: access token "ya29." + base64url; client secret "GOCSPX-" + 28; refresh "1//0".
    _token("google_oauth", "ya29.", r"[A-Za-z0-9_-]{30,}+"),
    _token("google_oauth", "GOCSPX-", r"[A-Za-z0-9_-]{28}"),
    _token("google_oauth", "1//0", r"[A-Za-z0-9_-]{40,}+"),
    # Brevo (Sendinblue): "xkeysib-" + 64 hex + "-" + 16; SMTP "xsmtpsib-".
    _token("brevo", "x", r"(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    # Mailchimp API key: 32 hex + "-us" + data-center number.
    _Rule("mailchimp", _P_TOKEN, re.compile(r"-us(?<=(?<![0-9a-f])[0-9a-f]{32}-us)(?P<s>[0-9]{1,2})(?![0-9A-Za-z])"),
          lambda m: (m.start() - 32, m.end()) if _token_ok(m.string[m.start() - 32 : m.start()]) else None),
    # Heroku: "HRKU-" + 60 base64url (the current format).
    _token("heroku", "HRKU-", r"[A-Za-z0-9_-]{60}"),
    # New Relic: user key "NRAK-" + 27, insights insert "NRII-", browser "NRJS-" + 19 hex.
    _token("newrelic", "NR", r"(?:AK-[A-Z0-9]{27}|II-[A-Za-z0-9_-]{32}|JS-[a-f0-9]{19})"),
    # Pulumi access token: "pul-" + 40 hex. Supabase: "sbp_" + 40 hex. Netlify: "nfp_" + 36.
    _token("pulumi", "pul-", r"[a-f0-9]{40}"),
    _token("supabase", "sbp_", r"[a-f0-9]{40}"),
    _token("netlify", "nfp_", r"[A-Za-z0-9]{36}"),
    # Tailscale: "tskey-auth-", "tskey-api-", "tskey-client-" + id + "-" + secret.
    _token("tailscale", "tskey-", r"(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}+-[A-Za-z0-9]{20,}+"),
    # Groq "gsk_" + 52; Replicate "r8_" + 37; Perplexity "pplx-" + 48.
    _token("groq", "gsk_", r"[A-Za-z0-9]{52}"),
    _token("replicate", "r8_", r"[A-Za-z0-9]{37}"),
    _token("perplexity", "pplx-", r"[A-Za-z0-9]{48}"),
    # Figma personal access token: "figd_" + 40+ base64url. Contentful: "CFPAT-" + 43.
    _token("figma", "figd_", r"[A-Za-z0-9_-]{40,}+"),
    _token("contentful", "CFPAT-", r"[A-Za-z0-9_-]{43}"),
    # Prefect "pnu_" + 36; ReadMe "rdme_" + 70; Clojars "CLOJARS_" + 60; Typeform "tfp_" + 59.
    _token("prefect", "pnu_", r"[A-Za-z0-9]{36}"),
    _token("readme", "rdme_", r"[a-z0-9]{70}"),
    _token("clojars", "CLOJARS_", r"[a-z0-9]{60}"),
    _token("typeform", "tfp_", r"[A-Za-z0-9_.=-]{59}"),
    # Duffel "duffel_live_"/"duffel_test_" + 43; 1Password service account "ops_eyJ" + base64 JSON.
    _token("duffel", "duffel_", r"(?:live|test)_[A-Za-z0-9_=-]{43}"),
    _token("onepassword", "ops_eyJ", r"[A-Za-z0-9+/]{200,}+={0,3}"),
    # OpenShift user token: "sha256~" + 43 base64url. Harness PAT: "pat." + three dotted parts.
    _token("openshift", "sha256~", r"[A-Za-z0-9_-]{43}"),
    _token("harness", "pat.", r"[A-Za-z0-9_-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20}"),
    # Cloudflare Origin CA key: "v1.0-" + 24 hex + "-" + 146 hex.
    _token("cloudflare", "v1.0-", r"[a-f0-9]{24}-[a-f0-9]{146}"),
    # Azure AD (Entra) client secret: 3 chars, a digit, "Q~", 31-34 more.
    _Rule("azure_ad_secret", _P_TOKEN,
          re.compile(r"Q~(?<=(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
          lambda m: (m.start() - 4, m.end()) if _token_ok(m.string[m.start() - 4 : m.end()]) else None),
    # A password told in prose: "the wifi password is Otter-wsnE37-93" ("password = x" is generic_secret).
    _Rule("password", _P_GENERIC + 1,
          re.compile(r"(?i)(?<![\w-])(?:password|passphrase|passcode|pin|pwd)[ \t]+(?:is|was):?[ \t]+"
                     r"[\"'`]?(?P<s>[^\s\"'`]{6,64}+)"),
          _when(_prose_password_ok), ("pass", "pin", "pwd")),
    # A password under its name in another language, after a colon or told ("senha: MinhaSenha#99",
    # "a senha do wifi é MinhaSenha#99", "Passwort: Geheim!2024x", "パスワードはHimitsu2024"): key names are
    # read in English above. Up to three words may qualify the name ("do wifi", "für das WLAN").
    _Rule("password", _P_GENERIC + 1,
          re.compile(r"(?i)(?:(?<![\w-])(?:senha|contrase[ñn]a|mot[ \t]de[ \t]passe|passwort|kennwort|wachtwoord"
                     r"|has[łl]o|parola|пароль)|パスワード|비밀번호|密码|密碼|口令|暗証番号)"
                     r"(?:[ \t]+[^\s:=：]{1,20}){0,3}?[ \t]*(?:[:=：]|[ \t](?:é|era|ist|war|est|était|es|è)(?=[ \t])"
                     r"|は|는|은|是|为|為)[ \t]*[\"'`]?(?P<s>[^\s\"'`]{6,64}+)"),
          _when(_told_password_ok), ("senha", "contrase", "passe", "passwort", "kennwort", "wachtwoord", "has",
                                     "parola", "пароль", "パスワード", "비밀번호", "密码", "密碼", "口令", "暗証番号")),
    # The MySQL/MariaDB clients take a password glued to -p ("mysql -u root -pMyRootPw99").
    _Rule("password", _P_GENERIC + 1,
          re.compile(r"(?i)(?<![\w-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)[ \t][^\n]{0,200}?"
                     r"(?<=[ \t])-p[\"']?(?P<s>[^\s\"'`]{4,64}+)"),
          _when(_prose_password_ok), ("mysql", "mariadb")),
    # A Bitcoin private key in wallet import format: base58, and its checksum must hold.
    _Rule("private_key", _P_TOKEN, re.compile(r"(?<![1-9A-HJ-NP-Za-km-z])[5KL][1-9A-HJ-NP-Za-km-z]{50,51}"
                                              r"(?![1-9A-HJ-NP-Za-km-z])"), _when(_wif_ok)),
    # A wallet's recovery phrase (BIP-39: 12 to 24 lowercase words) after the name that says so.
    _Rule("private_key", _P_PRIVATE_KEY,
          re.compile(r"(?i)(?:seed|recovery|mnemonic|backup|secret)[ \t]*(?:phrase|words|mnemonic)?[\"'`*]{0,2}"
                     r"[ \t]*[:=-]?[ \t]*(?:\r?\n[ \t]*)?[\"'`]?(?P<s>(?-i:[a-z]{3,8})(?:[ \t]+(?-i:[a-z]{3,8})){11,23})"
                     r"(?![a-zA-Z]|[ \t]+[a-z])"),  # whole words: "christopher" is no 8-letter word and the rest
          _when(_seed_phrase_ok), ("seed", "recovery", "mnemonic", "backup", "secret")),
    # Telegram bot token: numeric bot id (8-10 digits) ":" 35 base64url. Anchored on the
    # colon so the engine can skip ahead; _telegram reads the id backwards.
    _Rule("telegram_bot", _P_TOKEN, re.compile(r":(?<=[0-9]:)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), _telegram),
    # PEM private keys (PKCS#1 "RSA", SEC1 "EC", PKCS#8 plain or "ENCRYPTED", "OPENSSH",
    # "PGP ... BLOCK"): BEGIN line through END line. With no END, to the end of the text,
    # since everything after a truncated paste may be key material - but only when key
    # material (a base64 run, or an armor header such as "Proc-Type:") follows, so that a
    # note merely quoting the BEGIN line is not wiped. The search for END stops at the
    # next BEGIN, which keeps many unterminated BEGINs linear.
    _Rule(
        "private_key",
        _P_PRIVATE_KEY,
        re.compile(
            r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:(?!-----BEGIN).)*?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?=[ \t]*(?:\r?\n|\\n)[ \t]*(?:[A-Za-z0-9+/=]{16}|[A-Za-z-]{2,30}: )).*)",
            re.DOTALL,
        ),
        _secret_span,
    ),
    # JWT (JWS compact form): three base64url parts; the header is a JSON object, so it
    # starts "eyJ" ('{"'). The signature may be empty (alg "none").
    _Rule(
        "jwt",
        _P_JWT,
        re.compile(_after("eyJ") + r"[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+"),
        _when(_jwt_ok),
    ),
    # Password in a URL's userinfo (RFC 3986 "scheme://user:password@host"): only the
    # password goes, so the URL stays readable. Backtracking to the last "@" copes with
    # an unencoded "@" in the password; the 1024 bound keeps it linear.
    _Rule(
        "url_password",
        _P_URL_PASSWORD,
        re.compile(r"://(?P<u>[^\s:/?#@\[\]\"'<>]{0,256}+):(?P<s>[^\s/?#\"'<>]{1,1024})@"),
        _when(_url_password_ok),
    ),
    # HTTP "Authorization: <scheme> <credentials>" (also Proxy-Authorization, and the
    # same line inside curl -H '...'); the scheme stays readable. Digest is left out:
    # its response is bound to a server nonce and its parameters are not a token.
    _Rule(
        "authorization_header",
        _P_AUTH,
        re.compile(
            r"(?i)authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?:bearer|basic|token|bot|apikey)[ \t]+)?(?P<s>[A-Za-z0-9._~+/-]{1,4096}+=*)"
        ),
        _when(_header_value_ok),
        ("authorization",),
    ),
    # API-key headers: "X-Api-Key:", "Api-Key:" (Azure OpenAI), GitLab "Private-Token:", ...
    _Rule(
        "authorization_header",
        _P_AUTH,
        re.compile(
            r"(?i)(?<![\w-])(?:x-api-key|x-api-token|x-auth-token|x-access-token|api-key|private-token"
            r"|ocp-apim-subscription-key)[\"']?[ \t]*:[ \t]*[\"']?(?P<s>[A-Za-z0-9._~+/=-]{1,4096}+)"
        ),
        _when(_header_value_ok),
        ("api-key", "api-token", "auth-token", "access-token", "private-token", "subscription-key"),
    ),
    # curl "-u user:password" / "--user user:password": the password part only.
    _Rule(
        "authorization_header",
        _P_AUTH,
        re.compile(_after("-", r"\w-") + r"(?:u|-user)[ \t]+[\"']?(?P<u>[^\s:\"'$]{1,256}+):(?P<s>[^\s\"']{1,1024}+)"),
        _curl_user,
    ),
    # Generic "name = value" in code, YAML, .env, JSON, Dataview "name:: value", and
    # prose "API key: value": the name must say credential (see _secret_key_class) and
    # the value must look like one (length, Shannon entropy, no placeholder). Anchored
    # on the keyword (in its three usual casings) rather than the name's start, for speed.
    _Rule(
        "generic_secret",
        _P_GENERIC,
        re.compile(
            rf"(?P<k>(?:{_variants('pass', 'pwd', 'secret', 'token', 'credential', 'key')})[\w.-]{{0,40}}+)"
            r"[\"'`*]{0,2}[ \t]{0,8}(?:::?|:=|=>|=(?!=))[ \t*]{0,8}"
            # "&" ends a value only where a query parameter follows ("?token=...&page=2").
            r"(?P<s>\"[^\"\r\n]{1,512}+\"|'[^'\r\n]{1,512}+'|(?:[^\s\"'`,;&<>]|&(?![\w.-]{1,64}=)){1,512}+)"
        ),
        _generic,
    ),
)
KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in _RULES))  # in rule order, each once


# --- resolution and rewriting ---------------------------------------------------------


def _candidates(text: str) -> Iterator[_Candidate]:
    for protected in (MARKER, _DATA_URI):
        for m in protected.finditer(text):
            yield _Candidate(m.start(), m.end(), _P_PROTECTED, "")
    lowered = text.lower()
    for rule in _RULES:
        if rule.needles and not any(n in lowered for n in rule.needles):
            continue
        for m in rule.pattern.finditer(text):
            span = rule.locate(m)
            if span is not None and span[0] < span[1]:
                yield _Candidate(span[0], span[1], rule.priority, rule.kind)
    if "|" in text and any(n in lowered for n in ("pass", "pwd", "pin", "secret")):
        for start, end in _password_column_cells(text):
            yield _Candidate(start, end, _P_GENERIC + 1, "password")


# A Markdown table's header cell that names a password column ("| Device | User | Password |").
_PASSWORD_HEADER = re.compile(r"(?i)(?:password|passwd|pwd|passcode|passphrase|pin|secret)s?")
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*)\|[ \t\r]*$")
_TABLE_RULE = re.compile(r"^[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t\r]*$")


def _password_column_cells(text: str) -> Iterator[Span]:
    """The cells under a password column of a Markdown table: a line-by-line rule cannot see that the
    column's header says what "Zx9!kLm2Qp" is."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    columns: list[int] = []
    for i, line in enumerate(lines):
        row = _TABLE_ROW.match(line)
        if row is None:
            columns = []
        elif columns:
            yield from _cells_at(starts[i] + row.start(1), row.group(1), columns)
        elif i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            names = [cell.strip() for cell in row.group(1).split("|")]
            columns = [j for j, name in enumerate(names) if _PASSWORD_HEADER.fullmatch(name)]


def _cells_at(offset: int, cells: str, columns: list[int]) -> Iterator[Span]:
    for j, cell in enumerate(cells.split("|")):
        value = cell.strip()
        if j in columns and _cell_password_ok(value):
            start = offset + cell.index(value)
            yield start, start + len(value)
        offset += len(cell) + 1


def _cell_password_ok(value: str) -> bool:
    """One word that mixes letters with digits or symbols, or a PIN's digits; "see the vault" is a note."""
    if not value or any(c.isspace() for c in value):
        return False
    return _prose_password_ok(value) or (value.isdigit() and 4 <= len(value) <= 12)


def _pick(cluster: list[_Candidate]) -> list[_Candidate]:
    """Greedy by priority, then length: the best candidate of an overlap wins outright."""
    if len(cluster) == 1:
        return cluster
    chosen: list[_Candidate] = []
    for c in sorted(cluster, key=lambda c: (-c.priority, c.start - c.end, c.start)):
        if all(c.end <= o.start or c.start >= o.end for o in chosen):
            chosen.append(c)
    return chosen


def _resolve(candidates: Iterable[_Candidate]) -> list[_Candidate]:
    """Split candidates into clusters of transitively overlapping spans and pick per
    cluster; clusters are tiny in practice, so this stays near-linear on huge files."""
    chosen: list[_Candidate] = []
    cluster: list[_Candidate] = []
    cluster_end = -1
    for c in sorted(candidates, key=lambda c: (c.start, -c.end)):
        if cluster and c.start >= cluster_end:
            chosen.extend(_pick(cluster))
            cluster = []
        cluster_end = max(cluster_end, c.end) if cluster else c.end
        cluster.append(c)
    chosen.extend(_pick(cluster))
    return sorted(chosen, key=lambda c: c.start)


def _marker(kind: str, replaced: str) -> str:
    return f"[REDACTED:{kind}]" + "".join(_BREAKS.findall(replaced))


def _redact_once(text: str) -> tuple[str, list[Finding]]:
    parts: list[str] = []
    findings: list[Finding] = []
    pos = 0
    line = 1
    for c in _resolve(_candidates(text)):
        if not c.kind:
            continue
        line += text.count("\n", pos, c.start)
        parts += (text[pos : c.start], _marker(c.kind, text[c.start : c.end]))
        findings.append(Finding(c.kind, line))
        line += text.count("\n", c.start, c.end)
        pos = c.end
    if not findings:
        return text, findings
    parts.append(text[pos:])
    return "".join(parts), findings


def rules_fingerprint(source: bytes) -> str:
    """Changes whenever redaction may come out differently: this module's `source` (heuristics,
    thresholds; the caller reads it, VaultIndex.redaction_rules: this stage does no I/O) and the
    live rule set. The index stores it; a change means every note is redacted again and the old
    text is purged from the index files (see VaultIndex.index)."""
    digest = hashlib.blake2b(hashlib.blake2b(source, digest_size=16).digest() if source else b"", digest_size=12)
    for rule in _RULES:
        digest.update(repr((rule.kind, rule.priority, rule.pattern.pattern, rule.pattern.flags, rule.needles,
                            getattr(rule.locate, "__qualname__", ""))).encode())
    return digest.hexdigest()


def redact(text: str) -> Redacted:
    """Replace every credential in ``text`` with ``[REDACTED:kind]``.

    Line structure is preserved exactly; findings carry the kind and the 1-based line where
    each secret started, never the value. The result is a fixed point: redacting it again
    changes nothing and finds nothing.
    """
    findings: list[Finding] = []
    for _ in range(_MAX_PASSES):
        text, found = _redact_once(text)
        if not found:
            break
        findings += found
    # Stable sort: same-line findings keep their left-to-right order from the first pass.
    return Redacted(text=text, findings=tuple(sorted(findings, key=lambda f: f.line)))


# A key whose value starts on a later line (`password:` then `  - hunter2...`, a folded `>` block).
_VALUE_BELOW = re.compile(r":[ \t]*+(?:[|>][-+0-9]*+[ \t]*+)?(?:#[^\n]*+)?$", re.MULTILINE)
_TOP_KEY = re.compile(r"^([^\s#:-][^:\n]*?)[ \t]*:", re.MULTILINE)


def redact_read_values(data: dict[str, object], yaml_text: str) -> tuple[dict[str, object], list[Finding]]:
    """`data`, a note's frontmatter as YAML read it from `yaml_text`, with credentials redacted, and where
    they were. The note's text was redacted before parsing, where a credential and its label ("password:") share
    a line. A value on the lines below its key, or spelt by a double-quoted escape ("\\x67hp_...", a
    line joined by a trailing backslash), meets its label only once YAML reads it: the read values are
    redacted again, each beside its key. One pass over them all first; value by value only if it finds one."""
    if "\\" not in yaml_text and not _VALUE_BELOW.search(yaml_text):
        return data, []
    if not redact("\n".join(f"{key}: {value}" for key, value in _leaves(data, ""))).findings:
        return data, []
    lines = {m.group(1).strip().strip("'\""): yaml_text.count("\n", 0, m.start()) + 2
             for m in _TOP_KEY.finditer(yaml_text)}
    findings: list[Finding] = []

    def clean(value: object, key: str, top: str) -> object:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                name = str(clean(k, "", top or str(k)))  # a key is read alone, its values beside it
                out[name] = clean(v, name, top or str(k))
            return out
        if isinstance(value, list):
            return [clean(v, key, top) for v in value]
        if not isinstance(value, str):
            return value
        labelled = f"{key}: " if key else ""
        result = redact(f"{labelled}{value}")
        findings.extend(Finding(f.kind, lines.get(top, 2)) for f in result.findings)
        if not result.findings:
            return value
        return result.text[len(labelled):] if result.text.startswith(labelled) else \
            f"[REDACTED:{result.findings[0].kind}]"

    cleaned = clean(data, "", "")
    assert isinstance(cleaned, dict)
    return cleaned, findings


def _leaves(value: object, key: str) -> Iterator[tuple[str, object]]:
    """(nearest key, value) for every scalar, and (key, key) for every key: what redaction reads."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k), str(k)
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    elif isinstance(value, str):
        yield key, value
