"""The declarations of a parsed source: functions, classes, enums, globals, kernel entries."""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree


def tok_children(node: Tree, *types: str) -> list[Token]:
    return [c for c in node.children if isinstance(c, Token) and (not types or c.type in types)]


def tree_children(node: Tree, *datas: str) -> list[Tree]:
    return [c for c in node.children if isinstance(c, Tree) and (not datas or c.data in datas)]


def first_tree(node: Tree, *datas: str) -> Tree | None:
    for c in node.children:
        if isinstance(c, Tree) and c.data in datas:
            return c
    return None


def line_of(node) -> int:
    if isinstance(node, Token):
        return node.line or 0
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line
    for c in node.children:
        if c is not None:
            ln = line_of(c)
            if ln:
                return ln
    return 0


def spec_words(nodes: list[Tree]) -> list[str]:
    out = []
    for s in nodes:
        for t in s.children:
            if isinstance(t, Token):
                out.append(t.value)
    return out


@dataclass
class FuncDef:
    name: str
    params: list  # Tree('param') nodes
    body: Tree | None
    specs: list[str]
    tparams: list = field(default_factory=list)  # (name, kind 'type'|'value', default tree)
    cls: ClassDef | None = None
    line: int = 0
    is_ctor: bool = False
    ret_type: Tree | None = None
    ctor_inits: Tree | None = None

    @property
    def is_global(self) -> bool:
        return "__global__" in self.specs

    def mix(self) -> tuple[int, int] | None:
        for i, w in enumerate(self.specs):
            if w == "__mix__":
                try:
                    return int(self.specs[i + 2], 0), int(self.specs[i + 4], 0)
                except (IndexError, ValueError):
                    return None
        return None


@dataclass
class ClassDef:
    name: str
    tparams: list = field(default_factory=list)
    fields: list = field(default_factory=list)  # (specs, decl_type tree, member_declarator tree)
    methods: dict = field(default_factory=dict)  # name -> [FuncDef]
    ctors: list = field(default_factory=list)
    bases: list = field(default_factory=list)  # qual_type trees
    enums: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    line: int = 0


@dataclass
class Program:
    functions: dict = field(default_factory=dict)  # name -> [FuncDef]
    classes: dict = field(default_factory=dict)
    globals: dict = field(default_factory=dict)  # name -> (specs, decl_type, declarator tree)
    enums: dict = field(default_factory=dict)  # enumerator -> value tree (None: previous + 1)
    enum_types: set = field(default_factory=set)
    aliases: dict = field(default_factory=dict)  # using X = type
    entries: list = field(default_factory=list)

    def add_function(self, f: FuncDef, qual: list[str]) -> None:
        if qual:
            cls = self.classes.get(qual[-1])
            if cls is not None:
                f.cls = cls
                if f.name == cls.name:
                    f.is_ctor = True
                    cls.ctors.append(f)
                else:
                    cls.methods.setdefault(f.name, []).append(f)
                return
        self.functions.setdefault(f.name, []).append(f)
        if f.is_global:
            self.entries.append(f)


def _tparams(node: Tree | None) -> list:
    out = []
    if node is None:
        return out
    for tp in node.children:
        if not isinstance(tp, Tree):
            continue
        name = None
        default = None
        for c in tp.children:
            if isinstance(c, Token) and c.type in ("NAME", "TNAME"):
                name = c.value
            elif isinstance(c, Tree) and c.data not in ("decl_type", "ptrs"):
                default = c
        out.append((name, "type" if tp.data == "tparam_type" else "value", default))
    return out


def _decl_name(node: Tree) -> tuple[str, list[str]]:
    """decl_name -> (name, [qualifying scopes])."""
    scopes = []
    name = ""
    for c in node.children:
        if isinstance(c, Tree) and c.data == "scope":
            scopes.append(tok_children(c, "NAME", "TNAME")[0].value)
        elif isinstance(c, Token):
            name = c.value
    return name, scopes


def build_program(items: list) -> Program:
    prog = Program()
    # classes first, so out-of-class method definitions find them
    pending = []
    for it in items:
        node, tparams = it.tree, []
        while node.data == "template_decl":
            tparams = _tparams(first_tree(node, "tparams"))
            node = [c for c in node.children if isinstance(c, Tree) and c.data != "tparams"][-1]
        if node.data == "class_def":
            _add_class(prog, node, tparams)
        else:
            pending.append((node, tparams))
    for node, tparams in pending:
        _add_item(prog, node, tparams, None)
    return prog


def _add_class(prog: Program, node: Tree, tparams: list, outer: ClassDef | None = None) -> ClassDef:
    names = tok_children(node, "NAME", "TNAME")
    name = names[0].value if names else f"<anon@{line_of(node)}>"
    cls = ClassDef(name, tparams, line=line_of(node))
    base = first_tree(node, "base_clause")
    if base is not None:
        cls.bases = [first_tree(b, "qual_type") for b in tree_children(base, "base")]
    prog.classes[name] = cls
    for m in node.children:
        if not isinstance(m, Tree) or m.data in ("class_key", "base_clause"):
            continue
        _add_member(prog, cls, m, [])
    return cls


def _add_member(prog: Program, cls: ClassDef, m: Tree, tparams: list) -> None:
    if m.data == "template_decl":
        tp = _tparams(first_tree(m, "tparams"))
        inner = [c for c in m.children if isinstance(c, Tree) and c.data != "tparams"][-1]
        _add_member(prog, cls, inner, tp)
        return
    if m.data == "var_decl":
        specs = spec_words(tree_children(m, "spec"))
        dtype = first_tree(m, "decl_type")
        for d in tree_children(m, "member_declarator"):
            cls.fields.append((specs, dtype, d))
    elif m.data in ("func_def", "ctor_def", "dtor_def"):
        f = _func(m, tparams, cls)
        if f is None:
            return
        if m.data == "ctor_def":
            f.is_ctor = True
            cls.ctors.append(f)
        elif m.data == "func_def":
            cls.methods.setdefault(f.name, []).append(f)
    elif m.data == "enum_def":
        _add_enum(prog, m, cls)
    elif m.data == "class_def":
        _add_class(prog, m, tparams)
    elif m.data in ("using_alias", "using_alias_dependent"):
        nm = tok_children(m, "NAME", "TNAME")[0].value
        cls.aliases[nm] = m


def _func(node: Tree, tparams: list, cls: ClassDef | None) -> FuncDef | None:
    specs = spec_words(tree_children(node, "spec", "mix_spec"))
    params_node = first_tree(node, "params")
    params = tree_children(params_node, "param") if params_node is not None else []
    body = first_tree(node, "compound")
    if node.data == "ctor_def":
        name = tok_children(node, "CTORNAME")[0].value
        return FuncDef(name, params, body, specs, tparams, cls, line_of(node), True,
                       ctor_inits=first_tree(node, "ctor_inits"))
    if node.data == "dtor_def":
        return None
    dn = first_tree(node, "decl_name")
    name, _ = _decl_name(dn)
    return FuncDef(name, params, body, specs, tparams, cls, line_of(node), ret_type=first_tree(node, "decl_type"))


def _add_enum(prog: Program, node: Tree, cls: ClassDef | None) -> None:
    names = tok_children(node, "NAME", "TNAME")
    if names:
        prog.enum_types.add(names[0].value)
    ens = first_tree(node, "enumerators")
    if ens is None:
        return
    prev = None
    idx = 0
    for e in tree_children(ens, "enumerator"):
        nm = tok_children(e, "NAME")[0].value
        val = [c for c in e.children if isinstance(c, Tree)]
        if val:
            entry = ("expr", val[0])
            prev, idx = val[0], 0
        else:
            entry = ("after", prev, idx)
        idx += 1
        prog.enums[nm] = entry
        if cls is not None:
            cls.enums[nm] = entry


def _add_item(prog: Program, node: Tree, tparams: list, cls: ClassDef | None) -> None:
    if node.data == "func_def":
        f = _func(node, tparams, None)
        dn = first_tree(node, "decl_name")
        _, scopes = _decl_name(dn)
        prog.add_function(f, scopes)
    elif node.data == "ctor_def":
        pass
    elif node.data == "var_decl":
        specs = spec_words(tree_children(node, "spec"))
        dtype = first_tree(node, "decl_type")
        for d in tree_children(node, "member_declarator"):
            prog.globals[tok_children(d, "NAME")[0].value] = (specs, dtype, d)
    elif node.data == "enum_def":
        _add_enum(prog, node, None)
    elif node.data in ("using_alias", "using_alias_dependent", "typedef_decl"):
        nm = tok_children(node, "NAME", "TNAME")
        if nm:
            prog.aliases[nm[-1].value if node.data == "typedef_decl" else nm[0].value] = node
