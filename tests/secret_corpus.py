"""A secret-recall corpus written from the providers' published token formats (the kinds follow
gitleaks' and detect-secrets' rule lists), not from sidecar/ingest/redact.py: each template is how the
vendor documents its credential, filled with seeded random characters, and placed in a line the
way people paste it (an env file, YAML, prose, a URL, a curl command).

LOOKALIKES are ordinary lines that resemble secrets and must be left alone: UUIDs, digests, git
SHAs, base64 images, block ids, version strings, colour codes, hashes in URLs, placeholders.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
import string
import uuid

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()

# (kind family, template). {aN} alphanumerics, {hN} hex, {HN} upper hex, {uN} base64url, {dN} digits,
# {UN} upper alphanumerics, {lN} lower alphanumerics, {bN} bech32 (upper), {jwt} a signed JWT.
TEMPLATES: list[tuple[str, str]] = [
    ("openai", "sk-proj-{u64}"), ("openai", "sk-{a48}"), ("anthropic", "sk-ant-api03-{u93}AA"),
    ("github", "ghp_{a36}"), ("github", "gho_{a36}"), ("github", "github_pat_11{U20}_{a59}"),
    ("gitlab", "glpat-{u20}"), ("aws_access_key", "AKIA{U16}"), ("aws_secret", "aws_secret_access_key = {a40}"),
    ("stripe", "sk_live_{a24}"), ("stripe", "rk_test_{a24}"), ("stripe", "whsec_{a32}"),
    ("slack", "xoxb-{d12}-{d13}-{a24}"), ("slack", "xapp-1-A{U10}-{d13}-{h64}"),
    ("slack_webhook", "https://hooks.slack.com/services/T{U8}/B{U8}/{a24}"),
    ("google_api_key", "AIza{u35}"), ("huggingface", "hf_{a34}"), ("npm", "npm_{a36}"),
    ("pypi", "pypi-AgEIcHlwaS5vcmc{u70}"), ("sendgrid", "SG.{u22}.{u43}"), ("twilio", "SK{h32}"),
    ("azure_storage", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={a86}==;EndpointSuffix=core.windows.net"),
    ("notion", "ntn_{a46}"), ("notion", "secret_{a43}"), ("linear", "lin_api_{a40}"),
    ("digitalocean", "dop_v1_{h64}"), ("shopify", "shpat_{h32}"), ("telegram", "{d10}:AA{u33}"),
    ("jwt", "{jwt}"), ("url_password", "postgres://app:{a16}@db.internal:5432/prod"),
    ("authorization", "Authorization: Bearer {a40}"), ("api_key_header", "X-Api-Key: {a32}"),
    ("discord", "M{a23}.{u6}.{u38}"), ("mailgun", "key-{h32}"),
    ("azure_sas", "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig={a43}%3D"),
    ("age", "AGE-SECRET-KEY-1{b58}"), ("atlassian", "ATATT3xFfGF0{u180}=ABCD1234"),
    ("grafana", "glc_{a60}"), ("grafana", "glsa_{a32}_{h8}"), ("databricks", "dapi{h32}"),
    ("docker", "dckr_pat_{u27}"), ("planetscale", "pscale_tkn_{a43}"), ("planetscale", "pscale_pw_{a43}"),
    ("hashicorp_vault", "hvs.{u90}"), ("terraform_cloud", "{l14}.atlasv1.{u67}"),
    ("square", "sq0atp-{u22}"), ("square", "sq0csp-{u43}"), ("flutterwave", "FLWSECK_TEST-{h32}-X"),
    ("artifactory", "AKCp{a69}"), ("artifactory", "cmVmdGtu{a56}"), ("postman", "PMAK-{h24}-{h34}"),
    ("shippo", "shippo_live_{h40}"), ("doppler", "dp.pt.{a43}"), ("dynatrace", "dt0c01.{U24}.{U64}"),
    ("easypost", "EZAK{a54}"), ("sentry", "sntryu_{h64}"), ("rubygems", "rubygems_{h48}"),
    ("nuget", "oy2{l43}"), ("dropbox", "sl.{u140}"), ("google_oauth", "ya29.{u80}"),
    ("google_oauth", "GOCSPX-{u28}"), ("google_oauth", "1//0{u60}"), ("brevo", "xkeysib-{h64}-{a16}"),
    ("mailchimp", "{h32}-us{d2}"), ("heroku", "HRKU-{u60}"), ("newrelic", "NRAK-{U27}"),
    ("pulumi", "pul-{h40}"), ("supabase", "sbp_{h40}"), ("netlify", "nfp_{a36}"),
    ("tailscale", "tskey-auth-{a12}-{a30}"), ("groq", "gsk_{a52}"), ("replicate", "r8_{a37}"),
    ("perplexity", "pplx-{a48}"), ("figma", "figd_{u43}"), ("contentful", "CFPAT-{u43}"),
    ("prefect", "pnu_{a36}"), ("readme", "rdme_{l70}"), ("clojars", "CLOJARS_{l60}"),
    ("typeform", "tfp_{a59}"), ("duffel", "duffel_test_{u43}"), ("openshift", "sha256~{u43}"),
    ("cloudflare", "v1.0-{h24}-{h146}"), ("onepassword", "ops_eyJ{a250}="), ("harness", "pat.{u22}.{h24}.{a20}"), ("azure_ad_secret", "{a3}8Q~{a34}"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\\n{a70}\\n-----END OPENSSH PRIVATE KEY-----"),
    ("generic_password", "DB_PASSWORD={a10}#{d4}"), ("generic_secret", "client_secret: {a32}"),
    ("password", "the wifi password is {w}-{a4}{d2}-{d2}"),
]
PLACEMENTS = ["{s}", "export TOKEN_VALUE={s}", "  key: \"{s}\"", "I pasted {s} here by mistake.",
              "curl -H 'X-Debug: 1' https://api.example.com/v1?x={s}", "| prod | {s} |"]
WORDS = ["Otter", "Maple", "Falcon", "Harbor", "Copper", "Willow"]


def _fill(template: str, rng: random.Random) -> str:
    def one(m: re.Match[str]) -> str:
        code, n = m.group(1), int(m.group(2) or 0)
        if code == "jwt":
            head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
            body = base64.urlsafe_b64encode(f'{{"sub":"{rng.randrange(10**6)}"}}'.encode()).rstrip(b"=").decode()
            return f"{head}.{body}.{''.join(rng.choices(B64URL, k=43))}"
        if code == "w":
            return rng.choice(WORDS)
        chars = {"a": ALNUM, "h": HEX, "H": HEX.upper(), "u": B64URL, "d": string.digits,
                 "U": string.ascii_uppercase + string.digits, "l": string.ascii_lowercase + string.digits,
                 "b": BECH32}[code]
        return "".join(rng.choices(chars, k=n))

    return re.sub(r"\{(jwt|w|[ahHudUlb])(\d*)\}", one, template)


def secrets_corpus(per_template: int = 3, seed: int = 14) -> list[tuple[str, str, str]]:
    """(kind family, the secret, the line it sits in)."""
    rng = random.Random(seed)
    out = []
    for kind, template in TEMPLATES:
        for _ in range(per_template):
            secret = _fill(template, rng).replace("\\n", "\n")
            standalone = "\n" in secret or " " in secret or "=" in template[:20]  # already a line of its own
            line = secret if standalone else rng.choice(PLACEMENTS).format(s=secret)
            out.append((kind, secret, line))
    return out


def lookalikes(count: int = 2000, seed: int = 15) -> list[str]:
    """Ordinary lines that look like credentials to a careless rule."""
    rng = random.Random(seed)
    makers = [
        lambda: f"Meeting id {uuid.UUID(int=rng.getrandbits(128))} moved to Thursday.",
        lambda: f"sha256: {hashlib.sha256(rng.randbytes(8)).hexdigest()}",
        lambda: f"Fixed in commit {hashlib.sha1(rng.randbytes(8)).hexdigest()} (see the PR).",
        lambda: f"![img](data:image/png;base64,{base64.b64encode(rng.randbytes(60)).decode()})",
        lambda: f"A paragraph worth linking to. ^{''.join(rng.choices(string.ascii_lowercase + string.digits, k=6))}",
        lambda: f"Upgraded to v{rng.randrange(1, 20)}.{rng.randrange(30)}.{rng.randrange(100)}-rc{rng.randrange(5)}",
        lambda: f"Accent colour #{''.join(rng.choices(HEX, k=6))} on the header.",
        lambda: f"https://example.com/assets/{hashlib.md5(rng.randbytes(8)).hexdigest()}.js",
        lambda: f"md5 {hashlib.md5(rng.randbytes(8)).hexdigest()}  archive.tar.gz",
        lambda: "The password is stored in 1Password, ask Sam.",
        lambda: f"api_key: ${{{rng.choice(['API_KEY', 'OPENAI_KEY', 'TOKEN'])}}}",
        lambda: "token: <your-token-here>",
        lambda: f"password: {rng.choice(['changeme', 'hunter2?', '********', 'required', 'see vault'])}",
        lambda: f"Order #{rng.randrange(10**9, 10**10)} shipped, tracking 1Z{''.join(rng.choices(string.digits, k=16))}",
        lambda: f"docker run -u 1000:1000 image:{hashlib.sha1(rng.randbytes(4)).hexdigest()[:12]}",
        lambda: f"[[Note {rng.randrange(1000)}#Heading]] and [[{uuid.UUID(int=rng.getrandbits(128)).hex[:8]}]]",
        lambda: f"ISBN 978-{rng.randrange(10**9):09d}, DOI 10.{rng.randrange(1000, 9999)}/{rng.randrange(10**6)}",
        lambda: f"The key insight is that {rng.choice(WORDS).lower()}s key off the pin count.",
        lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{''.join(rng.choices(ALNUM, k=43))} me@laptop",
        lambda: f"integrity=\"sha384-{base64.b64encode(rng.randbytes(48)).decode()}\"",
        lambda: f"pin the version: requests=={rng.randrange(2, 3)}.{rng.randrange(32)}.{rng.randrange(9)}",
        lambda: f"ETag: \"{hashlib.sha1(rng.randbytes(8)).hexdigest()}\"",
        lambda: f"Run {uuid.UUID(int=rng.getrandbits(128))} took {rng.randrange(100)} s; trace {rng.getrandbits(64):016x}",
        lambda: f"pk_live_{''.join(rng.choices(ALNUM, k=24))} is the publishable key (public by design).",
        lambda: f"The Twilio account is AC{''.join(rng.choices(HEX, k=32))}.",
    ]
    return [rng.choice(makers)() for _ in range(count)]
