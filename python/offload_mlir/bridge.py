"""`torch.compile` backend: Inductor with activation offloading planned by the
offload-mlir pipeline.

    model = torch.compile(model, backend=offload_mlir.backend())

The backend runs Inductor's `compile_fx` with
`torch._inductor.config.custom_partitioner_fn` set to `OffloadPartitioner`.
For each training graph the partitioner

1. runs Inductor's own `min_cut_rematerialization_partition` (what to save
   and what to recompute stays PyTorch's decision);
2. exports the forward and backward graphs as trace-dialect MLIR;
3. runs the `offload-activations` pipeline in-process through the C API
   (MLIR linked statically, no MLIR installation needed);
4. rebuilds both FX graphs in the IR's op order with `torch.ops.offload.*`
   copies where the IR put them.

Inductor then compiles the rebuilt graphs as usual. A graph the bridge cannot
handle is compiled untransformed, with one warning naming the reason.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import warnings
from typing import Any, Callable, Mapping, Sequence

import torch

from . import capi, ops
from .ir_plan import PlanReadError, read_step
from .pin_order import installed_pass
from .rebuild import RebuildError, rebuild_step
from .replan import HintDispatch, PlanFarFromHintWarning, admitted_by, dynamo_shape_env, \
    fake_inputs_at, guards_on, input_hints, symbolic_input_dims

__all__ = ["backend", "OffloadOptions", "OffloadPartitioner", "last_report", "reports",
           "BridgeWarning", "NothingOffloadedWarning", "PlanFarFromHintWarning",
           "SavedInstancesWarning",
           "registered_backend", "__version__"]

__version__ = "0.2.0"


class BridgeWarning(UserWarning):
    """A graph was compiled without offloading; the message says why."""


def _budget_option(budget: Any) -> str:
    """The pipeline's `budget=` spelling: bytes, a size string, or a
    fraction. Strings are checked by the pipeline's own parser (the one the
    passes and offload_rt use), so the bridge accepts exactly what they do."""
    if isinstance(budget, bool):
        raise TypeError("budget must be bytes, a size string or a fraction")
    if isinstance(budget, float):
        if not 0 < budget <= 1:
            raise ValueError(f"a fractional budget is in (0, 1], not {budget!r}")
        return repr(budget)
    if isinstance(budget, int):
        if budget <= 0:
            raise ValueError("budget must be positive")
        return str(budget)
    if not isinstance(budget, str):
        raise TypeError(f"budget must be bytes, a size string or a fraction, "
                        f"not {type(budget).__name__}")
    text = budget.strip().replace(" ", "")
    try:
        capi.run_pipeline("module {}", f"budget={text}")
    except capi.PipelineError as e:
        reason = str(e).splitlines()[0].split("error: ", 1)[-1]
        raise ValueError(f"cannot read budget {budget!r}: {reason}") from None
    if _leading_number(text) == 0:
        raise ValueError(f"budget must be positive, not {budget!r}")
    return text


def _leading_number(text: str) -> float | None:
    """The number a size string starts with ("0GiB": 0.0), or None."""
    match = re.match(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
    return float(match.group(0)) if match else None


def _check_pipeline_option(name: str, option: str, value: str) -> None:
    """The pipeline's own reading of `option=value` (on an empty module),
    so the bridge refuses what it would refuse at the first compile."""
    try:
        capi.run_pipeline("module {}", f"{option}={value}")
    except capi.PipelineError as e:
        reason = str(e).splitlines()[0].split("error: ", 1)[-1]
        raise ValueError(f"{name}={value!r}: {reason}") from None


def _check_report(report: Any) -> None:
    """`report` is None, "text", "json", or the path of a file in an existing
    folder this process may write to (a path: with a folder or a suffix, so
    a misspelt format is not taken for a file name)."""
    if report is None or report in ("text", "json"):
        return
    if not isinstance(report, (str, os.PathLike)):
        raise ValueError(f"report must be None, 'text', 'json' or a file path, not {report!r}")
    path = os.fspath(report)
    if os.sep not in path and not os.path.splitext(path)[1]:
        raise ValueError(f"report={report!r} is neither 'text', 'json' nor a file path "
                         "(write a path with a folder or a suffix: ./report.txt)")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"report={report!r} is a folder, not a file")
    if not os.path.isdir(folder):
        raise ValueError(f"report={report!r}: the folder {folder} does not exist")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise ValueError(f"report={report!r}: cannot write there")


@dataclasses.dataclass(frozen=True)
class OffloadOptions:
    """The pipeline's options, with the bridge's defaults.

    `plan="hidden"` by default: offload only what the cost model predicts
    the host link hides under compute: no predicted exposed copy, and kernels
    slowed by the copies beside them (where the device profile prices that)
    at most 1% of the step. `plan="all"` offloads every eligible saved value;
    `plan="budget"` (or any `budget=`) fits a device-memory budget.
    """

    min_bytes: int = 1 << 20
    plan: str = "hidden"
    budget: Any = None
    schedule: bool = True
    device_profile: str | None = None
    report: str | None = None  # None, "text", "json", or a file path
    max_inflight_bytes: str | None = None
    compiler: str = "inductor"  # or "aot_eager"
    # Inductor's activation_memory_budget for this backend's partitions
    # (None: torch's own setting): the fraction of the saved bytes the
    # partitioner keeps, recomputing the rest in backward.
    recompute_budget: float | None = None
    # The pipeline's `load-lead` (None: its default, `copy-margin`'s 5%):
    # start each load this fraction of its copy time earlier than the model
    # needs, where memory allows.
    load_lead: float | None = None
    # Other torch._functorch.config settings for this backend's partitions,
    # by name (say {"ban_recompute_materialized_backward": False}): which
    # values the min-cut partitioner may recompute instead of saving.
    partitioner_config: tuple[tuple[str, Any], ...] = ()
    # Inductor only: let Inductor's code keep freed buffers for reuse, which
    # the backend turns off by default (DEFAULT_INDUCTOR_CONFIG), and plan
    # with them: the pipeline's `reuse-freed-buffers`.
    reuse_freed_buffers: bool = False
    # torch._inductor.config settings for these graphs' code generation, by
    # name, over the backend's defaults (say {"max_autotune": True}).
    inductor_config: tuple[tuple[str, Any], ...] = ()
    # The planner chooses recomputation with the copies (the pipeline's
    # `recompute`): saved values cheap forward ops compute from other saved
    # values may be computed again in backward; the partitioner carries the
    # decisions out (OffloadPartitioner).
    recompute: bool = True
    # plan="hidden" once the partitioner carried out the joint plan's
    # recomputation (after_recompute): the step time the copies may add over
    # the recomputed step, what remains of the joint plan's allowance (the
    # pipeline's max-slowdown). None: the pipeline's default.
    copy_allowance: float | None = None
    # A model compiled as several graphs (per layer, per block, split by
    # graph breaks): each graph's first loads may start during the backward
    # graph that runs before it (backward runs the graphs in the reverse of
    # forward's order). The pipeline plans the lead and the memory it takes
    # (`prefetch-lead=auto`, `prefetch-bytes=auto`); the copy ops start those
    # loads there (ops.prefetch_push, ops.prefetch_issue).
    prefetch: bool = False
    # Graph inputs that are activations (not parameters, and made by autograd
    # before this graph: the layer before's output, when each layer is a
    # graph) are donated to the step (`offload.donated`): the caller drops
    # them once the graph has run, so the planner may offload them like
    # intermediates. Code that keeps them (a list of hidden states, say) pays
    # for a copy that frees nothing, so it is opt-in; on the per-layer
    # benchmark it changes no plan (docs/training-recipes.md#per-layer-compilation).
    donate_activations: bool = False
    # A graph run several times before its backward graphs, as the one graph
    # of the identical layers of a model compiled per layer: the saved values
    # of all its calls are on the device together when forward ends, so the
    # plan counts what it keeps through forward this many times
    # (`saved-instances`); 1: the graph alone.
    saved_instances: int = 1
    # plan="hidden": the step time recomputation and copies together may add,
    # a fraction of the step as it came (the pipeline's max-recompute, over
    # its max-slowdown of 0).
    max_recompute: float = 0.01
    # plan="hidden": then keep on the device each offload the predicted peak
    # does not need (the pipeline's drop-peak-neutral). Such a copy lowers
    # no peak of a graph that is the whole training step, so it only costs
    # link time; in a model compiled as several graphs it may lower another
    # graph's peak. None: on for a graph whose forward computes the loss
    # (its one differentiable output is a scalar: backward starts from it,
    # and what other graphs hold stays constant while its values live).
    drop_peak_neutral: bool | None = None
    # A graph with symbolic sizes: the most times it is compiled again,
    # planned at the sizes of a call far from every plan's hints
    # (replan.HintDispatch). It decides which plan runs a call, not what a
    # plan is, so it stays out of repr() and with it out of the cache key.
    replan_far_from_hint: int = dataclasses.field(default=0, repr=False)

    def __post_init__(self):
        if self.plan not in ("all", "hidden", "budget"):
            raise ValueError(f"plan must be 'all', 'hidden' or 'budget', not {self.plan!r}")
        if self.plan == "budget" and self.budget is None:
            raise ValueError("plan='budget' needs budget=")
        if self.budget is not None and self.plan != "budget":
            raise ValueError(f"budget= plans to a memory budget, plan={self.plan!r} does "
                             "not: pass one of them")
        if self.compiler not in ("inductor", "aot_eager"):
            raise ValueError("compiler must be 'inductor' or 'aot_eager'")
        if isinstance(self.min_bytes, bool) or not isinstance(self.min_bytes, int) \
                or self.min_bytes < 0:
            raise ValueError(f"min_bytes must be a non-negative int, not {self.min_bytes!r}")
        for name in ("schedule", "reuse_freed_buffers", "recompute", "prefetch",
                     "donate_activations"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}")
        if isinstance(self.saved_instances, bool) or not isinstance(
                self.saved_instances, int) or self.saved_instances < 1:
            raise ValueError("saved_instances must be an int >= 1 (the graphs whose saved "
                             f"values are on the device together), not {self.saved_instances!r}")
        if not (self.drop_peak_neutral is None or isinstance(self.drop_peak_neutral, bool)):
            raise ValueError("drop_peak_neutral must be None (automatic), True or False, "
                             f"not {self.drop_peak_neutral!r}")
        if self.drop_peak_neutral and self.plan != "hidden":
            raise ValueError("drop_peak_neutral drops what plan='hidden' chose; "
                             f"plan={self.plan!r} keeps its own choice")
        if isinstance(self.max_recompute, bool) or not isinstance(
                self.max_recompute, (int, float)) or not 0 <= self.max_recompute < 1:
            raise ValueError("max_recompute must be a fraction in [0, 1) of the step time, "
                             f"not {self.max_recompute!r}")
        if isinstance(self.replan_far_from_hint, bool) \
                or not isinstance(self.replan_far_from_hint, int) or self.replan_far_from_hint < 0:
            raise ValueError("replan_far_from_hint must be a non-negative int, not "
                             f"{self.replan_far_from_hint!r}")
        if self.replan_far_from_hint and self.compiler != "inductor":
            raise ValueError("replan_far_from_hint re-plans Inductor's compiles; "
                             f"compiler={self.compiler!r} takes none")
        if self.budget is not None:
            _budget_option(self.budget)
        _check_report(self.report)
        if self.device_profile is not None:
            if not isinstance(self.device_profile, (str, os.PathLike)):
                raise ValueError("device_profile must be the path of a JSON profile, not "
                                 f"{self.device_profile!r}")
            _check_pipeline_option("device_profile", "device-profile",
                                   os.fspath(self.device_profile))
        if self.max_inflight_bytes is not None:
            if isinstance(self.max_inflight_bytes, bool) or not isinstance(
                    self.max_inflight_bytes, (str, int)):
                raise ValueError("max_inflight_bytes must be bytes or a size string such as "
                                 f"'2GiB', not {self.max_inflight_bytes!r}")
            _check_pipeline_option("max_inflight_bytes", "max-inflight-bytes",
                                   str(self.max_inflight_bytes))
        if self.recompute_budget is not None and (
                isinstance(self.recompute_budget, bool)
                or not isinstance(self.recompute_budget, (int, float))
                or not 0 <= self.recompute_budget <= 1):
            raise ValueError("recompute_budget must be a fraction in [0, 1], "
                             f"not {self.recompute_budget!r}")
        if self.load_lead is not None and (
                isinstance(self.load_lead, bool)
                or not isinstance(self.load_lead, (int, float))
                or not 0 <= self.load_lead < float("inf")):
            raise ValueError(f"load_lead must be a finite fraction >= 0, not {self.load_lead!r}")
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config

        _check_settings("partitioner_config", functorch_config, self.partitioner_config)
        _check_settings("inductor_config", inductor_config, self.inductor_config,
                        set_here=_BRIDGE_INDUCTOR_SETTINGS)
        if self.reuse_freed_buffers and not self.resolved_inductor_config().get(
                "allow_buffer_reuse", True):
            raise ValueError("reuse_freed_buffers plans with Inductor's buffer reuse, "
                             "which inductor_config turns off (allow_buffer_reuse=False)")

    def resolved_inductor_config(self) -> dict[str, Any]:
        """The Inductor settings these graphs compile with, beyond the
        backend's own: DEFAULT_INDUCTOR_CONFIG (without its
        `allow_buffer_reuse=False` where `reuse_freed_buffers` asks for
        Inductor's reuse), then `inductor_config` over it."""
        defaults = dict(DEFAULT_INDUCTOR_CONFIG)
        if self.reuse_freed_buffers:
            del defaults["allow_buffer_reuse"]
        return defaults | dict(self.inductor_config)

    def inductor_reuses_buffers(self) -> bool:
        """Whether Inductor's code holds freed buffers for its next
        allocation of the same size: `allow_buffer_reuse`, as these graphs
        set it or else torch's setting."""
        import torch._inductor.config as inductor_config

        return bool(self.resolved_inductor_config().get(
            "allow_buffer_reuse", inductor_config.allow_buffer_reuse))

    def resolved_device_profile(self) -> str | None:
        """`device_profile`, or the packaged profile measured on this kind of
        GPU, or None (the compiler's built-in H100 defaults)."""
        return self.device_profile or default_device_profile()

    def after_recompute(self, first: dict[str, Any]) -> "OffloadOptions":
        """The options that plan the copies once the partitioner carried out
        the first plan's recomputation: no recomputation of its own, and a
        budget fraction resolved against the step as it first came (the
        recomputed step's peak is lower)."""
        steps = first.get("pipeline", {}).get("steps", [])
        planned = steps[0].get("planned", {}) if steps else {}
        budget = self.budget
        if budget is not None:
            came = planned.get("unplanned_peak_bytes")
            # The pipeline's rule: a number in (0, 1] is a fraction
            # (__post_init__ checked the budget already).
            try:
                fraction = float(budget)
            except ValueError:
                fraction = None
            if fraction is not None and not 0 < fraction <= 1:
                fraction = None
            if fraction is not None and came:
                budget = int(fraction * came)
        # plan=hidden: the joint plan may spend its allowance over the step as
        # it came (max-slowdown 0 + max_recompute) on recomputation and on
        # copies alike; what the recomputation left is the copies' now.
        allowance = None
        if budget is None and self.plan == "hidden" and steps:
            came = planned.get("unplanned_step_seconds")
            recomputed = steps[0].get("predicted", {}).get("step_seconds_before")
            if came and recomputed:
                allowance = max(0.0, came * (1 + self.max_recompute) / recomputed - 1)
        return dataclasses.replace(self, recompute=False, budget=budget,
                                   copy_allowance=allowance)

    def pipeline_options(self, report: str = "json") -> str:
        parts = [f"min-bytes={self.min_bytes}"]
        if self.budget is not None:
            parts.append(f"budget={_budget_option(self.budget)}")
        else:
            parts.append(f"plan={self.plan}")
        parts.append(f"schedule={'true' if self.schedule else 'false'}")
        profile = self.resolved_device_profile()
        if profile:
            parts.append(f"device-profile={profile}")
        if self.max_inflight_bytes:
            parts.append(f"max-inflight-bytes={self.max_inflight_bytes}")
        if self.load_lead is not None:
            parts.append(f"load-lead={float(self.load_lead)!r}")
        # What runs the step: the copy ops release an offloaded value's
        # memory at its wait, through PyTorch's stream-ordered allocator, so
        # the compute stream waits there for the copy; and Inductor fuses the
        # memory-bound ops the exported graph still lists one by one.
        if not self.recompute:
            parts.append("recompute=false")
        elif self.max_recompute != OffloadOptions.max_recompute:
            parts.append(f"max-recompute={float(self.max_recompute)!r}")
        if self.copy_allowance is not None:
            parts.append(f"max-slowdown={float(self.copy_allowance)!r}")
        if self.prefetch:
            parts.append("prefetch-lead=auto")
        if self.saved_instances > 1:
            parts.append(f"saved-instances={self.saved_instances}")
        if self.drop_peak_neutral:
            parts.append("drop-peak-neutral=true")
        parts.append("release=at-wait")
        if self.compiler == "inductor":
            parts.append("fuse-memory-bound=true")
            if self.reuse_freed_buffers and self.inductor_reuses_buffers():
                parts.append("reuse-freed-buffers=true")
        parts.append(f"report={report}")
        return " ".join(parts)


# Device profiles measured with offload_mlir.calibrate and shipped with the
# package, by a part of the GPU's name. A GPU none of them names is planned
# with the compiler's built-in defaults (an H100 PCIe), with a warning.
_PACKAGED_PROFILES = {"H100": "h100.json", "H200": "h200.json"}
_warned_unprofiled: set[str] = set()


def default_device_profile() -> str | None:
    """The packaged device profile for the current CUDA device, if one was
    measured on its kind of GPU."""
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name()
    for key, file in _PACKAGED_PROFILES.items():
        path = os.path.join(os.path.dirname(__file__), "profiles", file)
        if key in name and os.path.exists(path):
            return path
    if name not in _warned_unprofiled:
        _warned_unprofiled.add(name)
        warnings.warn(
            f"offload_mlir: no device profile was measured on {name}; planning with the "
            "compiler's built-in H100 PCIe defaults. `python -m offload_mlir.calibrate "
            "-o PROFILE.json` measures one; pass it as device_profile=.")
    return None


def _file_hash(path: str | None) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "unreadable"


_reports: list[dict[str, Any]] = []
_reports_lock = threading.Lock()


def last_report() -> dict[str, Any] | None:
    """The pipeline's report (its JSON, as data) for the graph compiled last,
    with the bridge's own fields: `offloaded` (saved values now in host
    memory), `fallback` (the reason a graph stayed untransformed, or None)."""
    with _reports_lock:
        return _reports[-1] if _reports else None


def reports() -> list[dict[str, Any]]:
    """The reports (as last_report() gives them) of the graphs compiled
    last, oldest first, up to 64: a model compiled in several graphs (per
    layer, split by graph breaks or by DDP's buckets) has one per graph."""
    with _reports_lock:
        return list(_reports)


_recorded = 0  # reports recorded in this process


def _record(report: dict[str, Any]) -> None:
    global _recorded
    with _reports_lock:
        _reports.append(report)
        del _reports[:-64]
        _recorded += 1


def _plan_key(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], uuid: str,
              mode: str | None) -> str:
    """What names a compile's reports beside AOTAutograd's cache: the graph
    Dynamo gave, with its placeholders named as that cache names them, its
    inputs' dtypes, devices, sizes and strides (symbols by name), the
    partitioner's uuid() and the compile mode."""
    from torch._functorch._aot_autograd.autograd_cache import sanitize_gm_for_cache

    def meta(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return [str(x.dtype), x.device.type, [str(d) for d in x.shape],
                    [str(d) for d in x.stride()], x.requires_grad]
        return str(x) if isinstance(x, (int, float, bool, torch.SymInt)) else type(x).__name__

    with sanitize_gm_for_cache(gm):
        code = gm.code
    text = json.dumps([code, [meta(x) for x in example_inputs], uuid, mode,
                       _activation_inputs(example_inputs)])
    return hashlib.sha256(text.encode()).hexdigest()


def _compile_keeping_reports(key: str, compile: Callable[[], Any],
                             options: OffloadOptions) -> Any:
    """Runs `compile` (compile_fx with the partitioner). AOTAutograd's cache
    may serve it without running the partitioner; so the reports a compile
    records are kept beside the cache under `key`, and a compile the cache
    serves records them again (marked `cached`), with their warnings and the
    report `options.report` asks for."""
    from torch._dynamo.utils import counters
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    path = os.path.join(cache_dir(), "offload_mlir", key + ".json")
    hits, first = counters["aot_autograd"]["autograd_cache_hit"], _recorded
    compiled = compile()
    if counters["aot_autograd"]["autograd_cache_hit"] == hits:
        with _reports_lock:
            new = _reports[len(_reports) - min(_recorded - first, len(_reports)):]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(new, f)
        os.replace(tmp, path)
        return compiled
    try:
        with open(path) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        return compiled
    for report in kept:
        report = dict(report, cached=True)
        _record(report)
        _warn_for(report)
        if report.get("emitted"):
            _write_report(report["emitted"], options)
    return compiled


@functools.lru_cache(maxsize=None)
def _source_hash() -> str:
    # Inductor asks for uuid() at every compile and cache lookup; the sources
    # do not change within a process.
    h = hashlib.sha256(__version__.encode())
    here = os.path.dirname(__file__)
    for name in ("bridge.py", "rebuild.py", "ir_plan.py", "fx_export.py", "ops.py",
                 "pin_order.py", "mlir_text.py", "replan.py"):
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    # backend() has loaded both libraries before any partitioner exists:
    # the pipeline's (which makes the plan) and the copy ops'.
    for path in (capi.library_path(), ops.load_library()):
        h.update(_file_hash(path).encode())
    return h.hexdigest()


try:
    from torch._inductor.custom_graph_pass import CustomPartitionerFn
except ImportError:  # pragma: no cover - torch older than 2.11
    CustomPartitionerFn = object  # type: ignore[misc,assignment]


class OffloadPartitioner(CustomPartitionerFn):
    """Inductor's min-cut partition, then the offload pipeline on its result."""

    def __init__(self, options: OffloadOptions,
                 planned_at: tuple[tuple[str, int], ...] = ()):
        self.options = options
        # The size hints of a graph with dynamic shapes (replan.input_hints):
        # its plan is made at them, so a compile of the same graph at other
        # hints (a re-plan, or Dynamo's first call at another length) is
        # another plan, with cache entries of its own.
        self.planned_at = planned_at

    def uuid(self) -> Any:
        # Any change of options or of the project's code is a new plan.
        # The profile's content counts too: editing it changes the plan.
        profile = self.options.resolved_device_profile()
        variant = f"planned_at={self.planned_at}" if self.planned_at else ""
        return hashlib.sha256(
            (repr(self.options) + str(profile) + _file_hash(profile)
             + _source_hash() + variant).encode()
        ).hexdigest()

    def __call__(self, gm, joint_inputs, **kwargs):
        from torch._functorch.partitioners import min_cut_rematerialization_partition

        patch = dict(self.options.partitioner_config)
        if self.options.recompute_budget is not None:
            patch["activation_memory_budget"] = float(self.options.recompute_budget)

        from .fx_export import DONATED_META

        donated = _donated_primals(joint_inputs) if self.options.donate_activations else set()

        def partition():
            with torch._functorch.config.patch(patch):
                fw, bw = min_cut_rematerialization_partition(gm, joint_inputs, **kwargs)
            for node in fw.graph.find_nodes(op="placeholder"):
                if node.name in donated:
                    node.meta[DONATED_META] = True
            return fw, bw

        fw, bw = partition()
        num_fwd_outputs = int(kwargs["num_fwd_outputs"])
        options = self.options
        if options.drop_peak_neutral is None and options.plan == "hidden":
            options = dataclasses.replace(options,
                                          drop_peak_neutral=computes_the_loss(joint_inputs))
        try:
            new_fw, new_bw, report = transform_step(fw, bw, num_fwd_outputs, options)
            recomputed = planned_recomputes(report)
            if recomputed:
                # The plan recomputes saved values: the partitioner carries
                # that out (it places and fuses recomputation as it does its
                # own), then the copies are planned on its partition.
                tag_must_recompute(gm, recomputed)
                fw, bw = partition()
                first = report
                new_fw, new_bw, report = transform_step(
                    fw, bw, num_fwd_outputs, options.after_recompute(first))
                report["recomputed"] = recomputed
                report["joint_plan"] = first["pipeline"]
        except _Fallback as e:
            report = {"fallback": str(e), "offloaded": []}
            _record(report)
            _warn_for(report)
            return fw, bw
        report["drop_peak_neutral"] = bool(options.drop_peak_neutral)
        if not report["offloaded"] and not report.get("recomputed"):
            report["nothing_offloaded"] = _nothing_offloaded(fw, report, options)
        _record(report)
        _warn_for(report)
        return new_fw, new_bw


class _Fallback(Exception):
    pass


# The reason offload-plan gives a value drop-peak-neutral keeps on the device.
PEAK_NEUTRAL_REASON = "plan: offloading it does not lower the predicted peak"


def computes_the_loss(joint_inputs: Sequence[Any]) -> bool:
    """Whether a joint graph's forward computes the training step's loss:
    its one differentiable output, so its one tangent, is a scalar. Backward
    then starts from that output alone, right after this forward."""
    if len(joint_inputs) != 2:
        return False
    tangents = list(joint_inputs[1])
    return (len(tangents) == 1 and isinstance(tangents[0], torch.Tensor)
            and tangents[0].dim() == 0)


# The indices of the graph inputs the compiling backend found to be
# activations (compile_inductor, compile_aot_eager), for the partitioner the
# same compile calls.
_donated_inputs: contextvars.ContextVar[tuple[tuple[int, ...], tuple[Any, ...]]] = \
    contextvars.ContextVar("offload_mlir_donated_inputs", default=((), ()))


def _activation_inputs(example_inputs: Sequence[Any]) -> tuple[int, ...]:
    """The graph inputs that are activations: tensors autograd made before
    this graph (not leaves, so neither parameters nor the user's batch)."""
    return tuple(i for i, x in enumerate(example_inputs)
                 if isinstance(x, torch.Tensor) and not isinstance(x, torch.nn.Parameter)
                 and getattr(x, "grad_fn", None) is not None)


def _shapes(values: Sequence[Any]) -> tuple[tuple[int, ...] | None, ...]:
    return tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in values)


@contextlib.contextmanager
def _donating(example_inputs: Sequence[Any]):
    shapes = _shapes(example_inputs)
    token = _donated_inputs.set((_activation_inputs(example_inputs), shapes))
    try:
        yield
    finally:
        _donated_inputs.reset(token)


def _donated_primals(joint_inputs: Sequence[Any]) -> set[str]:
    """The names of the joint graph's primal placeholders ("primals_3") that
    are donated activations. AOTAutograd's primals are Dynamo's inputs in
    order unless it deduplicated or merged inputs; then nothing is donated."""
    indices, shapes = _donated_inputs.get()
    primals = joint_inputs[0] if joint_inputs else ()
    if not indices or _shapes(primals) != shapes:
        return set()
    return {f"primals_{i + 1}" for i in indices}


class NothingOffloadedWarning(UserWarning):
    """A graph compiled with offloading on moved nothing; the message says why."""


class SavedInstancesWarning(UserWarning):
    """A graph ran more times before its backward than its plan assumed
    (`saved_instances`); the message says how many."""


class _Instances:
    """Counts the forwards of one compiled graph whose backward has not
    reached them yet: the calls of a graph shared by a model's identical
    layers under per-layer compilation, whose saved values are on the device
    together. The first time backward reaches the graph after more calls
    than `saved_instances`, it warns once (SavedInstancesWarning): planned
    as that many instances, the graph would keep less through forward."""

    def __init__(self, saved_instances: int):
        self.saved_instances = saved_instances
        self.live = 0
        self.most = 0
        self.said = False

    def saw(self, outputs: Any) -> None:
        if self.said or not torch.is_grad_enabled():
            return
        items = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
        first = next((o for o in items if isinstance(o, torch.Tensor) and o.requires_grad),
                     None)
        if first is None:
            return
        self.live += 1
        self.most = max(self.most, self.live)
        first.register_hook(self._reached)

    def _reached(self, grad: Any) -> None:
        self.live = max(0, self.live - 1)
        if self.said or self.most <= self.saved_instances:
            return
        self.said = True
        warnings.warn(
            f"offload_mlir: a compiled graph ran {self.most} times before backward reached it "
            f"(the identical layers of a model compiled per layer share one graph), and its "
            f"saved values were on the device together; it was planned as "
            f"{self.saved_instances}. backend(saved_instances={self.most}) plans it as "
            f"{self.most}, which keeps less through forward "
            "(docs/training-recipes.md#per-layer-regional-compilation).",
            SavedInstancesWarning, stacklevel=2)


def _counting_instances(compiled: Callable, saved_instances: int) -> Callable:
    """`compiled`, counting its live forwards (_Instances). Dynamo calls
    what a backend returns with the inputs as arguments."""
    import functools

    instances = _Instances(saved_instances)

    @functools.wraps(compiled)
    def run(*args: Any) -> Any:
        outputs = compiled(*args)
        instances.saw(outputs)
        return outputs
    return run


_said_nothing_offloaded = False


def _warn_for(report: dict[str, Any]) -> None:
    """The warnings a compile's report calls for: the fallback's reason
    (BridgeWarning), or, once per process, why nothing was offloaded."""
    global _said_nothing_offloaded
    if report.get("fallback"):
        warnings.warn(f"offload_mlir: compiling this graph without offloading: "
                      f"{report['fallback']}", BridgeWarning, stacklevel=3)
    elif report.get("nothing_offloaded") and not _said_nothing_offloaded:
        _said_nothing_offloaded = True
        warnings.warn(report["nothing_offloaded"], NothingOffloadedWarning, stacklevel=3)


def _nothing_offloaded(fw: torch.fx.GraphModule, report: dict[str, Any],
                       options: OffloadOptions) -> str:
    """Why a graph offloads nothing: the device it runs on, the profile it
    was planned with, and what kept each saved value (too small, an input or
    parameter, the plan)."""
    saved = [v for step in report.get("pipeline", {}).get("steps", [])
             for v in step.get("saved", [])]
    kinds: dict[str, int] = {}
    for value in saved:
        why = value.get("kept_reason", "")
        kind = ("smaller than min_bytes" if why.startswith("below min-bytes")
                else "graph inputs or parameters" if why == "function argument"
                else "kept by the plan (" + why.removeprefix("plan: ") + ")"
                if why.startswith("plan: ") else "kept: " + (why or "not selected"))
        kinds[kind] = kinds.get(kind, 0) + 1
    if not saved:
        why = "the graph saves nothing for backward"
    else:
        why = "of its {} saved values, {}".format(
            len(saved), ", ".join(f"{n} {kind}" for kind, n in kinds.items()))
    devices = {v.device.type for n in fw.graph.nodes if n.op == "placeholder"
               for v in [n.meta.get("val")] if isinstance(v, torch.Tensor)}
    if "cuda" not in devices:
        where = (f"It runs on {', '.join(sorted(devices)) or 'no device'}: offloading frees "
                 "GPU memory, and the plan models a GPU (the built-in H100 PCIe defaults).")
    elif options.resolved_device_profile() is None:
        where = (f"No device profile was measured on {torch.cuda.get_device_name()}: the plan "
                 "models an H100 PCIe (python -m offload_mlir.calibrate measures one).")
    else:
        where = f"Planned with {options.resolved_device_profile()}."
    neutral = (" drop_peak_neutral=False offloads what the link hides even where the "
               "predicted peak is not lowered (the peak is then not set by activations)."
               if any(v.get("kept_reason") == PEAK_NEUTRAL_REASON for v in saved) else "")
    return (f"offload_mlir: nothing was offloaded from this graph ({why}). {where} "
            "backend(report='text') shows the plan value by value; plan='all' offloads every "
            f"saved value of min_bytes ({options.min_bytes} bytes) or more.{neutral}")


def planned_recomputes(report: dict[str, Any]) -> dict[str, list[str]]:
    """The saved values the pipeline's plan recomputes, each with the forward
    FX nodes its recomputation repeats (from the report)."""
    planned: dict[str, list[str]] = {}
    for step in report.get("pipeline", {}).get("steps", []):
        for entry in step.get("recomputed", []):
            if entry.get("planned"):
                planned[entry["node"]] = list(entry.get("forward_nodes", []))
    return planned


def tag_must_recompute(joint: torch.fx.GraphModule, recomputed: Mapping[str, list[str]]) -> None:
    """Marks the forward nodes of `recomputed` in the joint graph as
    checkpointing's MUST_RECOMPUTE, so that the min-cut partitioner computes
    them again in backward (as torch.utils.checkpoint's policies do). Views
    stay untagged: the partitioner recomputes views on its own."""
    from torch.utils.checkpoint import CheckpointPolicy

    names = {n for nodes in recomputed.values() for n in nodes}
    by_name = {n.name: n for n in joint.graph.nodes}
    missing = sorted(names - set(by_name))
    if missing:
        raise _Fallback(f"recomputed nodes {missing[:5]} are not in the joint graph")
    for name in names:
        by_name[name].meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE


class RecomputeTagPartitioner(CustomPartitionerFn):
    """Inductor's min-cut partition with the forward nodes `recomputed`
    names (as planned_recomputes gives them) tagged must-recompute, and no
    offloading: plain Inductor carrying out the same recompute decisions, the
    reference a joint plan's gradients are compared with."""

    def __init__(self, recomputed: Mapping[str, list[str]]):
        self.recomputed = {k: list(v) for k, v in recomputed.items()}

    def uuid(self) -> Any:
        return hashlib.sha256(json.dumps(self.recomputed, sort_keys=True).encode()).hexdigest()

    def __call__(self, gm, joint_inputs, **kwargs):
        from torch._functorch.partitioners import min_cut_rematerialization_partition

        tag_must_recompute(gm, self.recomputed)
        return min_cut_rematerialization_partition(gm, joint_inputs, **kwargs)


def recompute_reference_backend(recomputed: Mapping[str, list[str]]) -> Callable:
    """A torch.compile backend: plain Inductor with RecomputeTagPartitioner."""
    partitioner = RecomputeTagPartitioner(recomputed)

    def compile_reference(gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        with torch._functorch.config.patch(enable_autograd_cache=False):
            return compile_fx(gm, example_inputs,
                              config_patches={"custom_partitioner_fn": partitioner})

    return compile_reference


def _check_supported(fw, bw) -> None:
    from .fx_export import rng_hop_name, unsupported_rng_call

    for gm in (fw, bw):
        for n in gm.graph.nodes:
            if n.op == "call_function" and isinstance(n.target, torch._ops.HigherOrderOperator):
                # The partitioner wraps a random op it recomputes (in a
                # checkpointed region) in an rng higher-order op; those the
                # exporter carries. Any other is control flow or a subgraph.
                if rng_hop_name(n) is None:
                    raise _Fallback(f"{n.name} calls {n.target.name()}, a higher-order op "
                                    "(control flow or a subgraph; of the higher-order ops "
                                    "only the rng ops of activation checkpointing are "
                                    "supported)")
                reason = unsupported_rng_call(n)
                if reason is not None:
                    raise _Fallback(f"{n.name}: {reason}")
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) \
                    and n.target._schema.is_mutable:
                # AOTAutograd writes mutated graph inputs (BatchNorm's running
                # statistics, say) back with copy_ into the placeholder; those
                # are parameters or inputs, never offloaded. A write into an
                # intermediate could be a write into a saved value.
                for written in _written_args(n):
                    if not (isinstance(written, torch.fx.Node) and written.op == "placeholder"):
                        raise _Fallback(
                            f"{n.name} ({n.target}) writes into an intermediate tensor"
                        )


def _written_args(node: torch.fx.Node) -> list[Any]:
    schema = node.target._schema
    written = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        if i < len(node.args):
            written.append(node.args[i])
        elif arg.name in node.kwargs:
            written.append(node.kwargs[arg.name])
    return written


def transform_step(fw, bw, num_fwd_outputs: int, options: OffloadOptions):
    """The rebuilt forward and backward graphs and the pipeline's report; no
    graphs (None, None) where the plan recomputes saved values."""
    from .fx_export import ExportError, TracedStep, emit_mlir, size_hints

    _check_supported(fw, bw)
    # A graph with dynamic shapes is planned at its size hints (the sizes
    # it was traced with, as Inductor autotunes); the rebuilt graphs keep
    # the symbols, so they run at every size their guards admit.
    hints = size_hints(fw)
    try:
        ir = emit_mlir(TracedStep(fw, bw, num_fwd_outputs), header=[
            "planned at size hints: " + ", ".join(f"{k}={v}" for k, v in hints.items())
        ] if hints else ())
    except ExportError as e:
        raise _Fallback(f"the exporter cannot express the graph: {e}") from None
    _dump_ir(ir)
    try:
        result = capi.run_pipeline(ir, options.pipeline_options("json"))
    except capi.PipelineError as e:
        raise _Fallback(f"the pipeline rejected the graph: {e}") from None
    report = json.loads(result.report) if result.report.strip() else {}
    if options.recompute and planned_recomputes({"pipeline": report}):
        # The partitioner carries out the recomputation (OffloadPartitioner);
        # this IR's graphs are not rebuilt.
        return None, None, {"pipeline": report, "offloaded": [], "fallback": None,
                            "size_hints": hints}
    try:
        functions = read_step(result.ir)
        new_fw, new_bw, offloaded = rebuild_step(
            fw, bw, functions, num_fwd_outputs,
            inductor_layouts=options.compiler == "inductor")
    except (PlanReadError, RebuildError) as e:
        raise _Fallback(f"cannot rebuild the FX graphs from the IR: {e}") from None
    return new_fw, new_bw, {"pipeline": report, "offloaded": offloaded, "fallback": None,
                            "size_hints": hints, "emitted": _emit_report(ir, options)}


def _dump_ir(ir: str) -> None:
    """Writes the exported IR of each graph into $OFFLOAD_MLIR_DUMP_DIR, if
    set, to replay the pipeline on it with offload-opt."""
    directory = os.environ.get("OFFLOAD_MLIR_DUMP_DIR")
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    index = len([n for n in os.listdir(directory) if n.startswith("step-")])
    with open(os.path.join(directory, f"step-{index}.mlir"), "w") as f:
        f.write(ir)


def _emit_report(ir: str, options: OffloadOptions) -> str | None:
    """Writes the pipeline's report where `options.report` says and returns
    it, so a compile AOTAutograd's cache serves can write it again."""
    if options.report is None:
        return None
    fmt = options.report if options.report in ("text", "json") else "text"
    text = capi.run_pipeline(ir, options.pipeline_options(fmt)).report
    _write_report(text, options)
    return text


def _write_report(text: str, options: OffloadOptions) -> None:
    if options.report in ("text", "json"):
        sys.stdout.write(text)
        sys.stdout.flush()
    elif options.report is not None:
        with open(options.report, "a") as f:
            f.write(text)


# Inductor's peak-memory reordering runs after fusion and would move each
# copy as far as its data dependencies allow: offload starts sink to their
# waits, loads rise to the start of backward. The IR's order is the plan, so
# it is kept. Since the pass runs after fusion, turning it off changes which
# kernels run in which order, never what they compute. Fusion itself can
# still pull a window's matmuls above its copy's start; the post-grad pass
# pin_order.PinCopyOrder (installed by backend()) keeps them after it.
INDUCTOR_PATCHES = {"reorder_for_peak_memory": False}
# Inductor settings the backend applies unless its options say otherwise.
# allow_buffer_reuse: Inductor's code keeps a buffer it frees for its next
# allocation of the same size and dtype wherever its own estimate of the
# graph's peak allows, and that estimate does not know which memory the plan
# frees, so the held buffers can raise the peak above the plan's. Off, each
# buffer goes back to PyTorch's caching allocator at its last use, as the
# cost model assumes, at the same step time (docs/benchmarks/peers/README.md).
DEFAULT_INDUCTOR_CONFIG = {"allow_buffer_reuse": False}
# What the backend sets in Inductor's config itself; inductor_config may not.
_BRIDGE_INDUCTOR_SETTINGS = frozenset(INDUCTOR_PATCHES) | {
    "custom_partitioner_fn", "post_grad_custom_post_pass"}


def _check_settings(option: str, config: Any, settings: tuple[tuple[str, Any], ...],
                    set_here: frozenset[str] = frozenset()) -> None:
    """Each (name, value) of `settings` names a public setting of the torch
    config module `config`, not one of `set_here`, with a value of its type."""
    for name, value in settings:
        if not hasattr(config, name) or name.startswith("_"):
            raise ValueError(f"{option}: {config.__name__} has no {name!r}")
        if name in set_here:
            raise ValueError(f"{option}: {name} is set by offload_mlir's backend")
        current = getattr(config, name)
        kind = (int, float) if type(current) is float else type(current)
        if current is not None and (not isinstance(value, kind)
                                    or isinstance(value, bool) != isinstance(current, bool)):
            raise ValueError(f"{option}: {name} takes a "
                             f"{type(current).__name__}, not {value!r}")


def _aot_eager(partitioner: OffloadPartitioner) -> Callable:
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.debugging import boxed_nop

    def partition_fn(gm, joint_inputs, **kwargs):
        return partitioner(gm, joint_inputs, **kwargs)

    inner = aot_autograd(
        fw_compiler=boxed_nop,
        bw_compiler=boxed_nop,
        partition_fn=partition_fn,
        keep_inference_input_mutations=True,
    )

    def compile_aot_eager(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                          mode: str | None = None, options: Mapping[str, Any] | None = None):
        if mode not in (None, "default") or options:
            raise TypeError("offload_mlir.backend(compiler='aot_eager') takes no "
                            "torch.compile mode= or options= (they configure Inductor)")
        # AOTAutograd's on-disk cache does not key on partition_fn: a graph
        # compiled before by plain aot_eager (in any process) would be served
        # untransformed.
        with torch._functorch.config.patch(enable_autograd_cache=False), \
                _donating(example_inputs):
            return inner(gm, example_inputs)

    return compile_aot_eager


def backend(
    *,
    min_bytes: int = OffloadOptions.min_bytes,
    plan: str | None = None,
    budget: Any = None,
    schedule: bool = True,
    device_profile: str | None = None,
    report: str | None = None,
    max_inflight_bytes: str | None = None,
    compiler: str = "inductor",
    recompute_budget: float | None = None,
    load_lead: float | None = None,
    partitioner_config: Mapping[str, Any] | None = None,
    reuse_freed_buffers: bool = False,
    inductor_config: Mapping[str, Any] | None = None,
    recompute: bool = True,
    prefetch: bool = False,
    donate_activations: bool = False,
    saved_instances: int = 1,
    max_recompute: float = OffloadOptions.max_recompute,
    replan_far_from_hint: int = 0,
    drop_peak_neutral: bool | None = None,
) -> Callable:
    """A `torch.compile` backend that offloads activations.

    Options have the pipeline's names and meanings (docs/torch-bridge.md),
    and each is checked here, by type and value: `min_bytes`, `plan` ("all",
    "hidden", the default, or "budget", which `budget=` implies), `budget` (bytes, a
    string like "20GiB", or a fraction of the predicted peak), `schedule`,
    `device_profile` (a JSON profile; default: the H100 one), `report`
    (None, "text", "json", or a file path to append to),
    `max_inflight_bytes`, `compiler` ("inductor", or "aot_eager" for
    debugging: the same partitioner with no code generation), and
    `recompute_budget` (Inductor's `activation_memory_budget` for these
    graphs: recompute in backward what the partitioner chooses, then
    offload from what it saves; the report lists the recomputed ops and
    their predicted time), and `load_lead` (the pipeline's `load-lead`:
    start each load this fraction of its copy time earlier than the model
    needs, where memory allows; default 5%), and `partitioner_config`
    (other `torch._functorch.config` settings, by name, for these graphs'
    partitioner, such as `{"ban_recompute_materialized_backward": False}`),
    and `reuse_freed_buffers` (let Inductor's code keep the buffers it
    frees for reuse, which the backend turns off by default, and plan with
    them: the pipeline's `reuse-freed-buffers`), and `inductor_config`
    (`torch._inductor.config` settings, by name, for these graphs' code,
    over the backend's defaults `DEFAULT_INDUCTOR_CONFIG`), and `recompute`
    (the planner may compute cheap saved values again in backward instead of
    saving or offloading them; the partitioner carries that out through
    checkpointing's must-recompute tags, and `last_report()["recomputed"]`
    names them), and `prefetch` (for a model compiled as several graphs, per
    layer say: each graph's first loads start during the backward graph that
    runs before it, over a lead and within memory the pipeline plans;
    `last_report()["pipeline"]["steps"][0]["prefetch"]` gives them), and
    `donate_activations` (True: graph inputs that autograd made before the
    graph, such as the layer before's output under per-layer compilation,
    may be offloaded like intermediates, for code that drops them once the
    graph has run; by default every input stays), and `saved_instances`
    (a graph that runs this many times before its backward graphs, as the
    one graph of a model's identical layers compiled per layer: pass the
    number of layers; the plan counts the saved values it keeps on the
    device that many times, which is what they hold when forward ends, and
    so recomputes or offloads what a plan of one layer alone would keep),
    and `max_recompute` (plan="hidden": the step time recomputation and
    copies together may add, a fraction of the step as it came; default 1%),
    and `drop_peak_neutral` (plan="hidden": keep on the device each offload
    the predicted peak does not need; None, the default: for a graph whose
    forward computes the loss, its one differentiable output a scalar, where
    such a copy lowers no peak of the step), and `replan_far_from_hint`
    (for a graph with dynamic shapes, planned at its size hints: the most times it is compiled again, planned at the
    sizes of a call FAR_FROM_HINT (4x) or more from every plan's hints; each
    call then runs on the plan whose hints are nearest its sizes, among
    those whose shape guards admit it. Each re-plan warns
    (PlanFarFromHintWarning), as does the first far call once the bound is
    spent; 0, the default, never re-plans and warns once).
    """
    if plan is None:
        plan = "budget" if budget is not None else OffloadOptions.plan
    options = OffloadOptions(
        min_bytes=min_bytes, plan=plan,
        budget=budget, schedule=schedule, device_profile=device_profile,
        report=report, max_inflight_bytes=max_inflight_bytes, compiler=compiler,
        recompute_budget=recompute_budget, load_lead=load_lead,
        partitioner_config=tuple(sorted((partitioner_config or {}).items())),
        reuse_freed_buffers=reuse_freed_buffers,
        inductor_config=tuple(sorted((inductor_config or {}).items())),
        recompute=recompute, prefetch=prefetch, donate_activations=donate_activations,
        saved_instances=saved_instances, max_recompute=max_recompute,
        replan_far_from_hint=replan_far_from_hint, drop_peak_neutral=drop_peak_neutral,
    )
    ops.load_library()
    capi.version()  # fail now, not inside a compile, if the library is missing
    partitioner = OffloadPartitioner(options)

    if compiler == "aot_eager":
        return _aot_eager(partitioner)

    def compile_inductor(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                         mode: str | None = None, options: Mapping[str, Any] | None = None):
        from torch._inductor.compile_fx import compile_fx

        if options:
            raise TypeError("torch.compile(options=...) with offload_mlir.backend(...): pass "
                            "the options to offload_mlir.backend(...) itself, or use "
                            "backend=\"offload_mlir\" with options={...}")
        # compile_fx applies config_patches to the backward's compile too,
        # which AOTAutograd runs later, outside this call. AOTAutograd's
        # cache keys on the Inductor configuration, and with it on the
        # partitioner's and the post-grad pass's uuid() (the options, the
        # device profile, the bridge's sources and libraries): a hit serves
        # the graphs as rebuilt, copies included, without partitioning again,
        # and the bridge gives the reports and warnings it kept of that
        # compile (_compile_keeping_reports).
        patches = INDUCTOR_PATCHES | mode_inductor_config(mode) \
            | compile_inductor.options.resolved_inductor_config() | {
                "custom_partitioner_fn": partitioner,
                "post_grad_custom_post_pass": installed_pass(torch._inductor.config),
            }
        if os.environ.get("OFFLOAD_MLIR_DUMP_DIR"):
            # Every graph is exported and planned again, to be dumped.
            with torch._functorch.config.patch(enable_autograd_cache=False), \
                    _donating(example_inputs):
                return compile_fx(gm, example_inputs, config_patches=patches)

        def planned(inputs: Sequence[Any], partitioner: OffloadPartitioner) -> Callable:
            key = _plan_key(gm, inputs, partitioner.uuid(), mode)

            def compile():
                with _donating(inputs):
                    return compile_fx(gm, inputs, config_patches=patches
                                      | {"custom_partitioner_fn": partitioner})
            return _compile_keeping_reports(key, compile, compile_inductor.options)

        dims = symbolic_input_dims(gm)
        fakes = [p.meta.get("example_value") for p in gm.graph.find_nodes(op="placeholder")]
        compiled = planned(example_inputs,
                           OffloadPartitioner(partitioner.options, input_hints(fakes)))
        saved_instances = compile_inductor.options.saved_instances
        if not dims:
            return _counting_instances(compiled, saved_instances)
        limit = compile_inductor.options.replan_far_from_hint

        def replan(args: Sequence[Any]):
            # The same graph, traced again at the sizes of `args` in a
            # ShapeEnv of its own, as Dynamo recompiles a graph it
            # specializes (OutputGraph's specialized_dispatch).
            from torch._dynamo.utils import preserve_rng_state

            at = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
            try:
                made = fake_inputs_at(gm, args)
                if made is None:
                    return None
                inputs, shape_env = made
                dynamo_env = dynamo_shape_env(gm)
                before = guards_on(dynamo_env)
                with preserve_rng_state():
                    variant = planned(inputs, OffloadPartitioner(partitioner.options,
                                                                 input_hints(inputs)))
                if guards_on(dynamo_env) != before:
                    # Something read Dynamo's fake values and decided on
                    # them: no guard of the re-plan's own checks that.
                    raise RuntimeError("the compile added guards to Dynamo's ShapeEnv")
                return variant, admitted_by(shape_env, inputs)
            except Exception as e:  # the first plan still runs every call
                warnings.warn(f"offload_mlir: planning this graph again at {at} failed, it "
                              f"runs on the plans it has: {type(e).__name__}: {e}",
                              BridgeWarning, stacklevel=2)
                return None
        return _counting_instances(HintDispatch(compiled, dims, replan if limit else None,
                                                limit), saved_instances)

    compile_inductor.options = options  # type: ignore[attr-defined]
    return compile_inductor


def mode_inductor_config(mode: str | None) -> dict[str, Any]:
    """The Inductor settings of torch.compile's `mode=` ("default",
    "max-autotune-no-cudagraphs", ...). Modes that capture CUDA graphs
    ("reduce-overhead", "max-autotune") are refused: the copy ops synchronize
    with the host and allocate pinned memory, which a CUDA graph cannot
    replay."""
    if mode is None or mode == "default":
        return {}
    from torch._inductor import list_mode_options

    known = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
    if mode not in known:
        raise ValueError(f"mode={mode!r}: torch.compile's modes are {', '.join(known)}")
    settings = dict(list_mode_options(mode))
    if settings.pop("triton.cudagraphs", False):
        raise ValueError(f"mode={mode!r} captures CUDA graphs, which offload_mlir's copies "
                         "cannot run in; use mode='max-autotune-no-cudagraphs' or the default")
    return settings


_registered: dict[str, Callable] = {}


def registered_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                       mode: str | None = None, options: Mapping[str, Any] | None = None):
    """The backend PyTorch finds by name (the `torch_dynamo_backends` entry
    point): `torch.compile(model, backend="offload_mlir", options={...})`,
    where `options` holds the keyword arguments of `backend()`."""
    import inspect

    options = dict(options or {})
    known = set(inspect.signature(backend).parameters)
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"offload_mlir: unknown option(s) {', '.join(unknown)}; "
                        f"backend() takes {', '.join(sorted(known))}")
    key = repr(sorted(options.items()))
    if key not in _registered:
        _registered[key] = backend(**options)
    return _registered[key](gm, example_inputs, mode=mode)
