"""``remem.eval.compare``: two runs' question records compared pair by pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.errors import InvalidInputError
from remem.eval.compare import load_records, main, paired_change, pool_changes


def _run(directory: Path, recalls: list[tuple[str, str, float]]) -> Path:
    directory.mkdir()
    lines = [json.dumps({"conversation": pool, "question_index": i, "kind": kind,
                         "main": True, "metrics": {"recall@10": value}})
             for i, (pool, kind, value) in enumerate(recalls)]
    lines.append(json.dumps({"conversation": "p", "question_index": 99, "main": False,
                             "metrics": {"recall@10": 1.0}}))  # not in the main set
    (directory / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def test_the_change_is_paired_by_question_overall_and_by_kind(tmp_path: Path) -> None:
    base = load_records(_run(tmp_path / "a", [("p", "simple", 0.0), ("p", "simple", 1.0),
                                              ("q", "noisy", 0.5), ("q", "noisy", 0.5)]))
    new = load_records(_run(tmp_path / "b", [("p", "simple", 1.0), ("p", "simple", 1.0),
                                             ("q", "noisy", 0.0), ("q", "noisy", 0.5)]))
    assert len(base) == 4  # the question outside the main set is left out
    changes = {c.name: c for c in paired_change(base, new, resamples=200)}
    assert (changes["main"].n, changes["main"].up, changes["main"].down) == (4, 1, 1)
    assert changes["main"].delta == pytest.approx(0.125)
    assert changes["main"].low <= 0.125 <= changes["main"].high
    assert changes["simple"].delta == pytest.approx(0.5)
    assert changes["noisy"].delta == pytest.approx(-0.25)
    assert pool_changes(base, new) == {"p": 0.5, "q": -0.25}


def test_runs_of_different_files_or_a_missing_record_file_are_refused(tmp_path: Path) -> None:
    base = load_records(_run(tmp_path / "a", [("p", "simple", 0.0)]))
    with pytest.raises(InvalidInputError, match="share no question"):
        paired_change(base, {})
    with pytest.raises(InvalidInputError, match="--out"):
        load_records(tmp_path / "nowhere")


def test_the_command_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    a = _run(tmp_path / "a", [("p", "simple", 0.0), ("p", "simple", 1.0)])
    b = _run(tmp_path / "b", [("p", "simple", 1.0), ("p", "simple", 1.0)])
    assert main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| main | 2 | 0.500 | 1.000 | +0.500" in out and "pools up 1, down 0" in out
    assert main([str(a)]) == 2
