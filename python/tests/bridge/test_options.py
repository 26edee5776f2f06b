"""What backend() accepts, checked when it is called; torch.compile's mode=
and options=; the backend registered by name; and the one warning a run
that offloads nothing gives."""

import contextlib
import os
import warnings

import pytest

torch = pytest.importorskip("torch")

import torch._functorch.config  # noqa: E402,F401
import torch._inductor.config  # noqa: E402,F401


@pytest.mark.parametrize("kwargs, match", [
    ({"report": "/nonexistent/x"}, "does not exist"),
    ({"report": "xml"}, "neither 'text', 'json' nor a file path"),
    ({"report": 3}, "report must be"),
    ({"budget": "0"}, "budget must be positive"),
    ({"budget": "0GiB"}, "budget must be positive"),
    ({"budget": 0}, "budget must be positive"),
    ({"min_bytes": True}, "min_bytes must be a non-negative int"),
    ({"min_bytes": -1}, "min_bytes must be a non-negative int"),
    ({"min_bytes": 1.5}, "min_bytes must be a non-negative int"),
    ({"device_profile": "/nonexistent/profile.json"}, "cannot read device profile"),
    ({"device_profile": __file__}, "not valid JSON"),
    ({"device_profile": 1}, "device_profile must be"),
    ({"max_inflight_bytes": "abc"}, "not a byte size"),
    ({"max_inflight_bytes": 1.5}, "max_inflight_bytes must be"),
    ({"schedule": "no"}, "schedule must be True or False"),
    ({"recompute": 1}, "recompute must be True or False"),
    ({"plan": "all", "budget": "20GiB"}, "pass one of them"),
    ({"plan": "hidden", "budget": 0.5}, "pass one of them"),
    ({"plan": "budget"}, "needs budget="),
    ({"plan": "most"}, "plan must be"),
    ({"max_recompute": 1.5}, "max_recompute must be a fraction"),
    ({"max_recompute": True}, "max_recompute must be a fraction"),
    ({"max_recompute": -0.01}, "max_recompute must be a fraction"),
    ({"drop_peak_neutral": 1}, "drop_peak_neutral must be None"),
    ({"plan": "all", "drop_peak_neutral": True}, "drops what plan='hidden' chose"),
    ({"budget": 0.5, "drop_peak_neutral": True}, "drops what plan='hidden' chose"),
])
def test_backend_refuses_a_bad_option_when_called(offload_mlir, kwargs, match):
    with pytest.raises(ValueError, match=match):
        offload_mlir.backend(**kwargs)


def test_backend_accepts_each_option_spelled_right(offload_mlir, tmp_path):
    from offload_mlir.bridge import OffloadOptions

    profile = os.path.join(os.path.dirname(offload_mlir.__file__), "profiles", "h100.json")
    for kwargs in ({"report": "text"}, {"report": "json"}, {"report": str(tmp_path / "r.txt")},
                   {"report": "./report.txt"}, {"budget": "20GiB"}, {"budget": 0.5},
                   {"plan": "budget", "budget": 10**9}, {"plan": "all"},
                   {"device_profile": profile}, {"max_inflight_bytes": "2GiB"},
                   {"max_inflight_bytes": 1 << 30}, {"schedule": False}):
        assert callable(offload_mlir.backend(**kwargs)), kwargs
    # budget= alone plans to the budget; nothing at all plans hidden.
    assert offload_mlir.backend(budget=0.5).options.plan == "budget"
    assert offload_mlir.backend().options.plan == "hidden" == OffloadOptions.plan
    # The joint plan's allowance and the instances reach the pipeline; the
    # defaults are the pipeline's own and are left out.
    assert "max-recompute" not in OffloadOptions().pipeline_options()
    assert "saved-instances" not in OffloadOptions().pipeline_options()
    options = offload_mlir.backend(max_recompute=0.015, saved_instances=8).options
    assert "max-recompute=0.015 saved-instances=8" in options.pipeline_options()
    # drop_peak_neutral: None until a graph resolves it (the partitioner).
    assert "drop-peak-neutral" not in OffloadOptions().pipeline_options()
    options = offload_mlir.backend(drop_peak_neutral=True).options
    assert "drop-peak-neutral=true" in options.pipeline_options()


def _tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                               torch.nn.Linear(256, 64))


def test_torch_compile_mode_is_applied_or_refused(offload_mlir, monkeypatch):
    from offload_mlir import bridge

    # A mode is Inductor's settings for it, without CUDA graphs, which the
    # copies cannot run in.
    assert bridge.mode_inductor_config(None) == bridge.mode_inductor_config("default") == {}
    assert bridge.mode_inductor_config("max-autotune-no-cudagraphs")["max_autotune"] is True
    for mode, match in (("reduce-overhead", "CUDA graphs"), ("max-autotune", "CUDA graphs"),
                        ("fastest", "torch.compile's modes")):
        with pytest.raises(ValueError, match=match):
            bridge.mode_inductor_config(mode)
    # torch.compile hands mode= to the backend, which applies it.
    applied = []
    real = bridge.mode_inductor_config
    monkeypatch.setattr(bridge, "mode_inductor_config",
                        lambda mode: applied.append(mode) or real(None))
    x = torch.randn(16, 64)
    torch._dynamo.reset()
    step = torch.compile(_tiny(), backend=offload_mlir.backend(), dynamic=False,
                         mode="max-autotune-no-cudagraphs")
    step(x).sum().backward()
    assert applied == ["max-autotune-no-cudagraphs"]
    monkeypatch.setattr(bridge, "mode_inductor_config", real)
    torch._dynamo.reset()
    step = torch.compile(_tiny(), backend=offload_mlir.backend(), dynamic=False,
                         mode="reduce-overhead")
    with pytest.raises(Exception, match="CUDA graphs"):
        step(x)
    torch._dynamo.reset()
    step = torch.compile(_tiny(), backend=offload_mlir.backend(), dynamic=False,
                         options={"plan": "all"})
    with pytest.raises(Exception, match="pass the options to offload_mlir.backend"):
        step(x)


def test_registered_backend_takes_backend_options(offload_mlir):
    from offload_mlir.bridge import registered_backend

    x = torch.randn(16, 64)
    torch._dynamo.reset()
    offload_mlir.reset_runtime_stats()
    step = torch.compile(_tiny(), backend=registered_backend, dynamic=False,
                         options={"plan": "all", "min_bytes": 0})
    step(x).sum().backward()
    assert offload_mlir.last_report()["offloaded"]
    assert offload_mlir.runtime_stats()["d2h_bytes"] > 0
    torch._dynamo.reset()
    step = torch.compile(_tiny(), backend=registered_backend, dynamic=False,
                         options={"plan": "all", "min_byte": 0})
    with pytest.raises(Exception, match="unknown option.*min_byte"):
        step(x)
    torch._dynamo.reset()
    step = torch.compile(_tiny(), backend=registered_backend, dynamic=False,
                         options={"schedule": "no"})
    with pytest.raises(Exception, match="schedule must be True or False"):
        step(x)


@contextlib.contextmanager
def _caches_off():
    """AOTAutograd's and Inductor's caches off, so that the partitioner runs
    whatever an earlier test in this process compiled (what a cache hit
    replays is test_aot_cache.py's subject)."""
    with torch._functorch.config.patch(enable_autograd_cache=False), \
            torch._inductor.config.patch(fx_graph_cache=False):
        yield


def test_a_run_that_offloads_nothing_says_why_once(offload_mlir, monkeypatch):
    from offload_mlir import bridge

    monkeypatch.setattr(bridge, "_said_nothing_offloaded", False)
    x = torch.randn(16, 64)
    torch._dynamo.reset()
    with _caches_off(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step = torch.compile(_tiny(), backend=offload_mlir.backend(), dynamic=False)
        step(x).sum().backward()
        torch._dynamo.reset()
        step = torch.compile(_tiny(), backend=offload_mlir.backend(), dynamic=False)
        step(x).sum().backward()
    said = [str(w.message) for w in caught
            if issubclass(w.category, offload_mlir.NothingOffloadedWarning)]
    assert len(said) == 1, said
    # The CPU step's saved values are small (min_bytes) or parameters, and
    # it runs on the CPU.
    assert "nothing was offloaded" in said[0]
    assert "smaller than min_bytes" in said[0] and "It runs on cpu" in said[0]
    assert "report='text'" in said[0]


def test_a_run_whose_plan_keeps_everything_names_the_plans_reason(offload_mlir, monkeypatch):
    from offload_mlir import bridge

    monkeypatch.setattr(bridge, "_said_nothing_offloaded", False)
    torch._dynamo.reset()
    with _caches_off(), pytest.warns(offload_mlir.NothingOffloadedWarning,
                      match=r"kept by the plan \(its copy cannot be hidden under compute\)"):
        step = torch.compile(_tiny(), backend=offload_mlir.backend(min_bytes=0),
                             dynamic=False)
        step(torch.randn(16, 64)).sum().backward()


class _LossModel(torch.nn.Module):
    """A step whose forward computes the loss; the log-softmax it saves
    (16 MiB) is dead before backward's peak, at the weight gradients."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.up = torch.nn.Linear(256, 2048)
        self.down = torch.nn.Linear(2048, 256)
        self.head = torch.nn.Linear(256, 8192)

    def forward(self, x, y):
        h = self.down(torch.nn.functional.gelu(self.up(x)))
        return torch.nn.functional.cross_entropy(self.head(h), y)


def _loss_step_grads(backend):
    torch._dynamo.reset()
    torch.use_deterministic_algorithms(True)
    model = _LossModel()
    step = torch.compile(model, backend=backend, dynamic=False)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(512, 256, generator=g), torch.randint(0, 8192, (512,), generator=g)
    step(x, y).backward()
    return [p.grad.clone() for p in model.parameters()]


def test_a_graph_that_computes_the_loss_keeps_what_lowers_no_peak(offload_mlir):
    # The H200 profile predicts the CPU graph's copies hidden; the peak is
    # the weight gradients' at the end of backward.
    profile = os.path.join(os.path.dirname(offload_mlir.__file__), "profiles", "h200.json")
    plain = _loss_step_grads("inductor")
    assert all(torch.equal(a, b) for a, b in zip(plain, _loss_step_grads("inductor")))

    def kept_reasons():
        return [s.get("kept_reason") for s in
                offload_mlir.last_report()["pipeline"]["steps"][0]["saved"]]

    # By default a graph whose one differentiable output is a scalar drops
    # the offloads its predicted peak does not need.
    with _caches_off():
        grads = _loss_step_grads(offload_mlir.backend(min_bytes=0, device_profile=profile))
    assert all(torch.equal(a, b) for a, b in zip(plain, grads))
    report = offload_mlir.last_report()
    assert report["drop_peak_neutral"] is True and report["offloaded"] == []
    assert "plan: offloading it does not lower the predicted peak" in kept_reasons()

    # drop_peak_neutral=False offloads what the link hides.
    with _caches_off():
        grads = _loss_step_grads(offload_mlir.backend(min_bytes=0, device_profile=profile,
                                                      drop_peak_neutral=False))
    assert all(torch.equal(a, b) for a, b in zip(plain, grads))
    report = offload_mlir.last_report()
    assert report["drop_peak_neutral"] is False and report["offloaded"]
    assert "plan: offloading it does not lower the predicted peak" not in kept_reasons()


def test_a_graph_whose_output_is_not_the_loss_keeps_every_hidden_offload(offload_mlir):
    # The loss is taken outside the graph (as after a layer compiled on its
    # own): another graph's peak may need what this one's does not.
    torch._dynamo.reset()
    with _caches_off():
        step = torch.compile(_tiny(), backend=offload_mlir.backend(), dynamic=False)
        step(torch.randn(16, 64)).sum().backward()
    assert offload_mlir.last_report()["drop_peak_neutral"] is False


def test_the_nothing_offloaded_message_names_drop_peak_neutral_where_it_kept_values():
    from offload_mlir import bridge

    fw = torch.fx.symbolic_trace(torch.nn.Linear(4, 4))
    options = bridge.OffloadOptions()

    def message(*reasons):
        report = {"pipeline": {"steps": [{"saved": [{"kept_reason": r} for r in reasons]}]}}
        return bridge._nothing_offloaded(fw, report, options)

    said = message("function argument", "plan: offloading it does not lower the predicted peak")
    assert "1 kept by the plan (offloading it does not lower the predicted peak)" in said
    assert "drop_peak_neutral=False offloads what the link hides" in said
    assert "drop_peak_neutral" not in message("plan: its copy cannot be hidden under compute")


@pytest.mark.parametrize("outputs, computes_the_loss", [
    ("loss", True),
    ("loss and detached logits", True),   # one differentiable output: the loss
    ("loss and logits", False),           # logits may feed other graphs' backward
])
def test_drop_peak_neutral_follows_the_graphs_differentiable_outputs(
        offload_mlir, outputs, computes_the_loss):
    class Model(_LossModel):
        def forward(self, x, y):
            h = self.down(torch.nn.functional.gelu(self.up(x)))
            logits = self.head(h)
            loss = torch.nn.functional.cross_entropy(logits, y)
            if outputs == "loss":
                return loss
            return loss, (logits.detach() if outputs == "loss and detached logits" else logits)

    torch._dynamo.reset()
    step = torch.compile(Model(), backend=offload_mlir.backend(compiler="aot_eager"),
                         dynamic=False)
    out = step(torch.randn(8, 256), torch.randint(0, 8192, (8,)))
    (out if outputs == "loss" else out[0]).backward()
    assert offload_mlir.last_report()["drop_peak_neutral"] is computes_the_loss
