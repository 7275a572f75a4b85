"""ResNet-18/50 and MobileNetV2 as ONNX models built with onnx.helper (random
weights), in the structure torchvision's TorchScript exporter writes at opset
17: node names `/layer1/layer1.0/conv1/Conv`, weights `layer1.0.conv1.weight`,
ReLU6 as `Clip` with min/max inputs, the head GlobalAveragePool -> Flatten
-> Gemm (transB = 1). BatchNormalization nodes are kept (`batchnorm=True`)
as an eval-mode export without the exporter's conv-bn fusion has them (the
compiler folds them, `onnx_batchnorm`); `batchnorm=False` folds them here,
as torch.onnx does. Input size, width and classes are parameters, so tests
can build tiny ones. Used by bench/cnn.py and the CNN tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

RESNET_LAYERS = {18: ("basic", [2, 2, 2, 2]), 34: ("basic", [3, 4, 6, 3]),
                 50: ("bottleneck", [3, 4, 6, 3]), 101: ("bottleneck", [3, 4, 23, 3])}
# MobileNetV2's inverted residual settings: expansion t, channels c, repeats n, stride s.
MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]


@dataclass
class _Graph:
    """Nodes and initializers being built, with a random generator."""
    rng: np.random.Generator
    dtype: type
    batchnorm: bool
    nodes: list = field(default_factory=list)
    inits: dict = field(default_factory=dict)

    def node(self, op: str, inputs: list[str], name: str, **attrs) -> str:
        from onnx import helper

        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def weight(self, name: str, array: np.ndarray) -> str:
        self.inits[name] = array.astype(self.dtype)
        return name

    def conv_bn(self, x: str, conv: str, bn: str, cin: int, cout: int, k: int, stride: int = 1,
                groups: int = 1) -> str:
        """Conv (no bias) + BatchNormalization at module paths `conv` / `bn`,
        or the two folded into a biased Conv when `batchnorm` is off."""
        fan_in = cin // groups * k * k
        w = self.rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2.0 / fan_in)
        stats = {"weight": self.rng.uniform(0.5, 1.0, cout), "bias": self.rng.standard_normal(cout) * 0.1,
                 "running_mean": self.rng.standard_normal(cout) * 0.1,
                 "running_var": self.rng.uniform(0.5, 1.5, cout)}
        attrs = dict(dilations=[1, 1], group=groups, kernel_shape=[k, k], pads=[k // 2] * 4,
                     strides=[stride, stride])
        if not self.batchnorm:
            a = stats["weight"] / np.sqrt(stats["running_var"] + 1e-5)
            bias = stats["bias"] - stats["running_mean"] * a
            n = len(self.inits)
            inputs = [x, self.weight(f"onnx::Conv_{n}", w * a[:, None, None, None]),
                      self.weight(f"onnx::Conv_{n + 1}", bias)]
            return self.node("Conv", inputs, f"{scope(conv)}/Conv", **attrs)
        y = self.node("Conv", [x, self.weight(f"{conv}.weight", w)], f"{scope(conv)}/Conv", **attrs)
        names = [self.weight(f"{bn}.{key}", v) for key, v in stats.items()]
        return self.node("BatchNormalization", [y] + names, f"{scope(bn)}/BatchNormalization",
                         epsilon=1e-5, momentum=0.9)

    def relu(self, x: str, path: str) -> str:
        return self.node("Relu", [x], f"{scope(path)}/Relu")

    def relu6(self, x: str, path: str) -> str:
        if "clip_min" not in self.inits:
            self.inits["clip_min"] = np.array(0, self.dtype)
            self.inits["clip_max"] = np.array(6, self.dtype)
        return self.node("Clip", [x, "clip_min", "clip_max"], f"{scope(path)}/Clip")

    def head(self, x: str, channels: int, classes: int, fc: str) -> str:
        pooled = self.node("GlobalAveragePool", [x], "/avgpool/GlobalAveragePool")
        flat = self.node("Flatten", [pooled], "/Flatten", axis=1)
        w = self.rng.standard_normal((classes, channels)) * np.sqrt(1.0 / channels)
        return self.node("Gemm", [flat, self.weight(f"{fc}.weight", w),
                                  self.weight(f"{fc}.bias", self.rng.standard_normal(classes) * 0.01)],
                         f"{scope(fc)}/Gemm", alpha=1.0, beta=1.0, transB=1)

    def model(self, x_shape: list[int], out: str, classes: int, name: str):
        import onnx
        from onnx import helper, numpy_helper

        elem = 10 if self.dtype == np.float16 else 1
        self.nodes[-1].output[0] = "output"
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("input", elem, x_shape)],
            [helper.make_tensor_value_info("output", elem, [x_shape[0], classes])],
            [numpy_helper.from_array(v, k) for k, v in self.inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  ir_version=8, producer_name="npu.frontend.cnn")
        onnx.checker.check_model(model)
        return model


def resnet(depth: int = 18, size: int = 224, width: int = 64, classes: int = 1000, batch: int = 1,
           seed: int = 0, dtype=np.float32, batchnorm: bool = True, layers: list[int] | None = None):
    """torchvision's ResNet-`depth` (18/34: BasicBlock, 50/101: Bottleneck,
    v1.5: stride on the 3x3) with `width` stem channels; `layers` overrides
    the blocks per stage (e.g. [1, 1, 1, 1] for a tiny one)."""
    kind, default_layers = RESNET_LAYERS[depth]
    g = _Graph(np.random.default_rng(seed), dtype, batchnorm)
    x = g.relu(g.conv_bn("input", "conv1", "bn1", 3, width, 7, stride=2), "relu")
    x = g.node("MaxPool", [x], "/maxpool/MaxPool", ceil_mode=0, dilations=[1, 1], kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[2, 2])
    expansion = 4 if kind == "bottleneck" else 1
    cin = width
    for stage, blocks in enumerate(layers or default_layers):
        planes = width * 2 ** stage
        for b in range(blocks):
            stride = 2 if stage > 0 and b == 0 else 1
            x, cin = _block(g, x, f"layer{stage + 1}.{b}", kind, cin, planes, expansion, stride)
    out = g.head(x, cin, classes, "fc")
    return g.model([batch, 3, size, size], out, classes, f"resnet{depth}")


def _block(g: _Graph, x: str, path: str, kind: str, cin: int, planes: int, expansion: int,
           stride: int) -> tuple[str, int]:
    cout = planes * expansion
    if kind == "basic":
        y = g.relu(g.conv_bn(x, f"{path}.conv1", f"{path}.bn1", cin, planes, 3, stride), f"{path}.relu")
        y = g.conv_bn(y, f"{path}.conv2", f"{path}.bn2", planes, planes, 3)
        last = f"{path}.relu_1"
    else:
        y = g.relu(g.conv_bn(x, f"{path}.conv1", f"{path}.bn1", cin, planes, 1), f"{path}.relu")
        y = g.relu(g.conv_bn(y, f"{path}.conv2", f"{path}.bn2", planes, planes, 3, stride),
                   f"{path}.relu_1")
        y = g.conv_bn(y, f"{path}.conv3", f"{path}.bn3", planes, cout, 1)
        last = f"{path}.relu_2"
    if stride != 1 or cin != cout:
        x = g.conv_bn(x, f"{path}.downsample.0", f"{path}.downsample.1", cin, cout, 1, stride)
    y = g.node("Add", [y, x], f"{scope(path)}/Add")
    return g.relu(y, last), cout


def scope(path: str) -> str:
    """The TorchScript exporter's node scope of a module path:
    `layer1.0.conv1` -> `/layer1/layer1.0/conv1` (a Sequential's index joins
    its parent's name)."""
    segments: list[str] = []
    for part in path.split("."):
        segments.append(f"{segments[-1]}.{part}" if part.isdigit() and segments else part)
    return "/" + "/".join(segments)


def make_divisible(value: float, divisor: int = 8) -> int:
    """torchvision's channel rounding (never more than 10% below `value`)."""
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * value else new


def mobilenet_v2(size: int = 224, width_mult: float = 1.0, classes: int = 1000, batch: int = 1,
                 seed: int = 0, dtype=np.float32, batchnorm: bool = True,
                 settings: list[tuple[int, int, int, int]] | None = None):
    """torchvision's MobileNetV2 (inverted residuals, depthwise 3x3, ReLU6);
    `settings` overrides the (t, c, n, s) table for tiny models."""
    g = _Graph(np.random.default_rng(seed), dtype, batchnorm)
    cin = make_divisible(32 * width_mult)
    last = make_divisible(1280 * max(1.0, width_mult))
    x = g.relu6(g.conv_bn("input", "features.0.0", "features.0.1", 3, cin, 3, 2), "features.0.2")
    index = 1
    for t, c, n, s in settings or MOBILENET_V2:
        cout = make_divisible(c * width_mult)
        for i in range(n):
            x = _inverted_residual(g, x, f"features.{index}", cin, cout, s if i == 0 else 1, t)
            cin = cout
            index += 1
    path = f"features.{index}"
    x = g.relu6(g.conv_bn(x, f"{path}.0", f"{path}.1", cin, last, 1), f"{path}.2")
    out = g.head(x, last, classes, "classifier.1")
    return g.model([batch, 3, size, size], out, classes, "mobilenet_v2")


def _inverted_residual(g: _Graph, x: str, path: str, cin: int, cout: int, stride: int, t: int) -> str:
    hidden = cin * t
    y, k = x, 0
    if t != 1:
        y = g.relu6(g.conv_bn(y, f"{path}.conv.0.0", f"{path}.conv.0.1", cin, hidden, 1),
                    f"{path}.conv.0.2")
        k = 1
    y = g.conv_bn(y, f"{path}.conv.{k}.0", f"{path}.conv.{k}.1", hidden, hidden, 3, stride,
                  groups=hidden)
    y = g.relu6(y, f"{path}.conv.{k}.2")
    y = g.conv_bn(y, f"{path}.conv.{k + 1}", f"{path}.conv.{k + 2}", hidden, cout, 1)
    if stride == 1 and cin == cout:
        y = g.node("Add", [x, y], f"{scope(path)}/Add")
    return y
