"""Template of edgetool's offline PWA demo (HTML/JS/CSS, service-worker template, pinned npm manifest).

Shipped as package data; ``edge_tool.demo`` locates it with importlib.resources. The TensorFlow.js runtime is
vendored into ``web_demo/vendor/`` by ``python scripts/vendor_runtimes.py`` (npm ci of the pinned lockfile).
Imported as ``edge_tool.web_demo`` only (the repository's web_demo/, which the wheel installs inside edge_tool/).
"""

if __name__ != "edge_tool.web_demo":  # one module identity, as calibration/
    raise ImportError(f"web_demo/ is the package edge_tool.web_demo, not {__name__!r}")
