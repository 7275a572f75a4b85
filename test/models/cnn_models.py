"""The tiny torchvision CNNs of `cnn/` (seeded random weights), built for
`make_exports.py --cnn`, which exports them; torch and torchvision are not
test dependencies."""

from __future__ import annotations


def narrow_resnet(block_name: str, width: int):
    """torchvision's ResNet with one block per stage and `width` stem
    channels (stages width, 2w, 4w, 8w), module names unchanged."""
    import torch
    from torchvision.models import resnet

    block = getattr(resnet, block_name)

    class NarrowResNet(resnet.ResNet):
        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            if planes == 64:  # the first stage: the stem's width
                self.inplanes = width
            return super()._make_layer(block, planes * width // 64, blocks, stride, dilate)

    model = NarrowResNet(block, [1, 1, 1, 1], num_classes=10)
    model.conv1 = torch.nn.Conv2d(3, width, 7, 2, 3, bias=False)
    model.bn1 = torch.nn.BatchNorm2d(width)
    model.fc = torch.nn.Linear(8 * width * block.expansion, 10)
    return randomize_bn(model)


def tiny_mobilenet_v2():
    """Width 0.25; the last 1x1 conv narrowed from 1280 to 320 channels
    (module names unchanged) to keep the file under 1 MB."""
    import torch
    from torchvision.models import mobilenet_v2
    from torchvision.ops.misc import Conv2dNormActivation

    model = mobilenet_v2(width_mult=0.25, num_classes=10)
    cin = model.features[-1][0].in_channels
    model.features[-1] = Conv2dNormActivation(cin, 320, kernel_size=1, activation_layer=torch.nn.ReLU6)
    model.classifier[1] = torch.nn.Linear(320, 10)
    return randomize_bn(model)


def tiny_mobilenet_v3():
    """MobileNetV3-small at width 0.25: HardSwish, HardSigmoid and the
    squeeze-excite scale of each map by its channels' gates."""
    from torchvision.models import mobilenet_v3_small

    return randomize_bn(mobilenet_v3_small(width_mult=0.25, num_classes=10))


def tiny_efficientnet():
    """EfficientNet-B0's stages at width and depth 0.25: SiLU, squeeze-excite
    and depthwise convs of 3x3 and 5x5."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return randomize_bn(EfficientNet(setting, 0.2, last_channel=last, num_classes=10))


def tiny_convnext():
    """ConvNeXt's structure at stages of 16-96 channels, one block each: the
    7x7 depthwise conv, LayerNorm over channels between NHWC transposes, the
    pointwise layers as MatMuls of [1, H, W, C] maps, layer scales drawn
    near 1 (torchvision's 1e-6 would hide the blocks' branch)."""
    import torch
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, 96, 1),
               CNBlockConfig(96, None, 1)]
    model = ConvNeXt(setting, num_classes=10)
    g = torch.Generator().manual_seed(5)
    for name, p in model.named_parameters():
        if name.endswith("layer_scale"):
            p.data.copy_(torch.rand(p.shape, generator=g) + 0.5)
    return model.eval()


def tiny_unet():
    """A tiny UNet / FPN: two stride-2 convs down, `nn.Upsample` (nearest,
    x2) and a skip Concat, a bilinear x2 (half_pixel) and a lateral Add, a
    head resized by `F.interpolate` to 1.5x the image (bilinear,
    align_corners): the Resizes torch writes for segmentation models."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    def block(cin, cout, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2, self.enc3 = block(3, 8), block(8, 16, 2), block(16, 32, 2)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.dec2, self.lateral = block(48, 16), nn.Conv2d(8, 16, 1)
            self.head = nn.Conv2d(16, 4, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(e1)
            d2 = self.dec2(torch.cat([self.up(self.enc3(e2)), e2], 1))
            d1 = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False) + self.lateral(e1)
            size = (x.shape[-2] * 3 // 2, x.shape[-1] * 3 // 2)
            return F.interpolate(self.head(d1), size=size, mode="bilinear", align_corners=True)

    return randomize_bn(UNet())


def randomize_bn(model):
    """Running statistics that are not the identity, so a dropped or
    misfolded BatchNormalization shows."""
    import torch

    g = torch.Generator().manual_seed(4)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model.eval()
