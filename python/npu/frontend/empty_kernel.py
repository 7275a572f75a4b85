"""A compiled model some of whose values the host knows (`onnx_empty`):
the caller passes every input and gets every output, in the model's order;
the device program (if any is left) takes the inputs it reads and computes
the outputs the host does not know."""

from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from npu.frontend.onnx_empty import EmptyPlan


@dataclass
class HostValuesKernel:
    """`Kernel`'s call interface over an `EmptyPlan` and the device part's
    kernel (None: the model has no device work)."""
    plan: EmptyPlan
    device: object | None
    target: object
    stages: dict[str, str] = field(default_factory=dict)

    @property
    def interface(self):
        """The caller's side of the interface: every input, as `Port`s of
        their numpy type (npu-run makes random inputs from them); `roles`
        are the device program's."""
        from types import SimpleNamespace

        ports = [_Port(n, shape, dt) for n, shape, dt in self.plan.inputs]
        roles = self.device.interface.roles if self.device is not None else []
        return SimpleNamespace(inputs=ports, roles=roles)

    @property
    def input_names(self) -> list[str]:
        return [n for n, _, _ in self.plan.inputs]

    @property
    def output_names(self) -> list[str]:
        return list(self.plan.outputs)

    def __call__(self, *arrays: np.ndarray, strict: bool = True, numerics: bool = True):
        if len(arrays) != len(self.plan.inputs):
            raise ValueError(f"the kernel takes {len(self.plan.inputs)} inputs "
                             f"({', '.join(self.input_names)}), got {len(arrays)}")
        device_inputs = []
        for (name, shape, _), a in zip(self.plan.inputs, arrays):
            a = np.asarray(a)
            if tuple(a.shape) != shape:
                raise ValueError(f"input '{name}' must have shape {list(shape)}, got {list(a.shape)}")
            if name not in self.plan.host_inputs:
                device_inputs.append(a)
        if self.device is not None:
            computed, report = self.device(*device_inputs, strict=strict)
        else:
            computed, report = [], no_device_report(self.target)
        it = iter(computed)
        outputs = [self.plan.host_outputs[n].copy() if n in self.plan.host_outputs else next(it)
                   for n in self.plan.outputs]
        return outputs, report


@dataclass
class _Port:
    """An input as the caller passes it (the fields npu-run reads of `compile.Port`)."""
    name: str
    shape: tuple[int, ...]
    numpy_dtype: np.dtype

    @property
    def dtype(self) -> str:
        return "f" if self.numpy_dtype.kind == "f" else "i"

    @property
    def boolean(self) -> bool:
        return self.numpy_dtype == np.bool_


def no_device_report(target) -> dict:
    """The report of a model with nothing to run on the device: a program
    with no work (the simulator's report fields, all zero)."""
    return {"target": getattr(target, "name", str(target)), "entry": "-", "cycles": 0,
            "bound_cycles": 0, "instructions": 0, "pipes": {}, "bytes": {}, "peak_bytes": {}, "hazards": [],
            "per_op": [], "per_op_bound_cycles": 0, "trace": lambda: {"traceEvents": []},
            "html": lambda: ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                             "<title>npu-run: no device work</title></head><body><p>No device "
                             "work: every output is known on the host.</p></body></html>\n"),
            "note": "no device work: every output is known on the host (zero-size tensors)"}


def wrap(plan: EmptyPlan | None, device, target, stages: dict | None = None):
    """`device` itself when nothing is known on the host, else the wrapper."""
    if plan is None:
        return device
    if device is None:  # no program: every stage is empty text
        return HostValuesKernel(plan, None, target, {k: "" for k in ("linalg", "ascend", "lowered")})
    return HostValuesKernel(plan, device, target, dict(stages or device.stages))
