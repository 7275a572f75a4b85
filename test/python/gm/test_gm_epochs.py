"""npu-plan-gm on many cores: a tensor's bytes are its own from the chip
barrier before its first use to the one after its last, and the stretches
before the first barrier and after the last reach the function's start and
end. A program with no barrier at all (each core's slices flow from op to
op: a transposed K read by the attention on the same core, head by head)
is one stretch: two tensors in it never share bytes, since one core may be
done with the first while another still writes it."""

from npu.passes.plan_gm import _epochs


def test_no_barrier_is_one_stretch():
    assert _epochs((5, 7, []), [], 20)[:2] == (0, 20)


def test_the_stretches_reach_the_function_ends():
    assert _epochs((5, 7, []), [10], 20)[:2] == (0, 9)
    assert _epochs((12, 13, []), [10], 20)[:2] == (11, 20)
    assert _epochs((12, 13, []), [10, 15], 20)[:2] == (11, 14)
