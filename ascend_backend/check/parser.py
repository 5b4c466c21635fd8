"""Parse an Ascend C source into lark trees, one per top-level item (see grammar.lark)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer

from .lexer import (
    CheckSyntaxError,
    Item,
    Preprocessor,
    SourceMap,
    Tok,
    classify,
    host_constants,
    launch_template_args,
    split_items,
)

_GRAMMAR = os.path.join(os.path.dirname(__file__), "grammar.lark")
_DECLARED = {"NAME", "TNAME", "CTORNAME", "NUMBER", "STRING", "CHARLIT", "TLT", "TGT", "CORE_COND",
             "SCOPE_MACRO", "ASSIGN_OP", "CAST_KW"}
_ASSIGN_OPS = {"+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="}
_CAST_KWS = {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"}


class _TokenFeed(Lexer):
    """lark 'custom lexer' (interface 0): the input handed to parse() is already a token list."""

    __future_interface__ = 0

    def __init__(self, lexer_conf) -> None:
        pass

    def lex(self, data):
        return iter(data)


def _cache_file(grammar: str) -> str | None:
    """Where the LALR tables are cached (building them takes seconds; loading, a fraction)."""
    import hashlib

    import lark as _lark

    root = os.environ.get("TL_ASCEND_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                  "tilelang-ascendc")
    key = hashlib.sha256((grammar + _lark.__version__).encode()).hexdigest()[:16]
    d = os.path.join(root, "check")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return None
    return os.path.join(d, f"grammar-{key}.lark-cache") if os.access(d, os.W_OK) else None


@functools.lru_cache(maxsize=1)
def _parser() -> tuple[Lark, dict[str, str]]:
    with open(_GRAMMAR, encoding="utf-8") as f:
        grammar = f.read()
    kw = dict(parser="lalr", lexer=_TokenFeed, propagate_positions=True, maybe_placeholders=True)
    cache = _cache_file(grammar)
    try:
        lark = Lark(grammar, cache=cache or False, **kw)
    except Exception:  # noqa: BLE001 - a damaged or unwritable cache: build the tables in memory
        lark = Lark(grammar, **kw)
    literal = {}
    for term in lark.terminals:
        pat = term.pattern
        if pat.type == "str":
            literal[pat.value] = term.name
    return lark, literal


@dataclass
class ParsedItem:
    tree: Tree
    kind: str  # kernel | decl
    line: int


@dataclass
class ParsedSource:
    items: list[ParsedItem]
    smap: SourceMap
    dropped: list[int] = field(default_factory=list)  # first lines of declarations that did not parse
    host_items: int = 0
    launch_targs: dict = field(default_factory=dict)  # kernel name -> template argument token lists
    host_consts: dict = field(default_factory=dict)  # constexpr NAME = number; of the whole file


def _to_lark(toks: list[Tok], literal: dict[str, str]) -> list[Token]:
    out = []
    for t in toks:
        typ = t.type
        if typ in ("NAME", "TNAME", "CTORNAME", "NUMBER", "STRING", "CHARLIT", "TLT", "TGT", "CORE_COND",
                   "SCOPE_MACRO", "QUAL"):
            pass
        elif t.value in _ASSIGN_OPS:
            typ = "ASSIGN_OP"
        elif t.value in _CAST_KWS:
            typ = "CAST_KW"
        else:
            typ = literal.get(t.value)
            if typ is None:
                raise CheckSyntaxError(f"'{t.value}' is not part of the kernel subset the checker reads", t.line)
        out.append(Token(typ, t.value, start_pos=0, line=t.line, column=t.col, end_line=t.line,
                         end_column=t.col + len(t.value), end_pos=0))
    return out


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return f"'{tok.value}'"


def parse_items(items: list[Item]) -> tuple[list[ParsedItem], list[int]]:
    lark, literal = _parser()
    parsed, dropped = [], []
    for it in items:
        if it.kind == "host":
            continue
        try:
            toks = _to_lark(it.tokens, literal)
            tree = lark.parse(toks)
        except UnexpectedToken as exc:
            if it.kind != "kernel":
                dropped.append(it.line)
                continue
            tok = exc.token
            line = tok.line if tok.type != "$END" and getattr(tok, "line", None) else it.tokens[-1].line
            raise CheckSyntaxError(f"cannot parse {_describe(tok)} here (the checker reads a subset of "
                                   "C++: see docs/check.md)", line) from None
        except UnexpectedInput as exc:
            if it.kind != "kernel":
                dropped.append(it.line)
                continue
            raise CheckSyntaxError(f"cannot parse this ({exc.__class__.__name__})",
                                   getattr(exc, "line", it.line) or it.line) from None
        except CheckSyntaxError:
            if it.kind != "kernel":
                dropped.append(it.line)
                continue
            raise
        parsed.append(ParsedItem(tree.children[0] if tree.data == "start" else tree, it.kind, it.line))
    return parsed, dropped


def tokens_for(text: str, name: str, arch: str, core: str, path: str | None = None,
               defines: dict[str, str] | None = None, follow_includes: bool = True) -> tuple[list[Tok], SourceMap]:
    """The classified token stream of ``text`` preprocessed for (arch, core)."""
    smap = SourceMap()
    pp = Preprocessor(arch, core, defines, follow_includes=follow_includes, smap=smap)
    toks = pp.run(text, name, path)
    return classify(toks), smap


def parse_tokens(toks: list[Tok], smap: SourceMap) -> ParsedSource:
    """Cut a token stream into items and parse the kernel ones."""
    items = split_items(toks)
    parsed, dropped = parse_items(items)
    return ParsedSource(parsed, smap, dropped, sum(1 for i in items if i.kind == "host"),
                        launch_template_args(toks), host_constants(toks))


def parse_source(text: str, name: str, arch: str, core: str, path: str | None = None,
                 defines: dict[str, str] | None = None, follow_includes: bool = True) -> ParsedSource:
    """Preprocess ``text`` for (arch, core), cut it into items and parse the kernel ones."""
    toks, smap = tokens_for(text, name, arch, core, path, defines, follow_includes)
    return parse_tokens(toks, smap)
