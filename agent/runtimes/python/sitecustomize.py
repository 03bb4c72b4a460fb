"""txray: loads the asyncio hint shim (_txray_hints.py, next to this file) when the txray agent is
preloaded, then runs the sitecustomize this one hides, if any (the next one on sys.path), as Python would
have. `txray run` puts this folder first on PYTHONPATH; TXRAY_RUNTIME_HINTS=0 leaves the shim out."""
import os
import sys


def _txray_start():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.version_info >= (3, 8) and os.environ.get("TXRAY_RUNTIME_HINTS") != "0":
        try:
            sys.path.insert(0, here)
            try:
                import _txray_hints
            finally:
                sys.path.remove(here)
            _txray_hints.install()
        except Exception:
            pass
    # The sitecustomize this one hides.
    try:
        import importlib.machinery
        import importlib.util
        path = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    except Exception:
        spec = None
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_txray_start()
del _txray_start
