"""Memory files and skills rendered into the system prompt, within token budgets."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from remem.errors import FrontmatterError, InvalidInputError, NotFoundError
from remem.files import InMemoryFileBackend, StoreFileBackend
from remem.files.instructions import MemoryFile, render_memory_files, scope_files
from remem.files.render import cut_points
from remem.files.skills import Skills, parse_skill
from remem.store import SQLiteStore
from remem.tokens import DEFAULT_COUNTER

ORG = "Company rules. Never share customer data. Answer in the user's language."
USER = "Alice prefers short answers. She works in Berlin.\nShe is vegetarian."
AGENT = ("I am the travel agent. I book trains before planes. 我优先订火车。 I check the weather "
         "before every trip. I keep receipts in /workspace/receipts. I never book night "
         "buses. I confirm prices twice.")


def _three_scopes() -> tuple[InMemoryFileBackend, list[MemoryFile]]:
    files = InMemoryFileBackend()
    sources = scope_files(org_id="acme", user_id="alice", agent_id="travel")
    for source, text in zip(sources, (ORG, USER, AGENT), strict=True):
        files.write(source.path, text)
    return files, sources


def test_scope_files_go_from_general_to_specific() -> None:
    assert [(s.scope, s.path) for s in scope_files(org_id="o", agent_id="a")] == [
        ("org", "/memories/org/o/AGENTS.md"), ("agent", "/memories/agent/a/AGENTS.md")]


def test_all_files_fit_in_a_large_budget() -> None:
    files, sources = _three_scopes()
    section = render_memory_files(files, sources, budget=500)
    assert section.overflow == []
    assert section.text.index(ORG) < section.text.index(USER) < section.text.index(AGENT)
    assert "## agent (/memories/agent/travel/AGENTS.md)" in section.text
    assert section.tokens == DEFAULT_COUNTER.count(section.text) <= 500


def test_a_small_budget_cuts_at_a_sentence_and_reports_the_rest() -> None:
    files, sources = _three_scopes()
    whole = render_memory_files(files, sources, budget=500).tokens
    section = render_memory_files(files, sources, budget=whole - 12)
    assert section.tokens <= whole - 12
    kept = section.text.split("(/memories/agent/travel/AGENTS.md)\n")[1].split("\n[cut")[0]
    assert kept and AGENT.startswith(kept)
    # cut after a whole sentence, never inside one
    assert len(kept) in {p for p in cut_points(AGENT)} | {len(AGENT[:p].rstrip())
                                                         for p in cut_points(AGENT)}
    assert section.overflow, "something must be reported as cut"
    assert "read_file /memories/" in section.text
    cut = section.overflow[0]
    assert cut.tokens > cut.included_tokens


def test_missing_files_are_skipped_and_budgets_are_checked() -> None:
    files, sources = _three_scopes()
    files.delete(sources[1].path)
    section = render_memory_files(files, sources, budget=500)
    assert USER not in section.text and section.overflow == []
    with pytest.raises(InvalidInputError, match="budget"):
        render_memory_files(files, sources, budget=0)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.sampled_from(list("ab .!\n。字x")), max_size=300),
                      min_size=1, max_size=4),
       budget=st.integers(min_value=1, max_value=120))
def test_rendered_memory_files_never_exceed_the_budget(texts: list[str], budget: int) -> None:
    files = InMemoryFileBackend()
    sources = [MemoryFile(f"s{i}", f"/m/{i}.md") for i in range(len(texts))]
    for source, text in zip(sources, texts, strict=True):
        files.write(source.path, text)
    section = render_memory_files(files, sources, budget=budget)
    assert section.tokens == DEFAULT_COUNTER.count(section.text) <= budget
    for source, text in zip(sources, texts, strict=True):
        body = text.strip()
        if body and body not in section.text:  # cut or left out: reported
            assert source.path in [o.source for o in section.overflow]


# -- skills -----------------------------------------------------------------------------------

GOOD = """---
name: pdf-forms
description: Fill in PDF forms. Use when the user sends a PDF with fields.
allowed-tools: read_file, write_file
license: MIT
---
# Filling PDF forms

1. Read the form.
"""


def test_a_skill_is_listed_by_name_and_description_and_loaded_in_full() -> None:
    files = InMemoryFileBackend()
    files.write("/skills/pdf-forms/SKILL.md", GOOD)
    files.write("/skills/pdf-forms/reference.md", "field names")
    skills = Skills(files)
    [info] = skills.list()
    assert (info.name, info.allowed_tools, info.metadata) == (
        "pdf-forms", ("read_file", "write_file"), {"license": "MIT"})
    skill = skills.load("pdf-forms")
    assert skill.body.startswith("# Filling PDF forms")
    assert skill.files == ("/skills/pdf-forms/reference.md",)
    rendered = skills.render(budget=200)
    assert "- pdf-forms: Fill in PDF forms." in rendered.text and rendered.overflow == []
    with pytest.raises(NotFoundError, match="the skills are: pdf-forms"):
        skills.load("pdf")


@pytest.mark.parametrize(("text", "field", "fix"), [
    ("# no frontmatter", "no frontmatter", "start the file"),
    ("---\nname: x\n", "not closed", "add a line '---'"),
    ("---\nname: [unclosed\n---\n", "not valid YAML", "quote values"),
    ("---\n- a\n- b\n---\n", "must be 'key: value'", "description"),
    ("---\ndescription: d\n---\n", "'name' is missing", "name: pdf-forms"),
    ("---\nname: PDF_Forms\ndescription: d\n---\n", "'name' is 'PDF_Forms'", "lowercase"),
    ("---\nname: other\ndescription: d\n---\n", "folder is 'pdf-forms'", "match"),
    ("---\nname: pdf-forms\n---\n", "'description' is missing", "what the skill does"),
    ("---\nname: pdf-forms\ndescription: d\nallowed-tools: 3\n---\n", "'allowed-tools'",
     "list of tool names"),
])
def test_malformed_frontmatter_names_file_field_and_fix(text: str, field: str,
                                                        fix: str) -> None:
    with pytest.raises(FrontmatterError) as caught:
        parse_skill("/skills/pdf-forms/SKILL.md", text)
    message = str(caught.value)
    assert message.startswith("/skills/pdf-forms/SKILL.md: ")
    assert field in message and fix in message


def test_one_bad_skill_does_not_hide_the_others_unless_strict() -> None:
    files = InMemoryFileBackend()
    files.write("/skills/pdf-forms/SKILL.md", GOOD)
    files.write("/skills/broken/SKILL.md", "---\nname: broken\n---\n")
    skills = Skills(files)
    assert [s.name for s in skills.list()] == ["pdf-forms"]
    assert list(skills.errors) == ["/skills/broken/SKILL.md"]
    with pytest.raises(FrontmatterError, match=r"broken/SKILL\.md"):
        Skills(files, strict=True).list()


def test_skill_listing_is_cached_by_etag_on_a_store(tmp_path: object) -> None:
    store = SQLiteStore(":memory:")
    files = StoreFileBackend(store, ("skills",))
    for n in range(30):
        files.write(f"/skills/s{n:02d}/SKILL.md",
                    f"---\nname: s{n:02d}\ndescription: Skill number {n}.\n---\nbody\n")
    skills = Skills(files)
    assert len(skills.list()) == 30
    files.edit("/skills/s07/SKILL.md", "Skill number 7.", "Seventh skill.")
    assert [s.description for s in skills.list() if s.name == "s07"] == ["Seventh skill."]
    rendered = skills.render(budget=60)
    assert rendered.tokens <= 60 and rendered.overflow
    assert "more skills left out for space" in rendered.text
    store.close()
