"""Abstract interpreter of the parsed kernel subset, one core and one path at a time.

Branches whose condition is not known statically are decision points: the explorer
(explore.py) re-runs the kernel once per combination of decisions (conditions with the same
text take the same decision along a path). Loops with a known trip count are unrolled (long ones
partly: the first 4 iterations, then the last 12..23, so the skipped count is a multiple of 12
and every ``k % 2``/``% 3``/``% 4`` pattern is seen at both ends); loops with an unknown trip count
run 1, 2 or 3 times (a decision), or up to m + 1 times when their laps compute ``% m`` (m = 3 or 4:
a ring of m slots is first reused in lap m + 1). User functions and methods are inlined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lark import Token, Tree

from . import apis
from .machine import Machine
from .program import ClassDef, FuncDef, Program, first_tree, line_of, tok_children, tree_children
from .values import (
    HARDWARE_MEM,
    MEM_ALIGN,
    MEM_CORE,
    POSITION_MEM,
    SCALAR_SIZES,
    UNKNOWN,
    Cond,
    GmPtr,
    Lin,
    Region,
    Tensor,
    TypeVal,
    Unk,
    as_int,
    fresh,
    text_of,
)

MAX_CALL_DEPTH = 48
MAX_LITERAL_ITERS = 512
UNKNOWN_TRIPS = 3  # an unknown loop runs 1..3 times
MAX_RING = 4  # ... or 1..m+1 times when its laps compute `% m` (m <= MAX_RING): slot k % m is reused by k + m
MAX_STEPS = 400_000


class PathCut(Exception):
    """The path cannot go on (step budget, a loop that does not end): stop without end checks."""


class ReturnSig(Exception):
    def __init__(self, value=None) -> None:
        self.value = value


class BreakSig(Exception):
    pass


class ContinueSig(Exception):
    pass


@dataclass
class Enum:
    kind: str  # HardEvent, pipe, TPosition, Hardware, core, QuePosition, ...
    name: str


@dataclass
class StructVal:
    type: str
    fields: dict = field(default_factory=dict)
    prefix: str = ""

    def get(self, name: str):
        if name in self.fields:
            return self.fields[name]
        d = apis.STRUCT_DEFAULTS.get(self.type, {})
        if name in d:
            return d[name]
        return Lin.sym(f"{self.prefix or self.type}.{name}")


@dataclass
class ArrayVal:
    items: dict = field(default_factory=dict)
    name: str = "?"


@dataclass
class Obj:
    cls: ClassDef
    fields: dict
    tbind: dict


@dataclass
class QueObj:
    name: str
    pos: str
    pos2: str | None
    mem: str
    num: int | None = None
    length: Lin | None = None
    base: Lin | None = None
    free: list = field(default_factory=list)
    fifo: list = field(default_factory=list)
    pending_free: dict = field(default_factory=dict)  # buffer index -> captured accesses
    allocs: int = 0


@dataclass
class TBufObj:
    name: str
    pos: str
    mem: str
    base: Lin | None = None
    size: Lin | None = None


@dataclass
class PipeObj:
    next: dict = field(default_factory=dict)
    queues: list = field(default_factory=list)  # queues initialised from it (Reset waits their frees)
    mem: str | None = None  # a TBufPool: its memory
    base: Lin | None = None  # a TBufPool: where its space starts
    size: Lin | None = None


@dataclass
class AllocObj:
    mem: str
    head: Lin = field(default_factory=lambda: Lin(0))


@dataclass
class QueSyncObj:
    src: str
    dst: str


@dataclass
class Frame:
    scopes: list
    this: Obj | None = None
    tbind: dict = field(default_factory=dict)
    cls: ClassDef | None = None
    func: FuncDef | None = None


_TENSOR_TYPES = {"LocalTensor", "GlobalTensor"}
_EVENT_ID_RE = re.compile(r"^EVENT_ID(\d+)$")


def _num(text: str):
    t = text.replace("'", "")
    low = t.lower()
    try:
        if low.startswith("0x"):
            return int(low.rstrip("ul"), 16)
        if low.startswith("0b"):
            return int(low[2:].rstrip("ul"), 2)
        if re.fullmatch(r"[0-9]+[ul]*", low):
            s = low.rstrip("ul")
            return int(s, 8) if len(s) > 1 and s.startswith("0") else int(s)
        return float(low.rstrip("f").rstrip("l") if not low.startswith("0x") else low)
    except ValueError:
        return UNKNOWN


class Interp:
    """Runs one kernel entry for one core along one path (given decisions for unknown branches)."""

    def __init__(self, prog: Program, machine: Machine, decisions: list[int], sub: int, ratio: int,
                 mix: bool = False) -> None:
        self.prog = prog
        self.m = machine
        self.arch = machine.arch
        self.core = machine.core
        self.sub = sub
        self.ratio = ratio
        self.mix = mix
        self.target_sub = 0  # the AIV a Fixpipe into UB goes to (FixpipeParamsArch3510.subBlockId)
        machine.sub = sub
        self.prefix = decisions
        self.trace: list[tuple[int, int, int, str]] = []  # (alternatives, choice, line, label)
        self.assume: dict[str, bool] = {}
        self.known: dict[str, int] = {}  # symbols a decision fixed (x == 3 taken as true)
        self.rng: dict[str, list] = {}  # symbol -> [lo, hi] (None: unbounded) from decisions
        self.bounds: dict[str, int] = {}  # upper bounds of symbols (min(128, x) <= 128)
        self.neq: dict[str, set] = {}  # values a decision excluded (x == 3 taken as false)
        self.frames: list[Frame] = []
        self.globals: dict = {}
        self.global_busy: set = set()
        self.steps = 0
        self.call_stack: list[str] = []
        self.pipes: list[PipeObj] = []
        self.notes: set = set()
        self.effects_cache: dict[int, bool] = {}
        # per loop being run (innermost last): [counter name, its value in this lap, the largest
        # `% m` computed on it, the call depth of the loop]
        self.rings: list[list] = []

    # =========================================================================================
    # decisions
    # =========================================================================================
    def decide(self, n: int, line: int, label: str) -> int:
        k = len(self.trace)
        choice = self.prefix[k] if k < len(self.prefix) else 0
        self.trace.append((n, choice, line, label))
        return choice

    def path_note(self) -> str:
        taken = []
        for n, c, ln, lab in self.trace:
            if n > 1 and lab:
                parts = lab.split("|")
                text = parts[c] if c < len(parts) else ""
                if text:
                    taken.append(f"{text} (line {ln})")
        if not taken:
            return ""
        return " (on the path where " + ", ".join(taken[-3:]) + ")"

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.notes.add("the analysis stopped a path after its step budget")
            raise PathCut()

    # =========================================================================================
    # entry
    # =========================================================================================
    def run_entry(self, f: FuncDef, targs: list) -> None:
        frame = Frame([{}], None, {}, f.cls, f)
        for i, (name, kind, _default) in enumerate(f.tparams):
            if i < len(targs) and targs[i] is not None:
                frame.tbind[name] = targs[i]
            elif kind == "type":
                frame.tbind[name] = TypeVal(name)
            else:
                frame.tbind[name] = Lin.sym(name)
        self.frames.append(frame)
        for p in f.params:
            pname, ptype = self._param_name_type(p)
            if pname is None:
                continue
            frame.scopes[0][pname] = self._kernel_arg(pname, ptype)
        try:
            self.exec_block(f.body.children if f.body is not None else [], new_scope=False)
        except ReturnSig:
            pass
        self.m.end(line_of(f.body) if f.body is not None else f.line, self.path_note())

    def _kernel_arg(self, name: str, ptype: dict):
        if ptype["ptr"] or ptype["name"] in ("GM_ADDR",):
            elem = SCALAR_SIZES.get(ptype["name"]) if ptype["name"] != "GM_ADDR" else 1
            return GmPtr(name, Lin(0), elem or 1)
        if ptype["name"] in self.prog.classes or ptype["name"] not in SCALAR_SIZES:
            return StructVal(ptype["name"], {}, prefix=name)
        return Lin.sym(name)

    # =========================================================================================
    # scopes
    # =========================================================================================
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def lookup(self, name: str, line: int = 0):
        fr = self.frame
        for sc in reversed(fr.scopes):
            if name in sc:
                return sc[name]
        if fr.this is not None:
            v = self._member_get(fr.this, name, quiet=True)
            if v is not None:
                return v
        if name in fr.tbind:
            return fr.tbind[name]
        if fr.cls is not None:
            v = self._class_static(fr.cls, name)
            if v is not None:
                return v
        return self._global(name)

    def _class_static(self, cls: ClassDef, name: str):
        for specs, dtype, decl in cls.fields:
            if tok_children(decl, "NAME")[0].value == name and ("static" in specs or "constexpr" in specs):
                init = first_tree(decl, "member_init", "brace_init")
                if init is not None and init.children:
                    return self.eval_init(init, dtype)
        if name in cls.enums:
            return self._enum_value(name, cls.enums[name])
        for b in cls.bases:
            bname = self._type_name(b) if b is not None else None
            if bname in self.prog.classes:
                v = self._class_static(self.prog.classes[bname], name)
                if v is not None:
                    return v
        return None

    def _global(self, name: str):
        if name in self.globals:
            return self.globals[name]
        g = self.prog.globals.get(name)
        if g is not None and name not in self.global_busy:
            self.global_busy.add(name)
            specs, dtype, decl = g
            init = first_tree(decl, "member_init", "brace_init")
            frames = self.frames
            self.frames = [Frame([self.globals])]
            try:
                v = self.eval_init(init, dtype) if init is not None else self.default_value(
                    self.eval_type(dtype), name, line_of(decl))
            finally:
                self.frames = frames
            self.globals[name] = v
            return v
        if name in self.prog.enums:
            return self._enum_value(name, self.prog.enums[name])
        return self.builtin_name(name)

    def _enum_value(self, name: str, entry):
        if entry[0] == "expr":
            return self.eval(entry[1])
        _, prev, idx = entry
        base = self.eval(prev) if prev is not None else 0
        b = as_int(base)
        return b + idx if b is not None else Lin.sym(name)

    def builtin_name(self, name: str, scope: list[str] | None = None):
        m = _EVENT_ID_RE.match(name)
        if m:
            return int(m.group(1))
        if name.startswith("PIPE_"):
            return Enum("pipe", name[5:])
        if apis.event_pipes(name):
            return Enum("HardEvent", name)
        sc = scope[-1] if scope else None
        if sc in ("TPosition", "QuePosition") or (sc is None and name in POSITION_MEM):
            return Enum("TPosition", name)
        if sc == "Hardware":
            return Enum("Hardware", name)
        if name in ("AIC", "AIV") and sc in (None, "AscendC"):
            return Enum("core", name)
        if name == "g_coreType":
            return Enum("core", self.core)
        if name in ("true", "false"):
            return name == "true"
        if name == "INFINITY":
            return float("inf")
        if sc and sc not in ("AscendC", "std", "Std"):
            return Enum(sc, name)
        return Lin.sym(name)

    def declare(self, name: str, value) -> None:
        self.frame.scopes[-1][name] = value

    def assign_name(self, name: str, value) -> None:
        fr = self.frame
        for sc in reversed(fr.scopes):
            if name in sc:
                sc[name] = value
                return
        if fr.this is not None and name in fr.this.fields:
            fr.this.fields[name] = value
            return
        if name in self.globals:
            self.globals[name] = value
            return
        fr.scopes[-1][name] = value

    # =========================================================================================
    # types
    # =========================================================================================
    def _type_name(self, qual: Tree) -> str:
        toks = tok_children(qual, "TNAME", "NAME")
        return toks[-1].value if toks else "?"

    def eval_type(self, node: Tree | None) -> dict:
        """decl_type / type_id -> {name, targs, ptr, ref, gm, tval}."""
        info = {"name": "?", "targs": [], "ptr": 0, "ref": False, "gm": False, "tval": None}
        if node is None:
            return info
        if node.data == "type_id":
            dt = first_tree(node, "decl_type")
            info = self.eval_type(dt)
            ptrs = first_tree(node, "ptrs")
            self._apply_ptrs(info, ptrs)
            return info
        if node.data == "decl_type":
            for c in node.children:
                if isinstance(c, Tree) and c.data == "cv":
                    if any(t.value == "__gm__" for t in tok_children(c)):
                        info["gm"] = True
                elif isinstance(c, Tree):
                    core = self.eval_type(c)
                    core["gm"] = core["gm"] or info["gm"]
                    info = core
            return info
        if node.data in ("qual_type", "global_qual_type"):
            name = tok_children(node, "TNAME")[-1].value
            targs_node = first_tree(node, "targs")
            targs = self.eval_targs(targs_node) if targs_node is not None else []
            info["name"], info["targs"] = name, targs
            bound = self.frame.tbind.get(name) if self.frames else None
            if isinstance(bound, TypeVal):
                info["name"] = bound.name
                info["tval"] = bound
                if bound.args and not targs:
                    info["targs"] = list(bound.args)
            elif name in self.prog.aliases or (self.frames and self.frame.cls is not None
                                               and name in self.frame.cls.aliases):
                node2 = self.frame.cls.aliases.get(name) if self.frames and self.frame.cls and \
                    name in self.frame.cls.aliases else self.prog.aliases[name]
                tid = first_tree(node2, "type_id")
                if tid is not None and node2 is not node:
                    return self.eval_type(tid)
            return info
        if node.data == "builtin_type":
            words = [t.value for w in node.children for t in (w.children if isinstance(w, Tree) else [w])
                     if isinstance(t, Token)]
            if "float" in words:
                info["name"] = "float"
            elif "double" in words:
                info["name"] = "double"
            elif "bool" in words:
                info["name"] = "bool"
            elif "void" in words:
                info["name"] = "void"
            elif "char" in words:
                info["name"] = "uint8_t" if "unsigned" in words else "int8_t"
            elif "short" in words:
                info["name"] = "int16_t"
            elif words.count("long") >= 1:
                info["name"] = "int64_t"
            else:
                info["name"] = "uint32_t" if "unsigned" in words else "int32_t"
            return info
        if node.data == "auto_type":
            info["name"] = "auto"
            return info
        if node.data == "elaborated_type":
            return self.eval_type(first_tree(node, "qual_type"))
        return info

    @staticmethod
    def _apply_ptrs(info: dict, ptrs: Tree | None) -> None:
        if ptrs is None:
            return
        for p in ptrs.children:
            if isinstance(p, Tree):
                v = tok_children(p)[0].value
                if v == "*":
                    info["ptr"] += 1
                else:
                    info["ref"] = True

    def eval_targs(self, node: Tree) -> list:
        out = []
        for c in node.children:
            if isinstance(c, Token):
                continue
            if c.data == "type_id":
                info = self.eval_type(c)
                out.append(info["tval"] or TypeVal(info["name"], tuple(info["targs"])))
            else:
                out.append(self.eval(c))
        return out

    def size_of_type(self, tv) -> int | None:
        if isinstance(tv, TypeVal):
            if tv.size:
                return tv.size
            bound = self.frame.tbind.get(tv.name) if self.frames else None
            if isinstance(bound, TypeVal) and bound is not tv:
                return self.size_of_type(bound)
            return None
        if isinstance(tv, str):
            return SCALAR_SIZES.get(tv)
        return None

    def _param_name_type(self, p: Tree) -> tuple[str | None, dict]:
        if p.data == "param_ellipsis":
            return None, {}
        dt = first_tree(p, "decl_type")
        info = self.eval_type(dt) if self.frames else self._static_type(dt)
        self._apply_ptrs(info, first_tree(p, "ptrs"))
        names = tok_children(p, "NAME", "TNAME")
        return (names[0].value if names else None), info

    def _static_type(self, dt: Tree) -> dict:
        self.frames.append(Frame([{}]))
        try:
            return self.eval_type(dt)
        finally:
            self.frames.pop()

    # =========================================================================================
    # statements
    # =========================================================================================
    def exec_block(self, stmts, new_scope: bool = True) -> None:
        if new_scope:
            self.frame.scopes.append({})
        try:
            for s in stmts:
                if s is not None:
                    self.exec(s)
        finally:
            if new_scope:
                self.frame.scopes.pop()

    def exec(self, s) -> None:
        self.step()
        if isinstance(s, Token):
            return
        d = s.data
        fn = getattr(self, "s_" + d, None)
        if fn is not None:
            fn(s)
        elif d in ("using_namespace", "using_name", "empty", "static_assert", "goto_stmt", "class_def",
                   "enum_def", "typedef_decl", "case_label", "default_label"):
            return
        elif d in ("using_alias", "using_alias_dependent"):
            nm = tok_children(s, "NAME", "TNAME")[0].value
            tid = first_tree(s, "type_id")
            if tid is not None:
                info = self.eval_type(tid)
                self.frame.tbind[nm] = info["tval"] or TypeVal(info["name"], tuple(info["targs"]))
        else:
            self.eval(s)

    def s_compound(self, s: Tree) -> None:
        self.exec_block(s.children)

    def s_scope_stmt(self, s: Tree) -> None:
        self.exec_block(first_tree(s, "compound").children)

    def s_expr_stmt(self, s: Tree) -> None:
        self.eval(s.children[0])

    def s_decl_stmt(self, s: Tree) -> None:
        self.s_decl_core(s.children[0])

    def s_decl_core(self, s: Tree) -> None:
        dt = first_tree(s, "decl_type")
        base = self.eval_type(dt)
        for d in tree_children(s, "declarator"):
            info = dict(base)
            self._apply_ptrs(info, first_tree(d, "ptrs"))
            name = tok_children(d, "NAME")[0].value
            arrays = tree_children(d, "array_suffix")
            init = first_tree(d, "init_assign", "init_call", "init_brace")
            line = line_of(d)
            if arrays:
                val = ArrayVal({}, name)
                if init is not None and init.data in ("init_assign", "init_brace"):
                    lst = self._init_items(init)
                    for i, v in enumerate(lst):
                        val.items[i] = v
            elif init is None:
                val = self.default_value(info, name, line)
            elif init.data == "init_assign":
                initializer = init.children[0]
                inner = initializer.children[0] if initializer.data == "initializer" else initializer
                if isinstance(inner, Tree) and inner.data == "init_list_braced":
                    val = self.construct(info, self._init_items(inner), name, line)
                else:
                    val = self.eval(inner)
                    val = self._convert(info, val, name)
            else:
                args = self._init_items(init)
                val = self.construct(info, args, name, line)
            self.declare(name, val)

    def _init_items(self, node: Tree | None) -> list:
        if node is None:
            return []
        lst = first_tree(node, "init_list", "designated_list", "args")
        if node.data in ("init_list", "designated_list", "args"):
            lst = node
        if lst is None:
            return []
        out = []
        for c in lst.children:
            if not isinstance(c, Tree):
                continue
            if c.data == "designator":
                out.append((tok_children(c, "NAME")[0].value, self._eval_initializer(c.children[-1])))
            else:
                out.append(self._eval_initializer(c))
        return out

    def _eval_initializer(self, c: Tree):
        if c.data == "initializer":
            return self.eval(c.children[0])
        if c.data in ("init_list_braced", "braced_arg"):
            return ("braced", self._init_items(c))
        return self.eval(c)

    def _convert(self, info: dict, val, name: str):
        """A declared name's value: tensors keep their view and take the declared name."""
        if isinstance(val, Tensor):
            t = Tensor(val.kind, val.root, val.start, val.elem, val.size, name, val.dtype, val.que, val.buf_index,
                       val.foreign)
            if info["name"] in _TENSOR_TYPES and info["targs"]:
                e = self.size_of_type(info["targs"][0])
                if e and e != val.elem:
                    t.elem = e
            return t
        if isinstance(val, StructVal) and not info["ref"]:
            return StructVal(val.type, dict(val.fields), val.prefix)
        if isinstance(val, Cond) and info["name"] not in ("bool", "auto"):
            return Lin.sym(fresh(name))
        return val

    def default_value(self, info: dict, name: str, line: int):
        tn = info["name"]
        targs = info["targs"]
        if info["ptr"]:
            return Unk(fresh(name))
        if tn == "LocalTensor":
            e = self.size_of_type(targs[0]) if targs else None
            return Tensor("L", None, Lin(0), e, None, name, _tname(targs))
        if tn == "GlobalTensor":
            e = self.size_of_type(targs[0]) if targs else None
            return Tensor("G", None, Lin(0), e, None, name, _tname(targs))
        if tn == "TPipe":
            p = PipeObj()
            self.pipes.append(p)
            return p
        if tn in ("TQue", "TQueBind"):
            pos = _enum_name(targs[0]) if targs else "VECCALC"
            pos2 = _enum_name(targs[1]) if tn == "TQueBind" and len(targs) > 1 else None
            return QueObj(name, pos, pos2, POSITION_MEM.get(pos, "?"))
        if tn == "TBuf":
            pos = _enum_name(targs[0]) if targs else "VECCALC"
            return TBufObj(name, pos, POSITION_MEM.get(pos, "?"))
        if tn == "TBufPool":
            pos = _enum_name(targs[0]) if targs else "VECCALC"
            return PipeObj(mem=POSITION_MEM.get(pos, "UB"))
        if tn == "LocalMemAllocator":
            hw = _enum_name(targs[0]) if targs else "UB"
            return AllocObj(HARDWARE_MEM.get(hw, "UB"))
        if tn == "TQueSync":
            src = targs[0].name if targs and isinstance(targs[0], Enum) else "?"
            dst = targs[1].name if len(targs) > 1 and isinstance(targs[1], Enum) else "?"
            return QueSyncObj(src, dst)
        if tn in apis.STRUCT_FIELDS or tn.endswith("Params") or tn.endswith("Info"):
            return StructVal(tn, {}, prefix=name)
        if tn in self.prog.classes:
            return self.construct(info, [], name, line)
        if tn in SCALAR_SIZES or tn in ("auto", "?"):
            return Lin.sym(fresh(name))
        return StructVal(tn, {}, prefix=name)

    def construct(self, info: dict, args: list, name: str, line: int):
        """A declaration with constructor arguments ``T x(args)`` / ``T x{args}``."""
        tn = info["name"]
        targs = info["targs"]
        if tn == "LocalTensor":
            e = self.size_of_type(targs[0]) if targs else None
            if len(args) >= 2 and isinstance(args[0], Enum):
                mem = POSITION_MEM.get(args[0].name, "?")
                start = Lin.of(args[1]) or Lin.sym(fresh(f"{name}.addr"))
                n = Lin.of(args[2]) if len(args) > 2 else None
                size = n.scale(e) if n is not None and e else None
                return self._local(mem, start, e, size, name, _tname(targs))
            if args and isinstance(args[0], Tensor):
                return self._convert(info, args[0], name)
            return self.default_value(info, name, line)
        if tn in self.prog.classes:
            cls = self.prog.classes[tn]
            obj = Obj(cls, {}, self._class_tbind(cls, targs))
            self._init_fields(obj)
            ctor = self._pick(cls.ctors, len(args))
            if ctor is not None:
                self.call_function(ctor, args, [], this=obj, line=line)
            return obj
        if tn in apis.STRUCT_FIELDS or tn.endswith("Params") or tn.endswith("Info") or \
                self._is_struct(tn):
            return self.make_struct(tn, args, name)
        if len(args) == 1 and not isinstance(args[0], tuple):
            return self._convert(info, args[0], name)
        return self.default_value(info, name, line)

    def _is_struct(self, tn: str) -> bool:
        cls = self.prog.classes.get(tn)
        return cls is not None and not cls.methods and not cls.ctors

    def make_struct(self, tn: str, args: list, prefix: str = "") -> StructVal:
        sv = StructVal(tn, {}, prefix=prefix)
        order = apis.struct_fields(tn, len(args))
        if order is None and tn in self.prog.classes:
            order = [tok_children(d, "NAME")[0].value for specs, _, d in self.prog.classes[tn].fields
                     if "static" not in specs]
        for i, a in enumerate(args):
            if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) and a[0] != "braced":
                sv.fields[a[0]] = a[1]
            elif order is not None and i < len(order):
                sv.fields[order[i]] = a
        return sv

    def _class_tbind(self, cls: ClassDef, targs: list) -> dict:
        tb = {}
        for i, (nm, kind, default) in enumerate(cls.tparams):
            if i < len(targs):
                tb[nm] = targs[i]
            elif default is not None:
                tb[nm] = self.eval(default) if default.data != "type_id" else TypeVal(
                    self.eval_type(default)["name"])
            else:
                tb[nm] = TypeVal(nm) if kind == "type" else Lin.sym(nm)
        return tb

    def _init_fields(self, obj: Obj) -> None:
        chain = [obj.cls]
        for b in obj.cls.bases:
            bn = self._type_name(b) if b is not None else None
            if bn in self.prog.classes:
                chain.insert(0, self.prog.classes[bn])
        self.frames.append(Frame([{}], obj, obj.tbind, obj.cls))
        try:
            for cls in chain:
                for specs, dtype, decl in cls.fields:
                    if "static" in specs:
                        continue
                    nm = tok_children(decl, "NAME")[0].value
                    info = self.eval_type(dtype)
                    self._apply_ptrs(info, first_tree(decl, "ptrs"))
                    init = first_tree(decl, "member_init", "brace_init")
                    if tree_children(decl, "array_suffix"):
                        obj.fields[nm] = ArrayVal({}, nm)
                    elif init is not None and init.children and init.data != "bitfield":
                        obj.fields[nm] = self.eval_init(init, dtype, nm)
                    else:
                        obj.fields[nm] = self.default_value(info, nm, line_of(decl))
        finally:
            self.frames.pop()

    def eval_init(self, init: Tree | None, dtype: Tree, name: str = "?"):
        info = self.eval_type(dtype)
        if init is None:
            return self.default_value(info, name, 0)
        if init.data == "brace_init":
            return self.construct(info, self._init_items(init), name, line_of(init))
        c = init.children[0]
        inner = c.children[0] if isinstance(c, Tree) and c.data == "initializer" else c
        if isinstance(inner, Tree) and inner.data == "init_list_braced":
            return self.construct(info, self._init_items(inner), name, line_of(init))
        return self._convert(info, self.eval(inner), name)

    # -- control flow ---------------------------------------------------------------------------
    def cond_value(self, v, line: int, text: str):
        """True / False / Cond(...) for an unknown condition."""
        if isinstance(v, bool):
            return v
        if isinstance(v, (int, float)):
            return v != 0
        if isinstance(v, Cond):
            return v
        if isinstance(v, Lin):
            if v.is_const():
                return v.c != 0
            return Cond(f"{v.text()} != 0")
        if isinstance(v, Enum):
            return True
        if isinstance(v, (Tensor, Obj, QueObj, TBufObj, PipeObj, GmPtr)):
            return True
        return Cond(text or f"?{line}")

    def branch(self, cond, line: int, then_nodes: list, else_nodes: list) -> bool | None:
        """Decide an unknown condition; returns True/False, or None when the branch was skipped."""
        if not isinstance(cond, Cond):
            return bool(cond)
        if cond.text in self.assume:
            return self.assume[cond.text] != cond.neg
        if not any(self.has_effects(n) for n in then_nodes + else_nodes if n is not None):
            for n in then_nodes + else_nodes:
                if n is not None:
                    self.havoc(n)
            return None
        if all(n is None for n in else_nodes) and all(self.data_only(n) for n in then_nodes if n is not None):
            # `if (c) op(...);` guarding only data ops (no flag, barrier, queue or control flow):
            # checked as if it ran, without doubling the paths (a masked tail row, an optional copy)
            return True
        c = self.decide(2, line, f"'{_short(cond.text)}' is false|'{_short(cond.text)}' is true")
        raw = c == 1
        self.learn(cond.raw(), raw)
        return raw != cond.neg

    def learn(self, cond: Cond, truth: bool) -> None:
        """Record that ``cond`` (raw, not negated) has value ``truth`` along this path: its text,
        and for ``k*x + c == 0`` / ``k*x + c < 0`` the value range of x."""
        self.assume[cond.text] = truth
        if cond.kind in ("eq", "lt") and cond.info is not None:
            sym, k, c = cond.info
            r = self.rng.setdefault(sym, [None, None])
            if cond.kind == "eq":
                if c % k == 0:
                    val = -c // k
                    if truth:
                        r[0] = val if r[0] is None else max(r[0], val)
                        r[1] = val if r[1] is None else min(r[1], val)
                    else:
                        self.neq.setdefault(sym, set()).add(val)
            else:
                if k > 0:
                    lo, hi = (None, (-c - 1) // k) if truth else (-(c // k), None)
                else:
                    kk = -k
                    lo, hi = (c // kk + 1, None) if truth else (None, c // kk)
                if lo is not None:
                    r[0] = lo if r[0] is None else max(r[0], lo)
                if hi is not None:
                    r[1] = hi if r[1] is None else min(r[1], hi)
            excluded = self.neq.get(sym, ())
            while r[0] is not None and r[0] in excluded:
                r[0] += 1
            while r[1] is not None and r[1] in excluded:
                r[1] -= 1
            if r[0] is not None and r[1] is not None and r[0] > r[1]:
                raise PathCut()  # the decisions of this path contradict each other: it cannot happen
            if r[0] is not None and r[0] == r[1]:
                self.known[sym] = r[0]
        elif cond.kind in ("or", "and") and cond.info is not None:
            if (cond.kind == "or" and not truth) or (cond.kind == "and" and truth):
                for part in cond.info:
                    if isinstance(part, Cond):
                        self.learn(part.raw(), truth != part.neg)

    def _by_range(self, op: str, sym: str, k: int, c: int):
        """``(k*sym + c) op 0`` when the known range of sym decides it, else None."""
        lo, hi = self.rng.get(sym, (None, None))
        vlo = vhi = None
        if k > 0:
            vlo = k * lo + c if lo is not None else None
            vhi = k * hi + c if hi is not None else None
        else:
            vlo = k * hi + c if hi is not None else None
            vhi = k * lo + c if lo is not None else None
        if op in ("eq", "ne"):
            res = None
            if c % k != 0:
                res = False  # no integer solution
            elif (vlo is not None and vlo > 0) or (vhi is not None and vhi < 0):
                res = False
            elif -c // k in self.neq.get(sym, ()):
                res = False
            elif vlo == 0 and vhi == 0:
                res = True
            return None if res is None else (res if op == "eq" else not res)
        tests = {"lt": (lambda a: a < 0), "le": (lambda a: a <= 0), "gt": (lambda a: a > 0), "ge": (lambda a: a >= 0)}
        t = tests[op]
        if vlo is not None and vhi is not None and t(vlo) == t(vhi):
            return t(vlo)
        if op in ("lt", "le") and vhi is not None and t(vhi):
            return True
        if op in ("lt", "le") and vlo is not None and not t(vlo):
            return False
        if op in ("gt", "ge") and vlo is not None and t(vlo):
            return True
        if op in ("gt", "ge") and vhi is not None and not t(vhi):
            return False
        return None

    def s_if_stmt(self, s: Tree) -> None:
        ch = s.children
        is_constexpr = ch[0] is not None
        expr, then, els = ch[1], ch[2], ch[3] if len(ch) > 3 else None
        del is_constexpr
        line = line_of(s)
        v = self.cond_value(self.eval(expr), line, _src(expr))
        taken = self.branch(v, line, [then], [els])
        if taken is None:
            return
        if taken:
            self.exec_scoped(then)
        elif els is not None:
            self.exec_scoped(els)

    def exec_scoped(self, s) -> None:
        self.frame.scopes.append({})
        try:
            self.exec(s)
        finally:
            self.frame.scopes.pop()

    def s_core_if(self, s: Tree) -> None:
        cc = s.children[0].value
        then, els = s.children[1], s.children[2] if len(s.children) > 2 else None
        want = {"ASCEND_IS_AIV": "AIV", "ASCEND_IS_AIC": "AIC", "ASCEND_IS_NOT_AIV": "AIC",
                "ASCEND_IS_NOT_AIC": "AIV"}[cc]
        if want == self.core:
            self.exec_scoped(then)
        elif els is not None:
            self.exec_scoped(els)

    def s_return_stmt(self, s: Tree) -> None:
        val = None
        if s.children and s.children[0] is not None:
            c = s.children[0]
            val = ("braced", self._init_items(c)) if c.data == "init_list" else self.eval(c)
        raise ReturnSig(val)

    def s_break_stmt(self, s: Tree) -> None:
        raise BreakSig()

    def s_continue_stmt(self, s: Tree) -> None:
        raise ContinueSig()

    def s_while_stmt(self, s: Tree) -> None:
        self._loop(None, s.children[0], None, s.children[1], line_of(s))

    def s_do_stmt(self, s: Tree) -> None:
        self._loop(None, s.children[1], None, s.children[0], line_of(s), do_first=True)

    def s_for_stmt(self, s: Tree) -> None:
        init, cond, incr, body = s.children
        self.frame.scopes.append({})
        try:
            if init is not None:
                if init.data == "decl_core":
                    self.s_decl_core(init)
                else:
                    self.eval(init)
            plan = self._counted_plan(init, cond, incr)
            if plan is not None:
                self._run_plan(plan, body, line_of(s))
            else:
                self._loop(None, cond, incr, body, line_of(s), counter=_counter_of(init))
        finally:
            self.frame.scopes.pop()

    def s_range_for(self, s: Tree) -> None:
        name = tok_children(s, "NAME")[0].value
        body = s.children[-1]
        self.frame.scopes.append({name: Lin.sym(fresh(name))})
        try:
            self._loop(None, None, None, body, line_of(s), unknown_trip=True)
        finally:
            self.frame.scopes.pop()

    def _counted_plan(self, init, cond, incr):
        """(var, start, step, trips) for ``for (v = a; v < b; v += c)`` with known a, b, c."""
        if init is None or cond is None or incr is None:
            return None
        var = None
        if init.data == "decl_core":
            ds = tree_children(init, "declarator")
            if len(ds) == 1:
                var = tok_children(ds[0], "NAME")[0].value
        elif init.data == "assignment_eq" and init.children[0].data == "id_expr":
            var = _id_name(init.children[0])
        if var is None:
            return None
        step = None
        if incr.data in ("postinc", "preinc") and _is_var(incr.children[0], var):
            step = 1
        elif incr.data in ("postdec", "predec") and _is_var(incr.children[0], var):
            step = -1
        elif incr.data == "assignment" and _is_var(incr.children[0], var) and incr.children[1].value in ("+=", "-="):
            st = as_int(self.eval(incr.children[2]))
            if st is not None and st != 0:
                step = st if incr.children[1].value == "+=" else -st
        if step is None:
            return None
        if cond.data not in ("bin_lt", "bin_le", "bin_ne", "bin_gt", "bin_ge") or not _is_var(cond.children[0], var):
            return None
        start = as_int(self.lookup(var))
        bound = as_int(self.eval(cond.children[1]))
        if start is None or bound is None:
            return None
        op = cond.data
        if op == "bin_lt" and step > 0:
            n = max(0, -(-(bound - start) // step))
        elif op == "bin_le" and step > 0:
            n = max(0, (bound - start) // step + 1)
        elif op == "bin_ne" and step != 0 and (bound - start) % step == 0 and (bound - start) // step >= 0:
            n = (bound - start) // step
        elif op == "bin_gt" and step < 0:
            n = max(0, -(-(start - bound) // -step))
        elif op == "bin_ge" and step < 0:
            n = max(0, (start - bound) // -step + 1)
        else:
            return None
        return var, start, step, n

    def _run_plan(self, plan, body, line: int) -> None:
        var, start, step, n = plan
        if n <= 64:
            idxs = list(range(n))
        else:
            rest = n - 4
            tail = 12 + rest % 12
            idxs = list(range(4)) + list(range(n - tail, n))
            self.notes.add(f"line {line}: a loop of {n} iterations was checked on iterations 0-3 and the last {tail}")
        self.m.loop_depth += 1
        try:
            for i in idxs:
                self.assign_name(var, start + step * i)
                try:
                    self.exec_scoped(body)
                except ContinueSig:
                    pass
                except BreakSig:
                    break
        finally:
            self.m.loop_depth -= 1
        self.assign_name(var, start + step * n)

    def _loop(self, _unused, cond, incr, body, line: int, do_first: bool = False, unknown_trip: bool = False,
              counter: str | None = None) -> None:
        it = 0
        unknown_seen = 0
        seen_texts: set = set()
        # while (true) { ... break; }: a polling loop; its exits are explored in its first laps
        forever = cond is None and not unknown_trip or (isinstance(cond, Tree) and cond.data in ("true", "number"))
        trace_at_start = len(self.trace)
        self.m.loop_depth += 1
        ring = [counter, None, 0, len(self.frames)]
        self.rings.append(ring)
        try:
            while True:
                # an unknown bound: 1..3 laps, or m + 1 when a lap computed `counter % m`
                trips = max(UNKNOWN_TRIPS, ring[2] + 1)
                ring[1] = as_int(self.lookup(counter)) if counter is not None else None
                if not (do_first and it == 0):
                    if unknown_trip:
                        c = Cond(f"loop@{line}")
                    elif cond is None:
                        c = True
                    else:
                        c = self.cond_value(self.eval(cond), line, _src(cond))
                    if isinstance(c, Cond):
                        unknown_seen += 1
                        if c.text in self.assume and c.text not in seen_texts:
                            go = self.assume[c.text] != c.neg  # a loop with the same bound: same trips
                        else:
                            if unknown_seen == 1:
                                go = True  # an unknown loop runs at least once (docs/check.md)
                            elif unknown_seen > trips:
                                go = False
                            else:
                                go = self.decide(2, line, f"the loop ran {unknown_seen - 1} time(s)|") == 1
                            self.learn(c.raw(), go != c.neg)
                        seen_texts.add(c.text)
                        if not go:
                            break
                    elif not c:
                        break
                    elif unknown_seen and it >= trips:
                        # the bound is unknown, but this path's decisions force more laps: the
                        # shorter paths are explored; this one stops here (no end-of-kernel checks)
                        raise PathCut()
                it += 1
                if it > UNKNOWN_TRIPS and len(self.trace) > trace_at_start and not unknown_trip and \
                        unknown_seen == 0:
                    forever = True  # it goes on only as unknown values inside it decide: a polling loop
                if forever and it > UNKNOWN_TRIPS:
                    self.notes.add(f"line {line}: a loop without an exit condition was followed for "
                                   f"{UNKNOWN_TRIPS} laps (paths leaving it by break/return are checked)")
                    raise PathCut()
                if it > MAX_LITERAL_ITERS:
                    self.notes.add(f"line {line}: a loop ran {MAX_LITERAL_ITERS} times without ending; "
                                   "the path was not followed further")
                    raise PathCut()
                try:
                    self.exec_scoped(body)
                except ContinueSig:
                    pass
                except BreakSig:
                    break
                if incr is not None:
                    self.eval(incr)
        finally:
            self.m.loop_depth -= 1
            self.rings.pop()

    def s_switch_stmt(self, s: Tree) -> None:
        v = self.eval(s.children[0])
        body = s.children[1]
        stmts = body.children if isinstance(body, Tree) and body.data == "compound" else [body]
        labels = [(i, st) for i, st in enumerate(stmts) if isinstance(st, Tree) and st.data in ("case_label",
                                                                                                "default_label")]
        start = None
        iv = as_int(v)
        if iv is not None or isinstance(v, Enum):
            for i, st in labels:
                if st.data == "case_label":
                    cv = self.eval(st.children[0])
                    if (iv is not None and as_int(cv) == iv) or (isinstance(v, Enum) and isinstance(cv, Enum)
                                                                 and cv.name == v.name):
                        start = i
                        break
            if start is None:
                start = next((i for i, st in labels if st.data == "default_label"), None)
        elif labels:
            k = self.decide(len(labels), line_of(s), "")
            start = labels[k][0]
        if start is None:
            return
        self.frame.scopes.append({})
        try:
            for st in stmts[start:]:
                self.exec(st)
        except BreakSig:
            pass
        finally:
            self.frame.scopes.pop()

    # -- effects --------------------------------------------------------------------------------
    def has_effects(self, node) -> bool:
        """Whether a subtree can touch buffers, flags or control flow (calls, return, break...)."""
        if not isinstance(node, Tree):
            return False
        key = id(node)
        hit = self.effects_cache.get(key)
        if hit is not None:
            return hit
        res = False
        if node.data in ("call", "return_stmt", "break_stmt", "continue_stmt", "goto_stmt"):
            res = not (node.data == "call" and self._pure_call(node))
        if not res:
            res = any(self.has_effects(c) for c in node.children if isinstance(c, Tree))
        self.effects_cache[key] = res
        return res

    _SYNC_CALLS = {"SetFlag", "WaitFlag", "PipeBarrier", "CrossCoreSetFlag", "CrossCoreWaitFlag", "SyncAll",
                   "Lock", "Unlock", "EnQue", "DeQue", "AllocTensor", "FreeTensor", "InitBuffer", "InitBufPool",
                   "Destroy", "Reset", "REGIST_MATMUL_OBJ", "assert", "ascendc_assert", "ASSERT", "ASCENDC_ASSERT",
                   "AllocEventID", "FetchEventID", "ReleaseEventID", "KERNEL_TASK_TYPE_DEFAULT"} | apis.BARRIER_CALLS

    def data_only(self, node) -> bool:
        """A subtree of data ops only: API calls that touch buffers, scalar code, loops; no flag,
        barrier, queue or mutex call, no user function, no return/break/continue."""
        if not isinstance(node, Tree):
            return True
        key = ("d", id(node))
        hit = self.effects_cache.get(key)
        if hit is not None:
            return hit
        res = True
        if node.data in ("return_stmt", "break_stmt", "continue_stmt", "goto_stmt", "decl_stmt"):
            res = node.data == "decl_stmt"
        elif node.data == "call":
            callee = node.children[0]
            name = None
            if isinstance(callee, Tree) and callee.data in ("id_expr", "global_id"):
                name = _id_name(callee)
                if name in self.prog.functions or name in self.prog.classes:
                    res = False
            elif isinstance(callee, Tree) and callee.data in ("member", "member_ptr"):
                toks = tok_children(callee.children[1], "NAME", "TNAME", "CTORNAME")
                name = toks[0].value if toks else None
                if name is not None and any(name in c.methods for c in self.prog.classes.values()):
                    res = False
            if name in self._SYNC_CALLS:
                res = False
        if res:
            res = all(self.data_only(c) for c in node.children if isinstance(c, Tree))
        self.effects_cache[key] = res
        return res

    @staticmethod
    def _pure_call(node: Tree) -> bool:
        callee = node.children[0]
        if isinstance(callee, Tree) and callee.data == "id_expr":
            name = _id_name(callee)
            return name in apis.PURE_UNKNOWN or name in ("min", "max", "GetSubBlockIdx", "sizeof", "Ceil", "CeilDiv",
                                                         "DivCeil", "AlignUp", "CeilAlign")
        return False

    def havoc(self, node) -> None:
        """Forget the values a skipped branch may assign."""
        if not isinstance(node, Tree):
            return
        if node.data in ("assignment", "assignment_eq", "preinc", "predec", "postinc", "postdec"):
            tgt = node.children[0]
            if isinstance(tgt, Tree) and tgt.data == "id_expr":
                nm = _id_name(tgt)
                self.assign_name(nm, Lin.sym(fresh(nm)))
            elif isinstance(tgt, Tree) and tgt.data in ("member", "member_ptr"):
                self.store(tgt, Lin.sym(fresh(_src(tgt))))
        for c in node.children:
            if isinstance(c, Tree):
                self.havoc(c)

    # =========================================================================================
    # expressions
    # =========================================================================================
    def eval(self, e):
        if e is None:
            return None
        if isinstance(e, Token):
            if e.type == "NUMBER":
                return _num(e.value)
            return self.lookup(e.value, e.line)
        fn = getattr(self, "e_" + e.data, None)
        if fn is None:
            if e.data.startswith("bin_"):
                return self.e_binop(e)
            for c in e.children:
                if isinstance(c, Tree):
                    self.eval(c)
            return UNKNOWN
        return fn(e)

    def e_number(self, e):
        return _num(e.children[0].value)

    def e_string(self, e):
        return "".join(t.value for t in e.children)

    def e_char(self, e):
        v = e.children[0].value[1:-1]
        return ord(v[-1]) if v else 0

    def e_true(self, e):
        return True

    def e_false(self, e):
        return False

    def e_nullptr(self, e):
        return 0

    def e_this(self, e):
        return self.frame.this if self.frame.this is not None else UNKNOWN

    def e_core_cond(self, e):
        cc = e.children[0].value
        return {"ASCEND_IS_AIV": self.core == "AIV", "ASCEND_IS_AIC": self.core == "AIC",
                "ASCEND_IS_NOT_AIV": self.core != "AIV", "ASCEND_IS_NOT_AIC": self.core != "AIC"}[cc]

    def e_id_expr(self, e):
        scope_nodes = tree_children(e, "scope")
        scopes = [tok_children(c, "NAME", "TNAME")[0].value for c in scope_nodes]
        name = tok_children(e, "NAME", "CTORNAME")[0].value
        trait = self._type_trait(scope_nodes, name, first_tree(e, "targs"))
        if trait is not None:
            return trait
        if scopes and scopes[-1] not in ("AscendC", "std", "Std", "Reg", "MicroAPI"):
            # Class::member / Enum::value
            cls = self.prog.classes.get(scopes[-1])
            if cls is not None:
                v = self._class_static(cls, name)
                if v is not None:
                    return v
            if name in self.prog.enums and scopes[-1] in self.prog.enum_types:
                return self._enum_value(name, self.prog.enums[name])
            return self.builtin_name(name, scopes)
        return self.lookup(name, line_of(e))

    e_global_id = e_id_expr

    _SAME = {"IsSameType", "is_same", "IsSameTypeV", "is_same_v"}

    def _type_trait(self, scope_nodes: list, name: str, targs_node):
        """``IsSameType<A, B>::value`` / ``std::is_same<A, B>::value`` / ``is_same_v<A, B>``."""
        args = None
        if scope_nodes and name == "value" and tok_children(scope_nodes[-1], "NAME", "TNAME")[0].value in self._SAME:
            t = first_tree(scope_nodes[-1], "targs")
            args = self.eval_targs(t) if t is not None else None
        elif name in ("is_same_v", "IsSameTypeV") and targs_node is not None:
            args = self.eval_targs(targs_node)
        if not args or len(args) != 2:
            return None
        a, b = args
        if isinstance(a, TypeVal) and isinstance(b, TypeVal):
            na, nb = _canon_type(a.name), _canon_type(b.name)
            if na == nb:
                return True
            if a.size is None and na not in self.prog.classes or b.size is None and nb not in self.prog.classes:
                return Cond(f"is_same<{na}, {nb}>")  # a template parameter not bound
            return False
        return None

    def e_ternary(self, e):
        cnode = e.children[0]
        c = self.cond_value(self.eval(cnode), line_of(e), _src(cnode))
        if isinstance(c, Cond):
            if c.text in self.assume:
                c = self.assume[c.text] != c.neg
            else:
                a, b = self.eval(e.children[1]), self.eval(e.children[2])
                if _same(a, b):
                    return a
                la, lb = Lin.of(a), Lin.of(b)
                if la is not None and lb is not None:
                    # named by what it computes, so every core and path agrees on it
                    name = f"({c.text} ? {la.text()} : {lb.text()})"
                    hi = self._minmax_bound(cnode, e.children[1], e.children[2], la, lb)
                    if hi is not None:
                        self.bounds[name] = hi
                    return Lin.sym(name)
                return a if isinstance(a, Tensor) else UNKNOWN
        return self.eval(e.children[1] if c else e.children[2])

    def _minmax_bound(self, cnode, tnode, fnode, la: Lin, lb: Lin) -> int | None:
        """Upper bound of ``x < y ? x : y`` (a min) or ``x > y ? x : y`` (a max)."""
        if not isinstance(cnode, Tree) or cnode.data not in ("bin_lt", "bin_le", "bin_gt", "bin_ge"):
            return None
        x, y = _src(cnode.children[0]), _src(cnode.children[1])
        t, f = _src(tnode), _src(fnode)
        is_min = (cnode.data in ("bin_lt", "bin_le") and (t, f) == (x, y)) or \
            (cnode.data in ("bin_gt", "bin_ge") and (t, f) == (y, x))
        is_max = (cnode.data in ("bin_gt", "bin_ge") and (t, f) == (x, y)) or \
            (cnode.data in ("bin_lt", "bin_le") and (t, f) == (y, x))
        ha, hb = self.upper(la), self.upper(lb)
        if is_min:
            known = [h for h in (ha, hb) if h is not None]
            return min(known) if known else None
        if is_max and ha is not None and hb is not None:
            return max(ha, hb)
        return None

    def _count(self, v) -> int | None:
        """An element count: its value, or the bound of a tail count such as min(64, n - r)."""
        iv = as_int(v)
        if iv is not None:
            return iv
        return self.upper(v) if isinstance(v, Lin) else None

    def upper(self, v: Lin) -> int | None:
        if v.is_const():
            return v.c
        if len(v.t) == 1 and v.t[0][1] == 1 and v.t[0][0] in self.bounds:
            return self.bounds[v.t[0][0]] + v.c
        return None

    def _short_circuit(self, e, stop: bool, op: str):
        """`a || b` (stop = True) and `a && b` (stop = False): `stop` decides, the other value passes."""
        a = self.cond_value(self.eval(e.children[0]), line_of(e), _src(e.children[0]))
        if a is stop:
            return stop
        b = self.cond_value(self.eval(e.children[1]), line_of(e), _src(e.children[1]))
        if a is (not stop):
            return b
        if b is stop:
            return stop
        if isinstance(a, Cond) and b is (not stop):
            return a
        return Cond(_src(e), False, op, (a, b))

    def e_lor(self, e):
        return self._short_circuit(e, True, "or")

    def e_land(self, e):
        return self._short_circuit(e, False, "and")

    def e_lnot(self, e):
        v = self.cond_value(self.eval(e.children[0]), line_of(e), _src(e.children[0]))
        return v.negate() if isinstance(v, Cond) else not v

    def e_neg(self, e):
        v = self.eval(e.children[0])
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        lv = Lin.of(v)
        return (-lv).simplify() if lv is not None else UNKNOWN

    def e_pos(self, e):
        return self.eval(e.children[0])

    def e_bnot(self, e):
        v = self.eval(e.children[0])
        return ~v if isinstance(v, int) else Lin.sym(fresh("~"))

    def e_deref(self, e):
        v = self.eval(e.children[0])
        return v if isinstance(v, (Obj, PipeObj, QueObj, TBufObj)) else UNKNOWN

    def e_addr(self, e):
        v = self.eval(e.children[0])
        if isinstance(v, Tensor):
            self._escape(v, line_of(e), "&")
        return v

    def e_sizeof_type(self, e):
        info = self.eval_type(e.children[0])
        s = self.size_of_type(info["tval"] or TypeVal(info["name"]))
        if info["ptr"]:
            return 8
        if s is None:
            cls = self.prog.classes.get(info["name"])
            return Lin.sym(f"sizeof({info['name']})") if cls is None else Lin.sym(f"sizeof({cls.name})")
        return s

    def e_sizeof_expr(self, e):
        v = self.eval(e.children[0])
        if isinstance(v, TypeVal):
            s = self.size_of_type(v)
            return s if s is not None else Lin.sym(f"sizeof({v.name})")
        return Lin.sym(f"sizeof({_src(e.children[0])})")

    def e_c_cast(self, e):
        info = self.eval_type(e.children[0])
        v = self.eval(e.children[1])
        return self._cast(info, v)

    def e_named_cast(self, e):
        tid = first_tree(e, "type_id")
        info = self.eval_type(tid)
        v = self.eval(e.children[-1])
        return self._cast(info, v)

    def _cast(self, info: dict, v):
        if info["ptr"]:
            if isinstance(v, GmPtr):
                e = self.size_of_type(info["tval"] or TypeVal(info["name"]))
                return GmPtr(v.root, v.off, e or 1)
            return v
        if isinstance(v, float) and info["name"] in SCALAR_SIZES and info["name"] not in (
                "float", "half", "double", "bfloat16_t"):
            return int(v)
        if isinstance(v, Cond) and info["name"] != "bool":
            return Lin.sym(fresh("cast"))
        return v

    def e_functional_cast(self, e):
        typ = e.children[0]
        args_node = e.children[1] if len(e.children) > 1 else None
        args = self.eval_args(args_node)
        info = self.eval_type(typ)
        if info["name"] in apis.STRUCT_FIELDS or info["name"].endswith("Params") or self._is_struct(info["name"]):
            return self.make_struct(info["name"], args)
        if info["name"] in self.prog.classes or info["name"] == "LocalTensor" and len(args) >= 2:
            # LocalTensor<T>(TPosition, addr, len) as a temporary (`auto t = LocalTensor<T>(...)`)
            return self.construct(info, args, "tmp", line_of(e))
        if len(args) == 1:
            return self._cast(info, args[0])
        return UNKNOWN

    def e_brace_temp(self, e):
        info = self.eval_type(e.children[0])
        args = self._init_items(e.children[1]) if len(e.children) > 1 and e.children[1] is not None else []
        if info["name"] in self.prog.classes and not self._is_struct(info["name"]):
            return self.construct(info, args, "tmp", line_of(e))
        return self.make_struct(info["name"], args)

    def e_comma(self, e):
        self.eval(e.children[0])
        return self.eval(e.children[1])

    def e_binop(self, e):
        a = self.eval(e.children[0])
        b = self.eval(e.children[1])
        if self.rings and e.data in ("bin_mod", "bin_band"):
            self._note_ring(e.data, e.children[0], as_int(a), as_int(b))
        return self.binop(e.data[4:], a, b, e)

    def _note_ring(self, op: str, left, x: int | None, m: int | None) -> None:
        """`k % m` (or `k & (m - 1)`) inside a loop: a ring of m slots, maybe, indexed by the
        counter k of a loop; that loop must run m + 1 laps for the first reuse of a slot to be
        seen. The loop is the innermost one whose counter the expression names (in the function
        that runs the loop), else, for a bare parameter of an inlined call (`Compute(k)` then
        `progress % 2`), the innermost outer loop whose counter has its value, else the innermost."""
        if m is None:
            return
        ring = m if op == "bin_mod" else m + 1 if m in (1, 3) else 0
        if not 2 <= ring <= MAX_RING:
            return
        depth = len(self.frames)
        names = {_id_name(n) for n in _subtrees(left, "id_expr")}
        own = [r for r in self.rings if r[3] == depth and r[0] in names]
        if not own and isinstance(left, Tree) and left.data == "id_expr" and x is not None:
            own = [r for r in self.rings if r[3] < depth and r[0] is not None and r[1] == x]
        r = (own or self.rings)[-1]
        # An index derived from the counter (a skewed loop's `k_b = k - lead`, lead 1 or 2) may lag
        # it: two laps more.
        bare = isinstance(left, Tree) and left.data == "id_expr" and _id_name(left) == r[0]
        r[2] = max(r[2], ring if bare else ring + 2)

    def binop(self, op: str, a, b, e=None):
        # pointer arithmetic on GM
        if isinstance(a, GmPtr) and op in ("add", "sub"):
            lb = Lin.of(b)
            if lb is None:
                return GmPtr(a.root, Lin.sym(fresh("gmoff")), a.elem)
            d = lb.scale(a.elem or 1)
            return GmPtr(a.root, a.off + d if op == "add" else a.off - d, a.elem)
        if isinstance(a, float) or isinstance(b, float):
            try:
                fa, fb = float(a), float(b)
            except (TypeError, ValueError):
                return Cond(_src(e)) if op in ("lt", "gt", "le", "ge", "eq", "ne") else UNKNOWN
            return _float_op(op, fa, fb)
        if isinstance(a, Enum) or isinstance(b, Enum):
            if op in ("eq", "ne") and isinstance(a, Enum) and isinstance(b, Enum):
                return (a.name == b.name) == (op == "eq")
            return Cond(_src(e)) if op in ("eq", "ne") else UNKNOWN
        if isinstance(a, Unk) and op in ("lt", "gt", "le", "ge", "eq", "ne"):
            a = Lin.sym(a.text)
        if isinstance(b, Unk) and op in ("lt", "gt", "le", "ge", "eq", "ne"):
            b = Lin.sym(b.text)
        la, lb = Lin.of(a), Lin.of(b)
        if self.known and la is not None and lb is not None:
            la, lb = la.subst(self.known), lb.subst(self.known)
        if la is None or lb is None:
            if op in ("lt", "gt", "le", "ge", "eq", "ne"):
                return Cond(_src(e) if e is not None else f"{text_of(a)} {op} {text_of(b)}")
            return UNKNOWN
        if la.is_const() and lb.is_const():
            return _int_op(op, la.c, lb.c)
        if op == "add":
            return (la + lb).simplify()
        if op == "sub":
            return (la - lb).simplify()
        if op == "mul":
            if lb.is_const():
                return la.scale(lb.c).simplify()
            if la.is_const():
                return lb.scale(la.c).simplify()
            return Lin.sym(f"({la.text()})*({lb.text()})")
        if op in ("div", "mod") and la.is_const() and la.c == 0:
            return 0
        if op in ("div", "mod") and lb.is_const() and lb.c > 0:
            # indices are non-negative: (k*x + c) / k == x + c / k when every coefficient divides
            if all(k % lb.c == 0 for _, k in la.t) and la.c >= 0:
                if op == "div":
                    return Lin(la.c // lb.c, tuple((s, k // lb.c) for s, k in la.t)).simplify()
                return la.c % lb.c
            return Lin.sym(f"({la.text()}){'/' if op == 'div' else '%'}{lb.c}")
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            d = la - lb
            if d.is_const():
                return _int_op(op, d.c, 0)
            single = len(d.t) == 1
            if single:
                sym, k = d.t[0]
                dec = self._by_range(op, sym, k, d.c)
                if dec is not None:
                    return dec
            # canonical text for one condition whatever its spelling
            if op in ("eq", "ne"):
                info = (d.t[0][0], d.t[0][1], d.c) if single else None
                c = Cond(f"{la.text()} == {lb.text()}", False, "eq" if info else None, info)
                return c if op == "eq" else c.negate()
            if op in ("lt", "ge"):
                info = (d.t[0][0], d.t[0][1], d.c) if single else None
                c = Cond(f"{la.text()} < {lb.text()}", False, "lt" if info else None, info)
                return c if op == "lt" else c.negate()
            info = (d.t[0][0], -d.t[0][1], -d.c) if single else None
            c = Cond(f"{lb.text()} < {la.text()}", False, "lt" if info else None, info)
            return c if op == "gt" else c.negate()
        return Lin.sym(f"({la.text()}){op}({lb.text()})")

    # -- assignment -------------------------------------------------------------------------------
    def e_assignment_eq(self, e):
        v = self.eval(e.children[1])
        self.store(e.children[0], v)
        return v

    def e_assignment_brace(self, e):
        args = self._init_items(e.children[1]) if len(e.children) > 1 and e.children[1] is not None else []
        cur = self.eval(e.children[0])
        v = self.make_struct(cur.type, args) if isinstance(cur, StructVal) else UNKNOWN
        self.store(e.children[0], v)
        return v

    def e_assignment(self, e):
        op = e.children[1].value[:-1]
        cur = self.eval(e.children[0])
        rhs = self.eval(e.children[2])
        opname = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "<<": "shl", ">>": "shr",
                  "&": "band", "|": "bor", "^": "bxor"}[op]
        v = self.binop(opname, cur, rhs, e)
        self.store(e.children[0], v)
        return v

    def _incdec(self, e, delta: int, post: bool):
        cur = self.eval(e.children[0])
        v = self.binop("add", cur, delta)
        self.store(e.children[0], v)
        return cur if post else v

    def e_preinc(self, e):
        return self._incdec(e, 1, False)

    def e_predec(self, e):
        return self._incdec(e, -1, False)

    def e_postinc(self, e):
        return self._incdec(e, 1, True)

    def e_postdec(self, e):
        return self._incdec(e, -1, True)

    def store(self, target, v) -> None:
        if isinstance(target, Tree) and target.data == "id_expr" and not tree_children(target, "scope"):
            name = _id_name(target)
            cur = None
            try:
                cur = self.lookup(name)
            except Exception:  # noqa: BLE001
                cur = None
            if isinstance(v, Tensor) and isinstance(cur, Tensor):
                v = Tensor(v.kind, v.root, v.start, v.elem if v.elem else cur.elem, v.size, cur.name, v.dtype, v.que,
                           v.buf_index, v.foreign)
            self.assign_name(name, v)
            return
        if isinstance(target, Tree) and target.data in ("member", "member_ptr"):
            obj = self.eval(target.children[0])
            fname = tok_children(target.children[1], "NAME", "TNAME", "CTORNAME")[0].value
            if isinstance(obj, Obj):
                obj.fields[fname] = v
            elif isinstance(obj, StructVal):
                obj.fields[apis.FIELD_ALIASES.get(fname, fname)] = v
            return
        if isinstance(target, Tree) and target.data == "index":
            base = self.eval(target.children[0])
            idx = as_int(self.eval(target.children[1]))
            if isinstance(base, ArrayVal):
                if idx is not None:
                    base.items[idx] = v
                else:
                    base.items.clear()
            return
        if isinstance(target, Tree) and target.data == "call":
            # tensor(i) = v  -> SetValue
            callee = target.children[0]
            base = self.eval(callee)
            if isinstance(base, Tensor):
                args = self.eval_args(target.children[1] if len(target.children) > 1 else None)
                self._scalar_access(base, args[0] if args else 0, "W", "operator()", line_of(target))
            return
        if isinstance(target, Tree) and target.data == "deref":
            return

    # -- postfix ------------------------------------------------------------------------------------
    def e_index(self, e):
        base = self.eval(e.children[0])
        idx = self.eval(e.children[1])
        if isinstance(base, Tensor):
            return base.view(idx, base.name)
        if isinstance(base, ArrayVal):
            i = as_int(idx)
            if i is not None and i in base.items:
                return base.items[i]
            return Lin.sym(fresh(f"{base.name}[]"))
        if isinstance(base, GmPtr):
            return UNKNOWN
        return UNKNOWN

    def e_member(self, e):
        obj = self.eval(e.children[0])
        fname = tok_children(e.children[1], "NAME", "TNAME", "CTORNAME")[0].value
        v = self._member_get(obj, fname)
        return v if v is not None else UNKNOWN

    e_member_ptr = e_member

    def _member_get(self, obj, name: str, quiet: bool = False):
        if isinstance(obj, Obj):
            if name in obj.fields:
                return obj.fields[name]
            v = self._class_static(obj.cls, name) if not quiet else None
            if v is None and quiet:
                return self._class_static_quiet(obj.cls, name)
            return v
        if quiet:
            return None
        if isinstance(obj, StructVal):
            return obj.get(apis.FIELD_ALIASES.get(name, name))
        if isinstance(obj, Unk):
            return Lin.sym(f"{obj.text}.{name}")
        if isinstance(obj, Lin) and not obj.is_const():
            return Lin.sym(f"{obj.text()}.{name}")
        return UNKNOWN

    def _class_static_quiet(self, cls: ClassDef, name: str):
        for _specs, _dtype, decl in cls.fields:
            if tok_children(decl, "NAME")[0].value == name:
                return self._class_static(cls, name)
        if name in cls.enums:
            return self._enum_value(name, cls.enums[name])
        return None

    def eval_args(self, node) -> list:
        if node is None:
            return []
        out = []
        for c in node.children:
            if not isinstance(c, Tree) and not isinstance(c, Token):
                continue
            if isinstance(c, Tree) and c.data == "braced_arg":
                out.append(("braced", self._init_items(c)))
            else:
                out.append(self.eval(c))
        return out

    # =========================================================================================
    # calls
    # =========================================================================================
    def e_call(self, e):
        callee = e.children[0]
        args_node = e.children[1] if len(e.children) > 1 else None
        line = line_of(e)
        arg_nodes = [c for c in (args_node.children if args_node is not None else []) if isinstance(c, (Tree, Token))]
        if isinstance(callee, Tree) and callee.data in ("id_expr", "global_id"):
            scopes = [tok_children(c, "NAME", "TNAME")[0].value for c in tree_children(callee, "scope")]
            name = tok_children(callee, "NAME", "CTORNAME")[0].value
            targs_node = first_tree(callee, "targs")
            targs = self.eval_targs(targs_node) if targs_node is not None else []
            return self.call_named(name, scopes, targs, arg_nodes, line, e)
        if isinstance(callee, Tree) and callee.data in ("member", "member_ptr"):
            obj = self.eval(callee.children[0])
            mn = callee.children[1]
            mname = tok_children(mn, "NAME", "TNAME", "CTORNAME")[0].value if mn.data == "member_name" else "~"
            targs_node = first_tree(mn, "targs")
            targs = self.eval_targs(targs_node) if targs_node is not None else []
            return self.call_method(obj, mname, targs, arg_nodes, line, _src(callee.children[0]))
        base = self.eval(callee)
        args = [self.eval(a) for a in arg_nodes]
        if isinstance(base, Tensor):
            # tensor(i): a scalar read (an assignment target is handled by store())
            return self._scalar_access(base, args[0] if args else 0, "R", "operator()", line)
        for a in args:
            if isinstance(a, Tensor):
                self._escape(a, line, "call")
        return UNKNOWN

    def call_named(self, name: str, scopes: list[str], targs: list, arg_nodes: list, line: int, node: Tree):
        user = scopes[-1] not in ("AscendC", "std", "Std") if scopes else True
        # a method of the current class (called without this->)
        fr = self.frame
        if user and fr.this is not None and not scopes:
            f = self._find_method(fr.this.cls, name, len(arg_nodes))
            if f is not None:
                return self.call_function(f, [self._eval_arg(a) for a in arg_nodes], targs, this=fr.this, line=line,
                                          arg_nodes=arg_nodes)
        if scopes and scopes[-1] in self.prog.classes and fr.this is not None:
            f = self._find_method(self.prog.classes[scopes[-1]], name, len(arg_nodes))
            if f is not None:
                return self.call_function(f, [self._eval_arg(a) for a in arg_nodes], targs, this=fr.this, line=line,
                                          arg_nodes=arg_nodes)
        if user and name in self.prog.functions:
            f = self._pick(self.prog.functions[name], len(arg_nodes))
            if f is not None and f.body is not None:
                return self.call_function(f, [self._eval_arg(a) for a in arg_nodes], targs, line=line,
                                          arg_nodes=arg_nodes)
        if name in self.prog.classes or name == "LocalTensor" and len(arg_nodes) >= 2:
            info = {"name": name, "targs": targs, "ptr": 0, "ref": False, "gm": False, "tval": None}
            return self.construct(info, [self._eval_arg(a) for a in arg_nodes], "tmp", line)
        args = [self._eval_arg(a) for a in arg_nodes]
        texts = [_src(a) for a in arg_nodes]
        return self.api_call(name, targs, args, texts, line)

    def _eval_arg(self, a):
        if isinstance(a, Tree) and a.data == "braced_arg":
            return ("braced", self._init_items(a))
        return self.eval(a)

    def _find_method(self, cls: ClassDef, name: str, nargs: int) -> FuncDef | None:
        if name in cls.methods:
            f = self._pick(cls.methods[name], nargs)
            if f is not None:
                return f
        for b in cls.bases:
            bn = self._type_name(b) if b is not None else None
            if bn in self.prog.classes and bn != cls.name:
                f = self._find_method(self.prog.classes[bn], name, nargs)
                if f is not None:
                    return f
        return None

    @staticmethod
    def _pick(fs: list[FuncDef], nargs: int) -> FuncDef | None:
        best = None
        for f in fs:
            req = sum(1 for p in f.params if p.data == "param" and p.children[-1] is None)
            if req <= nargs <= len(f.params) or (nargs == 0 and not f.params):
                if f.body is not None:
                    return f
                best = best or f
        if best is None:
            with_body = [f for f in fs if f.body is not None]
            best = with_body[0] if len(with_body) == 1 else None
        return best

    def call_function(self, f: FuncDef, args: list, targs: list, this: Obj | None = None, line: int = 0,
                      arg_nodes: list | None = None):
        key = f"{f.cls.name + '::' if f.cls else ''}{f.name}"
        if len(self.frames) > MAX_CALL_DEPTH or self.call_stack.count(key) >= 3:
            self.notes.add(f"calls of {key} nested too deep: not followed")
            return UNKNOWN
        tbind = dict(this.tbind) if this is not None else {}
        for i, (nm, _kind, default) in enumerate(f.tparams):
            if i < len(targs):
                tbind[nm] = targs[i]
            elif default is not None:
                tbind[nm] = self.eval(default) if default.data != "type_id" else \
                    TypeVal(self.eval_type(default)["name"])
        frame = Frame([{}], this, tbind, f.cls or (this.cls if this else None), f)
        # bind parameters (types are evaluated in the callee's frame for template names)
        self.frames.append(frame)
        try:
            for i, p in enumerate(f.params):
                pname, ptype = self._param_name_type(p)
                if i < len(args):
                    v = args[i]
                    self._deduce(f, ptype, v, frame)
                else:
                    default = p.children[-1] if p.data == "param" else None
                    v = self.eval(default) if isinstance(default, Tree) else UNKNOWN
                if pname is not None:
                    if isinstance(v, StructVal) and not ptype.get("ref") and not ptype.get("ptr"):
                        v = StructVal(v.type, dict(v.fields), v.prefix)
                    if isinstance(v, tuple) and v and v[0] == "braced":
                        v = self.construct(ptype, v[1], pname, line)
                    frame.scopes[0][pname] = v
            self.call_stack.append(key)
            try:
                if f.is_ctor and f.ctor_inits is not None and this is not None:
                    for ci in tree_children(f.ctor_inits, "ctor_init"):
                        fname = tok_children(ci, "NAME", "TNAME")[0].value
                        vals = [self._eval_arg(a) for a in (first_tree(ci, "args").children
                                                           if first_tree(ci, "args") is not None else [])
                                if isinstance(a, (Tree, Token))]
                        if len(vals) == 1:
                            this.fields[fname] = vals[0]
                self.exec_block(f.body.children if f.body is not None else [], new_scope=False)
            except ReturnSig as r:
                return r.value
            finally:
                self.call_stack.pop()
        finally:
            self.frames.pop()
        return None

    def _deduce(self, f: FuncDef, ptype: dict, v, frame: Frame) -> None:
        names = {nm for nm, kind, _ in f.tparams if kind == "type"}
        if not names:
            return
        tn = ptype["name"]
        if ptype.get("tval") is not None:
            tn = ptype["tval"].name
        if tn in names and frame.tbind.get(tn) is None:
            if isinstance(v, float):
                frame.tbind[tn] = TypeVal("float")
        for ta in ptype.get("targs", []):
            if isinstance(ta, TypeVal) and ta.name in names and isinstance(v, Tensor) and v.dtype != "?":
                cur = frame.tbind.get(ta.name)
                if cur is None or (isinstance(cur, TypeVal) and cur.size is None):
                    frame.tbind[ta.name] = TypeVal(v.dtype)

    # -- methods of API objects ----------------------------------------------------------------------
    def call_method(self, obj, name: str, targs: list, arg_nodes: list, line: int, objtext: str):
        if isinstance(obj, Obj):
            f = self._find_method(obj.cls, name, len(arg_nodes))
            if f is not None:
                return self.call_function(f, [self._eval_arg(a) for a in arg_nodes], targs, this=obj, line=line,
                                          arg_nodes=arg_nodes)
            for a in arg_nodes:
                self.eval(a)
            return UNKNOWN
        args = [self._eval_arg(a) for a in arg_nodes]
        if isinstance(obj, Tensor):
            return self.tensor_method(obj, name, targs, args, line)
        if isinstance(obj, QueObj):
            return self.que_method(obj, name, targs, args, line)
        if isinstance(obj, TBufObj):
            return self.tbuf_method(obj, name, targs, args, line)
        if isinstance(obj, PipeObj):
            return self.pipe_method(obj, name, targs, args, line)
        if isinstance(obj, AllocObj):
            return self.alloc_method(obj, name, targs, args, line)
        if isinstance(obj, QueSyncObj):
            if name in ("SetFlag", "WaitFlag") and args:
                self.flag_op(name, obj.src, obj.dst, args[0], _src(arg_nodes[0]) if arg_nodes else "?", line)
            return None
        for a in args:
            if isinstance(a, Tensor):
                self._escape(a, line, f"{objtext}.{name}")
        return UNKNOWN

    def tensor_method(self, t: Tensor, name: str, targs: list, args: list, line: int):
        if name == "SetGlobalBuffer" and t.kind == "G":
            ptr = args[0] if args else None
            if isinstance(ptr, GmPtr):
                t.root = ("GM", ptr.root)
                t.start = ptr.off
                n = Lin.of(args[1]) if len(args) > 1 else None
                t.size = n.scale(t.elem) if n is not None and t.elem else None
            else:
                t.root = ("GM", fresh("gm"))
                t.start = Lin(0)
            return None
        if name == "GetValue":
            return self._scalar_access(t, args[0] if args else 0, "R", "GetValue", line)
        if name == "SetValue":
            self._scalar_access(t, args[0] if args else 0, "W", "SetValue", line)
            return None
        if name == "ReinterpretCast":
            e = self.size_of_type(targs[0]) if targs else None
            return Tensor(t.kind, t.root, t.start, e, t.size, t.name, _tname(targs), t.que, t.buf_index, t.foreign)
        if name in ("GetPhyAddr",):
            self._escape(t, line, "GetPhyAddr")
            return Unk(fresh(f"{t.name}.GetPhyAddr()"))
        if name in ("GetSize", "GetLength", "GetPosition", "GetUserTag", "GetBufferHandle"):
            return Lin.sym(f"{t.name}.{name}()")
        if name in ("SetSize", "SetUserTag", "SetBufferLen", "SetShapeInfo", "SetL2CacheHint", "SetAddrWithOffset"):
            if name == "SetSize" and args:
                n = Lin.of(args[0])
                if n is not None and t.elem:
                    t.size = n.scale(t.elem)
            return None
        return UNKNOWN

    def _scalar_access(self, t: Tensor, idx, kind: str, op: str, line: int):
        v = t.view(idx)
        reg = self._region(v, ((0, t.elem),) if t.elem else None)
        if reg is not None:
            # GlobalTensor::SetValue is not among the calls auto-sync covers (sync key-features page)
            ok = not (t.kind == "G" and kind == "W")
            if kind == "R":
                self.m.access("S", op, line, [reg], [], auto_ok=ok)
            else:
                self.m.access("S", op, line, [], [reg], auto_ok=ok)
        return Lin.sym(fresh(f"{t.name}.GetValue")) if kind == "R" else None

    def _escape(self, t: Tensor, line: int, how: str) -> None:
        """A tensor handed to code the checker does not model: an unknown access (pipe '?')."""
        reg = self._region(t, None)
        if reg is not None and reg.root[0] != "GM":
            self.m.access("?", how, line, [], [reg])

    def que_method(self, q: QueObj, name: str, targs: list, args: list, line: int):
        pipes = apis.queue_pipes(q.pos, q.pos2)
        if name == "AllocTensor":
            e = self.size_of_type(targs[0]) if targs else None
            q.allocs += 1
            if q.num is None or q.base is None:
                idx = None
                start = Lin.sym(fresh(f"{q.name}.buf"))
            else:
                if not q.free:
                    self.m.report(line, "warning", "queue-exhausted",
                                  f"{q.name}.AllocTensor() while all {q.num} buffer(s) of the queue are in use "
                                  "(allocated and not freed): it would wait forever; FreeTensor a buffer first")
                    q.free = list(range(q.num))
                idx = q.free.pop(0)
                start = q.base + (q.length.scale(idx) if q.length is not None else Lin.sym(fresh("qlen")))
            if idx is not None and idx in q.pending_free and pipes:
                for a in q.pending_free.pop(idx):
                    a.done_for.add(pipes[0])
            size = q.length
            return self._local(q.mem, start, e, size, f"{q.name} buffer", _tname(targs), que=q, idx=idx)
        if name == "EnQue":
            t = args[0] if args else None
            cap = self.m._complete_on(pipes[0]) if pipes else []
            q.fifo.append((t, cap))
            return True
        if name == "DeQue":
            if not q.fifo:
                self.m.report(line, "error", "deque-empty",
                              f"{q.name}.DeQue() on an empty queue (no EnQue before it on this path){self.path_note()}")
                e = self.size_of_type(targs[0]) if targs else None
                return self._local(q.mem, Lin.sym(fresh(q.name)), e, None, f"{q.name} buffer", _tname(targs), que=q)
            t, cap = q.fifo.pop(0)
            if pipes:
                for a in cap:
                    a.done_for.add(pipes[1])
            if isinstance(t, Tensor) and targs:
                e = self.size_of_type(targs[0])
                if e:
                    t = Tensor(t.kind, t.root, t.start, e, t.size, t.name, _tname(targs), t.que, t.buf_index, t.foreign)
            return t
        if name == "FreeTensor":
            t = args[0] if args else None
            if isinstance(t, Tensor) and t.buf_index is not None and t.que is q:
                if pipes:
                    q.pending_free[t.buf_index] = self.m._complete_on(pipes[1])
                if t.buf_index not in q.free:
                    q.free.append(t.buf_index)
            return None
        if name in ("VacantInQue", "HasTensorInQue", "HasIdleBuffer"):
            return Cond(fresh(f"{q.name}.{name}"))
        return UNKNOWN

    def tbuf_method(self, b: TBufObj, name: str, targs: list, args: list, line: int):
        e = self.size_of_type(targs[0]) if targs else None
        base = b.base if b.base is not None else Lin.sym(fresh(f"{b.name}.base"))
        if name == "Get":
            size = b.size
            if args:
                n = Lin.of(args[0])
                size = n.scale(e) if n is not None and e else None
            return self._local(b.mem, base, e, size, b.name, _tname(targs))
        if name == "GetWithOffset":
            n = Lin.of(args[0]) if args else None
            off = Lin.of(args[1]) if len(args) > 1 else Lin(0)
            if off is None:
                off = Lin.sym(fresh("off"))
            size = n.scale(e) if n is not None and e else None
            return self._local(b.mem, base + off, e, size, b.name, _tname(targs))
        return UNKNOWN

    def pipe_method(self, p: PipeObj, name: str, targs: list, args: list, line: int):
        if name == "InitBufPool" and args and isinstance(args[0], PipeObj):
            pool = args[0]
            size = Lin.of(args[1]) if len(args) > 1 else None
            mem = pool.mem or "UB"
            if len(args) > 2 and isinstance(args[2], PipeObj):
                pool.base = args[2].base  # shares the space of another pool
            else:
                pool.base = self._pipe_alloc(p, mem, size)
            pool.size = size
            pool.next = {mem: pool.base if pool.base is not None else Lin.sym(fresh("pool"))}
            return None
        if name == "InitBuffer" and args:
            obj = args[0]
            if isinstance(obj, QueObj):
                p.queues.append(obj)
                num = as_int(args[1]) if len(args) > 1 else None
                ln = Lin.of(args[2]) if len(args) > 2 else None
                align = MEM_ALIGN.get(obj.mem, 32)
                ln_al = Lin(-(-ln.c // align) * align) if ln is not None and ln.is_const() else ln
                obj.num, obj.length = num, ln_al
                obj.base = self._pipe_alloc(p, obj.mem, ln_al.scale(num) if ln_al is not None and num else None)
                obj.free = list(range(num)) if num else []
            elif isinstance(obj, TBufObj):
                ln = Lin.of(args[1]) if len(args) > 1 else None
                align = MEM_ALIGN.get(obj.mem, 32)
                ln_al = Lin(-(-ln.c // align) * align) if ln is not None and ln.is_const() else ln
                obj.base = self._pipe_alloc(p, obj.mem, ln_al)
                obj.size = ln
            return None
        if name == "Destroy":
            self.m.barrier("ALL")
            return None
        if name == "Reset":
            # waits for the pending FreeTensor events of its queues (the buffers are free again)
            for q in p.queues:
                pipes = apis.queue_pipes(q.pos, q.pos2)
                for idx, cap in list(q.pending_free.items()):
                    if pipes:
                        for a in cap:
                            a.done_for.add(pipes[0])
                    del q.pending_free[idx]
                q.free = list(range(q.num)) if q.num else []
                q.fifo.clear()
            return None
        if name in ("AllocEventID", "FetchEventID"):
            return Lin.sym(f"eventID@{line}")
        if name in ("ReleaseEventID",):
            return None
        return UNKNOWN

    def _pipe_alloc(self, p: PipeObj, mem: str, size: Lin | None) -> Lin:
        cur = p.next.get(mem, Lin(0))
        p.next[mem] = (cur + size) if size is not None else Lin.sym(fresh(f"{mem}.next"))
        return cur

    def alloc_method(self, a: AllocObj, name: str, targs: list, args: list, line: int):
        if name != "Alloc":
            return UNKNOWN if name != "GetCurAddr" else a.head
        ts = [t for t in targs if isinstance(t, TypeVal)]
        e = self.size_of_type(ts[0]) if ts else None
        vals = [t for t in targs if not isinstance(t, (TypeVal, Enum))]
        n = Lin.of(vals[0]) if vals else (Lin.of(args[0]) if args else None)
        size = n.scale(e) if n is not None and e else None
        start = a.head
        if size is not None and size.is_const():
            a.head = a.head + Lin(-(-size.c // 32) * 32)
        elif size is not None:
            a.head = a.head + size
        else:
            a.head = Lin.sym(fresh("alloc"))
        return self._local(a.mem, start, e, size, "tensor", _tname(ts))

    def _local(self, mem: str, start: Lin, e, size, name: str, dtype: str = "?", que=None, idx=None) -> Tensor:
        foreign = mem in MEM_CORE and MEM_CORE[mem] != self.core
        return Tensor("L", (mem,), start, e, size, name, dtype, que, idx, foreign)

    # =========================================================================================
    # the API
    # =========================================================================================
    def api_call(self, name: str, targs: list, args: list, texts: list, line: int):
        if name in ("SetFlag", "WaitFlag"):
            ev = targs[0] if targs else None
            evname = ev.name if isinstance(ev, Enum) else None
            pp = apis.event_pipes(evname) if evname else None
            if pp is None:
                self.m.report(line, "error", "bad-event", f"{name}: '{text_of(ev)}' is not a HardEvent SRC_DST of "
                              "known pipes (S, V, M, MTE1, MTE2, MTE3, FIX)")
                return None
            self.flag_op(name, pp[0], pp[1], args[0] if args else 0, texts[0] if texts else "0", line)
            return None
        if name == "PipeBarrier":
            p = targs[0] if targs else None
            pipe = p.name if isinstance(p, Enum) and p.kind == "pipe" else None
            if pipe is None:
                self.m.report(line, "error", "bad-pipe", f"PipeBarrier: '{text_of(p)}' is not a PIPE_X")
                return None
            if pipe == "S":
                self.m.report(line, "warning", "barrier-s",
                              "PipeBarrier<PIPE_S> is not supported (the scalar pipe is ordered by the hardware); "
                              "remove it")
                return None
            if pipe == "ALL" and self.m.loop_depth > 0:
                self.m.report(line, "warning", "pipe-all-in-loop",
                              "PipeBarrier<PIPE_ALL> inside a loop drains every pipe on each iteration (no overlap "
                              "between copies and compute); order only the dependent ops with "
                              "SetFlag/WaitFlag or a single-pipe barrier")
            if pipe != "ALL" and pipe != "S" and not self.m.pipe_on_core(pipe):
                self.m.report(line, "error", "pipe-not-on-core",
                              f"PipeBarrier<PIPE_{pipe}> on the {self.core}, which has no PIPE_{pipe}")
                return None
            self.m.barrier(pipe)
            return None
        if name in ("CrossCoreSetFlag", "CrossCoreWaitFlag"):
            self.cross_core(name, targs, args, texts, line)
            return None
        if name in apis.BARRIER_CALLS:
            for a in args:
                if isinstance(a, Tensor) and a.kind == "L":
                    self._escape(a, line, name)
            self.m.barrier("ALL")
            return None
        if name in ("Lock", "Unlock"):
            p = targs[0] if targs else None
            pipe = p.name if isinstance(p, Enum) and p.kind == "pipe" else None
            if pipe is not None:
                self.mutex_op(name, pipe, args[0] if args else 0, texts[0] if texts else "?", line)
            return None
        if name == "REGIST_MATMUL_OBJ" and self.core == "AIC":
            # the high-level Matmul API: the Cube core serves Matmul requests inside this macro and
            # does not come back to the kernel's code (SIMD-BuiltIn keywords page)
            raise ReturnSig(None)
        if name in ("AllocMutexID",):
            return Lin.sym(f"mutexID@{line}#{self.steps}")
        if name in ("ReleaseMutexID",):
            return None
        if name == "SyncAll":
            self.m.barrier("ALL")
            self.m.xevents.append(("syncall", None, None, None, line))
            return None
        if name == "GetSubBlockIdx":
            return self.sub
        if name == "GetTaskRation":
            return self.ratio
        if name in ("GetBlockIdx", "GetCurrentBlockIdx"):
            # one symbol for the block on every core of a mix kernel, so the AIC's and the AIVs'
            # workspace offsets compare: the AIV's index is ratio * block + sub-block
            if self.mix and self.core == "AIV":
                return (Lin.sym("block").scale(self.ratio) + Lin(self.sub)).simplify()
            return Lin.sym("block")
        if name in apis.PURE_UNKNOWN:
            return Lin.sym(f"{name}()")
        if name == "GetTPipePtr":
            return self.pipes[-1] if self.pipes else UNKNOWN
        if name in ("min", "max") and len(args) == 2:
            a, b = as_int(args[0]), as_int(args[1])
            if a is not None and b is not None:
                return min(a, b) if name == "min" else max(a, b)
            return Lin.sym(fresh(name))
        if name in ("assert", "ascendc_assert", "ASSERT", "ASCENDC_ASSERT") and args and args[0] is False:
            raise PathCut()  # assert(false): this configuration stops the kernel here
        if name in apis.CONFIG_CALLS:
            return None
        if name in apis.COPY_CALLS:
            return self.op_copy(name, targs, args, line)
        if name in apis.LOAD_CALLS:
            return self.op_load(name, targs, args, line)
        if name in apis.CUBE_CALLS:
            return self.op_mmad(name, args, line)
        if name in apis.FIX_CALLS:
            return self.op_fixpipe(name, args, line)
        if name in apis.S_PIPE_CALLS:
            for a in args:
                if isinstance(a, Tensor):
                    reg = self._region(a, None)
                    if reg is not None:
                        self.m.access("S", name, line, [reg], [])
            return Lin.sym(fresh(name))
        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.kind == "L"]
        if tensors and tensors[0] == 0:
            return self.op_vector(name, targs, args, line)
        for a in args:
            if isinstance(a, Tensor):
                self._escape(a, line, name)
        return Lin.sym(fresh(name))

    # -- flags ------------------------------------------------------------------------------------
    def flag_op(self, name: str, src: str, dst: str, ident, id_text: str, line: int) -> None:
        for p in (src, dst):
            if not self.m.pipe_on_core(p):
                self.m.report(line, "error", "event-not-on-core",
                              f"{name}<HardEvent::{src}_{dst}> on the {self.core}: PIPE_{p} is not a pipe of this "
                              f"core ({'S, V, MTE2, MTE3' if self.core == 'AIV' else 'S, MTE1, MTE2, MTE3, M, FIX'}); "
                              "data between the Cube and Vector cores is ordered with CrossCoreSetFlag/"
                              "CrossCoreWaitFlag")
                return
        iv = as_int(ident)
        if iv is not None:
            if iv < 0 or iv > 7:
                self.m.report(line, "error", "event-id-range",
                              f"{name}<HardEvent::{src}_{dst}>({id_text}): event id {iv} is out of range (0-7)")
                return
            if iv in (6, 7):
                self.m.report(line, "warning", "event-id-reserved",
                              f"{name}<HardEvent::{src}_{dst}>({id_text}): event id {iv} is reserved "
                              + ("for the system" if iv == 6 else "for the TPipe framework's automatic sync")
                              + " (the SetFlag/WaitFlag page recommends ids 0-5)")
            key = iv
        else:
            key = text_of(ident) if not isinstance(ident, Lin) else ident.text()
        if name == "SetFlag":
            self.m.set_flag(src, dst, key, id_text, line)
        else:
            self.m.wait_flag(src, dst, key, id_text, line, self.path_note())

    def mutex_op(self, name: str, pipe: str, ident, id_text: str, line: int) -> None:
        """Mutex::Lock<P>(id) / Unlock<P>(id) (dav-3510): Unlock releases the mutex once P's earlier
        ops are done; a later Lock<Q> holds Q until then."""
        if self.arch == "dav-c220":
            self.m.report(line, "error", "mutex-arch", f"Mutex::{name} is supported on dav-3510 only (the Lock/Unlock "
                          "pages list no A2/A3 support); use SetFlag/WaitFlag")
            return
        iv = as_int(ident)
        key = iv if iv is not None else text_of(ident)
        if iv is not None and not 0 <= iv <= 31:
            self.m.report(line, "error", "mutex-id", f"Mutex::{name}({id_text}): MutexID {iv} is out of range (0-31)")
            return
        self.m.mutex(name, pipe, key, id_text, line)

    def cross_core(self, name: str, targs: list, args: list, texts: list, line: int) -> None:
        mode = as_int(targs[0]) if targs else None
        pipe = targs[1].name if len(targs) > 1 and isinstance(targs[1], Enum) else None
        ident = args[0] if args else None
        iv = as_int(ident)
        idt = texts[0] if texts else "?"
        setter = name == "CrossCoreSetFlag"
        if setter and (mode is None or pipe is None):
            self.m.report(line, "error", "cross-core-args", f"{name} needs <modeId, pipe> template arguments")
            return
        if mode is not None and mode not in (0, 1, 2, 4):
            self.m.report(line, "error", "cross-core-mode", f"{name}<{mode}, ...>: mode {mode} does not exist "
                          "(modes 0, 1, 2 and, on dav-3510, 4)")
            return
        if mode == 4 and self.arch == "dav-c220":
            self.m.report(line, "error", "cross-core-mode",
                          f"{name}<4, ...>: mode 4 (AIC <-> one AIV) exists only on dav-3510 (Ascend 950); "
                          "on dav-c220 use mode 2")
            return
        eff_mode = mode if (mode == 4 and self.arch != "dav-c220") else (mode if setter else None)
        if pipe is not None and setter or (pipe is not None and self.arch != "dav-c220"):
            if pipe == "ALL" or (pipe == "S" and mode != 4):
                self.m.report(line, "error", "cross-core-pipe",
                              f"{name}<{mode}, PIPE_{pipe}>: PIPE_{pipe} is not allowed for mode {mode}")
            elif not self.m.pipe_on_core(pipe):
                self.m.report(line, "error", "cross-core-pipe",
                              f"{name}<{mode}, PIPE_{pipe}> on the {self.core}, which has no PIPE_{pipe}")
        if iv is not None:
            if mode == 4 and self.arch != "dav-c220":
                ok = (0 <= iv <= 10) or (self.core == "AIC" and 16 <= iv <= 26)
                if not ok:
                    self.m.report(line, "error", "cross-core-id",
                                  f"{name}<4, ...>({idt}): flag id {iv} is out of range for mode 4 "
                                  f"({'0-10 (AIV0) and 16-26 (AIV1)' if self.core == 'AIC' else '0-10'})")
                    return
            elif not 0 <= iv <= 15:
                self.m.report(line, "error", "cross-core-id",
                              f"{name}({idt}): flag id {iv} is out of range (0-15 for modes 0-2; the hardware "
                              f"keeps only the low 4 bits, so this is id {iv & 15})")
                iv &= 15
        key = iv if iv is not None else text_of(ident)
        self.m.xevents.append(("set" if setter else "wait", eff_mode if setter else (4 if mode == 4 and
                                                                                      self.arch != "dav-c220"
                                                                                      else None),
                               pipe, key, line))
        if setter:
            self.m.cross_set(pipe)
        else:
            # dav-c220 ignores the wait's pipe and blocks every pipe; dav-3510 blocks the given one
            # (PIPE_S, the default, stops the scalar unit: everything after it)
            if self.arch == "dav-c220" or pipe in (None, "S", "ALL"):
                blocked = apis.ALL_PIPES
            else:
                blocked = frozenset({pipe})
            self.m.cross_wait(blocked)

    # -- regions ------------------------------------------------------------------------------------
    def _region(self, t: Tensor, fp, sub: int | None = None) -> Region | None:
        """``sub``: the AIV whose UB a foreign UB tensor names (default: the op's target_sub)."""
        if t.root is None:
            return None
        if t.foreign:
            # the other core's memory: named as both cores see it
            sub = self.target_sub if sub is None else sub
            root = ("UB@AIV", sub) if t.root == ("UB",) else ("L1@AIC",) if t.root == ("L1",) else None
            if root is None:
                return None
            return Region(root, t.start, fp, t.size, t.name)
        return Region(t.root, t.start, fp, t.size, t.name)

    def _record(self, pipe: str, op: str, line: int, reads: list, writes: list, maybe_reads: list = ()) -> None:
        """reads/writes: [(tensor, footprint)]; a write may name the AIV of a foreign UB tensor as a
        third item (a dual-destination Fixpipe writes both)."""
        rr, ww, mr = [], [], []
        for t, fp in reads:
            reg = self._region(t, fp)
            if reg is not None:
                rr.append(reg)
        for t, fp in maybe_reads:
            reg = self._region(t, fp)
            if reg is not None:
                mr.append(reg)
        for t, fp, *sub in writes:
            if t.foreign and t.root is not None:
                self.m.foreign_writes.append(Region(t.root, t.start, fp, t.size, t.name))
            reg = self._region(t, fp, *sub)
            if reg is not None:
                ww.append(reg)
        if pipe != "?" and not self.m.pipe_on_core(pipe):
            self.m.report(line, "error", "op-not-on-core", f"'{op}' runs on PIPE_{pipe}, which the {self.core} "
                          "does not have (a Cube op on the Vector core or the reverse)")
            return
        self.m.access(pipe, op, line, rr, ww, mr)

    # -- ops ----------------------------------------------------------------------------------------
    def op_copy(self, name: str, targs: list, args: list, line: int):
        if len(args) < 2 or not isinstance(args[0], Tensor) or not isinstance(args[1], Tensor):
            for a in args:
                if isinstance(a, Tensor):
                    self._escape(a, line, name)
            return None
        dst, src = args[0], args[1]
        sm, dm = src.mem(), dst.mem()
        self.target_sub = 0
        if name == "Copy":
            pipe = "V"
        else:
            pipe = apis.copy_pipe(sm, dm, self.arch)
        if pipe is None:
            self.m.report(line, "error", "bad-path", f"{name}: no data path from {sm} to {dm}")
            return None
        fps, fpd = None, None
        p = args[2] if len(args) > 2 else None
        es, ed = src.elem or 1, dst.elem or 1
        if isinstance(p, (int, Lin)) and not isinstance(p, bool) and self._count(p) is not None and name != "Copy":
            n = self._count(p)
            fps, fpd = ((0, n * es),), ((0, n * ed),)
        elif isinstance(p, StructVal):
            if p.type == "Nd2NzParams":
                fpd = apis.fp_nd2nz_dst(_ints(p, apis.STRUCT_FIELDS["Nd2NzParams"], self.bounds), ed)
                fps = apis.fp_nd2nz_src(_ints(p, apis.STRUCT_FIELDS["Nd2NzParams"], self.bounds), es)
            elif p.type == "Dn2NzParams":
                fpd = apis.fp_dn2nz_dst(_ints(p, apis.STRUCT_FIELDS["Dn2NzParams"], self.bounds), ed)
                fps = apis.fp_dn2nz_src(_ints(p, apis.STRUCT_FIELDS["Dn2NzParams"], self.bounds), es)
            elif p.type in ("DataCopyParams", "DataCopyExtParams"):
                ext = p.type == "DataCopyExtParams" or name == "DataCopyPad"
                pad = args[3] if len(args) > 3 and isinstance(args[3], StructVal) else None
                fields = _ints(p, apis.STRUCT_FIELDS["DataCopyExtParams"], self.bounds)
                padf = _ints(pad, apis.STRUCT_FIELDS["DataCopyPadExtParams"], self.bounds) if pad else None
                fps = apis.fp_copy_params(fields, "src", ext, es, sm, dm)
                fpd = apis.fp_copy_params(fields, "dst", ext, ed, sm, dm, padf)
        self._record(pipe, name, line, [(src, fps)], [(dst, fpd)])
        return None

    def op_load(self, name: str, targs: list, args: list, line: int):
        if len(args) < 2 or not isinstance(args[0], Tensor) or not isinstance(args[1], Tensor):
            for a in args:
                if isinstance(a, Tensor):
                    self._escape(a, line, name)
            return None
        dst, src = args[0], args[1]
        pipe = "MTE2" if src.mem() == "GM" else "MTE1"
        fps = fpd = None
        # the params struct: the third argument, or after the MX scales (LoadData_2D_MX page:
        # LoadData(dst, src, srcMx, LoadData2DParamsV2, LoadData2DMxParams))
        p = next((a for a in args[2:] if isinstance(a, StructVal)), None)
        if isinstance(p, StructVal) and name == "LoadData":
            if p.type == "LoadData2DParams":
                f = _ints(p, apis.STRUCT_FIELDS["LoadData2DParams"], self.bounds)
                fpd, fps = apis.fp_load2d(f, "dst"), apis.fp_load2d(f, "src")
            elif p.type == "LoadData2DParamsV2":
                f = _ints(p, apis.STRUCT_FIELDS["LoadData2DParamsV2"], self.bounds)
                fps, fpd = apis.fp_load2d_v2(f, src.elem or 2)
        mx = next((a for a in args[2:] if isinstance(a, StructVal) and a.type == "LoadData2DMxParams"), None)
        fmx = apis.fp_load_mx_scales(_ints(mx, apis.STRUCT_FIELDS["LoadData2DMxParams"], self.bounds)) if mx else None
        extra = [(a, fmx) for a in args[2:] if isinstance(a, Tensor)]
        self._record(pipe, name, line, [(src, fps)] + extra, [(dst, fpd)])
        return None

    def op_mmad(self, name: str, args: list, line: int):
        ts = [a for a in args if isinstance(a, Tensor)]
        ps = [a for a in args if isinstance(a, StructVal)]
        if len(ts) < 3:
            for a in ts:
                self._escape(a, line, name)
            return None
        c, a, b = ts[0], ts[1], ts[2]
        fa = fb = fc = None
        init = True
        if ps:
            f = _ints(ps[0], ["m", "n", "k"], self.bounds)
            fps = apis.fp_mmad(f, a.elem or 2, b.elem or 2, c.elem or 4)
            if fps is not None:
                fa, fb, fc = fps
            iv = ps[0].get("cmatrixInitVal")
            init = iv if isinstance(iv, bool) else (None if isinstance(iv, (Cond, Lin, Unk)) else bool(iv))
            # the initial C comes from the bias (a bias tensor argument, or cmatrixSource: the C2
            # bias table), not from L0C (Mmad page: cmatrixInitVal / cmatrixSource)
            src_bt = ps[0].get("cmatrixSource")
            if len(ts) > 3 or src_bt is True or as_int(src_bt) == 1:
                init = True
        reads = [(a, fa), (b, fb)] + [(t, None) for t in ts[3:]]
        maybe = []
        if init is False:
            reads.append((c, fc))
        elif init is None:
            maybe.append((c, fc))
        uf = _unit_flag(ps[0]) if ps else 0
        if uf != 0:
            self.m.unit_wait("M")
        self._record("M", name, line, reads, [(c, fc)], maybe)
        if uf not in (0, 2):
            self.m.unit_release("M", "FIX")
        return None

    def op_fixpipe(self, name: str, args: list, line: int):
        ts = [a for a in args if isinstance(a, Tensor)]
        ps = [a for a in args if isinstance(a, StructVal)]
        if len(ts) < 2:
            for a in ts:
                self._escape(a, line, name)
            return None
        dst, src = ts[0], ts[1]
        fps = fpd = None
        self.target_sub = 0
        writes: list = [(dst, fpd)]
        if ps:
            f = _ints(ps[0], ["nSize", "mSize", "srcStride", "dstStride"], self.bounds)
            fps = apis.fp_fixpipe_src(f, src.elem or 4)
            sb = ps[0].fields.get("subBlockId")
            self.target_sub = 1 if sb is True or as_int(sb) == 1 else 0
            if dst.mem() in ("GM", "UB"):
                fpd = apis.fp_fixpipe_dst_rows(f, dst.elem or 4)
            writes = [(dst, fpd)]
            dual = ps[0].fields.get("dualDstCtl")
            if dual is not None and as_int(dual) != 0 and dst.foreign and dst.root == ("UB",):
                # dual destination (L0C Buffer到UB双目标模式 page): 1 splits M, 2 splits N; each half
                # lands at the same UB address of its AIV (an unknown mode: both AIVs, extent unknown)
                half = dict(f)
                key = {1: "mSize", 2: "nSize"}.get(as_int(dual))
                if key is not None and half.get(key) is not None:
                    half[key] //= 2
                    fpd = apis.fp_fixpipe_dst_rows(half, dst.elem or 4)
                else:
                    fpd = None
                writes = [(dst, fpd, 0), (dst, fpd, 1)]
        uf = _unit_flag(ps[0]) if ps else 0
        if uf != 0:
            self.m.unit_wait("FIX")
        self._record("FIX", name, line, [(src, fps)] + [(t, None) for t in ts[2:]], writes)
        if uf not in (0, 2):
            self.m.unit_release("FIX", "M")
        return None

    def op_vector(self, name: str, targs: list, args: list, line: int):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tens = {i: args[i] for i in idx}
        for t in tens.values():
            if t.kind == "G":
                self._escape(t, line, name)
                return None
        fps = self._vector_footprints(name, args, idx)
        wr_idx = set(apis.VECTOR_WRITES.get(name, (0,)))
        if name in apis.VECTOR_READ_ONLY:
            wr_idx = set()
        writes = [(tens[i], fps.get(i)) for i in idx if i in wr_idx]
        reads = [(tens[i], fps.get(i)) for i in idx if i not in wr_idx]
        pipe = "V"
        if any(t.mem() not in ("UB", "?") for t in tens.values()):
            if name in ("BroadCastVecToMM", "InitConstValue", "Fill"):
                # Fill / InitConstValue: PIPE_MTE2 into L1, PIPE_MTE1 into L0A/L0B (Fill page)
                dm = args[0].mem() if isinstance(args[0], Tensor) else "?"
                pipe = "V" if name == "BroadCastVecToMM" else ("MTE1" if dm in ("L0A", "L0B") else "MTE2")
            else:
                for t in tens.values():
                    self._escape(t, line, name)
                return None
        self._record(pipe, name, line, reads, writes)
        return None

    def _vector_footprints(self, name: str, args: list, idx: list[int]) -> dict:
        """Footprints of the tensor arguments of a vector call (missing: not known statically)."""
        out: dict = {}
        n = len(args)
        sidx = [i for i, a in enumerate(args) if isinstance(a, StructVal) and a.type in (
            "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams")]
        el = {i: (args[i].elem or 0) for i in idx}
        if name == "Brcb" and sidx and n >= 4:
            p = args[sidx[0]]
            rep = as_int(args[2])
            blk, rp = as_int(p.get("dstBlkStride")), as_int(p.get("dstRepStride"))
            if rep is not None and blk is not None and rp is not None and len(idx) >= 2:
                out[idx[0]] = apis.fp_brcb_dst(rep, blk, rp)
                out[idx[1]] = ((0, rep * 8 * el[idx[1]]),)
            return out
        if name.startswith("WholeReduce") and n >= 7 and len(idx) >= 2:
            mask, rep = _mask(args[2]), as_int(args[3])
            drs, sbs, srs = as_int(args[4]), as_int(args[5]), as_int(args[6])
            order = args[7] if n > 7 else (None if name == "WholeReduceSum" else Enum("ReduceOrder",
                                                                                      "ORDER_VALUE_INDEX"))
            pair = name != "WholeReduceSum" and isinstance(order, Enum) and order.name in (
                "ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE")
            unit = 2 if pair else 1
            if rep is not None and drs is not None:
                e = el[idx[0]]
                out[idx[0]] = tuple(sorted({(r * drs * unit * e, (r * drs * unit + unit) * e) for r in range(rep)}))
            if rep is not None and sbs is not None and srs is not None:
                out[idx[1]] = apis.fp_repeat(mask, rep, sbs, srs, el[idx[1]])
            return out
        if sidx:
            p = args[sidx[0]]
            k = sidx[0]
            if k >= 2:
                mask, rep = _mask(args[k - 2]), as_int(args[k - 1])
                if rep is None:
                    return out
                if p.type == "BinaryRepeatParams" and len(idx) >= 3:
                    keys = [("dstBlkStride", "dstRepStride"), ("src0BlkStride", "src0RepStride"),
                            ("src1BlkStride", "src1RepStride")]
                else:
                    keys = [("dstBlkStride", "dstRepStride"), ("srcBlkStride", "srcRepStride")]
                for j, (bk, rk) in enumerate(keys):
                    if j >= len(idx):
                        break
                    b, r = as_int(p.get(bk)), as_int(p.get(rk))
                    if b is not None and r is not None:
                        out[idx[j]] = apis.fp_repeat(mask, rep, b, r, el[idx[j]])
            return out
        if name == "Duplicate" and n == 6 and idx == [0]:
            mask, rep, b, r = _mask(args[2]), as_int(args[3]), as_int(args[4]), as_int(args[5])
            if rep is not None and b is not None and r is not None:
                out[0] = apis.fp_repeat(mask, rep, b, r, el[0])
            return out
        # count form: the last argument is the element count
        if name in ("ReduceSum", "ReduceMax", "ReduceMin") and len(idx) >= 3:
            cnt = as_int(args[3]) if n > 3 else None
            if cnt is not None:
                out[idx[1]] = ((0, cnt * el[idx[1]]),)
            out[idx[0]] = ((0, el[idx[0]] * (1 if name == "ReduceSum" else 2)),)
            return out
        last = args[-1] if args else None
        cnt = self._count(last) if not isinstance(last, (bool, Tensor)) else None
        # the count forms: tensors, at most one scalar/mode argument, the count last
        if n - len(idx) not in (1, 2):
            cnt = None
        if cnt is not None and idx and idx[-1] < n - 1:
            for i in idx:
                e = el[i]
                if name in ("Compare", "CompareScalar") and i == idx[0]:
                    out[i] = ((0, -(-cnt // 8)),)
                elif name == "Select" and i == idx[1]:
                    out[i] = ((0, -(-cnt // 8)),)
                elif e:
                    out[i] = ((0, cnt * e),)
        return out


# ---------------------------------------------------------------------------------------------
def _canon_type(name: str) -> str:
    return {"float16_t": "half", "int": "int32_t", "unsigned": "uint32_t"}.get(name, name)


def _tname(targs) -> str:
    for t in targs or ():
        if isinstance(t, TypeVal):
            return t.name
    return "?"


def _enum_name(v) -> str:
    if isinstance(v, Enum):
        return v.name
    return "?"



def _unit_flag(params) -> int | None:
    """A params struct's unitFlag (Mmad / Fixpipe, UnitFlag page): 0, 2 or 3; None when it is not
    known here (e.g. ``(k == last) ? 3 : 2``): taken as on, possibly 3."""
    v = params.get("unitFlag")
    if v is None:
        return 0
    iv = as_int(v)
    return iv if iv is not None else None

def _ints(p: StructVal | None, names: list[str], bounds: dict | None = None) -> dict:
    """Integer fields of a parameter struct (a bounded unknown, such as a tail tile's
    ``min(128, M - m)``, counts as its upper bound: footprints are then over-approximated)."""
    out = {}
    if p is None:
        return out
    for nm in names:
        v = p.get(nm)
        iv = as_int(v)
        if iv is None and bounds and isinstance(v, Lin) and len(v.t) == 1 and v.t[0][1] == 1 \
                and v.t[0][0] in bounds:
            iv = bounds[v.t[0][0]] + v.c
        out[nm] = iv if iv is not None else None
    return out


def _mask(v) -> int | None:
    return as_int(v)


def _same(a, b) -> bool:
    try:
        return a == b and type(a) is type(b)
    except Exception:  # noqa: BLE001
        return False


def _int_op(op: str, a: int, b: int):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return int(a / b) if b else Lin.sym(fresh("div0"))
    if op == "mod":
        return a - int(a / b) * b if b else Lin.sym(fresh("mod0"))
    if op == "shl":
        return a << b if 0 <= b < 128 else 0
    if op == "shr":
        return a >> b if b >= 0 else 0
    if op == "band":
        return a & b
    if op == "bor":
        return a | b
    if op == "bxor":
        return a ^ b
    return {"lt": a < b, "gt": a > b, "le": a <= b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]


def _float_op(op: str, a: float, b: float):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b if b else float("inf")
    if op in ("lt", "gt", "le", "ge", "eq", "ne"):
        return {"lt": a < b, "gt": a > b, "le": a <= b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]
    return UNKNOWN


def _id_name(node: Tree) -> str:
    return tok_children(node, "NAME", "CTORNAME")[0].value


def _is_var(node, var: str) -> bool:
    return isinstance(node, Tree) and node.data == "id_expr" and not tree_children(node, "scope") and \
        _id_name(node) == var


def _subtrees(node, data: str) -> list:
    """The subtrees of ``node`` (itself included) whose rule is ``data``."""
    if not isinstance(node, Tree):
        return []
    return [st for st in node.iter_subtrees() if st.data == data]


def _counter_of(init) -> str | None:
    """The variable a for loop's init declares or assigns (``int k = 0`` / ``k = 0``), if one."""
    if init is None:
        return None
    if init.data == "decl_core":
        ds = tree_children(init, "declarator")
        return tok_children(ds[0], "NAME")[0].value if len(ds) == 1 else None
    if init.data == "assignment_eq" and init.children[0].data == "id_expr":
        return _id_name(init.children[0])
    return None


def _src(node) -> str:
    """Source-like text of an expression (for messages and condition identity)."""
    if node is None:
        return ""
    if isinstance(node, Token):
        return node.value
    parts = []
    for c in node.children:
        if c is None:
            continue
        parts.append(_src(c))
    op = _OPS.get(node.data)
    if op and len(parts) == 2:
        return f"{parts[0]} {op} {parts[1]}"
    if node.data == "call":
        return f"{parts[0]}({', '.join(parts[1:])})" if len(parts) > 1 else f"{parts[0]}()"
    if node.data == "args":
        return ", ".join(parts)
    if node.data == "member":
        return ".".join(parts)
    if node.data == "member_ptr":
        return "->".join(parts)
    if node.data == "index":
        return f"{parts[0]}[{parts[1]}]" if len(parts) == 2 else "".join(parts)
    if node.data in ("id_expr", "scope", "qual_type"):
        return "::".join(p for p in parts if p not in ("<", ">")) if node.data != "scope" else parts[0]
    if node.data == "lnot":
        return "!" + parts[0]
    if node.data == "neg":
        return "-" + parts[0]
    return " ".join(parts)


_OPS = {"bin_add": "+", "bin_sub": "-", "bin_mul": "*", "bin_div": "/", "bin_mod": "%", "bin_lt": "<", "bin_gt": ">",
        "bin_le": "<=", "bin_ge": ">=", "bin_eq": "==", "bin_ne": "!=", "land": "&&", "lor": "||", "bin_band": "&",
        "bin_bor": "|", "bin_bxor": "^", "bin_shl": "<<", "bin_shr": ">>", "assignment_eq": "="}


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."
