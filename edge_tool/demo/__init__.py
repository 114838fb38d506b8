"""``edgetool demo``: an installable offline PWA that runs a converted model with TensorFlow.js.

site.py assembles the site, model.py reads the model's signature and derives the input UI, icons.py draws the PWA
icons, vendor.py vendors the pinned tfjs runtime (``python scripts/vendor_runtimes.py``).
"""
