"""The closures that append cce instructions to the trace (the scalar unit's
dispatch), built once per static instruction by `program.Decoder`.

A trace entry is `(instr, operand views, scalar cycles)`. Each instruction's
views are a tuple reused while its operand slots hold the same objects, so
the machine recognises the operand set (it binds each tuple once). The
scalar cycles of an entry are the pending dynamic cycles (loop iterations,
ifs) plus its own static ones; dispatching resets the pending count.
"""

from __future__ import annotations

from operator import is_, itemgetter
from typing import Callable

Fn = Callable[[list], None]


def dispatch_one(instr, slots: tuple[int, ...], pre: int, trace: list, pending: list[int]) -> Fn:
    """One instruction (its operands may change from one dispatch to the next)."""
    append = trace.append
    if not slots:
        def dispatch_sync(env: list) -> None:
            append((instr, (), pending[0] + pre))
            pending[0] = 0
        return dispatch_sync
    if len(slots) == 2:
        a, b = slots

        def dispatch2(env: list, last=[()]) -> None:
            va, vb = env[a], env[b]
            views = last[0]
            if not views or views[0] is not va or views[1] is not vb:
                views = last[0] = (va, vb)
            append((instr, views, pending[0] + pre))
            pending[0] = 0
        return dispatch2
    if len(slots) == 3:
        a, b, c = slots

        def dispatch3(env: list, last=[()]) -> None:
            va, vb, vc = env[a], env[b], env[c]
            views = last[0]
            if not views or views[0] is not va or views[1] is not vb or views[2] is not vc:
                views = last[0] = (va, vb, vc)
            append((instr, views, pending[0] + pre))
            pending[0] = 0
        return dispatch3

    def dispatch(env: list, last=[()]) -> None:
        views = tuple([env[s] for s in slots])
        if all(x is y for x, y in zip(views, last[0] or (None,))):
            views = last[0]
        else:
            last[0] = views
        append((instr, views, pending[0] + pre))
        pending[0] = 0
    return dispatch


def dispatch_run(run: list[tuple], trace: list, pending: list[int]) -> Fn:
    """Consecutive instructions `(instr, slots, pre)` whose operands are
    defined outside their block (buffers, loop-invariant views), with only
    static scalar cost between them. While every slot holds what it held
    last time, the entries after the first are the same tuples as last time
    and go in with one `extend`; only the first carries the pending cycles."""
    if len(run) == 1:
        return dispatch_one(*run[0], trace, pending)
    append, extend = trace.append, trace.extend
    # Each distinct slot once (the vector bench's run of 46 instructions
    # reads 3 buffers through 90 operands): gathered and compared per dispatch.
    slots = tuple(dict.fromkeys(s for _, instr_slots, _ in run for s in instr_slots))
    where = {s: k for k, s in enumerate(slots)}
    views_of: list[tuple] = [()] * len(run)
    state: list = [None, None]  # the slots' objects last time; the entries after the first
    first, first_pre = run[0][0], run[0][2]

    def rebuild(vals: tuple) -> None:
        for k, (_, instr_slots, _) in enumerate(run):
            old, new = views_of[k], tuple([vals[where[s]] for s in instr_slots])
            if instr_slots and (len(old) != len(new) or not all(map(is_, old, new))):
                views_of[k] = new
        state[0] = vals
        state[1] = [(instr, views_of[k], pre) for k, (instr, _, pre) in enumerate(run)][1:]

    # The slots' objects in one C call; a tuple.
    gather = itemgetter(*slots) if len(slots) > 1 else lambda env: tuple([env[s] for s in slots])

    def dispatch(env: list) -> None:
        vals = gather(env)
        last = state[0]
        if last is None or not all(map(is_, vals, last)):
            rebuild(vals)
        append((first, views_of[0], pending[0] + first_pre))
        extend(state[1])
        pending[0] = 0
    return dispatch
