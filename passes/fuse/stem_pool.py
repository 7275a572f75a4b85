"""The stem's max pool joins its conv's epilogue group (`npu-fuse`), after
the drain's cast and ReLU, where `npu.costmodel.conv.stem_pool` says the
drain can pool and that it pays; `npu-lower-conv` then pools each drained
band before it leaves the core."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv import epilogue, stem_pool
from npu.costmodel.conv.stem_fold import bias_in_cube, folds_rows, is_relu, stem_with_constants
from npu.dialects.ascend_conv import geometry, has_bias


class StemPoolJoin:
    """Mixed into `FusePass` (its `conv_pool` option and `target`)."""

    def stem_pool(self, conv: ir.Operation, members: list[ir.Operation],
                  users: dict) -> ir.Operation | None:
        """The max pool that is the only reader of a stem's ReLU, when the
        group so far is the drain's cast and that ReLU (`stem_fold.drain_relu`)."""
        if not self.conv_pool or len(members) != 2 or not stem_with_constants(conv):
            return None
        cast, relu = members
        if (epilogue.leading_cast(members, conv.operands[-1]) is not cast or not is_relu(relu)
                or relu.operands[0] != cast.operands[-1]
                or not folds_rows(geometry(conv), nir.memref_shape(conv.operands[0])[1])
                or (has_bias(conv) and not bias_in_cube(conv))):
            return None
        out = relu.operands[-1]
        readers = users.get(nir.view_root(out), set()) - {relu}
        if len(readers) != 1:
            return None
        (pool,) = readers
        if pool.parent != relu.parent or pool.operands[0] != out \
                or not stem_pool.pool_fits(pool, out):
            return None
        _, co1, ho, wo, _ = nir.memref_shape(out)
        return pool if stem_pool.pays(co1, ho, wo, self.target) else None
