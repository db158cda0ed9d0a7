"""sample: de-duplication, target shares, redistribution from short strata, determinism (on real indexes)."""

from __future__ import annotations

from collections import Counter

import pytest

from solbench.data.errors import SpecError
from solbench.dataset.catalog.sample import deduplicate, draw, weights
from solbench.dataset.catalog.targets import parse_all, parse_shares


def test_synthetic_duplicates_are_the_gemms_of_one_shape_family(synthetic_index) -> None:
    unique, groups = deduplicate(synthetic_index.problems)
    as_names = {g.kept.name: sorted(r.name for r in g.dropped) for g in groups}
    assert as_names == {"001_gemm_bf16_llama3_8b_qkv": ["002_gemm_bf16_llama3_8b_gate_up", "003_gemm_bf16_llama3_8b_down"]}
    assert len(unique) == len(synthetic_index.problems) - 2


def test_shares_are_met_when_the_strata_are_big_enough(synthetic_index) -> None:
    unique, _ = deduplicate(synthetic_index.problems)  # 16 problems: 14 forward-only llm and others; 1 backward
    sample = draw(unique, 8, ["domain"], {"domain": {"llm": 0.75}}, seed=1)
    found = Counter(row.domain for row in sample.chosen)
    assert len(sample.chosen) == 8 and found["llm"] == 6 and sum(found.values()) - found["llm"] == 2
    assert not sample.notes
    assert len({row.path for row in sample.chosen}) == 8


def test_short_stratum_gives_all_and_the_rest_is_redistributed(synthetic_index) -> None:
    unique, _ = deduplicate(synthetic_index.problems)
    sample = draw(unique, 10, ["direction"], {"direction": {"backward": 0.5}}, seed=0)
    found = Counter(row.direction for row in sample.chosen)
    assert found == {"backward": 1, "forward": 9}  # the pool has one backward problem
    assert any("stratum backward: wanted 5.0, has only 1" in note for note in sample.notes)


def test_the_draw_is_deterministic_for_a_seed_and_depends_on_it(synthetic_index) -> None:
    unique, _ = deduplicate(synthetic_index.problems)
    first = [r.path for r in draw(unique, 7, ["category", "precision"], seed=3).chosen]
    assert first == [r.path for r in draw(list(reversed(unique)), 7, ["category", "precision"], seed=3).chosen]
    others = {tuple(r.path for r in draw(unique, 7, ["category", "precision"], seed=s).chosen) for s in range(6)}
    assert len(others) > 1


def test_n_larger_than_the_pool_takes_all(synthetic_index) -> None:
    unique, _ = deduplicate(synthetic_index.problems)
    sample = draw(unique, 100, ["category"], seed=0)
    assert len(sample.chosen) == len(unique)
    assert any("fewer than 100" in note for note in sample.notes)


def test_zero_weight_strata_fill_what_the_shared_ones_cannot(synthetic_index) -> None:
    unique, _ = deduplicate(synthetic_index.problems)
    sample = draw(unique, 5, ["category"], {"category": {"attention": 1.0}}, seed=0)
    assert len(sample.chosen) == 5 and sum(r.category == "attention" for r in sample.chosen) == 1
    assert any("4 more drawn from the others" in note for note in sample.notes)


def test_weights_follow_the_shares(synthetic_index) -> None:
    rows = synthetic_index.problems
    found = weights(rows, {"category": {"gemm": 0.5}})
    gemm = [w for r, w in zip(rows, found) if r.category == "gemm"]
    other = [w for r, w in zip(rows, found) if r.category != "gemm"]
    assert sum(gemm) == pytest.approx(0.5) and sum(other) == pytest.approx(0.5)
    assert len(set(round(w, 12) for w in gemm)) == 1


@pytest.mark.parametrize("text, message", [
    ("category", "expected DIM=value:share"),
    ("category=gemm", "expected value:share"),
    ("category=gemm:x", "not a number"),
    ("category=gemm:1.5", "between 0 and 1"),
    ("category=gemm:0.6,moe:0.6", "add up to 1.2"),
    ("colour=red:0.5", "unknown dimension 'colour'"),
    ("category=gemm:0.2,gemm:0.3", "given twice"),
])
def test_bad_share_syntax_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_all([text], "--share")
    assert len(caught.value.issues) == 1 and caught.value.issues[0].field == "--share"


def test_share_parsing() -> None:
    assert parse_shares("category=attention:0.30,moe:0.12", "--target") == ("category", {"attention": 0.30, "moe": 0.12})
    assert parse_all(["category=attention:0.3", "category=moe:0.1", "direction=backward:0.2"], "--target") == {
        "category": {"attention": 0.3, "moe": 0.1}, "direction": {"backward": 0.2}}


def test_raked_weights_meet_two_dimensions_at_once(synthetic_index) -> None:
    rows = synthetic_index.problems
    found = weights(rows, {"category": {"gemm": 0.4, "norm": 0.2}, "precision": {"bfloat16": 0.5}})
    share = lambda test: sum(w for r, w in zip(rows, found) if test(r))  # noqa: E731
    assert share(lambda r: r.category == "gemm") == pytest.approx(0.4, abs=1e-6)
    assert share(lambda r: r.category == "norm") == pytest.approx(0.2, abs=1e-6)
    assert share(lambda r: r.precision == "bfloat16") == pytest.approx(0.5, abs=1e-6)
    assert sum(found) == pytest.approx(1.0)


def test_sizes_keeps_the_same_layer_of_models_of_different_widths(tmp_path) -> None:
    """--duplicates sizes: two problems of one graph are one only where their constant axes are equal too."""
    import json

    from solbench.dataset.catalog.row import ProblemRow
    from solbench.dataset.catalog.sample import deduplicate, sample_sizes

    def folder(name: str, hidden: int) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "definition.json").write_text(json.dumps({"axes": {"n": {"type": "var"}, "hidden": {"type": "const", "value": hidden}}}))

    for name, hidden in (("a_4096", 4096), ("b_8192", 8192), ("c_4096", 4096)):
        folder(name, hidden)
    fields = dict(subset=None, digest="d", op_type="rmsnorm", hf_id=None, category="norm", category_source="op_type", domain="llm",
                  domain_source="name", precision="bfloat16", fp8=False, fp4=False, quantised="none", direction="forward",
                  direction_source="default", workloads=1, var_axes=1, custom_inputs=False, fingerprint="same-graph")
    rows = [ProblemRow(name=name, path=name, **fields) for name in ("a_4096", "b_8192", "c_4096")]
    unique, groups = deduplicate(rows)
    assert [r.name for r in unique] == ["a_4096"]
    unique, groups = deduplicate(rows, sample_sizes(tmp_path))
    assert [r.name for r in unique] == ["a_4096", "b_8192"]
    assert [(g.kept.name, [r.name for r in g.dropped]) for g in groups] == [("a_4096", ["c_4096"])]
