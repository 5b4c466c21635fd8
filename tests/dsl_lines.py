"""Where a test's DSL statement is: the line of a file that carries a ``# marker:NAME`` comment
(errors are checked against the user's line, so the tests name their lines this way)."""


def marker_line(path: str, name: str) -> int:
    """The 1-based line of ``path`` with ``# marker:name`` on it."""
    with open(path) as f:
        for n, text in enumerate(f, start=1):
            if f"# marker:{name}" in text:
                return n
    raise AssertionError(f"no '# marker:{name}' in {path}")
