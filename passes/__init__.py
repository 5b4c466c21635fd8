"""The compiler's passes, one job each, in pipeline order (see ascend_backend.pipeline).

Each pass is a pure function ``Kernel -> Kernel`` with a docstring stating the invariant it
needs and the one it establishes; each has a verifier that checks the latter.
"""
