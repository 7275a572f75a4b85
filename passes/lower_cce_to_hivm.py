"""`npu-lower-cce-to-hivm`: planned, synchronised `cce` -> `hivm` instructions.

Every memref becomes a byte address (`npu.hivm.addresses`): GM arguments are
base pointers into the kernel's argument area, on-chip allocations their
planned `npu.offset`, views add their offsets (a dynamic one through one
`hivm.addr`). Each cce instruction becomes its hivm form with its counts
packed into the configuration word of `dialects/README.md`
(`npu.dialects.hivm.encode`); a vector op's mask becomes a
`hivm.set_vector_mask` whenever it differs from the mask already set in the
same block. An img2col becomes `hivm.set_fmatrix` + the instruction, after a
`hivm.set_padding` when its pad (an int8 map's `pad_value`; 0 for f16) is not
what the padding register is known to hold: 0 at the kernel's start (the
register's reset value, so programs without a pad value never set it), the
last value set earlier in the same block, and unknown at the start of a
nested block and after one when the function sets any non-zero pad. The
i64 constants (addresses, words, masks) are made once per value, at the
start of the function (`npu.hivm.addresses.Constants`). Loops and scalar
arithmetic stay as they are. A value that does
not fit its field, or an address the hardware cannot use, is an error at the
op, never a truncated word.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.dialects import cce, hivm
from npu.dialects.cce_img2col import IMG2COL, WORD_OF, pad_value
from npu.dialects.opspec import CMP_PREDICATES
from npu.hivm.addresses import (Address, AddressError, Constants, alloc_address,
                            gm_argument_addresses, materialize, view_address)
from npu.passes.base import Pass, PassError

ALLOC_OPS = ("memref.alloc", "memref.alloca")
# cce attributes that are not configuration-word fields but travel otherwise.
NOT_IN_WORD = {"mask", "scalar", "round_mode", "src_offsets", "dst_offsets"}
# The attributes a synchronisation op keeps.
SYNC_ATTRIBUTES = ("src", "dst", "event", "pipe")


def _word(kind: str, op: ir.Operation) -> int:
    """Pack the op's count attributes into its `kind` word; every attribute
    must land in a field (nothing is dropped silently).

    The attributes are read by name when each is one the word (or
    NOT_IN_WORD) knows, each name its own field: reading them by index
    (a named attribute, then its value) took 0.3 of BERT-12's 1.5 CPU s
    in this pass on 32 cores. Otherwise (a stray attribute, two spellings
    of one field) they are read in order, which reports the strays."""
    attributes = op.attributes
    known = _fields_of(kind)
    names = _names_of(kind)
    # in name order, as the attribute dictionary holds them (its names
    # listed at once: asking it for each name the word takes was 0.3 CPU s)
    present = sorted(name for name in attributes if name in names)
    fields: dict[str, int] = {}
    unplaced: set[str] = set()
    if len(present) == len(attributes) and len(present) == len(set(names[n] for n in present)):
        for name in present:
            if name not in NOT_IN_WORD:
                _place(kind, op, name, attributes[name], known, fields, unplaced)
    else:
        for i in range(len(attributes)):
            named = attributes[i]
            if named.name not in NOT_IN_WORD:
                _place(kind, op, named.name, named.attr, known, fields, unplaced)
    if "b8" in known:  # a load's element size travels in its word
        fields["b8"] = int(nir.element_bytes(nir.memref_element(op.operands[0])) == 1)
    stray = sorted(unplaced | (set(fields) - set(known)))
    if stray:
        raise PassError(f"'{op.name}': attribute(s) {', '.join(stray)} have no field in the "
                        f"{kind} configuration word", op)
    key = (kind, *fields.items())
    word = _WORDS.get(key)
    if word is None:  # (values met before fitted their fields then)
        for name, value in fields.items():
            f = known[name]
            if not 0 <= value <= f.max:
                raise PassError(f"'{op.name}': {name} = {value} does not fit the {f.width}-bit "
                                f"field (bits {f.lo}-{f.lo + f.width - 1}) of the {kind} "
                                f"configuration word (0..{f.max})", op)
        word = _WORDS[key] = hivm.encode(kind, **fields)
    return word


def _place(kind: str, op: ir.Operation, name: str, attr: ir.Attribute,
           known: dict[str, "hivm.Field"], fields: dict[str, int], unplaced: set[str]) -> None:
    """Attribute `name` = `attr` of `op` into its field of the `kind` word."""
    if name == "accumulate":
        fields["init"] = 0 if ir.BoolAttr(attr).value else 1
    elif name == "transpose":
        fields["transpose"] = int(ir.BoolAttr(attr).value)
    elif name == "predicate":
        predicate = ir.StringAttr(attr).value
        if predicate not in CMP_PREDICATES:
            raise PassError(f"'{op.name}': unknown predicate '{predicate}'", op)
        fields["predicate"] = CMP_PREDICATES.index(predicate)
    elif name == "convert" and "convert" in known:
        mode = ir.StringAttr(attr).value
        if mode not in hivm.L0C_CONVERSIONS:
            raise PassError(f"'{op.name}': unknown conversion '{mode}'", op)
        fields["convert"] = hivm.L0C_CONVERSIONS.index(mode)
    else:
        field = hivm.word_field(kind, name)
        if field in known:  # (one read by name is an IntegerAttr already)
            fields[field] = (attr if isinstance(attr, ir.IntegerAttr) else ir.IntegerAttr(attr)).value
        else:
            unplaced.add(name)  # whatever its type: reported by name below


# (kind, its fields' values in order) -> the word: few distinct ones.
_WORDS: dict[tuple, int] = {}
_NAMES: dict[str, dict[str, str]] = {}


def _names_of(kind: str) -> dict[str, str]:
    """The attribute names a `kind` word takes or NOT_IN_WORD skips ->
    the field each lands in (its own name for those skipped)."""
    names = _NAMES.get(kind)
    if names is None:
        names = {name: name for name in sorted(NOT_IN_WORD)}
        special = {"accumulate": "init", "transpose": "transpose", "predicate": "predicate",
                   "convert": "convert"}
        names.update(special)
        for f in hivm.CONFIG_LAYOUTS[kind]:
            candidates = [f.name] + (["src_" + f.name[len("src0_"):]]
                                     if f.name.startswith("src0_") else [])
            for name in candidates:
                if name not in special and hivm.word_field(kind, name) == f.name:
                    names[name] = f.name
        _NAMES[kind] = names
    return names


_FIELDS: dict[str, dict[str, hivm.Field]] = {}


def _fields_of(kind: str) -> dict[str, "hivm.Field"]:
    """name -> field of a configuration word (built once per kind)."""
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = {f.name: f for f in hivm.CONFIG_LAYOUTS[kind]}
    return fields


class LowerCCEToHIVM(Pass):
    name = "npu-lower-cce-to-hivm"
    summary = "cce -> hivm: byte addresses, packed configuration words, mask register"

    def run(self, module: ir.Operation) -> None:
        for func_op in nir.functions(module):
            if len(func_op.regions[0].blocks):  # a declaration has no code to lower
                _FunctionLowering(self.target, func_op).run()


class _FunctionLowering:
    def __init__(self, target, func_op: ir.Operation):
        self.target = target
        self.func_op = func_op
        self.addresses: dict[ir.Value, Address] = {}
        entry = func_op.regions[0].blocks[0]
        self.constants = Constants(next(iter(entry.operations)).operation)
        self.dead: list[ir.Operation] = []
        self.layouts: dict[ir.Type, list[int]] = {}  # for `view_address`
        self.element_sizes: dict[ir.Type, int] = {}  # for `view_address`
        self.offsets: dict[ir.Attribute, list[int]] = {}  # for `view_address`
        self.words: dict[tuple, int] = {}  # for `word`
        self.placed: dict[tuple[str, int], ir.Value] = {}  # (space, byte) checked -> its constant
        # The padding register's value field as the code so far left it (None: unknown).
        self.padding: int | None = 0
        # Every op of the function in pre-order, by MLIR's walk (`ir.Operation`s:
        # iterating each block made an OpView of every op, a third of this
        # pass on BERT-12 at 32 cores); `block` takes its ops from here.
        self.ops = nir.walk_held(func_op)
        self.at = 1  # the next op of `ops` to lower (the function itself is the first)
        # whether any img2col needs a non-zero pad
        self.pads = any(_padding_field(op) for op in self.ops if op.name == IMG2COL)

    def run(self) -> None:
        try:
            self.addresses.update(gm_argument_addresses(self.func_op, self.target.gm_alloc_granule_bytes))
        except AddressError as e:
            raise PassError(str(e), self.func_op) from None
        self.block(len(self.func_op.regions[0].blocks[0].operations))
        for op in reversed(self.dead):
            op.erase()

    # -- walking -----------------------------------------------------------

    def block(self, count: int) -> None:
        """Lower the block whose `count` ops come next in `ops` (pre-order:
        an op's nested blocks follow it, in order; the ops this lowering
        inserts are not in `ops`, as a block's ops listed at its start
        would not hold them)."""
        mask: int | None = None  # the mask register as this block last set it
        ops = self.ops
        for _ in range(count):
            op = ops[self.at]
            self.at += 1
            name = op.name
            if name not in nir.LEAF_OP_NAMES and nir.has_regions(op):
                self.no_memref_operands(op)
                for region in op.regions:
                    for inner in region.blocks:
                        self.padding = None if self.pads else 0  # reached from anywhere
                        self.block(len(inner.operations))
                mask = None  # the nested code may have set another mask
                self.padding = None if self.pads else 0
                self.no_memref_results(op)
                continue
            try:
                if name.startswith("cce."):
                    with op.location, ir.InsertionPoint(op):
                        mask = self.instruction(op, mask)
                    self.dead.append(op)
                elif name == "arith.constant":
                    continue  # a scalar: no memref in or out
                elif name in nir.VIEW_OPS:
                    self.view(op, name)
                elif name in ALLOC_OPS:
                    self.addresses[op.results[0]] = alloc_address(op)
                    self.dead.append(op)
                elif name == "memref.dealloc":
                    self.dead.append(op)
                elif name == "memref.load":
                    with op.location, ir.InsertionPoint(op):
                        self.scalar_load(op)
                    self.dead.append(op)
                else:
                    self.no_memref_operands(op)
                    self.no_memref_results(op)
            except AddressError as e:
                raise PassError(str(e), op) from None

    @staticmethod
    def no_memref_operands(op: ir.Operation) -> None:
        if any(nir.is_memref(v.type) for v in op.operands):
            raise PassError(f"'{op.name}' uses a memref; only cce instructions and views can be "
                            "lowered to hivm", op)

    @staticmethod
    def no_memref_results(op: ir.Operation) -> None:
        if any(nir.is_memref(r.type) for r in op.results):
            raise PassError(f"'{op.name}' produces a memref, which has no hivm form", op)

    def view(self, op: ir.Operation, name: str) -> None:
        operands = list(op.operands)
        source = self.addresses.get(operands[0])
        if source is None:
            raise PassError(f"'{name}': cannot trace its source memref to an allocation", op)
        address, dynamic = view_address(op, source, self.layouts, self.element_sizes,
                                        self.offsets, name, operands)
        if dynamic:
            # One scalar instruction, where the cce view op charged one.
            with op.location, ir.InsertionPoint(op):
                address = Address(address.space, address.const, address.terms, address.root,
                                  materialize(address))
        self.addresses[op.result] = address
        self.dead.append(op)

    def scalar_load(self, op: ir.Operation) -> None:
        """`memref.load` of a GM i32 -> `hivm.load_gm_scalar` at its address
        (one `hivm.addr` when an index is dynamic, as the cce load charged)."""
        source = op.operands[0]
        if nir.memory_space(source.type) != "gm" or nir.memref_element(source.type) != "i32":
            raise PassError(f"'memref.load' of {source.type}: the scalar unit loads i32 from GM "
                            "only", op)
        base = self.addresses.get(source)
        if base is None:
            raise PassError("'memref.load': cannot trace its memref to an allocation", op)
        strides, _ = nir.memref_layout(source.type)
        const, terms = 0, []
        for index, stride in zip(list(op.operands)[1:], strides):
            value = nir.constant_int(index)
            if value is None:
                terms.append((index, stride * 4))
            else:
                const += value * stride * 4
        address = base.shifted(const, tuple(terms))
        pointer = address.value if address.value is not None else (
            materialize(address) if address.terms else self.constants.get(address.const))
        load = nir.create_op(hivm.SCALAR_LOAD, [pointer], [ir.IntegerType.get_signless(32)])
        op.results[0].replace_all_uses_with(load.results[0])

    # -- instructions --------------------------------------------------------

    def address_of(self, value: ir.Value, op: ir.Operation) -> ir.Value:
        a = self.addresses.get(value)
        if a is None:
            raise PassError(f"'{op.name}': cannot trace an operand to an allocation", op)
        if a.value is not None:
            return a.value
        if a.terms:
            # A static view of a dynamic one: the cce view cost nothing, this costs an issue.
            return materialize(a)
        key = (a.space, a.const)
        constant = self.placed.get(key)
        if constant is not None:
            return constant
        if a.space != "gm":
            granule, capacity = self.target.granule(a.space), self.target.capacity(a.space)
            if a.const % granule:
                raise PassError(f"'{op.name}': {a.space} address {a.const} is not aligned to the "
                                f"{granule}-byte granule", op)
            if not 0 <= a.const < capacity:
                raise PassError(f"'{op.name}': {a.space} address {a.const} is outside the buffer "
                                f"[0, {capacity})", op)
        constant = self.placed[key] = self.constants.get(a.const)
        return constant

    def instruction(self, op: ir.Operation, mask: int | None) -> int | None:
        name = op.name
        new = "hivm." + name[len("cce."):]
        # (every attribute in one binding call: reading them by name was one call each)
        items = tuple(op.attributes.items())
        if name in cce.SYNC_OPS:
            ir.Operation.create(new, attributes={k: a for k, a in items if k in SYNC_ATTRIBUTES})
            return mask
        if name == IMG2COL:
            self.img2col(op)
            return mask
        kind = hivm.CONFIG_KIND.get(new)
        if kind is None:
            raise PassError(f"'{name}' has no hivm form (stop at cce: npu-lower emit=cce)", op)
        operands = list(op.operands)
        addrs = [self.address_of(v, op) for v in operands]
        word = self.constants.get(self.word(kind, op, items, operands))
        if name in cce.COPY_OPS or name in cce.LOAD_OPS:
            nir.create_op(new, [addrs[1], addrs[0], word])  # (src, dst) -> (dst, src)
            return mask
        # The type the instruction computes in: vcmp's sources (its dst is i8).
        typed = operands[1] if name == cce.VECTOR_CMP else operands[0]
        dtype = ir.MemRefType(typed.type).element_type
        if name == "cce.mad":
            nir.create_op(new, [addrs[2], addrs[0], addrs[1], word], dtype=dtype)
            return mask
        attributes = dict(items)
        extra = {}
        if "scalar" in attributes:
            extra["scalar"] = attributes["scalar"]
        if name == "cce.vconv":
            extra["src_dtype"] = ir.MemRefType(operands[1].type).element_type
            extra["round_mode"] = attributes["round_mode"]
        if name == "cce.vnchwconv":
            extra["src_offsets"] = attributes["src_offsets"]
            extra["dst_offsets"] = attributes["dst_offsets"]
        if "mask" in attributes:
            active = ir.IntegerAttr(attributes["mask"]).value
            if active != mask:
                hi, lo = hivm.mask_words(active)
                nir.create_op("hivm.set_vector_mask",
                              [self.constants.get(hi), self.constants.get(lo)])
                mask = active
        nir.create_op(new, addrs + [word], dtype=dtype, **extra)
        return mask

    def word(self, kind: str, op: ir.Operation, items: tuple, operands: list[ir.Value]) -> int:
        """`_word(kind, op)`, once per distinct attributes (`items`, the op's
        (name, attribute) pairs) and, for a word with a `b8` field, type of
        the first operand: BERT-12 on 32 cores has a few hundred distinct
        words over 16k instructions. (Attributes and types are unique in
        their context: the key holds for one lowering.)"""
        key = (kind, items, operands[0].type) if "b8" in _fields_of(kind) else (kind, items)
        word = self.words.get(key)
        if word is None:
            word = self.words[key] = _word(kind, op)
        return word

    def img2col(self, op: ir.Operation) -> None:
        """`cce.img2col_l1_to_l0a` -> `hivm.set_fmatrix` (the map's register)
        + `hivm.img2col_l1_to_l0a (dst, src, pos, config)`."""
        values: dict[str, dict[str, int]] = {kind: {} for kind in hivm.IMG2COL_WORDS}
        for attr, kind in WORD_OF.items():
            values[kind][attr] = nir.int_attr(op, attr) if attr in op.attributes else 0
        values["img2col"]["b8"] = int(_is_b8(op))
        try:
            words = [hivm.encode_img2col(kind, values[kind]) for kind in hivm.IMG2COL_WORDS]
        except ValueError as e:
            raise PassError(f"'{op.name}': {e}", op) from None
        src, dst = (self.address_of(v, op) for v in op.operands)
        fmatrix, pos, config = (self.constants.get(w) for w in words)
        nir.create_op(hivm.SET_FMATRIX, [fmatrix])
        padding = _padding_field(op)
        if padding != self.padding:
            nir.create_op(hivm.SET_PADDING, [self.constants.get(hivm.encode("padding", value=padding))])
            self.padding = padding
        nir.create_op(hivm.IMG2COL, [dst, src, pos, config])


def _is_b8(op: ir.Operation) -> bool:
    return nir.element_bytes(nir.memref_element(op.operands[0])) == 1


def _padding_field(op: ir.Operation) -> int:
    """The padding register's value field an img2col needs: an int8 map's pad
    in the low byte; 0 for f16 (its pads are +0.0)."""
    return pad_value(op) & 0xFF if _is_b8(op) else 0

