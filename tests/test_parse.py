"""Tests for sidecar.parse: every fixture is an inline markdown string."""

from __future__ import annotations

import time

import pytest

from sidecar.ingest.parse import MAX_ITEMS, find_fences, is_template, parse_note
from sidecar.notes import Heading, Link, ParsedNote


def links(text: str, path: str = "Note.md") -> list[tuple[str, str | None, str | None, str, int]]:
    return [(k.target, k.anchor, k.display, k.kind, k.line) for k in parse_note(path, text).links]


def targets(text: str) -> list[str]:
    return [link.target for link in parse_note("n.md", text).links]


# --- links ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("[[Target]]", ("Target", None, None, "link")),
        ("[[folder/Target]]", ("folder/Target", None, None, "link")),
        ("[[Target|Shown text]]", ("Target", None, "Shown text", "link")),
        ("[[Target#Some Heading]]", ("Target", "Some Heading", None, "link")),
        ("[[Target#^block-1]]", ("Target", "^block-1", None, "link")),
        ("[[Target#Heading|Shown]]", ("Target", "Heading", "Shown", "link")),
        ("[[Target#H1#H2]]", ("Target", "H1#H2", None, "link")),
        ("[[ Spaced Target | Shown ]]", ("Spaced Target", None, "Shown", "link")),
        ("[[#Local Heading]]", ("", "Local Heading", None, "link")),
        ("[[#^local-block|here]]", ("", "^local-block", "here", "link")),
        ("![[Embedded]]", ("Embedded", None, None, "embed")),
        ("![[image.png|300]]", ("image.png", None, "300", "embed")),
        ("![[Doc#Part]]", ("Doc", "Part", None, "embed")),
        ("[text](other.md)", ("other.md", None, "text", "markdown")),
        ("[text](../up/other.md#Sec%20One)", ("../up/other.md", "Sec One", "text", "markdown")),
        ("[text](My%20Note.md)", ("My Note.md", None, "text", "markdown")),
        ("[text](<My Note.md>)", ("My Note.md", None, "text", "markdown")),
        ('[text](other.md "a title")', ("other.md", None, "text", "markdown")),
        ("[text](file_(1).md)", ("file_(1).md", None, "text", "markdown")),
        ("[](empty-text.md)", ("empty-text.md", None, None, "markdown")),
        ("[jump](#Local)", ("", "Local", "jump", "markdown")),
        ("![alt text](img/pic.png)", ("img/pic.png", None, "alt text", "embed")),
        ("![](pic.png)", ("pic.png", None, None, "embed")),
        ("| [[Table\\|alias]] |", ("Table", None, "alias", "link")),
    ],
)
def test_link_forms(markdown: str, expected: tuple[str, str | None, str | None, str]) -> None:
    assert links(f"before\n{markdown} after\n") == [(*expected, 2)]


@pytest.mark.parametrize(
    "markdown",
    [
        "[site](https://example.com/a.md)",
        "[site](http://example.com)",
        "[mail](mailto:someone@example.com)",
        "[open](obsidian://open?vault=x&file=y)",
        "[file](file:///etc/passwd)",
        "[win](C:/Users/x.md)",
        "[proto](//cdn.example.com/x.png)",
        "![remote](https://example.com/x.png)",
        "[empty]()",
        "[[]]",
        "[[|only display]]",
        "\\[[escaped]]",
        "\\[escaped](x.md)",
        "[[multi\nline]]",
        "[spaced](not a link.md)",
    ],
)
def test_not_links(markdown: str) -> None:
    assert links(markdown) == []


def test_link_lines_count_frontmatter() -> None:
    text = "---\ntitle: x\n---\n[[A]]\n\ntext [[B]] and [c](c.md)\n"
    assert links(text) == [
        ("A", None, None, "link", 4),
        ("B", None, None, "link", 6),
        ("c.md", None, "c", "markdown", 6),
    ]


def test_links_in_note_order_mixing_kinds() -> None:
    text = "[m](m.md) [[w]] ![[e]] ![i](i.png)"
    assert [(t, k) for t, _, _, k, _ in links(text)] == [
        ("m.md", "markdown"),
        ("w", "link"),
        ("e", "embed"),
        ("i.png", "embed"),
    ]


def test_repeated_links_are_all_kept() -> None:
    assert targets("[[A]] [[A]]\n[[A]]") == ["A", "A", "A"]


def test_frontmatter_links_with_lines() -> None:
    text = (
        "---\n"  # 1
        "title: T\n"  # 2
        'up: "[[Parent#Intro|the parent]]"\n'  # 3
        "related:\n"  # 4
        '  - "[[One]]"\n'  # 5
        "  - plain text\n"  # 6
        "  - '[[Two]] and [[Three]]'\n"  # 7
        "nested:\n"  # 8
        '  deep: "![[Pic.png]]"\n'  # 9
        "# a yaml comment [[NotAValue]]\n"  # 10
        "---\n"  # 11
        "[[Body]]\n"  # 12
    )
    assert links(text) == [
        ("Parent", "Intro", "the parent", "frontmatter", 3),
        ("One", None, None, "frontmatter", 5),
        ("Two", None, None, "frontmatter", 7),
        ("Three", None, None, "frontmatter", 7),
        ("Pic.png", None, None, "frontmatter", 9),
        ("Body", None, None, "link", 12),
    ]


def test_same_link_in_frontmatter_twice_gets_both_lines() -> None:
    text = '---\na: "[[X]]"\nb: "[[X]]"\n---\n'
    assert links(text) == [("X", None, None, "frontmatter", 2), ("X", None, None, "frontmatter", 3)]


def test_malformed_frontmatter_gives_no_frontmatter_links() -> None:
    text = '---\na: "[[X]]"\nb: [unclosed\n---\n[[Y]]\n'
    assert links(text) == [("Y", None, None, "link", 5)]


# --- ignored regions -----------------------------------------------------------

IGNORED_CASES = {
    "backtick fence": "```\n[[X]] #tag ^blk\n# Heading\n```",
    "tilde fence": "~~~python\n[[X]] #tag\n# Heading\n~~~",
    "longer fence holds shorter": "````\n```\n[[X]] #tag\n```\n# Heading\n````",
    "indented fence": "   ```\n[[X]] #tag\n# Heading\n   ```",
    "list item fence with tab": "- item\n\t```\n\t[[X]] #tag\n\t```",
    "fence in a callout": "> [!note]\n> ```\n> [[X]] #tag\n> ```",
    "inline code": "`[[X]]` and `#tag` and `# not`",
    "double backtick code": "``a ` [[X]] #tag``",
    "code with backtick inside": "`` [[X]]`#tag ``",
    "obsidian comment": "%%[[X]] #tag%%",
    "multi-line obsidian comment": "%%\n[[X]]\n# Heading\n#tag ^blk\n%%",
    "html comment": "<!-- [[X]] #tag -->",
    "multi-line html comment": "<!--\n[[X]]\n# Heading\n#tag\n-->",
    "markdown link in code": "`[x](x.md)`",
}


@pytest.mark.parametrize("body", list(IGNORED_CASES.values()), ids=list(IGNORED_CASES))
def test_ignored_regions_hide_everything(body: str) -> None:
    note = parse_note("n.md", f"{body}\nafter [[Kept]] #kept ^kept-id\n")
    assert [link.target for link in note.links] == ["Kept"]
    assert note.tags == ("kept",)
    assert note.headings == ()
    assert note.block_ids == ("kept-id",)


def test_line_numbers_survive_masking() -> None:
    text = "%%\none\ntwo\n%%\n```\na\nb\n```\n<!--\nc\n-->\n[[Here]]"
    assert links(text) == [("Here", None, None, "link", 12)]


def test_unclosed_fence_runs_to_the_end() -> None:
    note = parse_note("n.md", "[[Before]]\n```\n[[In]]\n# Heading\n")
    assert [link.target for link in note.links] == ["Before"]
    assert note.headings == ()


@pytest.mark.parametrize("opener", ["%%", "<!--"])
def test_unclosed_comment_runs_to_the_end(opener: str) -> None:
    assert targets(f"[[Before]] {opener} [[In]]\n[[Later]]") == ["Before"]


def test_fence_needs_matching_char_and_length() -> None:
    text = "````\n```\n~~~~\n[[In]]\n````\n[[Out]]"
    assert targets(text) == ["Out"]


def test_backtick_fence_info_string_with_backtick_is_inline() -> None:
    # "``` a ` b" is not a fence (CommonMark), so the next line is not code
    assert targets("``` a ` b\n[[Visible]]") == ["Visible"]


def test_inline_code_does_not_cross_lines() -> None:
    assert targets("a stray ` here\n[[Visible]] and ` there") == ["Visible"]


def test_unmatched_backtick_runs_are_literal() -> None:
    assert targets("`` not closed by ` one [[Visible]]") == ["Visible"]


def test_comment_inside_code_is_not_a_comment() -> None:
    assert targets("`%%` [[Visible]] `%%`") == ["Visible"]


def test_code_inside_comment_is_hidden() -> None:
    assert targets("%% `x` [[Hidden]] %% [[Visible]]") == ["Visible"]


def test_find_fences_reports_lines_and_markers() -> None:
    text = "intro\n```py\ncode\n```\n> ~~~~\n> q\n> ~~~~\n```\nopen"
    spans = [(f.first, f.last, f.marker, f.closed) for f in find_fences(text)]
    assert spans == [(1, 3, "```", True), (4, 6, "> ~~~~", True), (7, 8, "```", False)]


def test_fence_inside_comment_is_not_a_fence() -> None:
    assert find_fences("%%\n```\n%%\ntext") == []


# --- frontmatter ---------------------------------------------------------------


def test_frontmatter_parsed_and_body_split() -> None:
    note = parse_note("n.md", "---\ntitle: Hello\ncount: 3\n---\n# Body\ntext\n")
    assert note.frontmatter == {"title": "Hello", "count": 3}
    assert note.body == "# Body\ntext\n"
    assert note.body_start_line == 5
    assert note.warnings == ()


def test_no_frontmatter_body_is_everything() -> None:
    text = "# Title\n---\nnot: yaml\n---\n"
    note = parse_note("n.md", text)
    assert note.frontmatter == {}
    assert note.body == text
    assert note.body_start_line == 1


def test_opening_without_closing_is_not_frontmatter() -> None:
    text = "---\ntitle: x\nbody [[L]]\n"
    note = parse_note("n.md", text)
    assert note.frontmatter == {}
    assert note.body == text
    assert note.body_start_line == 1
    assert note.warnings == ()
    assert [(k.target, k.line) for k in note.links] == [("L", 3)]


def test_dots_close_frontmatter() -> None:
    note = parse_note("n.md", "---\na: 1\n...\nbody")
    assert note.frontmatter == {"a": 1}
    assert note.body == "body"
    assert note.body_start_line == 4


def test_empty_frontmatter() -> None:
    note = parse_note("n.md", "---\n---\nbody")
    assert (note.frontmatter, note.body, note.body_start_line, note.warnings) == ({}, "body", 3, ())


def test_frontmatter_only_note() -> None:
    note = parse_note("n.md", "---\ntags: [a]\n---")
    assert note.body == ""
    assert note.tags == ("a",)


def test_opening_fence_must_be_first_line() -> None:
    note = parse_note("n.md", "\n---\na: 1\n---\n")
    assert note.frontmatter == {}
    assert note.body_start_line == 1


@pytest.mark.parametrize(
    ("yaml_text", "reason", "line"),
    [
        ("title: ok\nlist: [a, b\nother: c", "expected ',' or ']'", 4),
        ("a: b: c", "mapping values are not allowed", 2),
        ("- just\n- a list", "not a mapping", 2),
        ("plain words", "not a mapping", 2),
        ("a: !!python/object/apply:os.system [ls]", "could not determine a constructor", 2),
        ("? [1, 2]\n: unhashable", "unhashable key", 2),
    ],
)
def test_malformed_frontmatter_keeps_body_and_warns(yaml_text: str, reason: str, line: int) -> None:
    text = f"---\n{yaml_text}\n---\n# Body\n[[Link]]\n"
    note = parse_note("n.md", text)
    closing = 2 + yaml_text.count("\n") + 1
    assert note.frontmatter == {}
    assert note.body == "# Body\n[[Link]]\n"
    assert note.body_start_line == closing + 1
    assert [(k.target, k.line) for k in note.links] == [("Link", closing + 2)]
    assert len(note.warnings) == 1
    warning = note.warnings[0]
    assert warning.startswith("malformed frontmatter: ")
    assert reason in warning
    assert warning.endswith(f"(line {line})")


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("created: {{date}}", {"created": "{{date}}"}),
        ("created: {{date:YYYY-MM-DD}}", {"created": "{{date:YYYY-MM-DD}}"}),
        ("title: {{title}}\ntags: [{{title}}]", {"title": "{{title}}", "tags": ["{{title}}"]}),
        ("x: &a {{time}}\ny: *a", {"x": "{{time}}", "y": "{{time}}"}),  # the pure-Python loader's path too
        ("point: {x: 1, y: 2}", {"point": {"x": 1, "y": 2}}),  # an ordinary flow mapping stays a mapping
    ],
)
def test_a_template_variable_written_bare_is_its_text(yaml_text: str, expected: dict[str, object]) -> None:
    # `created: {{date}}` is valid YAML (a mapping keyed by a mapping) that Obsidian reads; PyYAML could
    # not hash the key and the whole frontmatter, links and tags included, was dropped as malformed
    note = parse_note("Templates/Book.md", f"---\ncategories:\n  - \"[[Books]]\"\n{yaml_text}\n---\nBody\n")
    assert note.warnings == ()
    assert note.frontmatter == {"categories": ["[[Books]]"], **expected}
    assert [(k.target, k.kind) for k in note.links] == [("Books", "frontmatter")]


@pytest.mark.parametrize(
    ("path", "text", "template"),
    [
        ("Templates/Book.md", "---\ncreated: {{date}}\n---\n", True),  # a variable in a property
        ("Templates/Book.md", "---\ncreated: \"{{date:YYYY-MM-DD}}\"\n---\n", True),
        ("Templates/Daily.md", "# {{title}}\n\n## Tasks\n", True),  # core Templates, in the body
        ("Templates/Daily.md", "<% tp.file.title %>\n", True),  # Templater
        ("Notes/Templating.md", "Write `{{date}}` for today's date:\n\n```\n{{date}}\n```\n", False),  # shown in code
        ("Notes/Templating.md", "%% {{date}} %%\nA note.\n", False),  # inside a comment
        ("Templates/Actor Template.md", "---\ncategories: \"[[People]]\"\n---\n## Movies\n", True),  # by name
        ("Templates/template.md", "Plain.\n", True),
        ("Plugins/codeblock-template.md", "A plugin page.\n", False),  # a name ending in -template is a name
        ("Notes/Templates.md", "The templates I use.\n", False),
        ("Templates/Meeting.md", "Created: {{date}} {{time}}\nWith: \n", True),  # a field with its label
        ("Templates/Log.md", "- [[<% tp.date.yesterday(\"YYYY-MM-DD\") %>]]\n", True),
        # a how-to note's sentence about the variables is no form (a QA pass, in nine languages)
        ("Notas/Plantillas.md", "Al insertar una plantilla, las variables {{date}} y {{title}} se reemplazan "
         "por la fecha y el título de la nota.\n", False),
        ("Plugins seeking help.md", "- [[archiver|Archiver]] - [Add {{obsidianTasksCancelledDate}} to the "
         "placeholders](https://github.com/x/y/issues/85)\n", False),
    ],
)
def test_a_template_is_a_form_field_outside_code_or_its_name(path: str, text: str, template: bool) -> None:
    # kepano's vault: 28 of its 53 "... Template" notes hold a variable, the others only their name says so
    note = parse_note(path, text)
    assert is_template(note.path, note.template_variables) is template


def test_a_link_a_template_fills_in_is_no_link() -> None:
    # obsidian-hub's daily log template: [[<% tp.date.yesterday(...) %>]] was a broken link, "create a note named <%..."
    note = parse_note("Templates/Daily.md", '---\nup: "[[{{date:YYYY}}]]"\n---\n'
                      '[[<% tp.date.yesterday("YYYY-MM-DD -- dddd") %>]], [x]({{title}}.md) and [[Real]]\n')
    assert [(k.target, k.kind) for k in note.links] == [("Real", "link")]


def test_a_credential_yaml_spells_only_once_read_is_redacted_and_found() -> None:
    # the text is redacted before parsing, where a label and its value share a line; property values are
    # stored, searched (a note's properties chunk) and served, so what YAML reads is redacted again
    token = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"
    text = (f'---\nx: "\\x67hp_{token}"\njoined: "ghp_{token[:10]}\\\n  {token[10:]}"\n'
            "password:\n  - Tr0ub4dor&3xyzQ\napi_key: >\n  q8Wd7Zk2LmP4vN9xR3tY6uB1cE5hJ0aS\ntags:\n  - film\n---\n")
    note = parse_note("n.md", text)
    assert note.frontmatter == {"x": "[REDACTED:github]", "joined": "[REDACTED:github]",
                                "password": ["[REDACTED:generic_secret]"], "api_key": "[REDACTED:generic_secret]\n",
                                "tags": ["film"]}
    assert [(f.kind, f.line) for f in note.findings] == [("github", 2), ("github", 3), ("generic_secret", 5),
                                                         ("generic_secret", 7)]
    assert token not in repr(note) and "Tr0ub4dor" not in repr(note)


def test_ordinary_block_values_cost_one_look() -> None:
    note = parse_note("n.md", '---\ntags:\n  - a\nauthor: "[[Octavia Butler]]"\n---\n')
    assert note.frontmatter == {"tags": ["a"], "author": "[[Octavia Butler]]"} and note.findings == ()


def test_control_characters_in_frontmatter_are_malformed() -> None:
    note = parse_note("n.md", "---\na: 1\nb: x\x00y\n---\nbody")
    assert note.frontmatter == {}
    assert note.warnings == (
        "malformed frontmatter: unacceptable character #x0000: special characters are not allowed (line 3)",
    )
    assert note.body == "body"


BILLION_LAUGHS = """---
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
---
body [[Link]]
"""


def test_billion_laughs_is_rejected_quickly() -> None:
    started = time.process_time()  # CPU time: other processes' load does not count
    note = parse_note("bomb.md", BILLION_LAUGHS)
    assert time.process_time() - started < 5.0
    assert note.frontmatter == {}
    assert note.warnings == ("malformed frontmatter: more than 8 YAML aliases (line 3)",)
    assert note.body == "body [[Link]]\n"
    assert [k.target for k in note.links] == ["Link"]


def test_few_aliases_that_still_expand_hit_the_value_cap() -> None:
    # 8 aliases are allowed, but each repeats a 2500-item list: 20000+ values
    shared = "x: &x [" + ",".join(["1"] * 2500) + "]\n" + "\n".join(f"k{i}: *x" for i in range(8))
    note = parse_note("n.md", f"---\n{shared}\n---\n")
    assert note.frontmatter == {}
    assert note.warnings == ("malformed frontmatter: more than 20000 values (line 2)",)
    fewer = "x: &x [" + ",".join(["1"] * 2500) + "]\n" + "\n".join(f"k{i}: *x" for i in range(6))
    assert parse_note("n.md", f"---\n{fewer}\n---\n").frontmatter["k5"] == [1] * 2500


def test_harmless_alias_and_merge_key_work() -> None:
    text = "---\nbase: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n---\n"
    assert parse_note("n.md", text).frontmatter == {"base": {"x": 1}, "other": {"x": 1, "y": 2}}


def test_self_referencing_alias_is_rejected() -> None:
    note = parse_note("n.md", "---\na: &a [*a]\n---\nbody")
    assert note.frontmatter == {}
    assert note.warnings == ("malformed frontmatter: nested deeper than 32 levels (line 2)",)


@pytest.mark.parametrize("opener", ["[", "{", "[ "])
def test_deep_flow_nesting_is_rejected_quickly(opener: str) -> None:
    started = time.process_time()  # CPU time: other processes' load does not count
    note = parse_note("n.md", f"---\na: {opener * 30000}\n---\nbody")
    assert time.process_time() - started < 5.0
    assert note.warnings == ("malformed frontmatter: nested deeper than 32 levels (line 2)",)
    assert note.body == "body"


def test_deep_block_nesting_is_rejected() -> None:
    yaml_text = "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 400))
    note = parse_note("n.md", f"---\n{yaml_text}---\nbody")
    assert note.frontmatter == {}
    assert note.warnings[0].startswith("malformed frontmatter: ")


def test_oversized_frontmatter_is_rejected() -> None:
    note = parse_note("n.md", "---\n" + "key: value\n" * 7000 + "---\nbody")
    assert note.warnings == ("malformed frontmatter: larger than 65536 characters (line 2)",)
    assert note.body == "body"
    assert note.body_start_line == 7003


@pytest.mark.parametrize(
    ("yaml_text", "value"),
    [
        ("x: NO", "NO"), ("x: yes", "yes"), ("x: off", "off"),  # YAML 1.1 booleans; Norway's code stays Norway
        ("x: 01234", 1234), ("x: 0777", 777), ("x: 0o17", 15), ("x: 0x1F", 31), ("x: -42", -42),
        ("x: 1:57", "1:57"), ("x: 1_000", "1_000"), ("x: 1.10", 1.1),  # base 60 and underscores are 1.1 only
        ("x: 2024-02-30", "2024-02-30"),  # no such day: read as typed, not the whole frontmatter malformed
        ("x: True", True), ("x: FALSE", False), ("x: ~", None), ("x: .inf", "inf"),
    ],
)
def test_properties_read_as_obsidian_reads_them(yaml_text: str, value: object) -> None:
    note = parse_note("n.md", f"---\n{yaml_text}\n---\n")
    assert note.warnings == ()
    assert note.frontmatter == {"x": value}
    slow = parse_note("n.md", f"---\nanchor: &a 1\n{yaml_text}\n---\n")  # an anchor takes the pure-Python loader
    assert slow.frontmatter == {"anchor": 1, "x": value}


def test_frontmatter_values_become_json_safe() -> None:
    yaml_text = (
        "day: 2024-01-02\n"
        "stamp: 2024-01-02 10:30:00\n"
        "set: !!set {b, a}\n"
        "nan: .nan\n"
        "inf: -.inf\n"
        "bin: !!binary aGVsbG8=\n"
        "2024-05-06: date key\n"
        "7: int key\n"
        "null: null key\n"
        "yes_: true\n"
        "nested: {list: [1, 2.5, null]}\n"
    )
    fm = parse_note("n.md", f"---\n{yaml_text}---\n").frontmatter
    assert fm == {
        "day": "2024-01-02",
        "stamp": "2024-01-02 10:30:00",  # a date is the text typed, as Obsidian reads it (YAML 1.2)
        "set": ["a", "b"],
        "nan": "nan",
        "inf": "-inf",
        "bin": "aGVsbG8=",
        "2024-05-06": "date key",
        "7": "int key",
        "null": "null key",
        "yes_": True,
        "nested": {"list": [1, 2.5, None]},
    }


# --- title and aliases -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "text", "title"),
    [
        ("folder/My Note.md", "body", "My Note"),
        ("Top.MD", "body", "Top"),
        ("a/b/c.d.md", "", "c.d"),
        ("a/canvas.canvas", "", "canvas.canvas"),
        ("n.md", "---\ntitle: From YAML\n---\n", "From YAML"),
        ("n.md", "---\nTitle: Capitalised Key\n---\n", "Capitalised Key"),
        ("n.md", "---\ntitle: 1984\n---\n", "1984"),
        ("n.md", "---\ntitle: '   '\n---\n", "n"),
        ("n.md", "---\ntitle: [a, b]\n---\n", "a"),
        ("n.md", "---\ntitle: {a: b}\n---\n", "n"),
        ("n.md", "---\ntitle: true\n---\n", "n"),
        ("n.md", "---\ntitle: [broken\n---\n", "n"),
    ],
)
def test_title(path: str, text: str, title: str) -> None:
    assert parse_note(path, text).title == title


@pytest.mark.parametrize(
    ("yaml_text", "aliases"),
    [
        ("aliases: Smith, John", ("Smith, John",)),
        ("aliases: [One, Two, one]", ("One", "Two")),
        ("alias: Single", ("Single",)),
        ("aliases:\n  - A\n  - ''\n  - 42\n  - [nested]\nalias: B", ("A", "42", "B")),
        ("aliases: null", ()),
    ],
)
def test_aliases(yaml_text: str, aliases: tuple[str, ...]) -> None:
    assert parse_note("n.md", f"---\n{yaml_text}\n---\n").aliases == aliases


# --- tags ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "tags"),
    [
        ("#tag", ("tag",)),
        ("text #tag, more #other.", ("tag", "other")),
        ("#parent/child #parent", ("parent/child", "parent")),
        ("#with-dash #with_under #v2 #2024 #1984/12", ("with-dash", "with_under", "v2")),
        ("C# and issue#12 and mid#word", ()),
        ("https://example.com/page#section and [x](y.md#anchor)", ()),
        ("# Heading is not a tag\n## Another", ()),
        ("## Heading with #intag", ("intag",)),
        ("#Tag #tag #TAG", ("Tag",)),
        ("#日本語 #émoji", ("日本語", "émoji")),
        ("#ความรู้ #เรียนรู้ #لُغَة #cafe\u0301 #हिन्दी", ("ความรู้", "เรียนรู้", "لُغَة", "cafe\u0301", "हिन्दी")),  # marks are part of a word
        ("(#paren) ##double", ()),
        ("\t#tabbed\n#linestart", ("tabbed", "linestart")),
    ],
)
def test_inline_tags(body: str, tags: tuple[str, ...]) -> None:
    assert parse_note("n.md", body).tags == tags


@pytest.mark.parametrize(
    ("yaml_text", "tags"),
    [
        ("tags: [a, '#b', c/d]", ("a", "b", "c/d")),
        ("tags: one, two three", ("one", "two", "three")),
        ("tags: '#solo'", ("solo",)),
        ("tag: single", ("single",)),
        ("tags: [1984, x y, 'bad!', ok]", ("x", "y", "ok")),
        ("Tags:\n  - Upper", ("Upper",)),
    ],
)
def test_frontmatter_tags(yaml_text: str, tags: tuple[str, ...]) -> None:
    assert parse_note("n.md", f"---\n{yaml_text}\n---\n").tags == tags


def test_tags_merge_frontmatter_first_and_dedupe_case_insensitively() -> None:
    note = parse_note("n.md", "---\ntags: [Project, idea]\n---\n#project #IDEA #new #New")
    assert note.tags == ("Project", "idea", "new")


# --- headings and block ids --------------------------------------------------------


def test_headings() -> None:
    text = (
        "---\na: 1\n---\n"  # lines 1-3
        "# One\n"  # 4
        "## Two ##\n"  # 5
        "### Three #not-closing\n"  # 6
        "#### Four ^block-id\n"  # 7
        "##### `code` in heading\n"  # 8
        "###### Six\n"  # 9
        "####### seven is text\n"  # 10
        "#NoSpace is a tag\n"  # 11
        "   # Three spaces\n"  # 12
        "    # four spaces is code\n"  # 13
        "#\n"  # 14: empty heading, not recorded
        "# C# ###\n"  # 15
    )
    note = parse_note("n.md", text)
    assert note.headings == (
        Heading(1, "One", 4),
        Heading(2, "Two", 5),
        Heading(3, "Three #not-closing", 6),
        Heading(4, "Four", 7),
        Heading(5, "`code` in heading", 8),
        Heading(6, "Six", 9),
        Heading(1, "Three spaces", 12),
        Heading(1, "C#", 15),
    )
    assert note.block_ids == ("block-id",)


def test_block_ids() -> None:
    text = (
        "A paragraph ^para-1\n"
        "^standalone\n"
        "not^inside and ^not-at-end here\n"
        "trailing space ^with-space   \n"
        "`code ^in-code`\n"
        "bad ^under_score\n"
        "dup ^para-1\n"
    )
    assert parse_note("n.md", text).block_ids == ("para-1", "standalone", "with-space")


# --- body ------------------------------------------------------------------------


def test_body_is_original_unmasked_text() -> None:
    text = "---\na: 1\n---\n`code` %%c%%\n"
    assert parse_note("n.md", text).body == "`code` %%c%%\n"


def test_parse_note_returns_parsed_note_with_path() -> None:
    note = parse_note("dir/Ünïcode.md", "x")
    assert isinstance(note, ParsedNote)
    assert note.path == "dir/Ünïcode.md"
    assert note.title == "Ünïcode"


def test_example_note_end_to_end() -> None:
    text = (
        "---\n"
        "title: Home Lab\n"
        "aliases: [Homelab]\n"
        "tags: [infra]\n"
        'see: "[[Network]]"\n'
        "---\n"
        "# Home Lab #servers\n"
        "Runs on [[Proxmox#Install|proxmox]]. See ![[rack.jpg]] ^intro\n"
        "```yaml\n"
        "# not: a heading [[Nope]]\n"
        "```\n"
        "## Backups\n"
        "Read [the guide](guides/Backup%20Guide.md#Restore).\n"
    )
    note = parse_note("Home Lab.md", text)
    assert note.title == "Home Lab"
    assert note.aliases == ("Homelab",)
    assert note.tags == ("infra", "servers")
    assert note.headings == (Heading(1, "Home Lab #servers", 7), Heading(2, "Backups", 12))
    assert note.block_ids == ("intro",)
    assert note.links == (
        Link("Network", None, None, "frontmatter", 5),
        Link("Proxmox", "Install", "proxmox", "link", 8),
        Link("rack.jpg", None, None, "embed", 8),
        Link("guides/Backup Guide.md", "Restore", "the guide", "markdown", 13),
    )
    assert note.body_start_line == 7
    assert note.warnings == ()


# --- hostile input -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 1_000_000,
        "[[a" * 333_334,
        "]" * 1_000_000,
        "[a](" * 250_000,
        "![" * 500_000,
        "[a](<" * 200_000,
        "`" * 1_000_000,
        " ".join("`" * n for n in range(1, 1400)),
        "#" * 1_000_000,
        "^" * 1_000_000,
        "%" * 1_000_001,
        "<!--" * 250_000,
        "# " + " " * 1_000_000 + "x",
        " " * 1_000_000 + "x ^id",
        "[x](" + "a" * 1_000_000,
        "x" * 1_000_000,
    ],
    ids=lambda text: repr(text[:12]),
)
def test_one_megabyte_lines_parse_fast(text: str) -> None:
    started = time.process_time()  # CPU time: other processes' load does not count
    parse_note("n.md", text)
    assert time.process_time() - started < 5.0


def test_deeply_nested_lists_and_quotes() -> None:
    lists = "".join("  " * i + "- [[L" + str(i) + "]]\n" for i in range(3000))
    quotes = "".join(">" * i + " #q\n" for i in range(1, 3000))
    note = parse_note("n.md", lists + quotes)
    assert len(note.links) == 3000
    assert note.links[-1].line == 3000
    assert note.tags == ("q",)


def test_binary_ish_text_with_nuls() -> None:
    text = "\x00\x01[[a\x00b]]\x00#t\x00g\n\x00```\x00\n\ufffd\udc80 [[ok]]"
    note = parse_note("n.md", text)
    assert [k.target for k in note.links] == ["a\x00b", "ok"]
    assert note.tags == ()


def test_item_caps_keep_the_first_and_warn() -> None:
    note = parse_note("n.md", "[[x]]\n" * (MAX_ITEMS + 5))
    assert len(note.links) == MAX_ITEMS
    assert note.links[-1].line == MAX_ITEMS
    assert note.warnings == (f"too many links: kept the first {MAX_ITEMS}",)


def test_tag_cap_counts_distinct_tags() -> None:
    note = parse_note("n.md", "#same " * 100_000)
    assert note.tags == ("same",)
    assert note.warnings == ()


@pytest.mark.slow
def test_twenty_megabyte_file() -> None:
    block = "# H\ntext [[L]] `c` %%x%% #t ^b\n```\ncode\n```\n| a | b |\n"
    text = block * (20_000_000 // len(block))
    started = time.process_time()  # CPU time: other processes' load does not count
    note = parse_note("big.md", text)
    assert time.process_time() - started < 60
    assert len(note.links) == MAX_ITEMS
    assert note.tags == ("t",)
    assert note.block_ids == ("b",)


def test_a_long_heading_and_title_are_bounded() -> None:
    """One 1.9 MB heading was stored again with every section: 2.27 GB of index for a 1.9 MB note."""
    from sidecar.ingest.parse import MAX_HEADING_CHARS, bounded_text

    note = parse_note("h.md", "---\ntitle: " + "t " * 50_000 + "\n---\n# " + "word " * 380_000 + "\n\nbody\n## "
                      + "x" * 100_000 + "\n")
    assert [len(h.text) <= MAX_HEADING_CHARS for h in note.headings] == [True, True]
    assert note.headings[0].text.startswith("word word") and not note.headings[0].text.endswith(" ")
    assert len(note.title) <= MAX_HEADING_CHARS
    assert bounded_text("short") == "short" and bounded_text("a" * 400) == "a" * MAX_HEADING_CHARS


def test_a_redacted_property_keeps_its_type() -> None:
    """Redaction runs before parsing, and its marker is YAML for a list: `password: [REDACTED:...]` was
    read as a list of a list, `tags: [ghp_...]` as a list holding a list."""
    from sidecar.ingest.redact import redact

    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    note = parse_note("n.md", redact(f"---\ntags: [{token}, travel]\npassword: Zx9!kLm2Qp44wE\n"
                                     f"api: \"key {token} here\"\n---\nbody\n").text)
    assert note.frontmatter["tags"] == ["[REDACTED:github]", "travel"]
    assert note.frontmatter["password"] == "[REDACTED:generic_secret]"
    assert note.frontmatter["api"] == "key [REDACTED:github] here"
