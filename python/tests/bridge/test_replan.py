"""Re-planning far from the hint (`backend(replan_far_from_hint=N)`): a
graph with dynamic shapes is planned at its size hints; a length 4x or more
from every plan's hints compiles the graph again, planned at that length, at
most N times, and each later length runs on the plan nearest to it whose
guards admit it. Bytes move at every length, and losses and gradients are
bit-identical to plain `torch.compile` with the same dynamic setting (CPU,
deterministic, after a control run of plain Inductor against itself)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from tests.bridge.helpers import (  # noqa: E402
    DYNAMIC_MODES,
    assert_bit_identical,
    no_fallback,
    tiny_titan_lm,
    train_adamw,
    variable_length_batch,
)

# The dynamic graph's hint (dynamic=True: 8; dynamic=None: 10, the length of
# the automatic recompile), 64 (8x from 8, 6.4x from 10: re-planned), lengths
# near either plan, and 2 (4x below 8, 5x below 10, 32x below 64: far from
# both plans, where the bound of one re-plan stops a second).
LENGTHS = (8, 10, 64, 12, 60, 2)




def _train(offload_mlir, backend, mode):
    """Losses and gradients of one AdamW step per length of LENGTHS, with,
    per length, the bytes moved and the PlanFarFromHintWarning messages."""
    moved, said = {}, {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        def record(step):
            stats = offload_mlir.runtime_stats()
            moved[LENGTHS[step]] = (stats["d2h_bytes"], stats["h2d_bytes"])
            offload_mlir.reset_runtime_stats()
            said[LENGTHS[step]] = [str(w.message) for w in caught
                                   if issubclass(w.category, offload_mlir.PlanFarFromHintWarning)]
            caught.clear()

        result = train_adamw(tiny_titan_lm,
                             lambda i: variable_length_batch(LENGTHS[i], mode == "mark_dynamic"),
                             backend, len(LENGTHS), dynamic=DYNAMIC_MODES[mode], on_step=record)
    return result, moved, said


def _dynamic_hints(reports):
    """The size hints of the dynamic graphs' plans, in compile order."""
    return [sorted(r["size_hints"].values()) for r in reports if r.get("size_hints")]


@pytest.mark.parametrize("mode", ["none", "true", "mark_dynamic"])
def test_a_far_length_is_planned_again_within_the_bound(offload_mlir, mode):
    def plain():
        return train_adamw(tiny_titan_lm,
                           lambda i: variable_length_batch(LENGTHS[i], mode == "mark_dynamic"),
                           "inductor", len(LENGTHS), dynamic=DYNAMIC_MODES[mode])

    baseline = plain()
    steps = [f"length {n}" for n in LENGTHS]
    assert_bit_identical(baseline, plain(), steps)
    first = len(offload_mlir.reports())
    with no_fallback(offload_mlir):
        result, moved, said = _train(
            offload_mlir, offload_mlir.backend(min_bytes=0, plan="all", replan_far_from_hint=1),
            mode)
    assert_bit_identical(baseline, result, steps)
    for length, (d2h, h2d) in moved.items():
        assert d2h > 0 and d2h == h2d, (length, moved)
    # Two plans of the dynamic graph: at its hint, and again at 64 (its
    # report gives the hint it was planned at). dynamic=True also makes the
    # batch (2) a symbol.
    hint = 10 if mode == "none" else 8
    batch = [2] if mode == "true" else []
    assert _dynamic_hints(offload_mlir.reports()[first:]) == \
        [sorted(batch + [hint]), sorted(batch + [64])]
    # 64 re-plans, and says so; 60 runs on that plan (nothing said); 2 is
    # far from both and the bound stops a second re-plan, said once.
    assert [n for n in LENGTHS if said[n]] == [64, 2], said
    (replanned,), (bounded,) = said[64], said[2]
    assert f"={hint} runs at " in replanned and "planned it again at" in replanned \
        and "=64" in replanned.split("planned it again at")[1], replanned
    assert "runs at" in bounded and "had its 1 re-plan" in bounded, bounded


def test_without_replanning_one_plan_serves_every_length(offload_mlir):
    first = len(offload_mlir.reports())
    with no_fallback(offload_mlir):
        _, moved, said = _train(offload_mlir, offload_mlir.backend(min_bytes=0, plan="all"),
                                "true")
    assert all(d2h > 0 and d2h == h2d for d2h, h2d in moved.values()), moved
    assert _dynamic_hints(offload_mlir.reports()[first:]) == [[2, 8]]
    # The first far length (64) says so once, with today's remedy.
    assert [n for n in LENGTHS if said[n]] == [64], said
    assert "where the plan may expose copies" in said[64][0] \
        and "replan_far_from_hint" in said[64][0], said[64]


def test_replanning_needs_a_non_negative_int_and_inductor(offload_mlir):
    for bad in (-1, True, 1.5, "2"):
        with pytest.raises(ValueError, match="replan_far_from_hint must be"):
            offload_mlir.backend(replan_far_from_hint=bad)
    with pytest.raises(ValueError, match="replan_far_from_hint re-plans Inductor"):
        offload_mlir.backend(replan_far_from_hint=1, compiler="aot_eager")


def test_a_replan_has_cache_keys_of_its_own(offload_mlir):
    # AOTAutograd's cache keys on the partitioner's uuid(), which carries the
    # size hints a plan is made at: plans of one graph at other hints (a
    # re-plan, or a first call at another length) have entries of their own.
    from offload_mlir.bridge import OffloadOptions, OffloadPartitioner

    options = OffloadOptions(min_bytes=0, plan="all")
    uuids = {OffloadPartitioner(options).uuid(),
             OffloadPartitioner(options, (("s27", 8), ("s52", 2))).uuid(),
             OffloadPartitioner(options, (("s27", 64), ("s52", 2))).uuid()}
    assert len(uuids) == 3
    # The bound is not part of a plan: changing it keeps the cache entries.
    assert OffloadPartitioner(options).uuid() == OffloadPartitioner(
        OffloadOptions(min_bytes=0, plan="all", replan_far_from_hint=3)).uuid()


def _dispatch(limit, admits=lambda args: True):
    """A HintDispatch over one symbolic size (input 0, dim 1, hint 16)
    whose plans name themselves; `admits` is each re-plan's guard."""
    from offload_mlir.replan import HintDispatch

    made = []

    def replan(args):
        name = f"at {args[0].shape[1]}"
        made.append(name)
        return (lambda *a: name), admits
    return HintDispatch(lambda *a: "first", [(0, 1, "s0", 16)], replan, limit), made


def _run(dispatch, length):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ran = dispatch(torch.empty(2, length))
    return ran, [str(w.message) for w in caught]


def test_each_call_runs_on_the_nearest_plan_its_guards_admit():
    dispatch, made = _dispatch(limit=2)
    assert _run(dispatch, 40) == ("first", [])  # 2.5x: near enough
    ran, said = _run(dispatch, 64)  # 4x: re-planned there
    assert ran == "at 64" and "planned at s0=16 runs at s0=64" in said[0] \
        and "planned it again at s0=64 (re-plan 1 of replan_far_from_hint=2)" in said[0]
    assert _run(dispatch, 40) == ("at 64", [])  # 1.6x from 64, 2.5x from 16
    assert _run(dispatch, 24) == ("first", [])
    ran, said = _run(dispatch, 2)  # 8x below 16: the second re-plan
    assert ran == "at 2" and "re-plan 2 of" in said[0]
    ran, said = _run(dispatch, 512)  # 8x above 64: the bound stops a third
    assert ran == "at 64" and "had its 2 re-plan(s)" in said[0] and made == ["at 64", "at 2"]
    assert _run(dispatch, 1024) == ("at 64", [])  # said once


def test_a_call_a_replan_does_not_admit_runs_on_the_first_plan():
    dispatch, made = _dispatch(limit=1, admits=lambda args: args[0].shape[1] >= 40)
    assert _run(dispatch, 64)[0] == "at 64"
    assert _run(dispatch, 48)[0] == "at 64"
    assert _run(dispatch, 36) == ("first", [])  # nearer 64 than 16, but not admitted there
    dispatch, made = _dispatch(limit=1, admits=lambda args: False)
    ran, said = _run(dispatch, 64)  # made, but not admitting its own call
    assert ran == "first" and made == ["at 64"] and "planned it again" in said[0]


def test_a_graph_that_cannot_be_planned_again_says_so_once():
    from offload_mlir.replan import HintDispatch

    dispatch = HintDispatch(lambda *a: "first", [(0, 1, "s0", 16)], lambda args: None, 3)
    ran, said = _run(dispatch, 64)
    assert ran == "first" and len(said) == 1 and "cannot be planned again" in said[0]
    assert _run(dispatch, 128) == ("first", [])


# dynamic=True, batch 4: the re-plan at length 4 (4x below the hint 16) has
# one symbol for the batch and the length (duck sizing), so its guards admit
# only calls where the two are equal. Length 5 runs on the first plan (5 is
# nearer 4 than 16, but its guards refuse it); length 4 runs on the re-plan.
DUCK_LENGTHS = (16, 4, 5, 4)


def test_a_replan_runs_only_the_calls_its_guards_admit(offload_mlir):
    def batch(i):
        g = torch.Generator().manual_seed(i)
        tokens = torch.randint(0, 96, (4, DUCK_LENGTHS[i] + 1), generator=g)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def train(backend):
        return train_adamw(tiny_titan_lm, batch, backend, len(DUCK_LENGTHS), dynamic=True)

    steps = [f"length {n}" for n in DUCK_LENGTHS]
    baseline = train("inductor")
    assert_bit_identical(baseline, train("inductor"), steps)
    first = len(offload_mlir.reports())
    with no_fallback(offload_mlir), warnings.catch_warnings():
        warnings.simplefilter("ignore", offload_mlir.PlanFarFromHintWarning)
        result = train(offload_mlir.backend(min_bytes=0, plan="all", replan_far_from_hint=1))
    assert_bit_identical(baseline, result, steps)
    hints = [r["size_hints"] for r in offload_mlir.reports()[first:] if r.get("size_hints")]
    assert sorted(hints[0].values()) == [4, 16] and list(hints[1].values()) == [4], hints


def test_guards_on_counts_the_guards_a_shape_env_adds_or_ignores_frozen():
    # The re-plan's compile must add none to Dynamo's ShapeEnv (frozen by
    # then): bridge.backend's replan discards a variant that did.
    from torch._dynamo.source import LocalSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

    from offload_mlir.replan import guards_on

    env = ShapeEnv()
    n = env.create_unspecified_symint_and_symbol(8, LocalSource("n"), DimDynamic.DYNAMIC)
    made, ignored = guards_on(env)
    assert bool(n > 4)
    assert guards_on(env) == (made + 1, ignored)
    env.freeze()
    assert bool(n > 5)
    assert guards_on(env)[1] == ignored + 1
