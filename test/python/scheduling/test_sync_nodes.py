"""npu-insert-sync's nodes: a compound's instructions and the loops its
ranges are widened over are gathered while its blocks are built (one walk
of a loop nest, not one per enclosing loop); they must be what a walk of
the compound's ops finds, a loop that never runs included."""

from __future__ import annotations

from npu.analysis.access import AccessAnalysis, is_access_op
from npu.ir import make_context, parse_module, walk
from npu.passes.insert_sync.nodes import _widen, build_block
from npu.target import get_target

VEXP = ('"cce.vexp"(%v{n}, %v{n}) {{repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, '
        'dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}} : '
        '(memref<128xf16, strided<[1], offset: ?>, "ub">, memref<128xf16, strided<[1], offset: ?>, "ub">) -> ()')


def _view(n: int, iv: str) -> str:
    return (f'%o{n} = arith.muli {iv}, %c128 : index\n'
            f'%v{n} = memref.subview %u[%o{n}] [128] [1] : memref<8192xf16, "ub"> to '
            'memref<128xf16, strided<[1], offset: ?>, "ub">\n')


def _loop(iv: str, ub: str, body: str) -> str:
    return f"scf.for {iv} = %c0 to {ub} step %c1 {{\n{body}}}\n"


NEST = ("func.func @f() {\n%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "%c2 = arith.constant 2 : index\n%c3 = arith.constant 3 : index\n"
        "%c128 = arith.constant 128 : index\n"
        '%u = memref.alloc() : memref<8192xf16, "ub">\n'
        + _loop("%i", "%c2",
                _view(0, "%i") + VEXP.format(n=0)
                + _loop("%j", "%c0", _view(1, "%j") + VEXP.format(n=1))  # never runs
                + _loop("%k", "%c3", _loop("%l", "%c2", _view(2, "%l") + VEXP.format(n=2)
                                           + _view(3, "%k") + VEXP.format(n=3))))
        + "return\n}\n")


def test_compound_accesses_are_a_walk_of_its_ops():
    module = parse_module(NEST, make_context())
    func = next(iter(module.body.operations)).operation
    analysis = AccessAnalysis(get_target("ascend910"))
    nodes = build_block(func.regions[0].blocks[0], analysis)
    outer = next(n for n in nodes if n.children)
    compounds = [outer, *(n for block in outer.children for n in block if n.children)]
    assert len(compounds) == 2  # the loop over %j never runs: no node, its vexp still in %i's
    for node in compounds:
        inside = [o for o in walk(node.op) if is_access_op(o)]
        ivs = {analysis.iv_key(o.regions[0].blocks[0].arguments[0])
               for o in walk(node.op) if o.name == "scf.for"}
        assert [a.op for a in node.accesses] == inside
        for got, op in zip(node.accesses, inside):
            raw = analysis.access(op)
            assert got.reads == [_widen(r, analysis, ivs) for r in raw.reads]
            assert got.writes == [_widen(r, analysis, ivs) for r in raw.writes]
    assert len(outer.accesses) == 4 and len(compounds[1].accesses) == 2
    # the first vexp's bytes over both iterations of %i: 2 x 256
    assert outer.accesses[0].writes[0].length == 512
