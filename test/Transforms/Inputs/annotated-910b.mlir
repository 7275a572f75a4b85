// A module compiled for the 910B must not be silently retargeted.

module attributes {npu.target = "ascend910b"} {
}
