"""What is planted in examples/demo-vault, as plain constants for tests to assert against.

No imports of project code. Every path is vault-relative with forward slashes. Line numbers are
1-based and count every line of the file, frontmatter included.

Conventions used throughout:

* A *link* is any reference to another file: a body wikilink ``[[x]]`` (kind "link"), an embed
  ``![[x]]`` ("embed"), a relative Markdown link ``[t](x.md)`` ("markdown") or a wikilink
  inside a frontmatter property ("frontmatter"). External URLs are not links.
* Nothing inside code fences (``` or ~~~), inline code, ``%% comments %%`` (inline or multi-line),
  ``<!-- HTML comments -->`` or ``$$ math $$`` is a link or a tag.
* The *raw target* is the target as written, without ``#anchor`` and ``|display``. For Markdown
  links it is percent-decoded (``../Blog/Blog%20Ideas.md`` -> ``../Blog/Blog Ideas.md``), as
  docs/links.md specifies; LINK_FORM_MARKDOWN_AS_WRITTEN keeps the encoded spelling.
* A link *resolves* when it names an indexable note (exactly one, except AMBIGUOUS_LINKS): by
  vault path (with or without ``.md``), else by file name; both case-insensitively. Markdown
  links resolve relative to the source note's folder after percent-decoding. Links to
  attachments are not note links.
* The graph (orphans, inbound, dead ends, clusters) counts only resolved links whose source and
  target are both indexable and different. A link whose anchor is missing still resolves to its
  note. Broken links count for nothing. The one ambiguous link resolves per docs/links.md (see
  AMBIGUOUS_LINK_RESOLUTION); every graph fact below holds whether it is counted or not.
  Links written in excluded files never count. A template (TEMPLATES) is no node of the graph: it is
  no orphan, and its links count for nothing.
* Tags are compared as written (no two tags in the vault differ only by case). A nested tag
  ``project/search`` is counted as itself, not as ``project``. Frontmatter ``tags`` may be a YAML
  list or a comma/space separated string. Tags in the malformed frontmatter are not counted.
"""

from __future__ import annotations

VAULT_DIR = "examples/demo-vault"
QUERIES_FILE = "examples/demo-vault.queries.json"

# --------------------------------------------------------------------------------------------
# Which files are notes
# --------------------------------------------------------------------------------------------

INDEXABLE_NOTES: frozenset[str] = frozenset(
    {
        "Archive/2025 Goals.md",
        "Brain Dump.md",
        "Cooking/Caldo Verde.md",
        "Cooking/Mapo Tofu.md",
        "Cooking/Miso Ramen.md",
        "Cooking/Pantry Staples.md",
        "Cooking/Recipes.md",
        "Cooking/Shakshuka.md",
        "Cooking/Sourdough Bread.md",
        "Cooking/Weeknight Dal.md",
        "Daily/2026-10-30.md",
        "Daily/2026-10-31.md",
        "Daily/2026-11-01.md",
        "Daily/2026-11-02.md",
        "Daily/2026-11-03.md",
        "Daily/2026-11-04.md",
        "Daily/2026-11-05.md",
        "Hobbies/Bouldering/Bouldering Log.md",
        "Hobbies/Bouldering/Climbing Gyms.md",
        "Hobbies/Bouldering/Hangboard Protocol.md",
        "Home Lab/Backups.md",
        "Home Lab/Docker Compose Stack.md",
        "Home Lab/Grafana Alerts.md",
        "Home Lab/Home Lab.md",
        "Home Lab/Network/Pi-hole.md",
        "Home Lab/Network/VLANs.md",
        "Home Lab/Proxmox Cluster.md",
        "Home Lab/Setup.md",
        "Home Lab/UPS and Power.md",
        "Home.md",
        "Inbox.md",
        "People/Dev Patel.md",
        "People/Marta Costa.md",
        "Projects/Blog/Blog Ideas.md",
        "Projects/Blog/Blog Setup.md",
        "Projects/Blog/Why Local-First Search.md",
        "Projects/Search Engine/Architecture.md",
        "Projects/Search Engine/Chunking Strategy.md",
        "Projects/Search Engine/Config Reference.md",
        "Projects/Search Engine/Debugging Log.md",
        "Projects/Search Engine/Drafts/Chunking Strategy (draft).md",
        "Projects/Search Engine/Embeddings with Model2Vec.md",
        "Projects/Search Engine/Evaluation Plan.md",
        "Projects/Search Engine/LLM Reranker Experiment.md",
        "Projects/Search Engine/Link Graph Boost.md",
        "Projects/Search Engine/Meetings/2026-10-14 Kickoff.md",
        "Projects/Search Engine/Meetings/2026-10-28 Design Review.md",
        "Projects/Search Engine/Parser Test Cases.md",
        "Projects/Search Engine/Ranking with RRF.md",
        "Projects/Search Engine/Release Checklist.md",
        "Projects/Search Engine/SQLite FTS5 Notes.md",
        "Projects/Search Engine/Search Engine.md",
        "Projects/Search Engine/Setup.md",
        "Random Thoughts.md",
        "Reading/Designing Data-Intensive Applications.md",
        "Reading/Introduction to Information Retrieval.md",
        "Reading/Quotes.md",
        "Reading/Reading List.md",
        "Reading/The Overstory.md",
        "Reading/The Pragmatic Programmer.md",
        "Reading/Thinking, Fast and Slow.md",
        "Reference/Git Cheatsheet.md",
        "Reference/Regex Cheatsheet.md",
        "Templates/Recipe Template.md",
        "Travel/Chengdu 成都.md",
        "Travel/Japan Rail Notes.md",
        "Travel/Lisbon 2026.md",
        "Travel/Packing List.md",
        "Travel/Travel Log.md",
        "Untitled.md",
    }
)

# Every other .md file in the vault, and the rule that keeps it out.
IGNORED_NOTES: dict[str, str] = {
    ".obsidian/plugins/dataview/README.md": "hidden folder",
    ".trash/Deleted Idea.md": "hidden folder",
    "Archive/Old/Old Blog Draft.md": "userIgnoreFilters",
    "Private/Journal.md": ".indexignore",
    "Projects/Search Engine/Architecture Sketch.excalidraw.md": ".indexignore",
}

# The rules as planted: .indexignore has "Private/" and "*.excalidraw.md" (plus comments);
# .obsidian/app.json has "userIgnoreFilters": ["Archive/Old/"].
INDEXIGNORE_PATTERNS: tuple[str, ...] = ("Private/", "*.excalidraw.md")
USER_IGNORE_FILTERS: tuple[str, ...] = ("Archive/Old/",)

# Words that occur only in the excluded files above: a search for any of them must return
# nothing, and none may appear in the index, a snippet or an agent's answer.
FORBIDDEN_WORDS: tuple[str, ...] = (
    "zanzibarquokka",  # Private/Journal.md
    "pterodactylmarmalade",  # Archive/Old/Old Blog Draft.md
    "kumquatzeppelin",  # .trash/Deleted Idea.md
    "fjordnarwhal",  # .obsidian/plugins/dataview/README.md
    "quixoticpangolin",  # Projects/Search Engine/Architecture Sketch.excalidraw.md
)
FORBIDDEN_WORD_FILES: dict[str, str] = {
    "zanzibarquokka": "Private/Journal.md",
    "pterodactylmarmalade": "Archive/Old/Old Blog Draft.md",
    "kumquatzeppelin": ".trash/Deleted Idea.md",
    "fjordnarwhal": ".obsidian/plugins/dataview/README.md",
    "quixoticpangolin": "Projects/Search Engine/Architecture Sketch.excalidraw.md",
}

NOTE_COUNT_TOTAL = 75  # every .md file, excluded ones included
NOTE_COUNT_INDEXABLE = 70

FOLDERS: frozenset[str] = frozenset(
    {
        "Archive",
        "Archive/Old",
        "Cooking",
        "Daily",
        "Hobbies",
        "Hobbies/Bouldering",
        "Home Lab",
        "Home Lab/Network",
        "People",
        "Private",
        "Projects",
        "Projects/Blog",
        "Projects/Search Engine",
        "Projects/Search Engine/Drafts",
        "Projects/Search Engine/Meetings",
        "Reading",
        "Reference",
        "Templates",
        "Travel",
        "attachments",
    }
)
ROOT_NOTES: frozenset[str] = frozenset({"Home.md", "Inbox.md", "Brain Dump.md", "Random Thoughts.md", "Untitled.md"})
DAILY_NOTES: frozenset[str] = frozenset(
    {
        "Daily/2026-10-30.md",
        "Daily/2026-10-31.md",
        "Daily/2026-11-01.md",
        "Daily/2026-11-02.md",
        "Daily/2026-11-03.md",
        "Daily/2026-11-04.md",
        "Daily/2026-11-05.md",
    }
)
MOC_NOTES: frozenset[str] = frozenset(
    {
        "Home.md",
        "Home Lab/Home Lab.md",
        "Reading/Reading List.md",
        "Cooking/Recipes.md",
        "Travel/Travel Log.md",
    }
)  # frontmatter type: moc
UNICODE_PATH_NOTE = "Travel/Chengdu 成都.md"

# --------------------------------------------------------------------------------------------
# Attachments
# --------------------------------------------------------------------------------------------

ATTACHMENTS: frozenset[str] = frozenset({"attachments/diagram.png"})  # a real 16x16 PNG
# (source, raw target, line) for embeds of attachments that do exist.
ATTACHMENT_EMBEDS: frozenset[tuple[str, str, int]] = frozenset(
    {
        ("Projects/Search Engine/Architecture.md", "diagram.png", 17),
        ("Projects/Search Engine/Parser Test Cases.md", "diagram.png", 29),
    }
)
# (source, raw target, line) for embeds of attachments that do not exist.
MISSING_ATTACHMENTS: frozenset[tuple[str, str, int]] = frozenset(
    {
        ("Projects/Search Engine/Meetings/2026-10-14 Kickoff.md", "whiteboard-2026-10-14.jpg", 42),
        ("Projects/Search Engine/Parser Test Cases.md", "whiteboard-2026-10-14.jpg", 30),
        ("Travel/Lisbon 2026.md", "lisbon-tram-28.jpg", 38),
    }
)

# --------------------------------------------------------------------------------------------
# Links
# --------------------------------------------------------------------------------------------

# (source, raw target, line): note links whose target does not exist. Missing attachments are
# listed separately above, not here.
BROKEN_LINKS: frozenset[tuple[str, str, int]] = frozenset(
    {
        ("Daily/2026-11-02.md", "Meeting with Landlord", 20),
        ("Home.md", "Goals 2027", 41),
        ("Inbox.md", "Kubernetes Migration", 12),
        ("Projects/Search Engine/Parser Test Cases.md", "Vector DB Comparison", 68),
    }
)

# (source, resolved target path, anchor as written): the note exists, the heading or block does not.
BROKEN_ANCHORS: frozenset[tuple[str, str, str]] = frozenset(
    {
        (
            "Projects/Search Engine/Parser Test Cases.md",
            "Projects/Search Engine/Ranking with RRF.md",
            "No Such Heading",
        ),
        ("Projects/Search Engine/Parser Test Cases.md", "Reading/Quotes.md", "^no-such-quote"),
    }
)
BROKEN_ANCHOR_LINES: dict[tuple[str, str], int] = {
    ("Projects/Search Engine/Parser Test Cases.md", "No Such Heading"): 69,
    ("Projects/Search Engine/Parser Test Cases.md", "^no-such-quote"): 70,
}

# Two notes share the file name "Setup.md"; a bare [[Setup]] is ambiguous.
SAME_NAME_NOTES: dict[str, frozenset[str]] = {
    "Setup.md": frozenset({"Home Lab/Setup.md", "Projects/Search Engine/Setup.md"}),
}
AMBIGUOUS_LINKS: frozenset[tuple[str, str]] = frozenset({("Daily/2026-11-01.md", "Setup")})
AMBIGUOUS_LINK_LINES: dict[tuple[str, str], int] = {("Daily/2026-11-01.md", "Setup"): 12}
# Where docs/links.md's tie-break ("shortest path": fewest folders) sends it, as Obsidian does.
AMBIGUOUS_LINK_RESOLUTION: dict[tuple[str, str], str] = {("Daily/2026-11-01.md", "Setup"): "Home Lab/Setup.md"}

# Resolves only when names are compared case-insensitively (file is "Link Graph Boost.md").
CASE_INSENSITIVE_LINKS: frozenset[tuple[str, str]] = frozenset(
    {("Projects/Search Engine/Parser Test Cases.md", "link graph boost")}
)
# Inside a table the alias pipe is escaped: [[Pi-hole\|Pi-hole]] -> target "Pi-hole", display "Pi-hole".
TABLE_ESCAPED_PIPE_LINKS: frozenset[tuple[str, str, str, int]] = frozenset(
    {("Home Lab/Network/VLANs.md", "Pi-hole", "Pi-hole", 14)}
)

# (source, raw target) for every wikilink in a frontmatter property, whether the value is a
# string or a list (keys used: related, see_also, up, attendees, project, source, companions).
FRONTMATTER_LINKS: frozenset[tuple[str, str]] = frozenset(
    {
        ("Cooking/Caldo Verde.md", "Marta Costa"),
        ("Cooking/Mapo Tofu.md", "Chengdu 成都"),
        ("Home Lab/Backups.md", "Home Lab"),
        ("Home Lab/Docker Compose Stack.md", "Home Lab"),
        ("Home Lab/Grafana Alerts.md", "Home Lab"),
        ("Home Lab/Network/Pi-hole.md", "Home Lab"),
        ("Home Lab/Network/VLANs.md", "Home Lab"),
        ("Home Lab/Proxmox Cluster.md", "Home Lab"),
        ("Home Lab/Setup.md", "Home Lab"),
        ("Projects/Blog/Why Local-First Search.md", "Search Engine"),
        ("Projects/Search Engine/Architecture.md", "Search Engine"),
        ("Projects/Search Engine/Chunking Strategy.md", "Search Engine"),
        ("Projects/Search Engine/Config Reference.md", "Search Engine"),
        ("Projects/Search Engine/Debugging Log.md", "Search Engine"),
        ("Projects/Search Engine/Embeddings with Model2Vec.md", "Search Engine"),
        ("Projects/Search Engine/Evaluation Plan.md", "Search Engine"),
        ("Projects/Search Engine/LLM Reranker Experiment.md", "Search Engine"),
        ("Projects/Search Engine/Link Graph Boost.md", "Search Engine"),
        ("Projects/Search Engine/Meetings/2026-10-14 Kickoff.md", "Dev Patel"),
        ("Projects/Search Engine/Meetings/2026-10-14 Kickoff.md", "Marta Costa"),
        ("Projects/Search Engine/Meetings/2026-10-14 Kickoff.md", "Search Engine"),
        ("Projects/Search Engine/Meetings/2026-10-28 Design Review.md", "Dev Patel"),
        ("Projects/Search Engine/Meetings/2026-10-28 Design Review.md", "Marta Costa"),
        ("Projects/Search Engine/Meetings/2026-10-28 Design Review.md", "Search Engine"),
        ("Projects/Search Engine/Parser Test Cases.md", "Config Reference"),
        ("Projects/Search Engine/Parser Test Cases.md", "Evaluation Plan"),
        ("Projects/Search Engine/Parser Test Cases.md", "Ranking with RRF"),
        ("Projects/Search Engine/Ranking with RRF.md", "Search Engine"),
        ("Projects/Search Engine/Release Checklist.md", "Search Engine"),
        ("Projects/Search Engine/SQLite FTS5 Notes.md", "Search Engine"),
        ("Projects/Search Engine/Search Engine.md", "Embeddings with Model2Vec"),
        ("Projects/Search Engine/Search Engine.md", "Ranking with RRF"),
        ("Projects/Search Engine/Search Engine.md", "SQLite FTS5 Notes"),
        ("Projects/Search Engine/Setup.md", "Search Engine"),
        ("Reading/Designing Data-Intensive Applications.md", "Reading List"),
        ("Reading/Introduction to Information Retrieval.md", "Reading List"),
        ("Reading/The Overstory.md", "Reading List"),
        ("Reading/The Pragmatic Programmer.md", "Reading List"),
        ("Reading/Thinking, Fast and Slow.md", "Reading List"),
        ("Travel/Lisbon 2026.md", "Marta Costa"),
    }
)

# Link-like text that appears only inside code, inline code or comments (never a real link).
CODE_ONLY_LINK_TARGETS: frozenset[str] = frozenset(
    {
        "NotALink",  # ``` fence
        "NotAnEmbed.png",  # ``` fence, written as an embed
        "AlsoNotALink",  # ~~~ fence
        "InlineCodeLink",  # inline code
        "CommentedOutLink",  # inline %% comment %%
        "SecretPlansLink",  # multi-line %% comment
        "HiddenLink",  # <!-- HTML comment -->
    }
)
CODE_ONLY_TAGS: frozenset[str] = frozenset(
    {"notatag", "alsonotatag", "inlinecodetag", "commentedtag", "secretplanstag", "htmltag"}
)
# Also in Parser Test Cases, not tags: "#42" (digits only), a URL fragment, "C#".

# Links written in excluded files. They must not create backlinks: "Travel/Packing List.md"
# is linked only from these, so it stays an orphan.
LINKS_FROM_EXCLUDED_FILES: frozenset[tuple[str, str]] = frozenset(
    {
        (".obsidian/plugins/dataview/README.md", "Home"),
        (".trash/Deleted Idea.md", "Packing List"),
        (".trash/Deleted Idea.md", "Travel/Japan Rail Notes"),
        ("Archive/Old/Old Blog Draft.md", "2025 Goals"),
        ("Private/Journal.md", "Packing List"),
    }
)

# --------------------------------------------------------------------------------------------
# The one note with every link form
# --------------------------------------------------------------------------------------------

LINK_FORM_NOTE = "Projects/Search Engine/Parser Test Cases.md"

# (raw target, anchor, display, kind) for every link in LINK_FORM_NOTE, in file order.
# The external https link in it is not a note link and is not listed.
LINK_FORM_EXPECTATIONS: tuple[tuple[str, str | None, str | None, str], ...] = (
    ("Ranking with RRF", None, None, "frontmatter"),  # related: "[[...]]"
    ("Config Reference", None, None, "frontmatter"),  # see_also list
    ("Evaluation Plan", None, "eval", "frontmatter"),  # see_also list
    ("Architecture", None, None, "link"),
    ("Embeddings with Model2Vec", None, "the embeddings note", "link"),
    ("SQLite FTS5 Notes", "Tokenizers", None, "link"),
    ("Ranking with RRF", "^rrf-formula", None, "link"),
    ("Debugging Log", "Port already in use", "the port problem", "link"),
    ("Home Lab/Setup", None, None, "link"),
    ("Chunking Strategy.md", None, None, "link"),
    ("link graph boost", None, None, "link"),
    ("Release Checklist", None, None, "embed"),
    ("Ranking with RRF", "Choosing k", None, "embed"),
    ("diagram.png", None, None, "embed"),
    ("whiteboard-2026-10-14.jpg", None, None, "embed"),
    ("../Blog/Blog Ideas.md", None, "blog ideas", "markdown"),
    ("./Config Reference.md", None, "the config keys", "markdown"),
    ("./SQLite FTS5 Notes.md", "Concurrency", "FTS concurrency", "markdown"),
    ("Vector DB Comparison", None, None, "link"),
    ("Ranking with RRF", "No Such Heading", None, "link"),
    ("Reading/Quotes", "^no-such-quote", None, "link"),
)
# 1-based line of each entry above, same order.
LINK_FORM_LINES: tuple[int, ...] = (
    8, 10, 11, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 68, 69, 70,
)  # fmt: skip
# Where each raw target of LINK_FORM_NOTE resolves (None: broken; attachments map to their file).
LINK_FORM_RESOLVED: dict[str, str | None] = {
    "Ranking with RRF": "Projects/Search Engine/Ranking with RRF.md",
    "Config Reference": "Projects/Search Engine/Config Reference.md",
    "Evaluation Plan": "Projects/Search Engine/Evaluation Plan.md",
    "Architecture": "Projects/Search Engine/Architecture.md",
    "Embeddings with Model2Vec": "Projects/Search Engine/Embeddings with Model2Vec.md",
    "SQLite FTS5 Notes": "Projects/Search Engine/SQLite FTS5 Notes.md",
    "Debugging Log": "Projects/Search Engine/Debugging Log.md",
    "Home Lab/Setup": "Home Lab/Setup.md",
    "Chunking Strategy.md": "Projects/Search Engine/Chunking Strategy.md",
    "link graph boost": "Projects/Search Engine/Link Graph Boost.md",
    "Release Checklist": "Projects/Search Engine/Release Checklist.md",
    "diagram.png": "attachments/diagram.png",
    "whiteboard-2026-10-14.jpg": None,
    "../Blog/Blog Ideas.md": "Projects/Blog/Blog Ideas.md",
    "./Config Reference.md": "Projects/Search Engine/Config Reference.md",
    "./SQLite FTS5 Notes.md": "Projects/Search Engine/SQLite FTS5 Notes.md",
    "Vector DB Comparison": None,
    "Reading/Quotes": "Reading/Quotes.md",
}
# Decoded Markdown targets above -> the percent-encoded text written in the file.
LINK_FORM_MARKDOWN_AS_WRITTEN: dict[str, str] = {
    "../Blog/Blog Ideas.md": "../Blog/Blog%20Ideas.md",
    "./Config Reference.md": "./Config%20Reference.md",
    "./SQLite FTS5 Notes.md": "./SQLite%20FTS5%20Notes.md",
}
LINK_FORM_EXTERNAL_URLS: tuple[str, ...] = ("https://sqlite.org/fts5.html#the_bm25_function",)

# --------------------------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------------------------

# Forms to fill in ({{title}}, {{date}}): no orphan, dead end or stub, whatever links or text they have.
TEMPLATES: frozenset[str] = frozenset({"Templates/Recipe Template.md"})

# No resolved link in or out.
ORPHANS: frozenset[str] = frozenset(
    {
        "Projects/Search Engine/Drafts/Chunking Strategy (draft).md",
        "Random Thoughts.md",
        "Reference/Regex Cheatsheet.md",
        "Travel/Packing List.md",  # linked only from excluded files
        "Untitled.md",
    }
)
# No resolved inbound link. Includes the orphans.
NO_INBOUND: frozenset[str] = ORPHANS | {
    "Archive/2025 Goals.md",  # linked only from the excluded Archive/Old note
    "Projects/Blog/Blog Setup.md",
}
# No resolved outgoing link. Includes the orphans.
DEAD_ENDS: frozenset[str] = ORPHANS | {
    "Cooking/Miso Ramen.md",
    "Cooking/Pantry Staples.md",
    "Cooking/Shakshuka.md",
    "People/Dev Patel.md",
    "Reference/Git Cheatsheet.md",
    "Travel/Japan Rail Notes.md",
}

# Three notes that link only among themselves (a separate connected component).
DISCONNECTED_CLUSTER: frozenset[str] = frozenset(
    {
        "Hobbies/Bouldering/Bouldering Log.md",
        "Hobbies/Bouldering/Climbing Gyms.md",
        "Hobbies/Bouldering/Hangboard Protocol.md",
    }
)
# Connected components of the undirected graph: one of 61 notes, the cluster above, 5 orphans.
MAIN_COMPONENT_SIZE = 61

MOST_BACKLINKED = "Projects/Search Engine/Search Engine.md"  # 18 distinct notes link to it
MOST_BACKLINKED_COUNT = 18
MOST_OUTLINKS = "Projects/Search Engine/Search Engine.md"  # 15 distinct resolved targets
MOST_OUTLINKS_COUNT = 15

# Block ids (without "^") per note.
BLOCK_IDS: dict[str, frozenset[str]] = {
    "Cooking/Sourdough Bread.md": frozenset({"dense-crumb"}),
    "Home Lab/Home Lab.md": frozenset({"homelab-principles"}),
    "Projects/Search Engine/Architecture.md": frozenset({"local-first", "mcp-guard"}),
    "Projects/Search Engine/Debugging Log.md": frozenset({"fix-sqlite-busy"}),
    "Projects/Search Engine/Ranking with RRF.md": frozenset({"rrf-formula", "choosing-k"}),
    "Reading/Designing Data-Intensive Applications.md": frozenset({"ddia-data-outlives"}),
    "Reading/Quotes.md": frozenset(
        {"quote-knuth", "quote-karlton", "quote-data", "quote-tree", "quote-kay", "quote-dostoevsky"}
    ),
    "Reading/The Pragmatic Programmer.md": frozenset({"pragprog-perfect"}),
}
H4_NOTE = "Projects/Search Engine/Architecture.md"  # the only note with H4 headings

# --------------------------------------------------------------------------------------------
# Special notes
# --------------------------------------------------------------------------------------------

# About 90 % identical text (difflib ratio 0.90): a draft and the final note.
NEAR_DUPLICATE_PAIR: tuple[str, str] = (
    "Projects/Search Engine/Chunking Strategy.md",
    "Projects/Search Engine/Drafts/Chunking Strategy (draft).md",
)
# Body over 8,000 characters (8,755) and not a single heading line.
LONG_NO_HEADINGS = "Brain Dump.md"
# Zero-byte file.
EMPTY_NOTES: frozenset[str] = frozenset({"Untitled.md"})
# Frontmatter only, nothing after the closing "---".
STUB_NOTES: frozenset[str] = frozenset({"Cooking/Miso Ramen.md"})  # and the template, which is no stub
# Frontmatter between "---" lines that is not valid YAML; the body must still be indexed.
MALFORMED_FRONTMATTER = "Home Lab/UPS and Power.md"
MALFORMED_FRONTMATTER_BODY_WORDS: tuple[str, ...] = ("upsmon", "line-interactive", "Shutdown order")
# Notes without any frontmatter block.
NO_FRONTMATTER_NOTES: frozenset[str] = frozenset({"Untitled.md"})

PORTUGUESE_NOTE = "Cooking/Caldo Verde.md"
PORTUGUESE_TERMS: tuple[str, ...] = ("couve-galega", "chouriço", "batatas", "azeite", "broa de milho")
CHINESE_NOTE = "Travel/Chengdu 成都.md"
# Each occurs only in CHINESE_NOTE.
CHINESE_TERMS: tuple[str, ...] = ("担担面", "钟水饺", "宽窄巷子", "大熊猫繁育研究基地", "鹤鸣茶社", "都江堰")

# Distinctive identifiers and error strings, each with the notes that contain it verbatim.
EXACT_STRINGS: dict[str, frozenset[str]] = {
    "_rrf_fuse": frozenset(
        {
            "Projects/Search Engine/Ranking with RRF.md",
            "Projects/Search Engine/Architecture.md",
            "Projects/Search Engine/SQLite FTS5 Notes.md",
            "Reference/Git Cheatsheet.md",
        }
    ),
    "reciprocal_rank_k": frozenset(
        {
            "Projects/Search Engine/Config Reference.md",
            "Projects/Search Engine/Ranking with RRF.md",
            "Daily/2026-11-03.md",
        }
    ),
    "SQLITE_BUSY": frozenset(
        {
            "Projects/Search Engine/Debugging Log.md",
            "Projects/Search Engine/Architecture.md",
            "Projects/Search Engine/SQLite FTS5 Notes.md",
            "Projects/Blog/Why Local-First Search.md",
        }
    ),
    "database is locked": frozenset({"Projects/Search Engine/Debugging Log.md", "Daily/2026-11-04.md"}),
    "EADDRINUSE": frozenset({"Projects/Search Engine/Debugging Log.md", "Projects/Search Engine/Setup.md"}),
    "ERR_CONNECTION_REFUSED": frozenset(
        {"Projects/Search Engine/Debugging Log.md", "Projects/Search Engine/Architecture.md"}
    ),
}

# --------------------------------------------------------------------------------------------
# Secrets (all fake but format-valid; the readable ones contain FAKE, never "EXAMPLE",
# because values containing "example" are treated as documentation placeholders)
# --------------------------------------------------------------------------------------------

# (path, 1-based line, kind). Exactly one secret per listed line. Where a specific kind applies,
# the same span is not listed again as generic_secret (e.g. AWS_SECRET_ACCESS_KEY=..., HF_TOKEN=...).
SECRETS: frozenset[tuple[str, int, str]] = frozenset(
    {
        ("Daily/2026-10-31.md", 16, "github"),  # mid-line
        ("Home Lab/Backups.md", 27, "aws_access_key"),  # ``` ini fence
        ("Home Lab/Backups.md", 28, "aws_secret_key"),  # ``` ini fence
        ("Home Lab/Backups.md", 32, "generic_secret"),  # password = "..." mid-line
        ("Home Lab/Backups.md", 38, "azure_storage_key"),  # connection string, plain line
        ("Home Lab/Backups.md", 44, "url_password"),  # https://user:pass@host mid-line
        ("Home Lab/Docker Compose Stack.md", 33, "generic_secret"),  # POSTGRES_PASSWORD in ~~~ fence
        ("Home Lab/Docker Compose Stack.md", 41, "slack_webhook"),  # ~~~ fence
        ("Home Lab/Docker Compose Stack.md", 42, "telegram_bot"),  # ~~~ fence
        ("Home Lab/Grafana Alerts.md", 26, "sendgrid"),
        ("Home Lab/Grafana Alerts.md", 27, "twilio"),  # API key sid SK + 32 hex
        ("Home Lab/Grafana Alerts.md", 28, "slack"),  # xoxb- bot token
        ("Home Lab/Proxmox Cluster.md", 30, "private_key"),  # BEGIN line of a PEM block (lines 30-38)
        ("Inbox.md", 13, "google_api_key"),
        ("Inbox.md", 15, "notion"),
        ("Projects/Blog/Blog Setup.md", 24, "digitalocean"),  # ``` fence
        ("Projects/Blog/Blog Setup.md", 30, "stripe"),  # sk_live_ mid-line
        ("Projects/Blog/Blog Setup.md", 32, "shopify"),
        ("Projects/Search Engine/Debugging Log.md", 56, "authorization_header"),  # curl -H, ``` fence
        ("Projects/Search Engine/Debugging Log.md", 60, "jwt"),  # mid-line
        ("Projects/Search Engine/Debugging Log.md", 66, "openai"),  # sk-proj- mid-line
        ("Projects/Search Engine/Embeddings with Model2Vec.md", 37, "huggingface"),  # ``` fence
        ("Projects/Search Engine/LLM Reranker Experiment.md", 8, "anthropic"),  # in frontmatter
        ("Projects/Search Engine/Meetings/2026-10-28 Design Review.md", 21, "linear"),
        ("Projects/Search Engine/Release Checklist.md", 23, "npm"),  # ``` fence
        ("Projects/Search Engine/Release Checklist.md", 28, "pypi"),  # ``` fence
        ("Reference/Git Cheatsheet.md", 34, "gitlab"),  # ``` fence, in an http header
    }
)
SECRET_KINDS: frozenset[str] = frozenset(kind for _, _, kind in SECRETS)  # 26 kinds, all of them
SECRET_FREE_NOTES: frozenset[str] = INDEXABLE_NOTES - {path for path, _, _ in SECRETS}

# Strings in the vault that look random but are not secrets, several next to real-looking ones.
NOT_SECRETS: tuple[str, ...] = (
    "d18929cb-0ecc-4c7d-9d08-14ec8aab2cb4",  # UUID, Debugging Log
    "ebd50723-1a07-4556-ad4a-32ac36abd71e",  # UUID, Docker Compose Stack
    "d082b524eb44f6c1f921245abb791e920070ad22",  # git commit, Debugging Log
    "8d4209e3f693b7a9b6fd31724a5fee1bb8fd0c4f",  # git commit, Git Cheatsheet
    "d082b52",  # short git hash, Daily/2026-10-31
    "8d4209e",  # short git hash, Debugging Log
    "sha384-WOXayDfvZaFYNLYc7SGid3XHIw2JFmeBf2wwgZ5yH9LTf56o/qvKPxmV2H3m9Yn0",  # SRI, Release Checklist
    "sha256:9e72b84e8391045d0827119cb0ee817748d392293539a61639bfdcbf44163c53",  # image digest, Docker
    "3f1c9a2e",  # restic snapshot short id, Backups
    "^rrf-formula",  # block id, Ranking with RRF
    "AKIAIOSFODNN7EXAMPLE",  # AWS documentation placeholder, Architecture
)

# --------------------------------------------------------------------------------------------
# Tags
# --------------------------------------------------------------------------------------------

# Number of indexable notes carrying each tag (frontmatter and inline together).
TAG_NOTE_COUNTS: dict[str, int] = {
    "Recipe": 1, "abandoned": 1, "active": 1, "architecture": 1, "archive": 1, "backups": 1,
    "baking": 1, "blog": 3, "breakfast": 1, "checklist": 1, "china": 1, "chunking": 2, "climbing": 3,
    "cooking": 1, "craft": 1, "daily": 7, "databases": 1, "debugging": 1, "dns": 1, "docker": 1,
    "draft": 2, "embeddings": 1, "evaluation": 1, "experiment": 2, "fiction": 1, "git": 1, "goals": 1,
    "graph": 1, "hardware": 1, "home-lab": 1, "homelab": 8, "ideas": 1, "inbox": 1,
    "infrastructure": 1, "japan": 1, "lists": 1, "log": 1, "mealprep": 1, "meeting": 2, "moc": 5,
    "monitoring": 1, "network": 2, "people": 2, "places": 1, "portugal": 1, "project/search": 20,
    "proxmox": 1, "psychology": 1, "quick": 1, "quotes": 1, "ranking": 1, "reading": 2,
    "reading/book": 5, "receitas": 1, "recipes": 7, "reference": 3, "regex": 1, "release": 1,
    "setup": 1, "sichuan": 1, "sopa": 1, "sqlite": 1, "testing/parser": 1, "thinking": 1,
    "thoughts": 1, "todo": 5, "todos": 1, "training": 1, "trains": 1, "travel": 5, "unsorted": 1,
    "vegetarian": 2, "virtualization": 1,
}  # fmt: skip
# Tags that occur in exactly one indexable note.
TAGS_USED_ONCE: frozenset[str] = frozenset(tag for tag, n in TAG_NOTE_COUNTS.items() if n == 1)
NESTED_TAGS: frozenset[str] = frozenset({"project/search", "reading/book", "testing/parser"})
# Planted look-alikes a tag report should flag.
NEAR_IDENTICAL_TAGS: frozenset[frozenset[str]] = frozenset(
    {
        frozenset({"todo", "todos"}),
        frozenset({"Recipe", "recipes"}),
        frozenset({"homelab", "home-lab"}),
    }
)
# Frontmatter tags written as a plain string instead of a list.
STRING_FORM_TAGS: dict[str, tuple[str, ...]] = {
    "Daily/2026-10-30.md": ("daily",),
    "Cooking/Caldo Verde.md": ("receitas", "sopa"),
}
