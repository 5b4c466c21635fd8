"""``python -m tl_ascend`` is ``tl-ascend``."""

import sys

from tl_ascend import main

sys.exit(main())
