"""Template of edgetool's offline PWA demo (HTML/JS/CSS, service-worker template, pinned npm manifest).

Shipped as package data; ``edge_tool.demo`` locates it with importlib.resources. The TensorFlow.js runtime is
vendored into ``web_demo/vendor/`` by ``python scripts/vendor_runtimes.py`` (npm ci of the pinned lockfile).
"""
