"""The kernel IR: typed statements (nodes), closed sets (enums) and the Program the passes share.

See docs/architecture.md for the classes, the Program and the pass list.
"""

from .enums import *  # noqa: F403
from .enums import __all__ as _enums
from .nodes import *  # noqa: F403
from .nodes import __all__ as _nodes
from .program import Kernel, Launch, Program, RowSplit, Transfer, Workspace, children, fresh_name, map_body, walk

__all__ = [*_enums, *_nodes, "Kernel", "Launch", "Program", "RowSplit", "Transfer", "Workspace", "children",
           "fresh_name", "map_body", "walk"]
