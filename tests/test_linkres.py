import unicodedata

from sidecar.ingest.linkres import PathIndex

PATHS = [
    "Home.md",
    "Home Lab/Setup.md",
    "Projects/Search Engine/Setup.md",
    "Projects/Search Engine/Ranking.md",
    "Daily/2026-11-02.md",
    "attachments/diagram.png",
    "Reading/Deep Work.md",
]
INDEX = PathIndex(PATHS)


def resolve(target: str, source: str = "Home.md", kind: str = "link") -> tuple[str | None, bool]:
    res = INDEX.resolve(target, source, kind)
    return res.path, res.ambiguous


def test_bare_name_is_case_insensitive_and_md_optional() -> None:
    assert resolve("deep work") == ("Reading/Deep Work.md", False)
    assert resolve("Deep Work.md") == ("Reading/Deep Work.md", False)


def test_exact_vault_path_wins() -> None:
    assert resolve("Home Lab/Setup") == ("Home Lab/Setup.md", False)


def test_path_suffix() -> None:
    assert resolve("Search Engine/Setup") == ("Projects/Search Engine/Setup.md", False)


def test_ambiguous_name_prefers_same_folder_then_shortest_path() -> None:
    assert resolve("Setup", source="Projects/Search Engine/Ranking.md") == ("Projects/Search Engine/Setup.md", True)
    assert resolve("Setup", source="Home.md") == ("Home Lab/Setup.md", True)
    res = INDEX.resolve("Setup", "Home.md")
    assert set(res.candidates) == {"Home Lab/Setup.md", "Projects/Search Engine/Setup.md"}


def test_relative_links() -> None:
    assert resolve("./Setup.md", source="Projects/Search Engine/Ranking.md") == ("Projects/Search Engine/Setup.md", False)
    assert resolve("../../Home.md", source="Projects/Search Engine/Ranking.md") == ("Home.md", False)
    assert resolve("../Nope.md", source="Projects/Search Engine/Ranking.md") == (None, False)


def test_relative_link_cannot_escape_the_vault() -> None:
    assert resolve("../../../etc/passwd", source="Projects/Search Engine/Ranking.md") == (None, False)


def test_markdown_links_resolve_relative_first() -> None:
    assert resolve("Deep Work.md", source="Reading/Other.md", kind="markdown") == ("Reading/Deep Work.md", False)
    assert resolve("Home.md", source="Reading/Other.md", kind="markdown") == ("Home.md", False)  # then from the root


def test_attachments_resolve_by_name_with_extension() -> None:
    assert resolve("diagram.png") == ("attachments/diagram.png", False)
    assert resolve("missing.png") == (None, False)


def test_same_note_heading_link_points_at_the_source() -> None:
    assert resolve("", source="Daily/2026-11-02.md") == ("Daily/2026-11-02.md", False)


def test_unresolved() -> None:
    assert resolve("No Such Note") == (None, False)


def test_a_link_typed_decomposed_finds_its_note() -> None:
    # macOS writes names decomposed (NFD): "プラグイン設定" pasted from Finder was a broken link to the NFC file
    index = PathIndex(["プラグイン/プラグイン設定.md", "Café/Crème brûlée.md"])
    for target in ("プラグイン設定", "Crème brûlée", "café/crème brûlée.md"):
        decomposed = unicodedata.normalize("NFD", target)
        assert decomposed != target
        assert index.resolve(decomposed, "Home.md").path is not None, target
