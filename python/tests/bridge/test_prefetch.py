"""Loads across graphs (backend(prefetch=True)): a model compiled per layer
starts each layer's first loads during the backward graph that runs before
it. The copy ops' side (ops.prefetch_push, ops.prefetch_issue) on the CPU
backend, and a per-layer compiled Llama stack through the bridge: the loads
really start in the graph before, and the gradients stay bit-identical to
plain per-layer torch.compile."""

import pytest

torch = pytest.importorskip("torch")

from ..helpers import import_ops_or_skip  # noqa: E402

ops = import_ops_or_skip()


def _offloaded(x):
    host = ops.offload_start(x, ops.dense_stride(x), [])
    ops.offload_wait(host, x, [])
    return host


def test_a_pushed_group_is_loaded_by_issue_and_taken_by_its_load_start():
    ops.reset_runtime_stats()
    x = torch.randn(64, 32).t()  # a transposed (dense) layout travels too
    host = _offloaded(x)
    ops.prefetch_push([host])
    ops.prefetch_issue(torch.zeros(1))
    dst = ops.load_start(host, *ops.layout(x), [])
    ops.load_wait(dst, host, [])
    assert torch.equal(dst, x) and dst.stride() == x.stride()
    extra = ops.extra_stats()
    assert extra["prefetched_loads"] == 1
    assert extra["pending_loads"] == 0


def test_issue_starts_only_the_latest_group_and_a_dead_host_leaves_nothing():
    ops.reset_runtime_stats()
    a, b = torch.randn(256), torch.randn(256)
    host_a, host_b = _offloaded(a), _offloaded(b)
    ops.prefetch_push([host_a])  # the earlier graph's forward
    ops.prefetch_push([host_b])  # the later one's: its backward runs first
    ops.prefetch_issue(torch.zeros(1))
    dst_a = ops.load(host_a, *ops.layout(a), [])  # not started early
    assert torch.equal(dst_a, a)
    assert ops.extra_stats()["prefetched_loads"] == 0
    # host_b's started load is never asked for: it goes with its host.
    del host_b
    ops.prefetch_issue(torch.zeros(1))  # host_a's group, taken above: nothing
    extra = ops.extra_stats()
    assert extra["prefetched_loads"] == 0
    assert extra["pending_loads"] == 0
    del host_a
    assert ops.extra_stats()["live_host_blocks"] == 0


def test_a_released_offload_keeps_its_source_until_the_copy_read_it():
    ops.reset_runtime_stats()
    x = torch.randn(1 << 16)
    expected = x.clone()
    host = ops.offload_start(x, ops.dense_stride(x), [])
    ops.offload_release(host, x)  # no wait: the runtime holds x until copied
    del x
    dst = ops.load(host, [1 << 16], [1], torch.float32, torch.device("cpu"), [])
    assert torch.equal(dst, expected)
    assert ops.extra_stats()["pending_offloads"] == 0


def test_prefetch_is_a_bool(offload_mlir):
    with pytest.raises(ValueError, match="prefetch must be True or False"):
        offload_mlir.backend(prefetch="yes")


def _per_layer_grads(backend, steps: int = 2):
    from offload_mlir import models

    torch.use_deterministic_algorithms(True)
    torch._dynamo.reset()
    torch.manual_seed(0)
    cfg = models.LlamaConfig(hidden=64, heads=4, kv_heads=2, ffn=128)
    model = models.LlamaStack(cfg, 3, 32, loss=True)
    for i, layer in enumerate(model.layers):
        model.layers[i] = torch.compile(layer, backend=backend, dynamic=False)
    x = torch.randn(2, 32, 64, generator=torch.Generator().manual_seed(1))
    for _ in range(steps):
        for p in model.parameters():
            p.grad = None
        model(x).backward()
    return [p.grad.clone() for p in model.parameters()]


def test_per_layer_compile_starts_loads_in_the_graph_before_with_compiles_gradients(
        offload_mlir):
    plain = _per_layer_grads("inductor")
    # The control: plain per-layer Inductor reproduces itself.
    assert all(torch.equal(a, b) for a, b in zip(plain, _per_layer_grads("inductor")))
    before = len(offload_mlir.reports())
    offload_mlir.reset_runtime_stats()
    grads = _per_layer_grads(offload_mlir.backend(min_bytes=0, plan="all", prefetch=True))
    assert all(torch.equal(a, b) for a, b in zip(plain, grads))
    stats = offload_mlir.runtime_stats()
    assert stats["d2h_bytes"] > 0 and stats["d2h_bytes"] == stats["h2d_bytes"]
    # Layer 0 compiles apart (its input needs no gradient); layers 1 and 2
    # share a graph. Per step, layer 2's backward starts layer 1's first
    # loads, and layer 1's layer 0's.
    reports = offload_mlir.reports()[before:]
    planned = [r["pipeline"]["steps"][0]["prefetch"] for r in reports]
    assert all(p["loads"] > 0 and p["load_bytes"] <= p["bytes"] for p in planned)
    assert stats["prefetched_loads"] == 2 * sum(p["loads"] for p in planned)
    assert stats["pending_loads"] == 0 and stats["live_host_blocks"] == 0


def _offloaded_inputs(reports):
    """The graph inputs each compile offloaded (forward placeholders are
    named primals_<k> by AOTAutograd)."""
    return [[name for name in r["offloaded"] if name.startswith("primals_")] for r in reports]


def test_per_layer_compile_offloads_each_layers_input_when_donated(offload_mlir):
    plain = _per_layer_grads("inductor")
    before = len(offload_mlir.reports())
    grads = _per_layer_grads(offload_mlir.backend(min_bytes=0, plan="all",
                                                  donate_activations=True), steps=1)
    assert all(torch.equal(a, b) for a, b in zip(plain, grads))
    # Layer 0's input is the user's batch (a leaf, kept); layers 1 and 2 get
    # the layer before's output, an activation the model's loop drops.
    reports = offload_mlir.reports()[before:]
    assert [bool(names) for names in _offloaded_inputs(reports)] == [False, True]
    steps = [r["pipeline"]["steps"][0] for r in reports]
    inputs = [s for s in steps[1]["saved"] if s["producer"].startswith("argument")
              and s["offloaded"]]
    assert inputs and all(s["type"] == "tensor<2x32x64xf32>" for s in inputs)

    # By default every graph input stays.
    before = len(offload_mlir.reports())
    kept = _per_layer_grads(offload_mlir.backend(min_bytes=0, plan="all"), steps=1)
    assert all(torch.equal(a, b) for a, b in zip(plain, kept))
    reports = offload_mlir.reports()[before:]
    assert _offloaded_inputs(reports) == [[], []]
    saved = reports[1]["pipeline"]["steps"][0]["saved"]
    assert any(s["type"] == "tensor<2x32x64xf32>" and s.get("kept_reason") == "function argument"
               for s in saved)


def test_donate_activations_is_a_bool(offload_mlir):
    with pytest.raises(ValueError, match="donate_activations must be True or False"):
        offload_mlir.backend(donate_activations=1)


def test_saved_instances_plans_the_layer_graph_as_every_layer_holding_it(offload_mlir):
    plain = _per_layer_grads("inductor")
    before = len(offload_mlir.reports())
    grads = _per_layer_grads(offload_mlir.backend(min_bytes=0, saved_instances=3), steps=1)
    assert all(torch.equal(a, b) for a, b in zip(plain, grads))
    # Each graph's prediction counts what the two other layers keep through
    # forward, as the pipeline's saved-instances=3 does.
    for report in offload_mlir.reports()[before:]:
        held = report["pipeline"]["steps"][0]["saved_instances"]
        assert held["instances"] == 3
        assert 0 <= held["held_bytes_after"] <= held["held_bytes_before"]


@pytest.mark.parametrize("value", [0, True, 1.5, "8"])
def test_saved_instances_is_a_count(offload_mlir, value):
    with pytest.raises(ValueError, match="saved_instances must be an int >= 1"):
        offload_mlir.backend(saved_instances=value)


def test_a_graph_run_by_several_layers_before_backward_suggests_saved_instances(offload_mlir):
    import warnings

    # Layers 1 and 2 share a graph: it runs twice before backward reaches
    # it, with both calls' saved values on the device.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _per_layer_grads(offload_mlir.backend(min_bytes=0), steps=2)
    said = [str(w.message) for w in caught
            if issubclass(w.category, offload_mlir.SavedInstancesWarning)]
    assert len(said) == 1, said
    assert "ran 2 times before backward" in said[0] and "saved_instances=2" in said[0]

    # Planned as the two layers it serves, it says nothing.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _per_layer_grads(offload_mlir.backend(min_bytes=0, saved_instances=2), steps=2)
    assert not [w for w in caught if issubclass(w.category, offload_mlir.SavedInstancesWarning)]
