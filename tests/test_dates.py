"""The months a query names, and whether a vault writes them in any form (dates.py): obsidian-hub's "Obsidian
October 2023 winners" was `medium` over the October 2021 and 2022 winners; the hub never writes October 2023."""

from collections.abc import Iterator

import pytest

from sidecar.core import VaultIndex
from sidecar.retrieve.dates import MonthNamed, query_months
from tests.conftest import vault_of


@pytest.mark.parametrize(("query", "named"), [
    ("Obsidian October 2023 winners", [("october 2023", 2023, 10)]),
    ("o que mudou em 5 de outubro de 2023", [("outubro de 2023", 2023, 10)]),
    ("notes from Oct 5th, 2023 and Sept 2024", [("oct 5th 2023", 2023, 10), ("sept 2024", 2024, 9)]),
    ("März 2021 Protokoll", [("märz 2021", 2021, 3)]),
    ("what did I write in may", []),  # a month without a year names no date
    ("you may 2023", [("may 2023", 2023, 5)]),
    ("market 2023 figures", []),
    ("October 12345", []),
])
def test_a_month_is_named_by_its_name_and_a_year(query: str, named: list[tuple[str, int, int]]) -> None:
    assert query_months(query) == tuple(MonthNamed(*each) for each in named)


DATED = {
    "Journal/2023-10-05.md": "# Thursday\n\nFixed the boiler.\n",  # a daily note: the date is its title
    "Trips.md": "# Trips\n\nLisbon on 12.03.2022, Porto on 4/7/2021, back home 5 de junho de 2020.\n",
    "Winners.md": "# Winners\n\nThe October 2021 jam winners, and Dec. 3, 2019's.\n",
    "Log.md": "# Log\n\nRelease 2024-06-10 shipped.\n",
}


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultIndex]:
    with vault_of(tmp_path_factory.mktemp("dated"), DATED) as index:
        yield index


@pytest.mark.parametrize("query", [
    "what did I fix in October 2023", "notes from March 2022", "the July 2021 trip to Porto",
    "junho de 2020", "winners of October 2021", "December 2019 winners",
])
def test_a_month_the_vault_writes_in_any_form_is_no_missing_name(dated: VaultIndex, query: str) -> None:
    assert "mentions" not in (dated.search(query)["caveat"] or "")


@pytest.mark.parametrize(("query", "spelled"), [
    ("Obsidian October 2024 winners", "October 2024"),  # "2024-06-10" holds 2024 and 10, not October 2024
    ("what did I fix in Oct. 2018", "Oct. 2018"),  # the vault has Oct... 2021, not 2018
])
def test_a_month_the_vault_never_writes_is_said_missing(dated: VaultIndex, query: str, spelled: str) -> None:
    answer = dated.search(query)
    assert answer["band"] == "low"
    assert f"No note mentions “{spelled}”." in (answer["caveat"] or "")
