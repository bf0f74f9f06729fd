"""Accents, case and marks aside: which words a hit holds and where they are marked (fold.py), in
every script, as the keyword index already matches Latin accents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.core import VaultIndex
from sidecar.ingest.fold import fold, fold_with_offsets
from sidecar.retrieve.lexical import make_snippet
from sidecar.retrieve.search import document_counts, found_terms
from tests.conftest import open_index


@pytest.mark.parametrize(("text", "folded"), [
    ("Café", "cafe"), ("İstanbul", "istanbul"), ("Işık", "isik"), ("Свёкла", "свекла"), ("Straße", "strasse"),
    ("Łódź", "lodz"), ("أحمد", "احمد"), ("كَتَبَ", "كتب"), ("ＡＢＣ", "abc"), ("Cafe\u0301", "cafe"),
    ("リング", "リング"), ("歯が痛い", "歯が痛い"), ("パン", "パン"),  # a voicing mark makes another word: no accent
    ("کپی", "كپي"), ("كپي", "كپي"),  # Persian's yeh and keheh are Arabic's, as an Arabic keyboard types them
])
def test_folding(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_kana_voicing_tells_words_apart() -> None:
    """A QA pass: "リング" (ring) was found and marked in "リンク" (link), "歯が" marked "歯か"."""
    assert found_terms(["リング", "歯が"], "内部リンクの歯か") == []
    assert found_terms(["リンク"], "内部リンク") == ["リンク"]


def test_offsets_lead_back_to_the_text_where_folding_changed_its_length() -> None:
    assert fold_with_offsets("Café") == ("cafe", None)
    folded, offsets = fold_with_offsets("Straße x")
    assert folded == "strasse x" and offsets is not None
    assert [offsets[i] for i in (0, 4, 5, 6, 8)] == [0, 4, 4, 5, 7] and offsets[-1] == len("Straße x")


def test_a_word_is_found_whatever_its_accents_and_case() -> None:
    assert found_terms(["cafe", "markt"], "Das Café am Markt hat Kaffee.") == ["cafe", "markt"]
    assert found_terms(["canción"], "Canciones para el viaje") == ["canción"]
    assert found_terms(["istanbul", "mercimek"], "İSTANBUL'da MERCİMEK çorbası") == ["istanbul", "mercimek"]
    assert found_terms(["свекла", "алена"], "Свёкла и морковь. Алёна принесла.") == ["свекла", "алена"]


def test_a_word_is_found_at_a_word_start_and_a_short_one_only_whole() -> None:
    assert found_terms(["ель"], "Пользователь вошёл") == []
    assert found_terms(["l", "erreur"], "La locale des logs") == []
    assert found_terms(["l", "erreur"], "l'erreur du serveur") == ["l", "erreur"]
    assert found_terms(["lock"], "a locked file") == ["lock"]


def test_marks_land_on_the_word_in_the_text() -> None:
    def marked(text: str, terms: tuple[str, ...]) -> list[str]:
        snippet = make_snippet(text, terms)
        return [snippet.text[s:e] for s, e in snippet.highlights]

    assert marked("Das Café am Markt", ("cafe",)) == ["Café"]
    assert marked("İzmir İstanbul ofisine yeni ekipman geldi.", ("ekipman",)) == ["ekipman"]
    assert marked("Die Straße ist lang", ("strasse",)) == ["Straße"]
    assert marked("Cafe\u0301 noir", ("cafe",)) == ["Cafe\u0301"]
    # a word is marked by the whole of it: its stem finds "locked" for "lock", never "Restore" for "restic"
    assert marked("Restore drill: restic backup, restored", ("restic", "lock")) == ["restic"]
    assert marked("a locked file", ("lock",)) == ["locked"]


def test_a_query_typed_without_accents_is_no_unanswered_question(tmp_path: Path) -> None:
    """The keyword index matched "cafe" to "Café" and put the note first, while the band said the vault
    did not answer it: the words the hit holds were compared accents and all."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Notizen.md").write_text("# Notizen\n\nDas Café am Markt hat den besten Kaffee der Stadt.\n")
    (vault / "Einkauf.md").write_text("# Einkauf\n\nBrot, Butter und Milch vom Bauernhof holen.\n")
    core = open_index(vault, tmp_path / "index")
    try:
        core.index()
        for query in ("café", "cafe", "CAFE"):
            found = core.search(query, limit=3)
            assert found["results"][0]["path"] == "Notizen.md"
            assert found["results"][0]["band"] != "low", query
            assert found["results"][0]["highlights"], query
    finally:
        core.close()


def test_a_field_filter_folds_a_value_beyond_ascii(tmp_path: Path) -> None:
    """SQLite's lower() folds ASCII only: `--field status=Übersetzt` found nothing, nor `übersetzt`."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Handbuch.md").write_text("---\nstatus: Übersetzt\nstatus_ru: Готово\n---\n# Handbuch\n\nDas Handbuch.\n")
    (vault / "Entwurf.md").write_text("---\nstatus: Entwurf\n---\n# Entwurf\n\nDas Handbuch, noch nicht fertig.\n")
    core = open_index(vault, tmp_path / "index", load_model=False)
    try:
        core.index()
        def paths(field: str, value: str) -> list[str]:
            return [r["path"] for r in core.search("Handbuch", filters={"fields": {field: value}})["results"]]
        for value in ("Übersetzt", "übersetzt", "ÜBERSETZT"):
            assert paths("status", value) == ["Handbuch.md"], value
        assert paths("status_ru", "готово") == paths("status_ru", "ГОТОВО") == ["Handbuch.md"]
        assert paths("status", "entwurf") == ["Entwurf.md"]
    finally:
        core.close()


KEYWORD_NOTES = {
    "Рецепт.md": "# Рецепт\n\nСвёкла и морковь. Алёна принесла ёлку.\n",
    "Ofis.md": "# Ofis\n\nIşık ofise yeni ışıklar taktı.\n",
    "Wyjazd.md": "# Wyjazd\n\nHotel w Łodzi, Małgorzata rezerwuje.\n",
    "Adresse.md": "# Adresse\n\nDie Kastanienstraße liegt in der Nähe.\n",
    "دروس.md": "# دروس\n\nكَتَبَ الطَّالِبُ الدَّرْسَ فِي المَكْتَبَةِ مع أحمد.\n",
    "Ταξίδι.md": "# Ταξίδι\n\nΤο ταξίδι στην Αθήνα ήταν υπέροχο.\n",
    "Plain.md": "# Plain\n\nNothing special in English here.\n",
    "Заметки.md": "# Ежедневник\n\nКак создать шаблон для ежедневных заметок.\n",
    "مظهر.md": "# مظهر\n\nافتح إعدادات التطبيق واختر السمة.\n",
    "پشتیبان.md": "# پشتیبان\n\nمی\u200cخواهم از یادداشت\u200cها یک کپی بگیرم.\n",
    "גיבוי.md": "# גיבוי\n\nכדי לשמור הגדרות, העתיקו את הכספת לכונן חיצוני.\n",
}


@pytest.mark.parametrize(("query", "path"), [
    ("свекла", "Рецепт.md"), ("Алена", "Рецепт.md"), ("свёкла", "Рецепт.md"), ("isik", "Ofis.md"),
    ("IŞIK", "Ofis.md"), ("isiklar", "Ofis.md"), ("Lodzi", "Wyjazd.md"), ("Malgorzata", "Wyjazd.md"),
    ("kastanienstrasse", "Adresse.md"), ("المكتبة", "دروس.md"), ("احمد", "دروس.md"), ("الطَّالِبُ", "دروس.md"),
    ("αθηνα", "Ταξίδι.md"), ("ταξιδι", "Ταξίδι.md"), ("Ταξίδι", "Ταξίδι.md"),
    # a Russian word in another case or number; an Arabic word with or without its article
    ("шаблоны", "Заметки.md"), ("свёклу", "Рецепт.md"), ("моркови", "Рецепт.md"), ("заметку", "Заметки.md"),
    ("مكتبة", "دروس.md"), ("طالب", "دروس.md"), ("الإعدادات", "مظهر.md"), ("تطبيق", "مظهر.md"),
    # Persian typed on an Arabic keyboard (ي, ك), and without the zero-width non-joiner inside a word
    ("كپي", "پشتیبان.md"), ("يك", "پشتیبان.md"), ("میخواهم", "پشتیبان.md"), ("ميخواهم", "پشتیبان.md"),
    ("می\u200cخواهم", "پشتیبان.md"),
    # a Hebrew word with the prefixes written in front of it ("in the", "and", "from the") finds it bare
    ("בהגדרות", "גיבוי.md"), ("וחיצוני", "גיבוי.md"), ("מהכספת", "גיבוי.md"),
])
def test_the_keyword_index_finds_a_word_typed_as_its_writers_often_do(keyword_vault: VaultIndex, query: str,
                                                                      path: str) -> None:
    """unicode61 folds é and ş but not ё, ı, ł, ß or Greek accents, splits an Arabic word at each vowel mark and
    a Persian one at its zero-width non-joiner; Porter stems English alone, and Arabic and Hebrew write "the" (Hebrew
    "in", "to"...) inside the word."""
    found = keyword_vault.search(query, mode="lexical", limit=3)["results"]
    assert [r["path"] for r in found][:1] == [path], (query, [r["path"] for r in found])


def test_a_hebrew_word_is_marked_and_counted_with_or_without_its_prefixes(keyword_vault: VaultIndex) -> None:
    """"בהגדרות" (in the settings) is in the vault as "הגדרות"; "כונן" (a drive) is in the hit as "לכונן" (to a
    drive): counted, and marked (the word, with its prefix)."""
    hit = keyword_vault.search("כונן חיצוני", mode="lexical", limit=1)["results"][0]
    assert hit["path"] == "גיבוי.md"
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["לכונן", "חיצוני"]
    assert found_terms(("כונן", "חיצוני"), "העתיקו לכונן חיצוני") == ["כונן", "חיצוני"]
    # "את" (the object's marker) is in every other Hebrew sentence: searched, never marked (function_words)
    hit = keyword_vault.search("איך מעתיקים את הכספת", mode="lexical", limit=1)["results"][0]
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["הכספת"]
    assert document_counts(keyword_vault.reader(), ["בהגדרות", "מדפסת"], sections=10) == {"בהגדרות": 1, "מדפסת": 0}


def test_a_word_in_another_form_counts_as_in_the_vault(keyword_vault: VaultIndex) -> None:
    """The bands count a query word found nowhere against the answer: "шаблоны" and "الإعدادات" are in the
    vault as "шаблон" and "إعدادات"."""
    counts = document_counts(keyword_vault.reader(), ["шаблоны", "الإعدادات", "نمر"], sections=10)
    assert counts["шаблоны"] and counts["الإعدادات"] and not counts["نمر"]


def test_an_arabic_word_is_marked_and_counted_with_or_without_its_article(keyword_vault: VaultIndex) -> None:
    """The keyword index found "إعدادات" for "الإعدادات", but the snippet marked nothing and the hit's
    coverage did not count it: those compared whole words."""
    hit = keyword_vault.search("الإعدادات التطبيق", mode="lexical", limit=1)["results"][0]
    assert hit["path"] == "مظهر.md"
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["إعدادات", "التطبيق"]
    assert found_terms(("اعدادات", "تطبيق"), "من الإعدادات اختر تطبيق") == ["اعدادات", "تطبيق"]


@pytest.fixture(scope="module")
def keyword_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultIndex]:
    base = tmp_path_factory.mktemp("keyword-fold")
    vault = base / "vault"
    vault.mkdir()
    for name, text in KEYWORD_NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    core = open_index(vault, base / "index", load_model=False)
    core.index()
    yield core
    core.close()


def test_the_fast_test_of_a_term_agrees_with_its_pattern() -> None:
    """holds_term finds a word's stem by str.find (a search asks it thousands of times); term_pattern is
    the rule it must agree with, on every kind of term and boundary."""
    import random

    from sidecar.ingest.fold import fold
    from sidecar.retrieve.lexical import holds_term, term_pattern

    rng = random.Random(11)
    pieces = ["lock", "locked", "unlock", "_lock", "l", "l'", "ai", "email", "é", "café", "ель", "пользователь",
              "数据", "库", " ", "-", "_", ".", "\n", "2024", "v1", "foo_bar", "x", "الاعدادات", "اعدادات", "والقوالب",
              "قالب", "ال"]
    terms = ["lock", "locking", "l", "ai", "cafe", "ель", "数据", "foo_bar", "v1", "2024", "x", "пользователь",
             "اعدادات", "قوالب"]
    for _ in range(3000):
        text = fold("".join(rng.choice(pieces) for _ in range(rng.randint(0, 8))))
        for term in terms:
            assert holds_term(text, term) == (term_pattern(term).search(text) is not None), (text, term)
